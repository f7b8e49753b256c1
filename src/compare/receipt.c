/* receipt.c - every block of malaiwah.fidelity-comparison-receipt.v1 except the statistics
 * (section 11), then the self-seal. Key order does not matter here: the writer sorts. What
 * matters is the int/float distinction (a count is an int, every statistic a float) and that
 * absent optional inputs become null, as Python's dict.get gives None. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "num/gemm_run.h"
#include "compare/cmp.h"
#include "digest/seal_json.h"

#define REPLAY_BACKEND FDL_GEMM_CONTRACT ":cpu:float32"
#define ESTIMATOR_BACKEND "c:fp64-fused"

static json_t *side_block(const cmp_side *s) {
  json_t *o = json_object(), *h = json_object();
  int bad = !o || !h;
  for (size_t i = 0; i < CMP_N_HEAD_SHOWN; i++)
    bad |= json_object_set_new(h, fdl_cmp_head_keys[i], fdl_cmp_copy(s->head_shown[i]));
  const fdl_ds_manifest *d = s->m;
  bad |= fdl_cmp_set_str(o, "label", s->label) | fdl_cmp_set_str(o, "dataset_id", d->dataset.id) |
         fdl_cmp_set_str(o, "dataset_sha256", d->dataset_sha256) |
         fdl_cmp_set_str(o, "capture_content_digest", d->capture.capture_content_digest) |
         fdl_cmp_set_str(o, "role", fdl_role_names[d->dataset.role]) |
         fdl_cmp_set_str(o, "form", fdl_form_names[d->capture.form]) |
         fdl_cmp_set_str(o, "lane", fdl_lane_names[d->runtime.lane]) |
         fdl_cmp_set_str(o, "repository", d->dataset.repository) |
         fdl_cmp_set_str(o, "revision", d->dataset.revision) | json_object_set_new(o, "head", h) |
         fdl_cmp_set_str(o, "stack_fingerprint_sha256", d->runtime.stack_fingerprint_sha256) |
         fdl_cmp_set_str(o, "lane_identity_sha256", d->runtime.lane_identity_sha256) |
         json_object_set_new(o, "weights", fdl_cmp_copy(s->weights)) |
         fdl_cmp_set_str(o, "scope_digest", d->scope.scope_digest);
  return fdl_json_built(o, bad);
}

static json_t *panel_block(const cmp_side *a, const cmp_side *b, const cmp_findings *f,
                           const cmp_estimate *e) {
  json_t *o = json_object();
  int bad = (!o) | fdl_cmp_set_str(o, "panel_id", a->m->panel.panel_id) |
            fdl_cmp_set_str(o, "suite_token_hash_sha256", a->m->panel.suite_token_hash_sha256) |
            fdl_cmp_set_str(o, "panel_token_sha256_legacy", a->m->panel.panel_token_sha256_legacy) |
            fdl_cmp_set_int(o, "contexts", (int64_t)f->n_shared) |
            fdl_cmp_set_int(o, "scored_positions", (int64_t)e->n_rows) |
            json_object_set_new(o, "context_length", fdl_cmp_copy(a->context_length)) |
            json_object_set_new(o, "scoring_window", fdl_cmp_copy(a->scoring_window)) |
            json_object_set_new(o, "tokenizer", fdl_cmp_copy(a->tokenizer)) |
            json_object_set_new(o, "tokenizer_reference", fdl_cmp_copy(a->tokenizer)) |
            json_object_set_new(o, "tokenizer_candidate", fdl_cmp_copy(b->tokenizer)) |
            /* The panel gate refused any PANEL-D6 difference. */
            fdl_cmp_set_bool(o, "tokenizer_identity_equal", true);
  return fdl_json_built(o, bad);
}

static json_t *str_or_null(const char *s) {
  return fdl_cmp_empty(s) ? json_null() : json_string(s);
}

