/* kiln_oracle.c - Kiln's HF next-token oracle results v1 and v2 (KILN-ATTRIBUTION.md §8, §9,
 * §14.1): the HF evidence as tables, its invariants and the verdict rebuilt as C. */
#include <stdio.h>
#include <string.h>

#include "attr/kiln_check.h"
#include "fidelis/attr.h"

/* ---- HF evidence (§8; layer mode adds the four boundary keys, §14.3) ------------------------- */

/* The top-10: closed entries, sorted by logit, distinct ids. */
static const fdl_schema_field TOP_F[] = {
    FDL_KF_LOGIT, FDL_KF("text", FDL_SCHEMA_STR, FDL_SCHEMA_KEYMSG, 0, 0, "expected a string"),
    FDL_KF_TOKEN_ID};
static const fdl_schema_obj TOP = FDL_SCHEMA_CLOSED(TOP_F, "logit", "text", "token_id");

static void top_tokens(fdl_schema_run *r, const fdl_schema_field *f, const json_t *top,
                       const char *path) {
  (void)f;
  if (!json_is_array(top) || json_array_size(top) != 10) {
    fdl_schema_bad(r, path, "expected exactly 10 entries");
    return;
  }
  for (size_t i = 0; i < 10 && !r->stop; i++) {
    const json_t *e = json_array_get(top, i);
    char p[FDL_SCHEMA_PATH_CAP];
    snprintf(p, sizeof p, "%s[%zu]", path, i);
    fdl_schema_check(r, e, p, &TOP);
    if (!r->stop && i &&
        json_number_value(json_object_get(e, "logit")) >
            json_number_value(json_object_get(json_array_get(top, i - 1), "logit")))
      fdl_schema_bad(r, p, "logit: expected no larger than top_tokens[%zu]'s (sorted)", i - 1);
    for (size_t j = 0; j < i && !r->stop; j++)
      if (json_equal(json_object_get(e, "token_id"),
                     json_object_get(json_array_get(top, j), "token_id")))
        fdl_schema_bad(r, p, "token_id: repeats top_tokens[%zu], expected 10 distinct ids", j);
  }
}

/* top_tokens[0] is the argmax and its text; the margin is the top two logits' difference. */
static void argmax_margin(fdl_schema_run *r, const fdl_schema_field *f, const json_t *ev,
                          const char *path) {
  (void)f;
  const json_t *top = json_object_get(ev, "top_tokens"), *t0 = json_array_get(top, 0),
               *mg = json_object_get(ev, "top_logit_margin");
  char p[FDL_SCHEMA_PATH_CAP];
  double margin = json_number_value(json_object_get(t0, "logit")) -
                  json_number_value(json_object_get(json_array_get(top, 1), "logit"));
  snprintf(p, sizeof p, "%s.top_tokens[0].token_id", path);
  if (!json_equal(json_object_get(t0, "token_id"), json_object_get(ev, "argmax"))) {
    fdl_schema_bad(r, p, "expected the argmax");
    return;
  }
  snprintf(p, sizeof p, "%s.argmax_text", path);
  if (!json_equal(json_object_get(t0, "text"), json_object_get(ev, "argmax_text"))) {
    fdl_schema_bad(r, p, "expected top_tokens[0].text");
    return;
  }
  snprintf(p, sizeof p, "%s.top_logit_margin", path);
  if (!(margin > 0))
    fdl_schema_bad(r, p, "the top two logits tie; expected a margin > 0");
  else if (!fdl_kiln_finite_num(mg) || json_number_value(mg) != margin)
    fdl_schema_bad(r, p, "expected %.17g (top_tokens[0].logit - top_tokens[1].logit)", margin);
}

/* The two candidates in request order, kiln then vllm, with distinct ids. */
#define CANDIDATE_F(engine)                                                                        \
  {                                                                                                \
    FDL_KF_ENGINE(engine), FDL_KF_LOGIT,                                                           \
        FDL_KF("text", FDL_SCHEMA_STR, FDL_SCHEMA_KEYMSG, 0, 0, "expected a string"),              \
        FDL_KF_TOKEN_ID, FDL_KF_RANK                                                               \
  }
