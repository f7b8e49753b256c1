/* decode.c - the comparison receipt's decoder: the one place the keys of a built receipt are
 * read for what a summary shows (fdl_compare_receipt). Missing values read as NULL and 0, as
 * jansson's getters give them. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "compare/cmp.h"

static const char *str(const json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

static double num(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

static int64_t integer(const json_t *o, const char *k) {
  return (int64_t)json_integer_value(json_object_get(o, k));
}

static fdl_compare_pm pm(const json_t *o, const char *k) {
  const json_t *v = json_object_get(o, k);
  return (fdl_compare_pm){num(v, "value"), num(v, "stderr")};
}

/* The percentile keys of the llama.cpp block, in the struct's order. */
static const char *const KLD_P[9] = {"99.9", "99", "95", "90", "50", "10", "5", "1", "0.1"};
static const char *const DP_P[11] = {"99.9", "99", "95", "90", "75", "50",
                                     "25",   "10", "5",  "1",  "0.1"};

static void llamacpp(const json_t *x, fdl_compare_receipt *d) {
  d->llamacpp.present = json_is_object(x);
  if (!d->llamacpp.present) return;
  d->llamacpp.ppl_candidate = pm(x, "ppl_candidate");
  d->llamacpp.ppl_reference = pm(x, "ppl_reference");
  d->llamacpp.ln_ppl_ratio = pm(x, "ln_ppl_ratio");
  d->llamacpp.ppl_ratio = pm(x, "ppl_ratio");
  d->llamacpp.same_top = pm(x, "same_top");
  d->llamacpp.logprob_correlation = num(x, "logprob_correlation");
  const json_t *kl = json_object_get(x, "kld"), *dp = json_object_get(x, "delta_p");
  const json_t *klp = json_object_get(kl, "percentiles"), *dpp = json_object_get(dp, "percentiles");
  d->llamacpp.kld.mean = num(kl, "mean");
  d->llamacpp.kld.se = num(kl, "stderr");
  d->llamacpp.kld.max = num(kl, "max");
  d->llamacpp.kld.min = num(kl, "min");
  for (size_t i = 0; i < 9; i++) d->llamacpp.kld.percentiles[i] = num(klp, KLD_P[i]);
  d->llamacpp.delta_p.mean = num(dp, "mean");
  d->llamacpp.delta_p.mean_se = num(dp, "mean_stderr");
  d->llamacpp.delta_p.rms = num(dp, "rms");
  d->llamacpp.delta_p.rms_se = num(dp, "rms_stderr");
  d->llamacpp.delta_p.max = num(dp, "max");
  d->llamacpp.delta_p.min = num(dp, "min");
  for (size_t i = 0; i < 11; i++) d->llamacpp.delta_p.percentiles[i] = num(dpp, DP_P[i]);
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
  d->comparison_kind = str(rc, "comparison_kind");
  d->comparability_class = str(json_object_get(rc, "comparability"), "class");
  d->receipt_sha256 = str(rc, "receipt_sha256");
  static const char *const SIDES[2] = {"reference", "candidate"};
  for (int i = 0; i < 2; i++) {
    const json_t *s = json_object_get(rc, SIDES[i]);
    d->side[i].label = str(s, "label");
    d->side[i].dataset_id = str(s, "dataset_id");
    d->side[i].form = str(s, "form");
    d->side[i].lane = str(s, "lane");
  }
  for (size_t i = 0; i < d->n_disclosures; i++) {
    const json_t *x = json_array_get(disc, i);
    d->disclosures[i].severity = str(x, "severity");
    d->disclosures[i].code = str(x, "code");
    d->disclosures[i].detail = str(x, "detail");
  }
  const json_t *kl = json_object_get(rc, "kl"), *u = json_object_get(rc, "uncertainty");
  d->kl.mean = num(kl, "mean");
  d->kl.median = num(kl, "median");
  d->kl.p95 = num(kl, "p95");
  d->kl.p99 = num(kl, "p99");
  d->kl.p99_9 = num(kl, "p99_9");
  d->kl.max = num(kl, "max");
  const json_t *scope = json_object_get(rc, "measurement_scope");
  d->scored_positions = integer(scope, "scored_positions");
  d->contexts = integer(scope, "contexts");
  d->uncertainty.method = str(u, "method");
  d->uncertainty.has_ci = json_is_number(json_object_get(u, "ci95_low"));
  d->uncertainty.ci95_low = num(u, "ci95_low");
  d->uncertainty.ci95_high = num(u, "ci95_high");
  d->uncertainty.samples = integer(u, "samples");
  d->uncertainty.clusters = integer(u, "clusters");
  d->uncertainty.seed = integer(u, "seed");
  d->has_top1 = json_is_number(json_object_get(rc, "top1_agreement"));
  d->top1_agreement = num(rc, "top1_agreement");
  d->has_js = json_is_object(json_object_get(rc, "js"));
  d->js_mean = num(json_object_get(rc, "js"), "mean");
  llamacpp(json_object_get(json_object_get(rc, "fidelis_extensions"), "llamacpp_compatible"), d);
  for (size_t i = 0; i < d->n_high_kld_contexts; i++) {
    const json_t *c = json_array_get(high, i);
    d->high_kld_contexts[i].index = integer(c, "index");
    d->high_kld_contexts[i].scored_rows = integer(c, "scored_rows");
    d->high_kld_contexts[i].window_id = str(c, "window_id");
    d->high_kld_contexts[i].domain = str(c, "domain");
    d->high_kld_contexts[i].mean = num(c, "mean");
    d->high_kld_contexts[i].max = num(c, "max");
  }
  return FDL_OK;
}

void fdl_cmp_receipt_free(fdl_compare_receipt *d) {
  free(d->disclosures);
  free(d->high_kld_contexts);
  memset(d, 0, sizeof *d);
}
