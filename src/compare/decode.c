/* decode.c - the comparison receipt's decoder: the one place the keys of a receipt are read for
 * what a summary or a report shows (fdl_compare_receipt). A missing or mistyped value reads as
 * NULL, NaN, FDL_COMPARE_NO_INT or -1 (fidelis/compare.h), so a page can tell "absent" from 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "compare/cmp.h"
#include "compare/compare_json.h"

static double num(const json_t *o, const char *path) {
  return fdl_json_path_num(o, path, NAN);
}

static int64_t integer(const json_t *o, const char *path) {
  return fdl_json_path_int(o, path, FDL_COMPARE_NO_INT);
}

static int boolean(const json_t *o, const char *path) {
  const json_t *v = fdl_json_path(o, path);
  return json_is_boolean(v) ? json_is_true(v) : -1;
}

static void pm(const json_t *o, const char *k, fdl_compare_pm *out) {
  const json_t *v = json_object_get(o, k);
  *out = (fdl_compare_pm){num(v, "value"), num(v, "stderr")};
}

/* The percentile keys (they hold dots: looked up one level at a time, never as a dotted path). */
static const char *const KLD_P[9] = FDL_COMPARE_KLD_PERCENTILES;
static const char *const DP_P[11] = FDL_COMPARE_DP_PERCENTILES;

static void llamacpp(const json_t *x, fdl_compare_llamacpp *l) {
  l->present = x != NULL;
  l->schema = fdl_json_str(x, "schema");
  l->definitions = fdl_json_str(x, "definitions");
  l->n = integer(x, "n");
  static const char *const ARRAYS[3] = {FDL_COMPARE_LOGPROB_REF_NAME, FDL_COMPARE_LOGPROB_CAND_NAME,
                                        FDL_COMPARE_TOP1_NAME};
  for (size_t i = 0; i < 3; i++) l->arrays[i] = fdl_json_str(fdl_json_obj(x, "arrays"), ARRAYS[i]);
  pm(x, "ppl_candidate", &l->ppl_candidate);
  pm(x, "ppl_reference", &l->ppl_reference);
  pm(x, "ln_ppl_ratio", &l->ln_ppl_ratio);
  pm(x, "ppl_ratio", &l->ppl_ratio);
  pm(x, "same_top", &l->same_top);
  l->logprob_correlation = num(x, "logprob_correlation");
  const json_t *kl = json_object_get(x, "kld"), *dp = json_object_get(x, "delta_p");
  const json_t *klp = json_object_get(kl, "percentiles"), *dpp = json_object_get(dp, "percentiles");
  l->kld.mean = num(kl, "mean");
  l->kld.se = num(kl, "stderr");
  l->kld.max = num(kl, "max");
  l->kld.min = num(kl, "min");
  for (size_t i = 0; i < 9; i++) l->kld.percentiles[i] = num(json_object_get(klp, KLD_P[i]), "");
  l->delta_p.mean = num(dp, "mean");
  l->delta_p.mean_se = num(dp, "mean_stderr");
  l->delta_p.rms = num(dp, "rms");
  l->delta_p.rms_se = num(dp, "rms_stderr");
  l->delta_p.max = num(dp, "max");
  l->delta_p.min = num(dp, "min");
  for (size_t i = 0; i < 11; i++)
    l->delta_p.percentiles[i] = num(json_object_get(dpp, DP_P[i]), "");
}

static void side(const json_t *s, fdl_compare_side *d) {
  d->label = fdl_json_str(s, "label");
  d->dataset_id = fdl_json_str(s, "dataset_id");
  d->dataset_sha256 = fdl_json_str(s, "dataset_sha256");
  d->capture_content_digest = fdl_json_str(s, "capture_content_digest");
  d->role = fdl_json_str(s, "role");
  d->form = fdl_json_str(s, "form");
  d->lane = fdl_json_str(s, "lane");
  d->repository = fdl_json_str(s, "repository");
  d->revision = fdl_json_str(s, "revision");
  d->stack_fingerprint_sha256 = fdl_json_str(s, "stack_fingerprint_sha256");
  d->weights_repository = fdl_json_path_str(s, "weights.repository");
  d->weights_revision = fdl_json_path_str(s, "weights.revision");
  d->weights_checkpoint_identity_sha256 =
      fdl_json_path_str(s, "weights.checkpoint_identity_sha256");
  d->head_tensor_content_sha256 = fdl_json_path_str(s, "head.tensor_content_sha256");
}

/* The elements of a per_context or high_kld_contexts array; NULL when out of memory. */
static fdl_compare_context *contexts(const json_t *a, size_t *n) {
  *n = json_array_size(a);
  fdl_compare_context *out = fdl_calloc(*n ? *n : 1, sizeof *out);
  for (size_t i = 0; out && i < *n; i++) {
    const json_t *c = json_array_get(a, i);
    out[i] = (fdl_compare_context){integer(c, "index"),
                                   integer(c, "scored_rows"),
                                   fdl_json_str(c, "window_id"),
                                   fdl_json_str(c, "domain"),
                                   num(c, "mean"),
                                   num(c, "max"),
                                   num(c, "ci95_low"),
                                   num(c, "ci95_high")};
  }
  return out;
}

static void comparability(const json_t *c, fdl_compare_receipt *d) {
  d->comparability_class = fdl_json_str(c, "class");
  d->comparability.key = fdl_json_str(c, "key");
  d->comparability.bias_kind = fdl_json_path_str(c, "bias.kind");
  d->comparability.usable_as_floor = boolean(c, "usable_as_floor");
  d->comparability.same_lane = boolean(c, "same_lane");
  static const char *const KEY_INPUTS[] = {FDL_COMPARE_KEY_INPUTS(FDL_COMPARE_KI_NAME_)};
  for (size_t i = 0; i < FDL_COMPARE_KI_COUNT; i++)
    d->comparability.key_inputs[i] = fdl_json_str(fdl_json_obj(c, "key_inputs"), KEY_INPUTS[i]);
}