static const fdl_schema_field KILN_F[] = CANDIDATE_F("kiln"), VLLM_F[] = CANDIDATE_F("vllm");
static const fdl_schema_obj CANDIDATES[2] = {
    FDL_SCHEMA_CLOSED(KILN_F, "engine", "logit", "rank", "text", "token_id"),
    FDL_SCHEMA_CLOSED(VLLM_F, "engine", "logit", "rank", "text", "token_id")};

static void distinct(fdl_schema_run *r, const fdl_schema_field *f, const json_t *ev,
                     const char *path) {
  (void)f;
  const json_t *ct = json_object_get(ev, "candidate_tokens");
  char p[FDL_SCHEMA_PATH_CAP];
  snprintf(p, sizeof p, "%s.candidate_tokens[1]", path);
  if (json_equal(json_object_get(json_array_get(ct, 0), "token_id"),
                 json_object_get(json_array_get(ct, 1), "token_id")))
    fdl_schema_bad(r, p, "expected two distinct token ids");
}

/* §13's boundary names, in order. */
static void boundary_names(fdl_schema_run *r, const fdl_schema_field *f, const json_t *names,
                           const char *path) {
  (void)f;
  if (!json_is_array(names) || json_array_size(names) != FDL_ATTR_LAYER_BOUNDARIES) {
    fdl_schema_bad(r, path, "expected the %u boundary names", FDL_ATTR_LAYER_BOUNDARIES);
    return;
  }
  for (size_t i = 0; i < FDL_ATTR_LAYER_BOUNDARIES && !r->stop; i++) {
    const char *want = fdl_attr_layer_boundary_name(i);
    char p[FDL_SCHEMA_PATH_CAP];
    snprintf(p, sizeof p, "%s[%zu]", path, i);
    if (!fdl_kiln_str_eq(json_array_get(names, i), want))
      fdl_schema_bad(r, p, "expected \"%s\"", want);
  }
}

/* §14.3 wants the memory counters 0 in a layer result; §9 leaves them to the oracle's runner. */
#define MEM(k, layer)                                                                              \
  FDL_KF(k, FDL_SCHEMA_INT, (layer) ? FDL_SCHEMA_MAX : 0, 0, 0,                                    \
         (layer) ? "expected %lld" : "expected an integer >= %lld")
#define HF_F(layer, count, ...)                                                                    \
  {                                                                                                \
    FDL_KF_CONST("attention_implementation", "eager"), FDL_KF_CONST("dtype", "bfloat16"),          \
        FDL_KF_CONST("linear_attention_implementation", "transformers_torch_fallback"),            \
        FDL_KF_CONST("torch_version", "2.13.0+rocm7.2"),                                           \
        FDL_KF_CONST("transformers_version", "5.13.1"),                                            \
        FDL_KF_CONST("configuration_sha256",                                                       \
                     "sha256:3c01b3cdcff8d77cbafac9841bc48c41e5a5b38637231f1bde3d843cd198dbaf"),   \
        FDL_KF_CONST("modeling_sha256",                                                            \
                     "sha256:cf085792cb59e5bdf9b88a3d20bd353892289d054662a9c2b662221b97caefba"),   \
        FDL_KF_CONST("torch_commit", "cf30153c4c131c8164ee7798e5022d810682e2cb"),                  \
        FDL_KF_TRUE("deterministic_algorithms"), FDL_KF_FALSE("tf32_allowed"),                     \
        FDL_KF_INT("vocab", FDL_KILN_VOCAB_SIZE, FDL_KILN_VOCAB_SIZE, "expected %lld"),            \
        FDL_KF_INT_MIN("output_bytes", 1), FDL_KF_INT_MIN("memory_peak_bytes", 1), count,          \
        MEM("memory_high_events", layer), MEM("memory_max_events", layer),                         \
        MEM("memory_oom_events", layer), MEM("memory_oom_kill_events", layer),                     \
        MEM("memory_swap_bytes", layer), FDL_KF_SHA("input_token_ids_sha256"),                     \
        FDL_KF_SHA("logits_sha256"), FDL_KF_SHA("request_sha256"), __VA_ARGS__                     \
  }