static void lower(const char *in, char *out, size_t cap) {
  size_t i = 0;
  for (; in && in[i] && i + 1 < cap; i++) out[i] = (char)tolower((unsigned char)in[i]);
  out[i] = '\0';
}

static json_t *comparator_block(const cmp_side *a, const cmp_side *b, const cmp_findings *f,
                                const cmp_estimate *e) {
  bool hidden = a->hidden || b->hidden, replay = e->computed && hidden;
  json_t *c = json_object();
  if (!c) return NULL;
  json_t *env = replay ? fdl_cmp_env_replay() : json_null();
  json_t *tool = fdl_cmp_env_tool();
  int bad = !env || !tool;
  bad |=
      fdl_cmp_set_str(c, "device", e->computed ? "cpu" : "none") |
      fdl_cmp_set_str(c, "accumulation_dtype", "float64") |
      fdl_cmp_set_str(c, "logprob_dtype", "float64") | fdl_cmp_set_bool(c, "two_pass", true) |
      json_object_set_new(c, "vocab_chunk",
                          e->computed ? json_integer(FDL_NUM_VOCAB_CHUNK) : json_null()) |
      json_object_set_new(c, "position_block",
                          e->computed ? json_integer(FDL_NUM_TILE_ROWS) : json_null()) |
      json_object_set_new(c, "replay_backend",
                          !e->computed ? json_string("none")
                          : hidden     ? json_string(REPLAY_BACKEND)
                                       : json_null()) |
      json_object_set_new(c, "replay_env", env) |
      json_object_set_new(c, "replay_peak_device_bytes", json_null()) |
      fdl_cmp_set_bool(c, "tf32", false) | fdl_cmp_set_bool(c, "deterministic_algorithms", true) |
      fdl_cmp_set_bool(c, "bf16_reduced_precision_reduction", false) |
      json_object_set_new(c, "cublas_workspace_config", json_null()) |
      json_object_set_new(c, "head_applied_tensor_content_sha256", str_or_null(f->applied_head)) |
      json_object_set_new(c, "head_applied_reference_tensor_content_sha256",
                          str_or_null(f->applied_ref)) |
      json_object_set_new(c, "head_applied_candidate_tensor_content_sha256",
                          str_or_null(f->applied_cand)) |
      fdl_cmp_set_bool(c, "tensor_content_digests_verified", true) |
      fdl_cmp_set_bool(c, "source_file_hashes_verified", true) |
      fdl_cmp_set_bool(c, "short_circuited", !e->computed) |
      fdl_cmp_set_str(c, "estimator_backend", e->computed ? ESTIMATOR_BACKEND : "hash_proof") |
      json_object_set_new(c, "tool", tool);
  return fdl_json_built(c, bad);
}

static json_t *estimator_block(const cmp_side *a, const cmp_side *b, const cmp_findings *f,
                               const cmp_estimate *e) {
  bool replay = e->computed && (a->hidden || b->hidden);
  char dtype[16], hdtype[16];
  lower(a->m->capture.dtype, dtype, sizeof dtype);
  const cmp_side *hs = a->hidden ? a : b->hidden ? b : NULL;
  lower(hs ? hs->m->capture.dtype : NULL, hdtype, sizeof hdtype);
  bool repro = !strcmp(f->kind, "reproduction_confirmation");
  json_t *o = json_object();
  int bad = (!o) | fdl_cmp_set_str(o, "accumulation_dtype", "float64") |
            fdl_cmp_set_str(o, "logits_dtype", replay ? "float32" : dtype) |
            json_object_set_new(o, "hidden_dtype", hs ? json_string(hdtype) : json_null()) |
            fdl_cmp_set_bool(o, "two_pass", true) |
            json_object_set_new(o, "vocab_chunk",
                                e->computed ? json_integer(FDL_NUM_VOCAB_CHUNK) : json_null()) |
            fdl_cmp_set_str(o, "stack_relation", f->cross_stack ? "cross_stack" : "same_stack") |
            fdl_cmp_set_str(o, "head_policy", f->head_policy) |
            fdl_cmp_set_str(
                o, "softmax_note",
                "full-vocabulary log-sum-exp in float64, fused into one streaming pass per row "
                "over vocabulary chunks of vocab_chunk entries (the running max is rescaled "
                "once per chunk; the chunk is fixed by the arithmetic contract, not an option); "
                "no truncation, top-k or clamp. A non-finite input or result "
                "is a hard refusal.") |
            fdl_cmp_set_str(o, "zero_handling", repro ? "exact zero asserted, not rounded" : NULL);
  return fdl_json_built(o, bad);
}

