/* kiln_fidelis.c - fidelis' own fidelis.path-attribution.v1 record (docs/ATTRIBUTION.md): the
 * verdict, the per-path divergence and the attribution recomputed from the record's values. */
#include <stdio.h>
#include <string.h>

#include "attr/kiln_check.h"

static const fdl_schema_field REF_HEAD_F[] = {
    FDL_KF_INT("vocab_size", 2, FDL_KILN_VOCAB_SIZE, "expected an integer in %lld..%lld")};
static const fdl_schema_obj REF_HEAD = FDL_SCHEMA_CLOSED(REF_HEAD_F, "argmax", "candidate_tokens",
                                                         "logits_sha256", "verdict", "vocab_size");
static const fdl_schema_field REF_SHA_F[] = {FDL_KF_SHA("logits_sha256")};
static const fdl_schema_obj REF_SHA = FDL_SCHEMA_OPEN(REF_SHA_F);
#define CANDIDATE_F(engine)                                                                        \
  { FDL_KF_ENGINE(engine), FDL_KF_LOGIT }
static const fdl_schema_field KILN_F[] = CANDIDATE_F("kiln"), VLLM_F[] = CANDIDATE_F("vllm");
static const fdl_schema_obj CANDIDATES[2] = {
    FDL_SCHEMA_CLOSED(KILN_F, "engine", "logit", "rank", "token_id"),
    FDL_SCHEMA_CLOSED(VLLM_F, "engine", "logit", "rank", "token_id")};
static const fdl_schema_obj VERDICT =
    FDL_SCHEMA_KEYS("argmax_candidate", "margin", "preferred_candidate");

static fdl_status check_fa_reference(const fdl_kiln_ctx *c, const json_t *ref, const json_t *cids,
                                     json_int_t *argmax, json_int_t *vocab) {
  fdl_status s = fdl_kiln_walk(c, ref, "$.reference", &REF_HEAD);
  if (s != FDL_OK) return s;
  const json_t *vs = json_object_get(ref, "vocab_size"), *am = json_object_get(ref, "argmax");
  *vocab = json_integer_value(vs);
  if (!json_is_integer(am) || json_integer_value(am) < 0 || json_integer_value(am) >= *vocab)
    return fdl_kiln_bad(c, "$.reference.argmax", "expected a token id below vocab_size %lld",
                        (long long)*vocab);
  *argmax = json_integer_value(am);
  if ((s = fdl_kiln_walk(c, ref, "$.reference", &REF_SHA))) return s;
  const json_t *ct = json_object_get(ref, "candidate_tokens");
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return fdl_kiln_bad(c, "$.reference.candidate_tokens", "expected exactly 2 candidates");
  double lg[2];
  char p[96];
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    snprintf(p, sizeof p, "$.reference.candidate_tokens[%zu]", i);
    if ((s = fdl_kiln_walk(c, e, p, &CANDIDATES[i])) != FDL_OK) return s;
    lg[i] = json_number_value(json_object_get(e, "logit"));
    const json_t *rk = json_object_get(e, "rank");
    if (!json_is_integer(rk) || json_integer_value(rk) < 1 || json_integer_value(rk) > *vocab)
      return fdl_kiln_bad(c, p, "rank: expected an integer in 1..vocab_size");
    if (!json_equal(json_object_get(e, "token_id"), json_array_get(cids, i)))
      return fdl_kiln_bad(c, p, "token_id: expected $.request.candidate_token_ids[%zu]", i);
  }
  const json_t *v = json_object_get(ref, "verdict");
  if ((s = fdl_kiln_walk(c, v, "$.reference.verdict", &VERDICT)) != FDL_OK) return s;
  json_int_t k0 = json_integer_value(json_array_get(cids, 0)),
             k1 = json_integer_value(json_array_get(cids, 1));
  const char *arg = k0 == *argmax ? "kiln" : k1 == *argmax ? "vllm" : "neither";
  const char *pref = lg[0] > lg[1] ? "kiln" : lg[1] > lg[0] ? "vllm" : "tie";
  double margin = lg[0] > lg[1] ? lg[0] - lg[1] : lg[1] - lg[0];
  if (!fdl_kiln_str_eq(json_object_get(v, "argmax_candidate"), arg))
    return fdl_kiln_bad(c, "$.reference.verdict.argmax_candidate",
                        "expected \"%s\" (the candidate whose id is the reference argmax %lld)",
                        arg, (long long)*argmax);
  if (!fdl_kiln_str_eq(json_object_get(v, "preferred_candidate"), pref))
    return fdl_kiln_bad(c, "$.reference.verdict.preferred_candidate",
                        "expected \"%s\" (the candidate with the larger reference logit)", pref);
  const json_t *m = json_object_get(v, "margin");
  if (!json_is_real(m) || json_real_value(m) != margin)
    return fdl_kiln_bad(c, "$.reference.verdict.margin",
                        "expected %.17g, the difference of the two candidate logits", margin);
  return FDL_OK;
}

