/* kiln_oracle.c - Kiln's HF next-token oracle results v1 and v2 (KILN-ATTRIBUTION.md §8, §9,
 * §14.1): the HF evidence invariants and the verdict rebuilt. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "fidelis/attr.h"

/* HF evidence (§8; layer mode adds the four boundary keys, §14.3): closed keys, the pinned
 * constants, the top-10 and candidate invariants, the margin recomputed. */
fdl_status fdl_kiln_check_hf_evidence(const fdl_kiln_ctx *c, const char *path, const json_t *ev,
                                      bool layer) {
  static const char *const keys[] = {
      "argmax", "argmax_text", "attention_implementation", "candidate_tokens",
      "configuration_sha256", "deterministic_algorithms", "device", "dtype", "duration_seconds",
      "input_token_count", "input_token_ids_sha256", "linear_attention_implementation",
      "logits_sha256", "memory_high_events", "memory_max_events", "memory_oom_events",
      "memory_oom_kill_events", "memory_peak_bytes", "memory_swap_bytes", "modeling_sha256",
      "output_bytes", "request_id", "request_sha256", "tf32_allowed", "top_logit_margin",
      "top_tokens", "torch_commit", "torch_hip_version", "torch_version", "transformers_version",
      "vocab",
      /* layer mode */
      "boundary_count", "boundary_names", "hidden_size", "layer_last_rows_sha256"};
  fdl_status s = fdl_kiln_closed(c, path, ev, keys, layer ? 35 : 31);
  if (s != FDL_OK) return s;
  char p[160];
  static const char *const consts[][2] = {
      {"attention_implementation", "eager"},
      {"dtype", "bfloat16"},
      {"linear_attention_implementation", "transformers_torch_fallback"},
      {"torch_version", "2.13.0+rocm7.2"},
      {"transformers_version", "5.13.1"},
      {"configuration_sha256",
       "sha256:3c01b3cdcff8d77cbafac9841bc48c41e5a5b38637231f1bde3d843cd198dbaf"},
      {"modeling_sha256",
       "sha256:cf085792cb59e5bdf9b88a3d20bd353892289d054662a9c2b662221b97caefba"},
      {"torch_commit", "cf30153c4c131c8164ee7798e5022d810682e2cb"}};
  for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++)
    if ((s = fdl_kiln_want_const_str(c, path, ev, consts[i][0], consts[i][1])) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.deterministic_algorithms", path);
  if (!json_is_true(json_object_get(ev, "deterministic_algorithms")))
    return fdl_kiln_bad(c, p, "expected true");
  snprintf(p, sizeof p, "%s.tf32_allowed", path);
  if (!json_is_false(json_object_get(ev, "tf32_allowed")))
    return fdl_kiln_bad(c, p, "expected false");
  if ((s = fdl_kiln_want_int_in(c, path, ev, "vocab", FDL_KILN_VOCAB_SIZE, FDL_KILN_VOCAB_SIZE)) ||
      (s = fdl_kiln_want_int_in(c, path, ev, "output_bytes", 1, INT64_MAX)) ||
      (s = fdl_kiln_want_int_in(c, path, ev, "memory_peak_bytes", 1, INT64_MAX)) ||
      (s = fdl_kiln_want_int_in(c, path, ev, "input_token_count", layer ? FDL_KILN_INPUT_TOKENS : 1,
                                layer ? FDL_KILN_INPUT_TOKENS : FDL_KILN_MAX_INPUT)))
    return s;
  /* §14.3 wants the memory counters 0 in a layer result; §9 leaves them to the oracle's runner. */
  static const char *const mem[] = {"memory_high_events", "memory_max_events", "memory_oom_events",
                                    "memory_oom_kill_events", "memory_swap_bytes"};
  for (size_t i = 0; i < 5; i++)
    if ((s = fdl_kiln_want_int_in(c, path, ev, mem[i], 0, layer ? 0 : INT64_MAX)) != FDL_OK)
      return s;
  static const char *const shas[] = {"input_token_ids_sha256", "logits_sha256", "request_sha256",
                                     "layer_last_rows_sha256"};
  for (size_t i = 0; i < (layer ? 4u : 3u); i++) {
    snprintf(p, sizeof p, "%s.%s", path, shas[i]);
    if ((s = fdl_kiln_want_sha(c, p, json_object_get(ev, shas[i]))) != FDL_OK) return s;
  }
  static const char *const strs[] = {"device", "request_id", "torch_hip_version", "argmax_text"};
  for (size_t i = 0; i < 4; i++)
    if (!fdl_kiln_nonempty_str(json_object_get(ev, strs[i]))) {
      snprintf(p, sizeof p, "%s.%s", path, strs[i]);
      return fdl_kiln_bad(c, p, "expected a nonempty string");
    }
  snprintf(p, sizeof p, "%s.duration_seconds", path);
  if ((s = fdl_kiln_want_positive(c, p, json_object_get(ev, "duration_seconds"))) != FDL_OK)
    return s;
  const json_t *am = json_object_get(ev, "argmax");
  snprintf(p, sizeof p, "%s.argmax", path);
  if ((s = fdl_kiln_want_token(c, p, am)) != FDL_OK) return s;
  const json_t *top = json_object_get(ev, "top_tokens");
  snprintf(p, sizeof p, "%s.top_tokens", path);
  if (!json_is_array(top) || json_array_size(top) != 10)
    return fdl_kiln_bad(c, p, "expected exactly 10 entries");
  for (size_t i = 0; i < 10; i++) {
    const json_t *e = json_array_get(top, i);
    snprintf(p, sizeof p, "%s.top_tokens[%zu]", path, i);
    if ((s = FDL_CLOSED(c, p, e, "logit", "text", "token_id")) != FDL_OK) return s;
    if (!fdl_kiln_finite_num(json_object_get(e, "logit")))
      return fdl_kiln_bad(c, p, "logit: expected a finite number");
    if (!json_is_string(json_object_get(e, "text")))
      return fdl_kiln_bad(c, p, "text: expected a string");
    if (!fdl_kiln_token_ok(json_object_get(e, "token_id")))
      return fdl_kiln_bad(c, p, "token_id: expected a token id");
    if (i && fdl_kiln_num(json_object_get(e, "logit")) >
                 fdl_kiln_num(json_object_get(json_array_get(top, i - 1), "logit")))
      return fdl_kiln_bad(c, p, "logit: expected no larger than top_tokens[%zu]'s (sorted)", i - 1);
    for (size_t j = 0; j < i; j++)
      if (json_equal(json_object_get(e, "token_id"),
                     json_object_get(json_array_get(top, j), "token_id")))
        return fdl_kiln_bad(c, p, "token_id: repeats top_tokens[%zu], expected 10 distinct ids", j);
  }
  const json_t *t0 = json_array_get(top, 0);
  snprintf(p, sizeof p, "%s.top_tokens[0].token_id", path);
  if (!json_equal(json_object_get(t0, "token_id"), am))
    return fdl_kiln_bad(c, p, "expected the argmax");
  snprintf(p, sizeof p, "%s.argmax_text", path);
  if (!json_equal(json_object_get(t0, "text"), json_object_get(ev, "argmax_text")))
    return fdl_kiln_bad(c, p, "expected top_tokens[0].text");
  double margin = fdl_kiln_num(json_object_get(t0, "logit")) -
                  fdl_kiln_num(json_object_get(json_array_get(top, 1), "logit"));
  const json_t *mg = json_object_get(ev, "top_logit_margin");
  snprintf(p, sizeof p, "%s.top_logit_margin", path);
  if (!(margin > 0)) return fdl_kiln_bad(c, p, "the top two logits tie; expected a margin > 0");
  if (!fdl_kiln_finite_num(mg) || fdl_kiln_num(mg) != margin)
    return fdl_kiln_bad(c, p, "expected %.17g (top_tokens[0].logit - top_tokens[1].logit)", margin);
  const json_t *ct = json_object_get(ev, "candidate_tokens");
  snprintf(p, sizeof p, "%s.candidate_tokens", path);
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return fdl_kiln_bad(c, p, "expected exactly 2 candidates");
  static const char *const engines[2] = {"kiln", "vllm"};
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    snprintf(p, sizeof p, "%s.candidate_tokens[%zu]", path, i);
    if ((s = FDL_CLOSED(c, p, e, "engine", "logit", "rank", "text", "token_id")) != FDL_OK)
      return s;
    if (!fdl_kiln_str_eq(json_object_get(e, "engine"), engines[i]))
      return fdl_kiln_bad(c, p, "engine: expected \"%s\" (request order kiln, vllm)", engines[i]);
    if (!fdl_kiln_finite_num(json_object_get(e, "logit")))
      return fdl_kiln_bad(c, p, "logit: expected a finite number");
    if (!json_is_string(json_object_get(e, "text")))
      return fdl_kiln_bad(c, p, "text: expected a string");
    if (!fdl_kiln_token_ok(json_object_get(e, "token_id")))
      return fdl_kiln_bad(c, p, "token_id: expected a token id");
    const json_t *rk = json_object_get(e, "rank");
    if (!fdl_kiln_is_int(rk) || json_integer_value(rk) < 1 ||
        json_integer_value(rk) > (json_int_t)FDL_KILN_VOCAB_SIZE)
      return fdl_kiln_bad(c, p, "rank: expected an integer in 1..%u", FDL_KILN_VOCAB_SIZE);
  }
  if (json_equal(json_object_get(json_array_get(ct, 0), "token_id"),
                 json_object_get(json_array_get(ct, 1), "token_id")))
    return fdl_kiln_bad(c, p, "expected two distinct token ids");
  if (!layer) return FDL_OK;
  if ((s = fdl_kiln_want_int_in(c, path, ev, "boundary_count", FDL_ATTR_LAYER_BOUNDARIES,
                                FDL_ATTR_LAYER_BOUNDARIES)) ||
      (s = fdl_kiln_want_int_in(c, path, ev, "hidden_size", FDL_KILN_HIDDEN_SIZE,
                                FDL_KILN_HIDDEN_SIZE)))
    return s;
  const json_t *names = json_object_get(ev, "boundary_names");
  snprintf(p, sizeof p, "%s.boundary_names", path);
  if (!json_is_array(names) || json_array_size(names) != FDL_ATTR_LAYER_BOUNDARIES)
    return fdl_kiln_bad(c, p, "expected the %u boundary names", FDL_ATTR_LAYER_BOUNDARIES);
  for (size_t i = 0; i < FDL_ATTR_LAYER_BOUNDARIES; i++) {
    const char *want = fdl_attr_layer_boundary_name(i);
    if (!fdl_kiln_str_eq(json_array_get(names, i), want)) {
      snprintf(p, sizeof p, "%s.boundary_names[%zu]", path, i);
      return fdl_kiln_bad(c, p, "expected \"%s\"", want);
    }
  }
  return FDL_OK;
}

