/* kiln_path.c - Kiln's path-attribution results v1 and v2 (KILN-ATTRIBUTION.md §12, §14.2): the
 * four worker paths, their comparisons, the graph counters and the attribution recomputed. */
#include <stdio.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"

fdl_status fdl_kiln_check_observed(const fdl_kiln_ctx *c, const char *path, const json_t *obs) {
  fdl_status s = fdl_kiln_want_tokens(c, path, obs, 4, 4);
  if (s != FDL_OK) return s;
  static const json_int_t prefix[3] = FDL_KILN_CONTINUATION;
  for (size_t i = 0; i < 3; i++)
    if (json_integer_value(json_array_get(obs, i)) != prefix[i])
      return fdl_kiln_bad(c, path, "expected to start with the continuation [%lld,%lld,%lld]",
                          (long long)prefix[0], (long long)prefix[1], (long long)prefix[2]);
  return FDL_OK;
}

fdl_status fdl_kiln_check_comparison(const fdl_kiln_ctx *c, const char *path, const json_t *cmp,
                                     json_int_t hf_argmax) {
  fdl_status s =
      FDL_CLOSED(c, path, cmp, "argmax", "argmax_equal", "candidate_tokens", "cosine_similarity",
                 "logits_sha256", "max_abs_error", "mean_abs_error", "top10_overlap");
  if (s != FDL_OK) return s;
  char p[128];
  snprintf(p, sizeof p, "%s.argmax", path);
  const json_t *am = json_object_get(cmp, "argmax");
  if ((s = fdl_kiln_want_token(c, p, am)) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.argmax_equal", path);
  const json_t *ae = json_object_get(cmp, "argmax_equal");
  if (!json_is_boolean(ae)) return fdl_kiln_bad(c, p, "expected a bool");
  if (json_is_true(ae) != (json_integer_value(am) == hf_argmax))
    return fdl_kiln_bad(c, p, "is %s, but argmax %lld %s hf_argmax %lld",
                        json_is_true(ae) ? "true" : "false", (long long)json_integer_value(am),
                        json_integer_value(am) == hf_argmax ? "==" : "!=", (long long)hf_argmax);
  snprintf(p, sizeof p, "%s.top10_overlap", path);
  const json_t *t = json_object_get(cmp, "top10_overlap");
  if (!fdl_kiln_is_int(t) || json_integer_value(t) < 0 || json_integer_value(t) > 10)
    return fdl_kiln_bad(c, p, "expected an integer in 0..10");
  snprintf(p, sizeof p, "%s.logits_sha256", path);
  if ((s = fdl_kiln_want_sha(c, p, json_object_get(cmp, "logits_sha256"))) != FDL_OK) return s;
  const json_t *cs = json_object_get(cmp, "cosine_similarity");
  snprintf(p, sizeof p, "%s.cosine_similarity", path);
  if (!fdl_kiln_finite_num(cs) || fdl_kiln_num(cs) < -1 || fdl_kiln_num(cs) > 1)
    return fdl_kiln_bad(c, p, "expected a finite number in [-1, 1]");
  const json_t *mx = json_object_get(cmp, "max_abs_error"),
               *mn = json_object_get(cmp, "mean_abs_error");
  snprintf(p, sizeof p, "%s.mean_abs_error", path);
  if (!fdl_kiln_finite_num(mx) || !fdl_kiln_finite_num(mn) || fdl_kiln_num(mn) < 0 ||
      fdl_kiln_num(mn) > fdl_kiln_num(mx))
    return fdl_kiln_bad(c, p, "expected finite numbers with 0 <= mean_abs_error <= max_abs_error");
  const json_t *ct = json_object_get(cmp, "candidate_tokens");
  snprintf(p, sizeof p, "%s.candidate_tokens", path);
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return fdl_kiln_bad(c, p, "expected exactly 2 candidates");
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    snprintf(p, sizeof p, "%s.candidate_tokens[%zu]", path, i);
    if ((s = FDL_CLOSED(c, p, e, "logit", "rank", "token_id")) != FDL_OK) return s;
    const json_t *rk = json_object_get(e, "rank");
    if (!fdl_kiln_finite_num(json_object_get(e, "logit")))
      return fdl_kiln_bad(c, p, "logit: expected a finite number");
    if (!fdl_kiln_is_int(rk) || json_integer_value(rk) < 1 ||
        json_integer_value(rk) > (json_int_t)FDL_KILN_VOCAB_SIZE)
      return fdl_kiln_bad(c, p, "rank: expected an integer in 1..%u", FDL_KILN_VOCAB_SIZE);
    if (!fdl_kiln_token_ok(json_object_get(e, "token_id")))
      return fdl_kiln_bad(c, p, "token_id: expected a token id");
  }
  return FDL_OK;
}