#define PATH_F                                                                                     \
  { FDL_KF_NONEMPTY("name"), FDL_KF_TOKENS("observed_tokens", 1, FDL_KILN_MAX_INPUT) }
static const fdl_schema_field FULL_F[] = PATH_F, GREEDY_F[] = PATH_F;
static const fdl_schema_obj FULL = FDL_SCHEMA_CLOSED(FULL_F, "argmax_equal", "comparison", "kind",
                                                     "name", "observed_tokens"),
                            GREEDY = FDL_SCHEMA_CLOSED(GREEDY_F, "final_token_matches_reference",
                                                       "kind", "name", "observed_tokens");

/* One path; *diverges: full, its comparison argmax differs from the reference argmax; greedy,
 * its final observed token does. */
static fdl_status check_fa_path(const fdl_kiln_ctx *c, size_t i, const json_t *e,
                                const json_t *cids, json_int_t argmax, bool *diverges) {
  char p[64], q[160];
  snprintf(p, sizeof p, "$.paths[%zu]", i);
  if (!json_is_object(e)) return fdl_kiln_bad(c, p, "expected an object");
  const json_t *kind = json_object_get(e, "kind");
  bool full = fdl_kiln_str_eq(kind, "full");
  if (!full && !fdl_kiln_str_eq(kind, "greedy")) {
    snprintf(q, sizeof q, "%s.kind", p);
    return fdl_kiln_bad(c, q, "expected \"full\" or \"greedy\"");
  }
  fdl_status s = fdl_kiln_walk(c, e, p, full ? &FULL : &GREEDY);
  if (s != FDL_OK) return s;
  const json_t *obs = json_object_get(e, "observed_tokens");
  json_int_t last = json_integer_value(json_array_get(obs, json_array_size(obs) - 1));
  if (full) {
    const json_t *cmp = json_object_get(e, "comparison");
    snprintf(q, sizeof q, "%s.comparison", p);
    if ((s = fdl_kiln_check_comparison(c, q, cmp, argmax)) != FDL_OK) return s;
    const json_t *ct = json_object_get(cmp, "candidate_tokens");
    for (size_t j = 0; j < 2; j++)
      if (!json_equal(json_object_get(json_array_get(ct, j), "token_id"),
                      json_array_get(cids, j))) {
        snprintf(q, sizeof q, "%s.comparison.candidate_tokens[%zu].token_id", p, j);
        return fdl_kiln_bad(c, q, "expected $.request.candidate_token_ids[%zu]", j);
      }
    json_int_t am = json_integer_value(json_object_get(cmp, "argmax"));
    if (am != last) {
      snprintf(q, sizeof q, "%s.observed_tokens", p);
      return fdl_kiln_bad(c, q, "last token %lld, expected the comparison argmax %lld",
                          (long long)last, (long long)am);
    }
    const json_t *ae = json_object_get(e, "argmax_equal");
    snprintf(q, sizeof q, "%s.argmax_equal", p);
    if (!json_equal(ae, json_object_get(cmp, "argmax_equal")))
      return fdl_kiln_bad(c, q, "expected a bool equal to comparison.argmax_equal");
    *diverges = !json_is_true(ae);
  } else {
    const json_t *fm = json_object_get(e, "final_token_matches_reference");
    snprintf(q, sizeof q, "%s.final_token_matches_reference", p);
    if (!json_is_boolean(fm)) return fdl_kiln_bad(c, q, "expected a bool");
    if (json_is_true(fm) != (last == argmax))
      return fdl_kiln_bad(c, q, "is %s, but the final token %lld %s the reference argmax %lld",
                          json_is_true(fm) ? "true" : "false", (long long)last,
                          last == argmax ? "==" : "!=", (long long)argmax);
    *diverges = !json_is_true(fm);
  }
  return FDL_OK;
}