fdl_status fdl_kiln_check_oracle_v1(const fdl_kiln_ctx *c, const json_t *doc) {
  const json_t *o = json_object_get(doc, "oracle"), *v = json_object_get(doc, "verdict");
  if (!json_is_object(o)) return fdl_kiln_bad(c, "$.oracle", "expected an object");
  fdl_status s = FDL_CLOSED(c, "$.verdict", v, "argmax_candidate", "argmax_token_id",
                            "candidate_attribution_complete");
  if (s != FDL_OK) return s;
  const json_t *am = json_object_get(o, "argmax");
  if ((s = fdl_kiln_want_token(c, "$.oracle.argmax", am)) != FDL_OK) return s;
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
  if ((s = fdl_kiln_want_sha(c, "$.oracle.logits_sha256", json_object_get(o, "logits_sha256"))) !=
      FDL_OK)
    return s;
  if ((s = fdl_kiln_want_sha(c, "$.oracle.request_sha256", json_object_get(o, "request_sha256"))) !=
      FDL_OK)
    return s;
  const json_t *rs = json_object_get(json_object_get(doc, "request"), "sha256");
  if (!json_equal(rs, json_object_get(o, "request_sha256")))
    return fdl_kiln_bad(c, "$.oracle.request_sha256", "expected request.sha256");
  return FDL_OK;
}