static void comparator(const json_t *c, fdl_compare_receipt *d) {
  d->comparator.tool_name = fdl_json_path_str(c, "tool.name");
  d->comparator.tool_version = fdl_json_path_str(c, "tool.version");
  d->comparator.tool_entrypoint = fdl_json_path_str(c, "tool.entrypoint");
  d->comparator.estimator_backend = fdl_json_str(c, "estimator_backend");
  d->comparator.replay_backend = fdl_json_str(c, "replay_backend");
  d->comparator.replay_library = fdl_json_path_str(c, "replay_env.library");
  d->comparator.device = fdl_json_str(c, "device");
}

static void numbers(const json_t *rc, fdl_compare_receipt *d) {
  d->metric_value = num(rc, "metric.value");
  d->kl.mean = num(rc, "kl.mean");
  d->kl.median = num(rc, "kl.median");
  d->kl.p95 = num(rc, "kl.p95");
  d->kl.p99 = num(rc, "kl.p99");
  d->kl.p99_9 = num(rc, "kl.p99_9");
  d->kl.max = num(rc, "kl.max");
  d->scored_positions = integer(rc, "measurement_scope.scored_positions");
  d->contexts = integer(rc, "measurement_scope.contexts");
  d->panel.panel_id = fdl_json_path_str(rc, "panel.panel_id");
  d->panel.suite_token_hash_sha256 = fdl_json_path_str(rc, "panel.suite_token_hash_sha256");
  d->panel.tokenizer_id = fdl_json_path_str(rc, "panel.tokenizer.id");
  d->panel.scored_positions = integer(rc, "panel.scored_positions");
  d->panel.contexts = integer(rc, "panel.contexts");
  d->panel.context_length = integer(rc, "panel.context_length");
  const json_t *u = json_object_get(rc, "uncertainty");
  d->uncertainty.method = fdl_json_str(u, "method");
  d->uncertainty.cluster_unit = fdl_json_str(u, "cluster_unit");
  d->uncertainty.ci95_low = num(u, "ci95_low");
  d->uncertainty.ci95_high = num(u, "ci95_high");
  d->uncertainty.samples = integer(u, "samples");
  d->uncertainty.clusters = integer(u, "clusters");
  d->uncertainty.seed = integer(u, "seed");
  d->top1_agreement = num(rc, "top1_agreement");
  d->has_js = json_is_object(json_object_get(rc, "js"));
  d->js_mean = num(rc, "js.mean");
}

fdl_status fdl_cmp_receipt_decode(const json_t *rc, fdl_compare_receipt *d, fdl_err *err) {
  memset(d, 0, sizeof *d);
  const json_t *disc = json_object_get(rc, "disclosures");
  d->n_disclosures = json_array_size(disc);
  d->disclosures = fdl_calloc(d->n_disclosures ? d->n_disclosures : 1, sizeof *d->disclosures);
  d->per_context = contexts(json_object_get(rc, "per_context"), &d->n_per_context);
  d->high_kld_contexts =
      contexts(json_object_get(rc, "high_kld_contexts"), &d->n_high_kld_contexts);
  if (!d->disclosures || !d->per_context || !d->high_kld_contexts) {
    fdl_cmp_receipt_free(d);
    return fdl_fail(err, FDL_NOMEM, "out of memory decoding the receipt");
  }
  for (size_t i = 0; i < d->n_disclosures; i++) {
    const json_t *x = json_array_get(disc, i);
    d->disclosures[i] =
        (fdl_compare_disclosure){fdl_json_str(x, "severity"), fdl_json_str(x, "code"),
                                 fdl_json_str(x, "detail"), boolean(x, "affects_comparability")};
  }
  d->schema = fdl_json_str(rc, "schema");
  d->comparison_kind = fdl_json_str(rc, "comparison_kind");
  d->receipt_sha256 = fdl_json_str(rc, "receipt_sha256");
  d->created_utc = fdl_json_str(rc, "created_utc");
  side(json_object_get(rc, "reference"), &d->side[0]);
  side(json_object_get(rc, "candidate"), &d->side[1]);
  comparability(json_object_get(rc, "comparability"), d);
  comparator(json_object_get(rc, "comparator"), d);
  numbers(rc, d);
  d->tokenwise.path = fdl_json_path_str(rc, "tokenwise.path");
  d->tokenwise.sha256 = fdl_json_path_str(rc, "tokenwise.sha256");
  d->stack_relation = fdl_json_path_str(rc, "estimator.stack_relation");
  llamacpp(fdl_json_path(rc, "fidelis_extensions.llamacpp_compatible"), &d->llamacpp);
  d->kl_doc = (const struct fdl_compare_doc *)json_object_get(rc, "kl");
  d->uncertainty_doc = (const struct fdl_compare_doc *)json_object_get(rc, "uncertainty");
  d->js_doc = (const struct fdl_compare_doc *)json_object_get(rc, "js");
  d->high_kld_contexts_doc =
      (const struct fdl_compare_doc *)json_object_get(rc, "high_kld_contexts");
  return FDL_OK;
}

void fdl_cmp_receipt_free(fdl_compare_receipt *d) {
  free(d->disclosures);
  free(d->per_context);
  free(d->high_kld_contexts);
  memset(d, 0, sizeof *d);
}