static void distinct(fdl_schema_run *r, const fdl_schema_field *f, const json_t *cids,
                     const char *path) {
  (void)f;
  if (json_equal(json_array_get(cids, 0), json_array_get(cids, 1)))
    fdl_schema_bad(r, path, "expected two distinct tokens");
}
static const fdl_schema_field REQUEST_F[] = {
    FDL_KF_NONEMPTY("id"), FDL_KF_SHA("sha256"), FDL_KF_SHA("input_token_ids_sha256"),
    FDL_KF_TOKENS("candidate_token_ids", 2, 2), FDL_KF_RULE("candidate_token_ids", distinct)};
static const fdl_schema_obj REQUEST =
    FDL_SCHEMA_CLOSED(REQUEST_F, "candidate_token_ids", "id", "input_token_ids_sha256", "sha256");
static const fdl_schema_field RECORD_F[] = {FDL_KF_OBJ("request", &REQUEST)};
static const fdl_schema_obj RECORD =
                                FDL_SCHEMA_CLOSED(RECORD_F, "attribution", "paths", "record_sha256",
                                                  "reference", "request", "schema"),
                            RECORD_COUNTERS = FDL_SCHEMA_CLOSED(RECORD_F, "attribution", "counters",
                                                                "paths", "record_sha256",
                                                                "reference", "request", "schema");
static const fdl_schema_obj ATTRIBUTION = FDL_SCHEMA_KEYS("label", "path");

fdl_status fdl_kiln_check_fidelis_attr(const fdl_kiln_ctx *c, const json_t *doc) {
  bool has_counters = json_object_get(doc, "counters") != NULL;
  fdl_status s = fdl_kiln_walk(c, doc, "$", has_counters ? &RECORD_COUNTERS : &RECORD);
  if (s != FDL_OK) return s;
  const json_t *cids = json_object_get(json_object_get(doc, "request"), "candidate_token_ids");
  json_int_t argmax = 0, vocab = 0;
  if ((s = check_fa_reference(c, json_object_get(doc, "reference"), cids, &argmax, &vocab)))
    return s;
  const json_t *paths = json_object_get(doc, "paths");
  size_t n = json_array_size(paths);
  if (!json_is_array(paths) || n == 0 || n > FDL_KILN_MAX_PATHS)
    return fdl_kiln_bad(c, "$.paths", "expected an array of 1..%u paths", FDL_KILN_MAX_PATHS);
  const char *first = NULL;
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(paths, i);
    bool div = false;
    if ((s = check_fa_path(c, i, e, cids, argmax, &div)) != FDL_OK) return s;
    const char *name = json_string_value(json_object_get(e, "name"));
    for (size_t j = 0; j < i; j++)
      if (strcmp(name, json_string_value(json_object_get(json_array_get(paths, j), "name"))) == 0) {
        char p[96];
        snprintf(p, sizeof p, "$.paths[%zu].name", i);
        return fdl_kiln_bad(c, p, "\"%s\" repeats $.paths[%zu].name, expected unique names", name,
                            j);
      }
    if (div && !first) first = name;
  }
  if (has_counters && (s = fdl_kiln_walk(c, json_object_get(doc, "counters"), "$.counters",
                                         &fdl_kiln_schema_graph)))
    return s;
  const json_t *at = json_object_get(doc, "attribution");
  if ((s = fdl_kiln_walk(c, at, "$.attribution", &ATTRIBUTION)) != FDL_OK) return s;
  const char *label = first ? FDL_KILN_LABEL_PATH : FDL_KILN_LABEL_NONE;
  if (!fdl_kiln_str_eq(json_object_get(at, "label"), label))
    return fdl_kiln_bad(c, "$.attribution.label", "expected \"%s\" (recomputed from the paths)",
                        label);
  const json_t *ap = json_object_get(at, "path");
  if (first ? !fdl_kiln_str_eq(ap, first) : !json_is_null(ap))
    return fdl_kiln_bad(c, "$.attribution.path", "expected %s%s%s (the first path that diverges)",
                        first ? "\"" : "", first ? first : "null", first ? "\"" : "");
  return FDL_OK;
}