/* The two full and two greedy worker paths of a v1 or v2 path worker (§14.2). */
static fdl_status check_worker_paths(const fdl_kiln_ctx *c, const json_t *w, json_int_t hf) {
  static const char *const full[] = {"eager_full", "graph_full"};
  static const char *const greedy[] = {"eager_greedy", "graph_greedy"};
  char p[96];
  fdl_status s;
  for (size_t i = 0; i < 2; i++) {
    const json_t *f = json_object_get(w, full[i]);
    snprintf(p, sizeof p, "$.worker.%s", full[i]);
    if ((s = FDL_CLOSED(c, p, f, "comparison", "observed_next_tokens")) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.worker.%s.observed_next_tokens", full[i]);
    if ((s = fdl_kiln_check_observed(c, p, json_object_get(f, "observed_next_tokens"))) != FDL_OK)
      return s;
    snprintf(p, sizeof p, "$.worker.%s.comparison", full[i]);
    if ((s = fdl_kiln_check_comparison(c, p, json_object_get(f, "comparison"), hf)) != FDL_OK)
      return s;
    const json_t *g = json_object_get(w, greedy[i]);
    snprintf(p, sizeof p, "$.worker.%s", greedy[i]);
    if ((s = FDL_CLOSED(c, p, g, "final_token_matches_reference", "observed_next_tokens")) !=
        FDL_OK)
      return s;
    snprintf(p, sizeof p, "$.worker.%s.observed_next_tokens", greedy[i]);
    const json_t *obs = json_object_get(g, "observed_next_tokens");
    if ((s = fdl_kiln_check_observed(c, p, obs)) != FDL_OK) return s;
    const json_t *m = json_object_get(g, "final_token_matches_reference");
    snprintf(p, sizeof p, "$.worker.%s.final_token_matches_reference", greedy[i]);
    if (!json_is_boolean(m)) return fdl_kiln_bad(c, p, "expected a bool");
    bool want = json_integer_value(json_array_get(obs, 3)) == hf;
    if (json_is_true(m) != want)
      return fdl_kiln_bad(c, p, "is %s, but observed_next_tokens[3] %s hf_argmax",
                          json_is_true(m) ? "true" : "false", want ? "==" : "!=");
  }
  return FDL_OK;
}

static fdl_status check_label(const fdl_kiln_ctx *c, const json_t *w);

fdl_status fdl_kiln_check_path_v1(const fdl_kiln_ctx *c, const json_t *doc) {
  const json_t *w = json_object_get(doc, "worker");
  if (!json_is_object(w)) return fdl_kiln_bad(c, "$.worker", "expected an object");
  if (!fdl_kiln_str_eq(json_object_get(w, "schema"), "kiln.rocm-hf-path-attribution.v1"))
    return fdl_kiln_bad(c, "$.worker.schema", "expected \"kiln.rocm-hf-path-attribution.v1\"");
  const json_t *hf = json_object_get(w, "hf_argmax");
  fdl_status s = fdl_kiln_want_token(c, "$.worker.hf_argmax", hf);
  if (s != FDL_OK) return s;
  if ((s = check_worker_paths(c, w, json_integer_value(hf))) != FDL_OK) return s;
  if ((s = check_label(c, w)) != FDL_OK) return s;
  if ((s = fdl_kiln_want_sha(c, "$.worker.input_token_ids_sha256",
                             json_object_get(w, "input_token_ids_sha256"))) != FDL_OK)
    return s;
  if (!fdl_kiln_nonempty_str(json_object_get(w, "request_id")))
    return fdl_kiln_bad(c, "$.worker.request_id", "expected a nonempty string");
  return FDL_OK;
}

/* Kiln's graph-replay counters (§12): ints (not bools) but `enabled`, which is true. */
fdl_status fdl_kiln_check_graph(const fdl_kiln_ctx *c, const char *path, const json_t *g) {
  static const char *const keys[] = {
      "cache_admission_successes", "capture_attempts", "capture_failures",
      "capture_successes",         "fallbacks",        "replay_attempts",
      "replay_failures",           "replay_successes"};
  fdl_status s = FDL_CLOSED(c, path, g, "enabled", "cache_admission_successes", "capture_attempts",
                            "capture_failures", "capture_successes", "fallbacks", "replay_attempts",
                            "replay_failures", "replay_successes");
  if (s != FDL_OK) return s;
  char p[128];
  json_int_t v[8];
  for (size_t i = 0; i < 8; i++) {
    const json_t *x = json_object_get(g, keys[i]);
    snprintf(p, sizeof p, "%s.%s", path, keys[i]);
    if (!fdl_kiln_is_int(x) || json_integer_value(x) < 0)
      return fdl_kiln_bad(c, p, "expected an integer >= 0");
    v[i] = json_integer_value(x);
  }
  snprintf(p, sizeof p, "%s.enabled", path);
  if (!json_is_true(json_object_get(g, "enabled"))) return fdl_kiln_bad(c, p, "expected true");
  if (v[3] < 1)
    return fdl_kiln_bad(c, path, "capture_successes is %lld, expected >= 1", (long long)v[3]);
  if (v[0] < 1)
    return fdl_kiln_bad(c, path, "cache_admission_successes is %lld, expected >= 1",
                        (long long)v[0]);
  if (v[7] < 7 || v[5] < 7)
    return fdl_kiln_bad(
        c, path,
        "replay_successes %lld / replay_attempts %lld, expected >= 7 each (1 priming "
        "replay and 3 + 3 exact replays)",
        (long long)v[7], (long long)v[5]);
  if (v[1] < v[3] + v[2])
    return fdl_kiln_bad(
        c, path, "capture_attempts %lld, expected >= capture_successes + capture_failures (%lld)",
        (long long)v[1], (long long)(v[3] + v[2]));
  if (v[5] != v[7] + v[6])
    return fdl_kiln_bad(
        c, path, "replay_attempts %lld, expected == replay_successes + replay_failures (%lld)",
        (long long)v[5], (long long)(v[7] + v[6]));
  if (v[2] || v[6] || v[4])
    return fdl_kiln_bad(
        c, path, "capture_failures %lld, replay_failures %lld, fallbacks %lld: expected 0 each",
        (long long)v[2], (long long)v[6], (long long)v[4]);
  return FDL_OK;
}

const fdl_kiln_v2_path fdl_kiln_v2_paths[4] = {
    {"eager_full", "eager_full_logits", true},
    {"graph_full", "hip_graph_full_logits", true},
    {"eager_greedy", "eager_greedy_selection", false},
    {"graph_greedy", "hip_graph_greedy_selection", false},
};

/* worker.attribution recomputed from the four paths by §12's first-match precedence (v1 and
 * v2 share the paths and the labels): a resealed record cannot claim another verdict. */
static fdl_status check_label(const fdl_kiln_ctx *c, const json_t *w) {
  const char *label = FDL_KILN_LABEL_NONE;
  for (size_t i = 0; i < 4; i++) {
    const json_t *e = json_object_get(w, fdl_kiln_v2_paths[i].name);
    bool ok = fdl_kiln_v2_paths[i].full
                  ? json_is_true(json_object_get(json_object_get(e, "comparison"), "argmax_equal"))
                  : json_is_true(json_object_get(e, "final_token_matches_reference"));
    if (!ok) {
      label = fdl_kiln_v2_paths[i].label;
      break;
    }
  }
  if (!fdl_kiln_str_eq(json_object_get(w, "attribution"), label))
    return fdl_kiln_bad(c, "$.worker.attribution",
                        "expected \"%s\" (recomputed from the paths by the precedence of §12)",
                        label);
  return FDL_OK;
}

fdl_status fdl_kiln_check_path_v2(const fdl_kiln_ctx *c, const json_t *doc) {
  fdl_status s =
      FDL_CLOSED(c, "$", doc, "schema", "result_sha256", "created_at_utc", "duration_seconds",
                 "source", "binary", "implementation", "request", "model_identity",
                 "model_fingerprint", "oracle_reference", "containment", "worker");
  if (s != FDL_OK) return s;
  if ((s = fdl_kiln_walk(c, doc, "$", &fdl_kiln_schema_v2_common)) != FDL_OK ||
      (s = fdl_kiln_walk(c, doc, "$", &fdl_kiln_schema_binary_request)) != FDL_OK)
    return s;
  if ((s = FDL_DIGESTS(c, "$.implementation", json_object_get(doc, "implementation"),
                       "guarded_exec_sha256", "process_runner_sha256", "runner_sha256")) != FDL_OK)
    return s;
  const json_t *orf = json_object_get(doc, "oracle_reference");
  if ((s = FDL_CLOSED(c, "$.oracle_reference", orf, "bytes", "oracle_result_path",
                      "oracle_result_sha256", "raw_location", "raw_sha256")) != FDL_OK)
    return s;
  const json_t *by = json_object_get(orf, "bytes");
  if (!fdl_kiln_is_int(by) || json_integer_value(by) < 1)
    return fdl_kiln_bad(c, "$.oracle_reference.bytes", "expected an integer > 0");
  if ((s = fdl_kiln_want_rel_path(c, "$.oracle_reference.oracle_result_path",
                                  json_object_get(orf, "oracle_result_path"))) != FDL_OK ||
      (s = fdl_kiln_want_sha(c, "$.oracle_reference.oracle_result_sha256",
                             json_object_get(orf, "oracle_result_sha256"))) != FDL_OK ||
      (s = fdl_kiln_want_sha(c, "$.oracle_reference.raw_sha256",
                             json_object_get(orf, "raw_sha256"))) != FDL_OK)
    return s;
  if (!fdl_kiln_str_eq(json_object_get(orf, "raw_location"), "local_ignored"))
    return fdl_kiln_bad(c, "$.oracle_reference.raw_location", "expected \"local_ignored\"");
  if ((s = fdl_kiln_walk(c, json_object_get(doc, "containment"), "$.containment",
                         &fdl_kiln_schema_arm_process)) != FDL_OK)
    return s;
  const json_t *w = json_object_get(doc, "worker");
  if ((s = FDL_CLOSED(c, "$.worker", w, "schema", "attribution", "eager_full", "eager_greedy",
                      "graph", "graph_full", "graph_greedy", "hf_argmax", "input_token_count",
                      "input_token_ids_sha256", "kernel_policy", "request_id")) != FDL_OK)
    return s;
  if (!fdl_kiln_str_eq(json_object_get(w, "schema"), "kiln.rocm-hf-path-attribution.v2"))
    return fdl_kiln_bad(c, "$.worker.schema", "expected \"kiln.rocm-hf-path-attribution.v2\"");
  const json_t *hf = json_object_get(w, "hf_argmax");
  if ((s = fdl_kiln_want_token(c, "$.worker.hf_argmax", hf)) != FDL_OK) return s;
  if ((s = check_worker_paths(c, w, json_integer_value(hf))) != FDL_OK) return s;
  if ((s = fdl_kiln_check_graph(c, "$.worker.graph", json_object_get(w, "graph"))) != FDL_OK)
    return s;
  if ((s = check_label(c, w)) != FDL_OK) return s;
  if (!fdl_kiln_str_eq(json_object_get(w, "kernel_policy"), "qualified"))
    return fdl_kiln_bad(c, "$.worker.kernel_policy", "expected \"qualified\"");
  const json_t *cnt = json_object_get(w, "input_token_count");
  if (!fdl_kiln_is_int(cnt) || json_integer_value(cnt) != FDL_KILN_INPUT_TOKENS)
    return fdl_kiln_bad(c, "$.worker.input_token_count", "expected %d (prompt + continuation)",
                        FDL_KILN_INPUT_TOKENS);
  if ((s = fdl_kiln_want_sha(c, "$.worker.input_token_ids_sha256",
                             json_object_get(w, "input_token_ids_sha256"))) != FDL_OK)
    return s;
  if (!fdl_kiln_nonempty_str(json_object_get(w, "request_id")))
    return fdl_kiln_bad(c, "$.worker.request_id", "expected a nonempty string");
  return FDL_OK;
}
