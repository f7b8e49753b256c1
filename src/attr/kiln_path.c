/* kiln_path.c - Kiln's path-attribution results v1 and v2 (KILN-ATTRIBUTION.md §12, §14.2): the
 * four worker paths, their comparisons and the graph counters as tables; the argmax agreement,
 * the counters' sums and the attribution recomputed as C. */
#include <stdio.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"

/* 4 token ids starting with the continuation prefix. */
void fdl_kiln_observed(fdl_schema_run *r, const fdl_schema_field *f, const json_t *obs,
                       const char *path) {
  (void)f;
  static const json_int_t prefix[3] = FDL_KILN_CONTINUATION;
  static const fdl_schema_field four = FDL_KF_TOKENS(NULL, 4, 4);
  fdl_kiln_tokens_rule(r, &four, obs, path);
  for (size_t i = 0; i < 3 && !r->stop; i++)
    if (json_integer_value(json_array_get(obs, i)) != prefix[i])
      fdl_schema_bad(r, path, "expected to start with the continuation [%lld,%lld,%lld]",
                     (long long)prefix[0], (long long)prefix[1], (long long)prefix[2]);
}

/* ---- a comparison (§11) ---------------------------------------------------------------------- */

static const fdl_schema_field CMP_HEAD_F[] = {FDL_KF_TOKEN("argmax"), FDL_KF_BOOL("argmax_equal")};
static const fdl_schema_obj CMP_HEAD =
    FDL_SCHEMA_CLOSED(CMP_HEAD_F, "argmax", "argmax_equal", "candidate_tokens", "cosine_similarity",
                      "logits_sha256", "max_abs_error", "mean_abs_error", "top10_overlap");

static void mean_max(fdl_schema_run *r, const fdl_schema_field *f, const json_t *cmp,
                     const char *path) {
  (void)f;
  const json_t *mx = json_object_get(cmp, "max_abs_error"),
               *mn = json_object_get(cmp, "mean_abs_error");
  char p[FDL_SCHEMA_PATH_CAP];
  snprintf(p, sizeof p, "%s.mean_abs_error", path);
  if (!fdl_kiln_finite_num(mx) || !fdl_kiln_finite_num(mn) || json_number_value(mn) < 0 ||
      json_number_value(mn) > json_number_value(mx))
    fdl_schema_bad(r, p, "expected finite numbers with 0 <= mean_abs_error <= max_abs_error");
}
static const fdl_schema_field CANDIDATE_F[] = {FDL_KF_LOGIT, FDL_KF_RANK, FDL_KF_TOKEN_ID};
static const fdl_schema_obj CANDIDATE = FDL_SCHEMA_CLOSED(CANDIDATE_F, "logit", "rank", "token_id");
static const fdl_schema_field CANDIDATE_ITEM = FDL_KF_OBJ(NULL, &CANDIDATE);
static const fdl_schema_field CMP_TAIL_F[] = {
    FDL_KF_INT("top10_overlap", 0, 10, "expected an integer in %lld..%lld"),
    FDL_KF_SHA("logits_sha256"),
    FDL_KF("cosine_similarity", FDL_SCHEMA_NUM, FDL_SCHEMA_MIN | FDL_SCHEMA_MAX, -1, 1,
           "expected a finite number in [-1, 1]"),
    FDL_KF_RULE(NULL, mean_max),
    FDL_KF_ARR("candidate_tokens", 2, 2, &CANDIDATE_ITEM, "expected exactly 2 candidates")};
static const fdl_schema_obj CMP_TAIL = FDL_SCHEMA_OPEN(CMP_TAIL_F);

fdl_status fdl_kiln_check_comparison(const fdl_kiln_ctx *c, const char *path, const json_t *cmp,
                                     json_int_t hf_argmax) {
  fdl_status s = fdl_kiln_walk(c, cmp, path, &CMP_HEAD);
  if (s != FDL_OK) return s;
  const json_t *am = json_object_get(cmp, "argmax"), *ae = json_object_get(cmp, "argmax_equal");
  if (json_is_true(ae) != (json_integer_value(am) == hf_argmax)) {
    char p[128];
    snprintf(p, sizeof p, "%s.argmax_equal", path);
    return fdl_kiln_bad(c, p, "is %s, but argmax %lld %s hf_argmax %lld",
                        json_is_true(ae) ? "true" : "false", (long long)json_integer_value(am),
                        json_integer_value(am) == hf_argmax ? "==" : "!=", (long long)hf_argmax);
  }
  return fdl_kiln_walk(c, cmp, path, &CMP_TAIL);
}

/* ---- the worker paths (§12, §14.2) ----------------------------------------------------------- */

static const fdl_schema_field FULL_F[] = {FDL_KF_RULE("observed_next_tokens", fdl_kiln_observed)};
static const fdl_schema_obj FULL = FDL_SCHEMA_CLOSED(FULL_F, "comparison", "observed_next_tokens");
static const fdl_schema_field GREEDY_F[] = {FDL_KF_RULE("observed_next_tokens", fdl_kiln_observed),
                                            FDL_KF_BOOL("final_token_matches_reference")};