fdl_status fdl_kiln_check_oracle_v2(const fdl_kiln_ctx *c, const json_t *doc) {
  fdl_status s =
      FDL_CLOSED(c, "$", doc, "schema", "result_sha256", "created_at_utc", "duration_seconds",
                 "source", "implementation", "request", "model_identity", "model_fingerprint",
                 "containment", "oracle", "reference_artifact", "verdict");
  if (s != FDL_OK) return s;
  if ((s = fdl_kiln_walk(c, doc, "$", &fdl_kiln_schema_v2_common)) != FDL_OK) return s;
  const json_t *im = json_object_get(doc, "implementation");
  if ((s = FDL_DIGESTS(c, "$.implementation", im, "hf_worker_sha256", "process_runner_sha256",
                       "python_sha256")) != FDL_OK)
    return s;
  if (!json_equal(json_object_get(json_object_get(doc, "model_fingerprint"), "python_sha256"),
                  json_object_get(im, "python_sha256")))
    return fdl_kiln_bad(c, "$.model_fingerprint.python_sha256",
                        "expected $.implementation.python_sha256");
  const json_t *rq = json_object_get(doc, "request");
  if ((s = FDL_CLOSED(c, "$.request", rq, "contract_path", "id", "sha256", "source")) ||
      (s = fdl_kiln_want_rel_path(c, "$.request.contract_path",
                                  json_object_get(rq, "contract_path"))) ||
      (s = fdl_kiln_want_sha(c, "$.request.sha256", json_object_get(rq, "sha256"))) ||
      (s = fdl_kiln_walk(c, json_object_get(rq, "source"), "$.request.source",
                         &fdl_kiln_schema_source_pair)))
    return s;
  if (!fdl_kiln_nonempty_str(json_object_get(rq, "id")))
    return fdl_kiln_bad(c, "$.request.id", "expected a nonempty string");
  if ((s = fdl_kiln_walk(c, json_object_get(doc, "containment"), "$.containment",
                         &fdl_kiln_schema_arm_service)))
    return s;
  const json_t *o = json_object_get(doc, "oracle");
  if ((s = fdl_kiln_check_hf_evidence(c, "$.oracle", o, false)) != FDL_OK) return s;
  if (!json_equal(json_object_get(o, "request_id"), json_object_get(rq, "id")))
    return fdl_kiln_bad(c, "$.oracle.request_id", "expected $.request.id");
  if (!json_equal(json_object_get(o, "request_sha256"), json_object_get(rq, "sha256")))
    return fdl_kiln_bad(c, "$.oracle.request_sha256", "expected $.request.sha256");
  const json_t *ra = json_object_get(doc, "reference_artifact");
  if ((s = FDL_CLOSED(c, "$.reference_artifact", ra, "bytes", "location", "sha256")) ||
      (s = fdl_kiln_want_const_str(c, "$.reference_artifact", ra, "location", "local_ignored")) ||
      (s = fdl_kiln_want_sha(c, "$.reference_artifact.sha256", json_object_get(ra, "sha256"))))
    return s;
  if (!json_equal(json_object_get(ra, "bytes"), json_object_get(o, "output_bytes")))
    return fdl_kiln_bad(c, "$.reference_artifact.bytes", "expected $.oracle.output_bytes");
  /* §9's verdict, rebuilt and compared exactly. */
  const json_t *v = json_object_get(doc, "verdict"), *am = json_object_get(o, "argmax"),
               *cands = json_object_get(o, "candidate_tokens");
  if ((s = FDL_CLOSED(c, "$.verdict", v, "argmax_candidate", "argmax_token_id",
                      "candidate_attribution_complete")) != FDL_OK)
    return s;
  const char *match = "neither";
  size_t nmatch = 0;
  for (size_t i = 0; i < 2; i++)
    if (json_equal(json_object_get(json_array_get(cands, i), "token_id"), am)) {
      nmatch++;
      match = json_string_value(json_object_get(json_array_get(cands, i), "engine"));
    }
  if (nmatch != 1) match = "neither";
  if (!fdl_kiln_str_eq(json_object_get(v, "argmax_candidate"), match))
    return fdl_kiln_bad(c, "$.verdict.argmax_candidate",
                        "expected \"%s\" (the candidate whose token is the oracle argmax)", match);
  if (!json_equal(json_object_get(v, "argmax_token_id"), am))
    return fdl_kiln_bad(c, "$.verdict.argmax_token_id", "expected $.oracle.argmax %lld",
                        (long long)json_integer_value(am));
  bool complete = strcmp(match, "neither") != 0;
  const json_t *cc = json_object_get(v, "candidate_attribution_complete");
  if (!json_is_boolean(cc) || json_is_true(cc) != complete)
    return fdl_kiln_bad(c, "$.verdict.candidate_attribution_complete", "expected %s",
                        complete ? "true" : "false");
  return FDL_OK;
}
