/* kiln_fidelis.c - fidelis' own fidelis.path-attribution.v1 record (docs/ATTRIBUTION.md): the
 * verdict, the per-path divergence and the attribution recomputed from the record's values; and
 * a path record's (this one or Kiln's path result) comparison blocks recomputed from the logits
 * (`fidelis check --reference`), an untrusted record held to the writer's blocks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "fidelis/attr.h"
#include "json/get.h"

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

/* ---- recomputation from the logits (fidelis check --reference) ----------------------------- */

/* stored must equal want (an object); else the first key that differs, both values shown. */
static fdl_status same_block(const char *name, const char *path, const json_t *stored,
                             const json_t *want, fdl_err *err) {
  if (json_equal(stored, want)) return FDL_OK;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)want, k, v) {
    const json_t *got = json_object_get(stored, k);
    if (json_equal(got, v)) continue;
    size_t fl = JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17);
    char *a = got ? json_dumps(got, fl) : NULL, *b = json_dumps(v, fl);
    fdl_fail(err, FDL_MISMATCH, "%s: %s.%s: stored %.300s, recomputed from the logits %.300s", name,
             path, k, a ? a : "(none)", b ? b : "?");
    free(a);
    free(b);
    return FDL_MISMATCH;
  }
  return fdl_fail(err, FDL_MISMATCH, "%s: %s: differs from the block recomputed from the logits",
                  name, path);
}

fdl_status fdl_kiln_recompute_paths(const json_t *doc, const char *name, const float *reference,
                                    size_t n, const fdl_kiln_logits_row *paths, size_t npaths,
                                    fdl_err *err) {
  const json_t *sv = json_object_get(doc, "schema");
  bool fid = fdl_kiln_str_eq(sv, FDL_KILN_PATH_ATTR_SCHEMA);
  bool kiln = fdl_kiln_str_eq(sv, "kiln.rocm-hf-path-attribution-result.v1") ||
              fdl_kiln_str_eq(sv, FDL_KILN_PATH_V2_SCHEMA);
  if (!fid && !kiln)
    return fdl_fail(err, FDL_REFUSED,
                    "%s: a %s has no path comparisons to recompute (--reference and --path go "
                    "with path-attribution records)",
                    name, json_is_string(sv) ? json_string_value(sv) : "record");
  const json_t *w = json_object_get(doc, "worker");
  const json_t *ct =
      fid ? json_object_get(json_object_get(doc, "request"), "candidate_token_ids") : NULL;
  uint64_t cand[2];
  for (size_t i = 0; i < 2; i++) {
    const json_t *id =
        fid ? json_array_get(ct, i)
            : json_object_get(
                  json_array_get(fdl_json_path(w, "eager_full.comparison.candidate_tokens"), i),
                  "token_id");
    if (!json_is_integer(id) || json_integer_value(id) < 0 || (uint64_t)json_integer_value(id) >= n)
      return fdl_fail(err, FDL_REFUSED,
                      "%s: candidate %zu is no token id below the reference's width %zu", name, i,
                      n);
    cand[i] = (uint64_t)json_integer_value(id);
  }
  fdl_attr_logits r;
  fdl_attr_candidate c[2];
  fdl_status s = fdl_attr_compare_logits(reference, reference, n, cand, 2, &r, c, err);
  if (s != FDL_OK) return s;
  if (fid) {
    json_t *rb = fdl_attr_reference_json(&r, c, n);
    if (!rb) return fdl_fail(err, FDL_NOMEM, "out of memory");
    s = same_block(name, "$.reference", json_object_get(doc, "reference"), rb, err);
    json_decref(rb);
    if (s != FDL_OK) return s;
  } else if (json_integer_value(json_object_get(w, "hf_argmax")) != (json_int_t)r.argmax) {
    return fdl_fail(err, FDL_MISMATCH,
                    "%s: $.worker.hf_argmax: stored %lld, the reference's argmax %llu", name,
                    (long long)json_integer_value(json_object_get(w, "hf_argmax")),
                    (unsigned long long)r.argmax);
  }
  for (size_t i = 0; i < npaths; i++) {
    const json_t *blk = NULL;
    char jp[128];
    if (fid) {
      const json_t *all = json_object_get(doc, "paths");
      for (size_t j = 0; j < json_array_size(all) && !blk; j++) {
        const json_t *e = json_array_get(all, j);
        if (fdl_kiln_str_eq(json_object_get(e, "name"), paths[i].name) &&
            fdl_kiln_str_eq(json_object_get(e, "kind"), "full")) {
          blk = json_object_get(e, "comparison");
          snprintf(jp, sizeof jp, "$.paths[%zu].comparison", j);
        }
      }
    } else if (strcmp(paths[i].name, "eager_full") == 0 ||
               strcmp(paths[i].name, "graph_full") == 0) {
      blk = json_object_get(json_object_get(w, paths[i].name), "comparison");
      snprintf(jp, sizeof jp, "$.worker.%s.comparison", paths[i].name);
    }
    if (!blk)
      return fdl_fail(err, FDL_REFUSED, "%s: --path %s: the record has no full path of that name",
                      name, paths[i].name);
    s = fdl_attr_compare_logits(paths[i].row, reference, n, cand, 2, &r, c, err);
    if (s != FDL_OK) return s;
    json_t *cmp = fdl_attr_comparison_json(&r, c);
    if (!cmp) return fdl_fail(err, FDL_NOMEM, "out of memory");
    s = same_block(name, jp, blk, cmp, err);
    json_decref(cmp);
    if (s != FDL_OK) return s;
  }
  return FDL_OK;
}