static const fdl_schema_obj GREEDY =
    FDL_SCHEMA_CLOSED(GREEDY_F, "final_token_matches_reference", "observed_next_tokens");

/* The two full and two greedy worker paths of a v1 or v2 path worker, against w's hf_argmax. */
static void worker_paths(fdl_schema_run *r, const fdl_schema_field *f, const json_t *w,
                         const char *path) {
  (void)f, (void)path;
  static const char *const full[] = {"eager_full", "graph_full"};
  static const char *const greedy[] = {"eager_greedy", "graph_greedy"};
  const fdl_kiln_ctx *c = r->user;
  json_int_t hf = json_integer_value(json_object_get(w, "hf_argmax"));
  char p[96];
  for (size_t i = 0; i < 2 && !r->stop; i++) {
    const json_t *e = json_object_get(w, full[i]);
    snprintf(p, sizeof p, "$.worker.%s", full[i]);
    fdl_schema_check(r, e, p, &FULL);
    snprintf(p, sizeof p, "$.worker.%s.comparison", full[i]);
    if (!r->stop)
      fdl_kiln_rule(r, fdl_kiln_check_comparison(c, p, json_object_get(e, "comparison"), hf));
    const json_t *g = json_object_get(w, greedy[i]);
    snprintf(p, sizeof p, "$.worker.%s", greedy[i]);
    fdl_schema_check(r, g, p, &GREEDY);
    if (r->stop) return;
    const json_t *m = json_object_get(g, "final_token_matches_reference");
    bool want =
        json_integer_value(json_array_get(json_object_get(g, "observed_next_tokens"), 3)) == hf;
    snprintf(p, sizeof p, "$.worker.%s.final_token_matches_reference", greedy[i]);
    if (json_is_true(m) != want)
      fdl_schema_bad(r, p, "is %s, but observed_next_tokens[3] %s hf_argmax",
                     json_is_true(m) ? "true" : "false", want ? "==" : "!=");
  }
}

/* ---- the graph counters (§12) ---------------------------------------------------------------- */

/* Kiln's graph-replay counters: ints (not bools) but `enabled`, which is true. */
static void graph_sums(fdl_schema_run *r, const fdl_schema_field *f, const json_t *g,
                       const char *path) {
  (void)f;
  static const char *const keys[] = {
      "cache_admission_successes", "capture_attempts", "capture_failures",
      "capture_successes",         "fallbacks",        "replay_attempts",
      "replay_failures",           "replay_successes"};
  json_int_t v[8];
  for (size_t i = 0; i < 8; i++) v[i] = json_integer_value(json_object_get(g, keys[i]));
  if (v[3] < 1)
    fdl_schema_bad(r, path, "capture_successes is %lld, expected >= 1", (long long)v[3]);
  else if (v[0] < 1)
    fdl_schema_bad(r, path, "cache_admission_successes is %lld, expected >= 1", (long long)v[0]);
  else if (v[7] < 7 || v[5] < 7)
    fdl_schema_bad(r, path,
                   "replay_successes %lld / replay_attempts %lld, expected >= 7 each (1 priming "
                   "replay and 3 + 3 exact replays)",
                   (long long)v[7], (long long)v[5]);
  else if (v[1] < v[3] + v[2])
    fdl_schema_bad(r, path,
                   "capture_attempts %lld, expected >= capture_successes + capture_failures (%lld)",
                   (long long)v[1], (long long)(v[3] + v[2]));
  else if (v[5] != v[7] + v[6])
    fdl_schema_bad(r, path,
                   "replay_attempts %lld, expected == replay_successes + replay_failures (%lld)",
                   (long long)v[5], (long long)(v[7] + v[6]));
  else if (v[2] || v[6] || v[4])
    fdl_schema_bad(r, path,
                   "capture_failures %lld, replay_failures %lld, fallbacks %lld: expected 0 each",
                   (long long)v[2], (long long)v[6], (long long)v[4]);
}
static const fdl_schema_field GRAPH_F[] = {FDL_KF_INT_MIN("cache_admission_successes", 0),
                                           FDL_KF_INT_MIN("capture_attempts", 0),
                                           FDL_KF_INT_MIN("capture_failures", 0),
                                           FDL_KF_INT_MIN("capture_successes", 0),
                                           FDL_KF_INT_MIN("fallbacks", 0),
                                           FDL_KF_INT_MIN("replay_attempts", 0),
                                           FDL_KF_INT_MIN("replay_failures", 0),
                                           FDL_KF_INT_MIN("replay_successes", 0),
                                           FDL_KF_TRUE("enabled"),
                                           FDL_KF_RULE(NULL, graph_sums)};
const fdl_schema_obj fdl_kiln_schema_graph = FDL_SCHEMA_CLOSED(
    GRAPH_F, "enabled", "cache_admission_successes", "capture_attempts", "capture_failures",
    "capture_successes", "fallbacks", "replay_attempts", "replay_failures", "replay_successes");

/* ---- the results ----------------------------------------------------------------------------- */