static json_t *determinism_block(const cmp_side *a, const cmp_side *b, double mean) {
  json_t *o = json_object(), *hashes = json_array(), *means = json_array();
  const char *x = a->m->capture.capture_content_digest ? a->m->capture.capture_content_digest : "";
  const char *y = b->m->capture.capture_content_digest ? b->m->capture.capture_content_digest : "";
  int c = strcmp(x, y);
  /* A failed allocation or append (out of memory) must fail the block, not shorten its arrays;
   * the set and append calls free what they are given, also on failure. */
  int bad = (!o) | json_array_append_new(hashes, json_string(c <= 0 ? x : y)) |
            (c ? json_array_append_new(hashes, json_string(c < 0 ? y : x)) : 0) |
            json_array_append_new(means, json_real(mean));
  bad |=
      fdl_cmp_set_int(o, "run_count", 1) |
      json_object_set_new(o, "cold_start_per_run", json_null()) |
      json_object_set_new(o, "run_means", means) |
      fdl_cmp_set_real(o, "population_stddev_of_run_means", 0.0) |
      fdl_cmp_set_real(o, "min_run_mean", mean) | fdl_cmp_set_real(o, "max_run_mean", mean) |
      json_object_set_new(o, "identical_across_runs", json_null()) |
      fdl_cmp_set_str(o, "evidence_kind",
                      a->hidden ? "hidden_state_tensor_sha256" : "logits_tensor_sha256") |
      fdl_cmp_set_int(o, "distinct_evidence_hash_count", (int64_t)json_array_size(hashes)) |
      json_object_set_new(o, "evidence_hashes", hashes) |
      fdl_cmp_set_str(o, "note",
                      "one comparison of two sealed captures. identical_across_runs is null, not "
                      "true: that claim needs two independently produced captures of the SAME "
                      "weights (SC-2), which is a different receipt.");
  return fdl_json_built(o, bad);
}

static json_t *scope_block(const cmp_findings *f, const cmp_estimate *e) {
  json_t *o = json_object();
  char detail[96];
  snprintf(detail, sizeof detail, "compared on the %zu-record intersection of the two captures",
           f->n_shared);
  int bad =
      (!o) | fdl_cmp_set_int(o, "scored_positions", (int64_t)e->n_rows) |
      fdl_cmp_set_int(o, "contexts", (int64_t)f->n_shared) |
      json_object_set_new(o, "positions_per_context",
                          f->n_shared ? json_integer((json_int_t)(e->ctx_off[1] - e->ctx_off[0]))
                                      : json_null()) |
      fdl_cmp_set_bool(o, "covers_full_panel", f->covers_full_panel) |
      fdl_cmp_set_str(o, "subset_detail", f->covers_full_panel ? NULL : detail) |
      fdl_cmp_set_str(o, "position_filter", "all");
  return fdl_json_built(o, bad);
}