#define HF_TAIL                                                                                    \
  FDL_KF_NONEMPTY("device"), FDL_KF_NONEMPTY("request_id"), FDL_KF_NONEMPTY("torch_hip_version"),  \
      FDL_KF_NONEMPTY("argmax_text"), FDL_KF_POSITIVE("duration_seconds"), FDL_KF_TOKEN("argmax"), \
      FDL_KF_RULE("top_tokens", top_tokens), FDL_KF_RULE(NULL, argmax_margin),                     \
      FDL_KF_CANDIDATES("candidate_tokens", &CANDIDATES[0], &CANDIDATES[1]),                       \
      FDL_KF_RULE(NULL, distinct)
#define HF_KEYS                                                                                    \
  "argmax", "argmax_text", "attention_implementation", "candidate_tokens", "configuration_sha256", \
      "deterministic_algorithms", "device", "dtype", "duration_seconds", "input_token_count",      \
      "input_token_ids_sha256", "linear_attention_implementation", "logits_sha256",                \
      "memory_high_events", "memory_max_events", "memory_oom_events", "memory_oom_kill_events",    \
      "memory_peak_bytes", "memory_swap_bytes", "modeling_sha256", "output_bytes", "request_id",   \
      "request_sha256", "tf32_allowed", "top_logit_margin", "top_tokens", "torch_commit",          \
      "torch_hip_version", "torch_version", "transformers_version", "vocab"
static const fdl_schema_field HF_ORACLE_F[] = HF_F(
    0, FDL_KF_INT("input_token_count", 1, FDL_KILN_MAX_INPUT, "expected an integer in %lld..%lld"),
    HF_TAIL);
static const fdl_schema_field HF_LAYER_F[] = HF_F(
    1,
    FDL_KF_INT("input_token_count", FDL_KILN_INPUT_TOKENS, FDL_KILN_INPUT_TOKENS, "expected %lld"),
    FDL_KF_SHA("layer_last_rows_sha256"), HF_TAIL,
    FDL_KF_INT("boundary_count", FDL_ATTR_LAYER_BOUNDARIES, FDL_ATTR_LAYER_BOUNDARIES,
               "expected %lld"),
    FDL_KF_INT("hidden_size", FDL_KILN_HIDDEN_SIZE, FDL_KILN_HIDDEN_SIZE, "expected %lld"),
    FDL_KF_RULE("boundary_names", boundary_names));
static const fdl_schema_obj HF_ORACLE = FDL_SCHEMA_CLOSED(HF_ORACLE_F, HF_KEYS);
const fdl_schema_obj fdl_kiln_schema_hf_layer =
    FDL_SCHEMA_CLOSED(HF_LAYER_F, HF_KEYS, "boundary_count", "boundary_names", "hidden_size",
                      "layer_last_rows_sha256");

static const fdl_schema_obj VERDICT =
    FDL_SCHEMA_KEYS("argmax_candidate", "argmax_token_id", "candidate_attribution_complete");
static const fdl_schema_field ORACLE_ARGMAX_F[] = {FDL_KF_TOKEN("argmax")};
static const fdl_schema_field ORACLE_SHAS_F[] = {FDL_KF_SHA("logits_sha256"),
                                                 FDL_KF_SHA("request_sha256")};
static const fdl_schema_obj ORACLE_ARGMAX = FDL_SCHEMA_OPEN(ORACLE_ARGMAX_F),
                            ORACLE_SHAS = FDL_SCHEMA_OPEN(ORACLE_SHAS_F);