const fdl_kiln_v2_path fdl_kiln_v2_paths[4] = {
    {"eager_full", "eager_full_logits", true},
    {"graph_full", "hip_graph_full_logits", true},
    {"eager_greedy", "eager_greedy_selection", false},
    {"graph_greedy", "hip_graph_greedy_selection", false},
};

/* worker.attribution recomputed from the four paths by §12's first-match precedence (v1 and
 * v2 share the paths and the labels): a resealed record cannot claim another verdict. */
static void label(fdl_schema_run *r, const fdl_schema_field *f, const json_t *w, const char *path) {
  (void)f, (void)path;
  const char *want = FDL_KILN_LABEL_NONE;
  for (size_t i = 0; i < 4; i++) {
    const json_t *e = json_object_get(w, fdl_kiln_v2_paths[i].name);
    bool ok = fdl_kiln_v2_paths[i].full
                  ? json_is_true(json_object_get(json_object_get(e, "comparison"), "argmax_equal"))
                  : json_is_true(json_object_get(e, "final_token_matches_reference"));
    if (!ok) {
      want = fdl_kiln_v2_paths[i].label;
      break;
    }
  }
  if (!fdl_kiln_str_eq(json_object_get(w, "attribution"), want))
    fdl_schema_bad(r, "$.worker.attribution",
                   "expected \"%s\" (recomputed from the paths by the precedence of §12)", want);
}

static const fdl_schema_field WORKER_V1_F[] = {
    FDL_KF_CONST("schema", "kiln.rocm-hf-path-attribution.v1"),
    FDL_KF_TOKEN("hf_argmax"),
    FDL_KF_RULE(NULL, worker_paths),
    FDL_KF_RULE(NULL, label),
    FDL_KF_SHA("input_token_ids_sha256"),
    FDL_KF_NONEMPTY("request_id")};
static const fdl_schema_obj WORKER_V1 = FDL_SCHEMA_OPEN(WORKER_V1_F);
static const fdl_schema_field PATH_V1_F[] = {FDL_KF_OBJ("worker", &WORKER_V1)};
const fdl_schema_obj fdl_kiln_schema_path_v1 = FDL_SCHEMA_OPEN(PATH_V1_F);

static const fdl_schema_field IMPLEMENTATION_F[] = {FDL_KF_SHA("guarded_exec_sha256"),
                                                    FDL_KF_SHA("process_runner_sha256"),
                                                    FDL_KF_SHA("runner_sha256")};
static const fdl_schema_obj IMPLEMENTATION = FDL_SCHEMA_CLOSED(
    IMPLEMENTATION_F, "guarded_exec_sha256", "process_runner_sha256", "runner_sha256");
static const fdl_schema_field ORACLE_REF_F[] = {
    FDL_KF("bytes", FDL_SCHEMA_INT, 0, 1, 0, "expected an integer > 0"),
    FDL_KF_REL("oracle_result_path"), FDL_KF_SHA("oracle_result_sha256"), FDL_KF_SHA("raw_sha256"),
    FDL_KF_CONST("raw_location", "local_ignored")};
static const fdl_schema_obj ORACLE_REF =
    FDL_SCHEMA_CLOSED(ORACLE_REF_F, "bytes", "oracle_result_path", "oracle_result_sha256",
                      "raw_location", "raw_sha256");
static const fdl_schema_field WORKER_V2_F[] = {
    FDL_KF_CONST("schema", "kiln.rocm-hf-path-attribution.v2"),
    FDL_KF_TOKEN("hf_argmax"),
    FDL_KF_RULE(NULL, worker_paths),
    FDL_KF_OBJ("graph", &fdl_kiln_schema_graph),
    FDL_KF_RULE(NULL, label),
    FDL_KF_CONST("kernel_policy", "qualified"),
    FDL_KF_INT("input_token_count", FDL_KILN_INPUT_TOKENS, FDL_KILN_INPUT_TOKENS,
               "expected %lld (prompt + continuation)"),
    FDL_KF_SHA("input_token_ids_sha256"),
    FDL_KF_NONEMPTY("request_id")};
static const fdl_schema_obj WORKER_V2 =
    FDL_SCHEMA_CLOSED(WORKER_V2_F, "schema", "attribution", "eager_full", "eager_greedy", "graph",
                      "graph_full", "graph_greedy", "hf_argmax", "input_token_count",
                      "input_token_ids_sha256", "kernel_policy", "request_id");
static const fdl_schema_field PATH_V2_F[] = {
    FDL_KF_OBJ(NULL, &fdl_kiln_schema_v2_common),
    FDL_KF_OBJ(NULL, &fdl_kiln_schema_binary_request),
    FDL_KF_OBJ("implementation", &IMPLEMENTATION),
    FDL_KF_OBJ("oracle_reference", &ORACLE_REF),
    FDL_KF_OBJ("containment", &fdl_kiln_schema_arm_process),
    FDL_KF_OBJ("worker", &WORKER_V2)};
const fdl_schema_obj fdl_kiln_schema_path_v2 =
    FDL_SCHEMA_CLOSED(PATH_V2_F, "schema", "result_sha256", "created_at_utc", "duration_seconds",
                      "source", "binary", "implementation", "request", "model_identity",
                      "model_fingerprint", "oracle_reference", "containment", "worker");
