/* decode.c - the comparison receipt's decoder: the one place the keys of a built receipt are
 * read for what a summary shows (fdl_compare_receipt). Missing or mistyped values read as NULL and
 * 0: the struct starts zeroed and a getter (json/get.h) writes only a value of its type. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "compare/cmp.h"

static void pm(const json_t *o, const char *k, fdl_compare_pm *out) {
  const json_t *v = json_object_get(o, k);
  fdl_json_num(v, "value", &out->value);
  fdl_json_num(v, "stderr", &out->se);
}

/* The percentile keys of the llama.cpp block, in the struct's order. */
static const char *const KLD_P[9] = {"99.9", "99", "95", "90", "50", "10", "5", "1", "0.1"};
static const char *const DP_P[11] = {"99.9", "99", "95", "90", "75", "50",
                                     "25",   "10", "5",  "1",  "0.1"};

static void llamacpp(const json_t *x, fdl_compare_receipt *d) {
  d->llamacpp.present = json_is_object(x);
  if (!d->llamacpp.present) return;
  pm(x, "ppl_candidate", &d->llamacpp.ppl_candidate);
  pm(x, "ppl_reference", &d->llamacpp.ppl_reference);
  pm(x, "ln_ppl_ratio", &d->llamacpp.ln_ppl_ratio);
  pm(x, "ppl_ratio", &d->llamacpp.ppl_ratio);
  pm(x, "same_top", &d->llamacpp.same_top);
  fdl_json_num(x, "logprob_correlation", &d->llamacpp.logprob_correlation);
  const json_t *kl = json_object_get(x, "kld"), *dp = json_object_get(x, "delta_p");
  const json_t *klp = json_object_get(kl, "percentiles"), *dpp = json_object_get(dp, "percentiles");
  fdl_json_num(kl, "mean", &d->llamacpp.kld.mean);
  fdl_json_num(kl, "stderr", &d->llamacpp.kld.se);
  fdl_json_num(kl, "max", &d->llamacpp.kld.max);
  fdl_json_num(kl, "min", &d->llamacpp.kld.min);
  for (size_t i = 0; i < 9; i++) fdl_json_num(klp, KLD_P[i], &d->llamacpp.kld.percentiles[i]);
  fdl_json_num(dp, "mean", &d->llamacpp.delta_p.mean);
  fdl_json_num(dp, "mean_stderr", &d->llamacpp.delta_p.mean_se);
  fdl_json_num(dp, "rms", &d->llamacpp.delta_p.rms);
  fdl_json_num(dp, "rms_stderr", &d->llamacpp.delta_p.rms_se);
  fdl_json_num(dp, "max", &d->llamacpp.delta_p.max);
  fdl_json_num(dp, "min", &d->llamacpp.delta_p.min);
  for (size_t i = 0; i < 11; i++) fdl_json_num(dpp, DP_P[i], &d->llamacpp.delta_p.percentiles[i]);
}

fdl_status fdl_cmp_receipt_decode(const json_t *rc, fdl_compare_receipt *d, fdl_err *err) {
  memset(d, 0, sizeof *d);
  const json_t *disc = json_object_get(rc, "disclosures");
  const json_t *high = json_object_get(rc, "high_kld_contexts");
  d->n_disclosures = json_array_size(disc);
  d->n_high_kld_contexts = json_array_size(high);
  d->disclosures = fdl_calloc(d->n_disclosures ? d->n_disclosures : 1, sizeof *d->disclosures);
  d->high_kld_contexts =
      fdl_calloc(d->n_high_kld_contexts ? d->n_high_kld_contexts : 1, sizeof *d->high_kld_contexts);
  if (!d->disclosures || !d->high_kld_contexts) {
    fdl_cmp_receipt_free(d);
    return fdl_fail(err, FDL_NOMEM, "out of memory decoding the receipt");
  }
  d->comparison_kind = fdl_json_str(rc, "comparison_kind");
  d->comparability_class = fdl_json_str(json_object_get(rc, "comparability"), "class");
  d->receipt_sha256 = fdl_json_str(rc, "receipt_sha256");
  static const char *const SIDES[2] = {"reference", "candidate"};
  for (int i = 0; i < 2; i++) {
    const json_t *s = json_object_get(rc, SIDES[i]);
    d->side[i].label = fdl_json_str(s, "label");
    d->side[i].dataset_id = fdl_json_str(s, "dataset_id");
    d->side[i].form = fdl_json_str(s, "form");
    d->side[i].lane = fdl_json_str(s, "lane");
  }
  for (size_t i = 0; i < d->n_disclosures; i++) {
    const json_t *x = json_array_get(disc, i);
    d->disclosures[i].severity = fdl_json_str(x, "severity");
    d->disclosures[i].code = fdl_json_str(x, "code");
    d->disclosures[i].detail = fdl_json_str(x, "detail");
  }
  const json_t *kl = json_object_get(rc, "kl"), *u = json_object_get(rc, "uncertainty");
  fdl_json_num(kl, "mean", &d->kl.mean);
  fdl_json_num(kl, "median", &d->kl.median);
  fdl_json_num(kl, "p95", &d->kl.p95);
  fdl_json_num(kl, "p99", &d->kl.p99);
  fdl_json_num(kl, "p99_9", &d->kl.p99_9);
  fdl_json_num(kl, "max", &d->kl.max);
  const json_t *scope = json_object_get(rc, "measurement_scope");
  fdl_json_int(scope, "scored_positions", &d->scored_positions);
  fdl_json_int(scope, "contexts", &d->contexts);
  d->uncertainty.method = fdl_json_str(u, "method");
  d->uncertainty.has_ci = fdl_json_num(u, "ci95_low", &d->uncertainty.ci95_low);
  fdl_json_num(u, "ci95_high", &d->uncertainty.ci95_high);
  fdl_json_int(u, "samples", &d->uncertainty.samples);
  fdl_json_int(u, "clusters", &d->uncertainty.clusters);
  fdl_json_int(u, "seed", &d->uncertainty.seed);
  d->has_top1 = fdl_json_num(rc, "top1_agreement", &d->top1_agreement);
  d->has_js = json_is_object(json_object_get(rc, "js"));
  fdl_json_num(json_object_get(rc, "js"), "mean", &d->js_mean);
  llamacpp(json_object_get(json_object_get(rc, "fidelis_extensions"), "llamacpp_compatible"), d);
  for (size_t i = 0; i < d->n_high_kld_contexts; i++) {
    const json_t *c = json_array_get(high, i);
    fdl_json_int(c, "index", &d->high_kld_contexts[i].index);
    fdl_json_int(c, "scored_rows", &d->high_kld_contexts[i].scored_rows);
    d->high_kld_contexts[i].window_id = fdl_json_str(c, "window_id");
    d->high_kld_contexts[i].domain = fdl_json_str(c, "domain");
    fdl_json_num(c, "mean", &d->high_kld_contexts[i].mean);
    fdl_json_num(c, "max", &d->high_kld_contexts[i].max);
  }
  return FDL_OK;
}

void fdl_cmp_receipt_free(fdl_compare_receipt *d) {
  free(d->disclosures);
  free(d->high_kld_contexts);
  memset(d, 0, sizeof *d);
}