static json_t *self_compare_block(const cmp_findings *f, bool force_agreed,
                                  const cmp_tokenwise_info *tw) {
  if (!strcmp(f->kind, "measurement")) return json_null();
  json_t *o = json_object();
  int bad =
      (!o) | fdl_cmp_set_bool(o, "capture_content_digest_equal", f->capture_equal) |
      fdl_cmp_set_bool(o, "weights_identity_equal", f->weights_identity_equal) |
      fdl_cmp_set_bool(o, "head_digest_equal", f->head_digest_equal) |
      fdl_cmp_set_bool(o, "asserted_exact_zero", !strcmp(f->kind, "reproduction_confirmation")) |
      json_object_set_new(o, "force_compute_agreed", force_agreed ? json_true() : json_null()) |
      fdl_cmp_set_int(o, "expected_tokenwise_bytes", (int64_t)tw->bytes) |
      fdl_cmp_set_str(o, "expected_tokenwise_sha256", tw->sha256);
  return fdl_json_built(o, bad);
}

static json_t *submission_block(const cmp_findings *f) {
  json_t *o = json_object();
  char refusal[200];
  snprintf(refusal, sizeof refusal,
           "comparison_kind is %s, not measurement: only a measurement may become a registry row",
           f->kind);
  bool meas = !strcmp(f->kind, "measurement");
  int bad = (!o) | fdl_cmp_set_bool(o, "emitted", false) |
            json_object_set_new(o, "path", json_null()) |
            json_object_set_new(o, "receipt_sha256", json_null()) |
            json_object_set_new(o, "submission_schema", json_null()) |
            fdl_cmp_set_str(o, "refusal", meas ? NULL : refusal);
  return fdl_json_built(o, bad);
}

static void utc_now(const fdl_compare_opts *o, char out[32]) {
  if (o->created_utc) {
    snprintf(out, 32, "%s", o->created_utc);
    return;
  }
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

fdl_status fdl_cmp_receipt_build(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                 cmp_findings *f, const cmp_estimate *e, bool force_agreed,
                                 const cmp_tokenwise_info *tw, json_t *rc, fdl_refusal *r,
                                 fdl_err *err) {
  if (!json_array_size(f->disclosures)) {
    fdl_status s = fdl_cmp_disclose(f, "no_known_deviations", "info", 0, err,
                                    "every gate passed with no override.");
    if (s != FDL_OK) return s;
  }
  json_t *comparability = NULL;
  fdl_status s = fdl_cmp_comparability(a, f, &comparability, r, err);
  if (s != FDL_OK) return s;
  char when[32];
  utc_now(o, when);
  json_t *tok = json_object();
  int bad = !tok || fdl_cmp_set_str(tok, "path", FDL_COMPARE_TOKENWISE_NAME) |
                        fdl_cmp_set_int(tok, "bytes", (int64_t)tw->bytes) |
                        fdl_cmp_set_str(tok, "sha256", tw->sha256);
  json_t *blocks[] = {side_block(a),
                      side_block(b),
                      panel_block(a, b, f, e),
                      json_deep_copy(f->gates),
                      comparator_block(a, b, f, e),
                      estimator_block(a, b, f, e),
                      determinism_block(a, b, f->kl_mean),
                      scope_block(f, e),
                      comparability,
                      tok,
                      self_compare_block(f, force_agreed, tw),
                      submission_block(f),
                      json_deep_copy(f->disclosures)};
  static const char *const names[] = {"reference",   "candidate",         "panel",
                                      "gates",       "comparator",        "estimator",
                                      "determinism", "measurement_scope", "comparability",
                                      "tokenwise",   "self_compare",      "submission",
                                      "disclosures"};
  for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++) {
    if (!blocks[i]) {
      bad = 1;
      continue;
    }
    bad |= json_object_set_new(rc, names[i], blocks[i]);
  }
  bad |= fdl_cmp_set_str(rc, "schema", FDL_COMPARE_SCHEMA) |
         fdl_cmp_set_int(rc, "format_version", 1) | fdl_cmp_set_str(rc, "receipt_sha256", "") |
         fdl_cmp_set_str(rc, "created_utc", when) | fdl_cmp_set_str(rc, "comparison_kind", f->kind);
  if (bad) return fdl_fail(err, FDL_NOMEM, "out of memory building the receipt");
  return fdl_seal_apply(rc, FDL_SEAL_FIDELITY_BLANK, "receipt_sha256", err);
}