fdl_status fdl_kiln_check_oracle_v1(const fdl_kiln_ctx *c, const json_t *doc) {
  const json_t *o = json_object_get(doc, "oracle"), *v = json_object_get(doc, "verdict");
  if (!json_is_object(o)) return fdl_kiln_bad(c, "$.oracle", "expected an object");
  fdl_status s = fdl_kiln_walk(c, v, "$.verdict", &VERDICT);
  if (s != FDL_OK || (s = fdl_kiln_walk(c, o, "$.oracle", &ORACLE_ARGMAX)) != FDL_OK) return s;
  const json_t *am = json_object_get(o, "argmax");
  if (!json_equal(json_object_get(v, "argmax_token_id"), am))
    return fdl_kiln_bad(c, "$.verdict.argmax_token_id", "expected oracle.argmax %lld",
                        (long long)json_integer_value(am));
  const json_t *ct = json_object_get(o, "candidate_tokens");
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return fdl_kiln_bad(c, "$.oracle.candidate_tokens", "expected 2 candidates");
  const char *winner = NULL;
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    if (json_integer_value(json_object_get(e, "token_id")) == json_integer_value(am))
      winner = json_string_value(json_object_get(e, "engine"));
  }
  const json_t *ac = json_object_get(v, "argmax_candidate");
  if (winner ? !fdl_kiln_str_eq(ac, winner) : !json_is_null(ac))
    return fdl_kiln_bad(c, "$.verdict.argmax_candidate",
                        "expected %s%s%s (the candidate whose token is the oracle argmax)",
                        winner ? "\"" : "", winner ? winner : "null", winner ? "\"" : "");
  if (!json_is_boolean(json_object_get(v, "candidate_attribution_complete")))
    return fdl_kiln_bad(c, "$.verdict.candidate_attribution_complete", "expected a bool");
  if ((s = fdl_kiln_walk(c, o, "$.oracle", &ORACLE_SHAS)) != FDL_OK) return s;
  const json_t *rs = json_object_get(json_object_get(doc, "request"), "sha256");
  if (!json_equal(rs, json_object_get(o, "request_sha256")))
    return fdl_kiln_bad(c, "$.oracle.request_sha256", "expected request.sha256");
  return FDL_OK;
}

/* ---- the v2 oracle (§14.1) ------------------------------------------------------------------- */

void fdl_kiln_same_python(fdl_schema_run *r, const fdl_schema_field *f, const json_t *doc,
                          const char *path) {
  (void)f, (void)path;
  if (!json_equal(json_object_get(json_object_get(doc, "model_fingerprint"), "python_sha256"),
                  json_object_get(json_object_get(doc, "implementation"), "python_sha256")))
    fdl_schema_bad(r, "$.model_fingerprint.python_sha256",
                   "expected $.implementation.python_sha256");
}

/* The oracle answers the request the record names. */
static void oracle_request(fdl_schema_run *r, const fdl_schema_field *f, const json_t *doc,
                           const char *path) {
  (void)f, (void)path;
  const json_t *o = json_object_get(doc, "oracle"), *rq = json_object_get(doc, "request");
  if (!json_equal(json_object_get(o, "request_id"), json_object_get(rq, "id")))
    fdl_schema_bad(r, "$.oracle.request_id", "expected $.request.id");
  else if (!json_equal(json_object_get(o, "request_sha256"), json_object_get(rq, "sha256")))
    fdl_schema_bad(r, "$.oracle.request_sha256", "expected $.request.sha256");
}

static void artifact_bytes(fdl_schema_run *r, const fdl_schema_field *f, const json_t *doc,
                           const char *path) {
  (void)f, (void)path;
  if (!json_equal(json_object_get(json_object_get(doc, "reference_artifact"), "bytes"),
                  json_object_get(json_object_get(doc, "oracle"), "output_bytes")))
    fdl_schema_bad(r, "$.reference_artifact.bytes", "expected $.oracle.output_bytes");
}

/* §9's verdict, rebuilt and compared exactly. */
static void verdict(fdl_schema_run *r, const fdl_schema_field *f, const json_t *doc,
                    const char *path) {
  (void)f, (void)path;
  const json_t *o = json_object_get(doc, "oracle"), *v = json_object_get(doc, "verdict"),
               *am = json_object_get(o, "argmax"), *cands = json_object_get(o, "candidate_tokens");
  const char *match = "neither";
  size_t nmatch = 0;
  for (size_t i = 0; i < 2; i++)
    if (json_equal(json_object_get(json_array_get(cands, i), "token_id"), am)) {
      nmatch++;
      match = json_string_value(json_object_get(json_array_get(cands, i), "engine"));
    }
  if (nmatch != 1) match = "neither";
  bool complete = strcmp(match, "neither") != 0;
  const json_t *cc = json_object_get(v, "candidate_attribution_complete");
  if (!fdl_kiln_str_eq(json_object_get(v, "argmax_candidate"), match))
    fdl_schema_bad(r, "$.verdict.argmax_candidate",
                   "expected \"%s\" (the candidate whose token is the oracle argmax)", match);
  else if (!json_equal(json_object_get(v, "argmax_token_id"), am))
    fdl_schema_bad(r, "$.verdict.argmax_token_id", "expected $.oracle.argmax %lld",
                   (long long)json_integer_value(am));
  else if (!json_is_boolean(cc) || json_is_true(cc) != complete)
    fdl_schema_bad(r, "$.verdict.candidate_attribution_complete", "expected %s",
                   complete ? "true" : "false");
}

static const fdl_schema_field IMPLEMENTATION_F[] = {FDL_KF_SHA("hf_worker_sha256"),
                                                    FDL_KF_SHA("process_runner_sha256"),
                                                    FDL_KF_SHA("python_sha256")};
static const fdl_schema_obj IMPLEMENTATION = FDL_SCHEMA_CLOSED(
    IMPLEMENTATION_F, "hf_worker_sha256", "process_runner_sha256", "python_sha256");
static const fdl_schema_field REQUEST_F[] = {FDL_KF_REL("contract_path"), FDL_KF_SHA("sha256"),
                                             FDL_KF_OBJ("source", &fdl_kiln_schema_source_pair),
                                             FDL_KF_NONEMPTY("id")};
static const fdl_schema_obj REQUEST =
    FDL_SCHEMA_CLOSED(REQUEST_F, "contract_path", "id", "sha256", "source");
static const fdl_schema_field ARTIFACT_F[] = {FDL_KF_CONST("location", "local_ignored"),
                                              FDL_KF_SHA("sha256")};
static const fdl_schema_obj ARTIFACT = FDL_SCHEMA_CLOSED(ARTIFACT_F, "bytes", "location", "sha256");
static const fdl_schema_field ORACLE_V2_F[] = {
    FDL_KF_OBJ(NULL, &fdl_kiln_schema_v2_common),
    FDL_KF_OBJ("implementation", &IMPLEMENTATION),
    FDL_KF_RULE(NULL, fdl_kiln_same_python),
    FDL_KF_OBJ("request", &REQUEST),
    FDL_KF_OBJ("containment", &fdl_kiln_schema_arm_service),
    FDL_KF_OBJ("oracle", &HF_ORACLE),
    FDL_KF_RULE(NULL, oracle_request),
    FDL_KF_OBJ("reference_artifact", &ARTIFACT),
    FDL_KF_RULE(NULL, artifact_bytes),
    FDL_KF_OBJ("verdict", &VERDICT),
    FDL_KF_RULE(NULL, verdict)};
const fdl_schema_obj fdl_kiln_schema_oracle_v2 =
    FDL_SCHEMA_CLOSED(ORACLE_V2_F, "schema", "result_sha256", "created_at_utc", "duration_seconds",
                      "source", "implementation", "request", "model_identity", "model_fingerprint",
                      "containment", "oracle", "reference_artifact", "verdict");
