/* stats.c - the receipt's statistics from the token-wise array (section 7), through the num
 * helpers that reproduce numpy's pairwise mean and linear quantile and CPython 3.12's
 * Neumaier sum bit for bit. Context-level aggregates always sum in ascending context index
 * (domains, strata) or sorted-key order (the stratum macro mean), as the reference does.
 *
 * Beyond the reference: the context-cluster bootstrap CI95, JS and logit absolute error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/cmp.h"
#include "base/sys.h"

static const char *const BUCKET_NAMES[FDL_NUM_DEPTH_BUCKETS] = {
    "0000-0255", "0256-0511", "0512-1023", "1024-1535", "1536-2046"};

static json_t *stats_block(const fdl_num_summary *s) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = fdl_cmp_set_real(o, "mean", s->mean) | fdl_cmp_set_real(o, "median", s->median) |
            fdl_cmp_set_real(o, "p95", s->p95) | fdl_cmp_set_real(o, "p99", s->p99) |
            fdl_cmp_set_real(o, "p99_9", s->p99_9) | fdl_cmp_set_real(o, "max", s->max);
  return fdl_json_built(o, bad);
}

typedef struct {
  const char *key;
  size_t ctx;
} keyed;

static int by_key_then_ctx(const void *x, const void *y) {
  const keyed *a = x, *b = y;
  int c = strcmp(a->key, b->key);
  return c ? c : (a->ctx > b->ctx) - (a->ctx < b->ctx);
}

/* Neumaier means of context means grouped by the contexts' domain or allocation stratum, each
 * group's contexts in ascending index; *macro is the Neumaier mean of the group values in
 * sorted-key (code point) order. Sorting (key, index) pairs gives both orders at once. NULL on
 * OOM. */
static json_t *grouped_means(const cmp_side *a, const cmp_findings *f, bool stratum,
                             const double *means, double *macro, bool *has_macro) {
  size_t n = f->n_shared, m = 0, ng = 0;
  keyed *items = fdl_malloc((n ? n : 1) * sizeof *items);
  double *vals = fdl_malloc((n ? n : 1) * sizeof *vals),
         *groups = fdl_malloc((n ? n : 1) * sizeof *vals);
  json_t *out = json_object(), *res = NULL;
  *has_macro = false;
  if (!items || !vals || !groups || !out) goto done;
  for (size_t c = 0; c < n; c++) {
    const cmp_record *l = &a->recs[f->ref_at[c]];
    const char *v = stratum ? l->allocation_stratum[1] : l->domain[1];
    if (v && *v) items[m++] = (keyed){v, c};
  }
  qsort(items, m, sizeof *items, by_key_then_ctx);
  for (size_t i = 0; i < m;) {
    size_t j = i, k = 0;
    while (j < m && !strcmp(items[j].key, items[i].key)) vals[k++] = means[items[j++].ctx];
    groups[ng] = fdl_num_neumaier_mean(vals, k);
    if (fdl_cmp_set_real(out, items[i].key, groups[ng++])) goto done;
    i = j;
  }
  if (ng) {
    *macro = fdl_num_neumaier_mean(groups, ng);
    *has_macro = true;
  }
  res = ng ? json_incref(out) : json_null();
done:
  free(items);
  free(vals);
  free(groups);
  json_decref(out);
  return res;
}

static json_t *null_uncertainty(void) {
  return json_pack("{s:s, s:n, s:n, s:n, s:n, s:n, s:n}", "method", "none", "ci95_low", "ci95_high",
                   "clusters", "samples", "cluster_unit", "seed");
}

/* The bootstrap block; *too_few when one was wanted but fewer than 2 contexts exist. */
static fdl_status uncertainty(const cmp_findings *f, const cmp_estimate *e,
                              const fdl_compare_opts *o, bool *too_few, json_t **out,
                              fdl_err *err) {
  *too_few = false;
  if (!o->bootstrap || f->n_shared < 2 || !e->n_rows) {
    *too_few = o->bootstrap;
    *out = null_uncertainty();
    return *out ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  size_t n = f->n_shared;
  size_t B = o->bootstrap_samples ? o->bootstrap_samples : FDL_NUM_BOOTSTRAP_DEFAULT_B;
  double *sums = fdl_malloc(n * sizeof *sums);
  size_t *rows = fdl_malloc(n * sizeof *rows);
  fdl_status s = FDL_OK;
  fdl_num_ci ci;
  if (!sums || !rows) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory for the bootstrap");
  } else {
    for (size_t c = 0; c < n; c++) {
      rows[c] = e->ctx_off[c + 1] - e->ctx_off[c];
      sums[c] = fdl_num_pairwise_sum(e->kl + e->ctx_off[c], rows[c]);
    }
    s = fdl_num_bootstrap_ci95(sums, rows, n, B, o->seed, &ci, err);
  }
  free(sums);
  free(rows);
  if (s != FDL_OK) return s;
  *out = json_pack("{s:s, s:f, s:f, s:I, s:I, s:s, s:I, s:s, s:f, s:s}", "method",
                   "context_cluster_bootstrap_percentile", "ci95_low", ci.low, "ci95_high", ci.high,
                   "clusters", (json_int_t)ci.clusters, "samples", (json_int_t)ci.samples,
                   "cluster_unit", "context", "seed", (json_int_t)ci.seed, "statistic",
                   "token_weighted_mean_kld", "point_estimate", ci.point, "resampling",
                   "whole contexts drawn with replacement, xoshiro256** seeded through splitmix64; "
                   "percentiles by numpy's linear quantile at 0.025 and 0.975");
  return *out ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
}

/* per_context entries (pcs[c] borrows entry c) and the context means, in ascending shared index
 * (section 7.3). */
static fdl_status contexts(const cmp_side *a, const cmp_findings *f, const cmp_estimate *e,
                           json_t *per_context, json_t **pcs, double *means, fdl_num_context *ctxs,
                           fdl_err *err) {
  for (size_t c = 0; c < f->n_shared; c++) {
    const cmp_record *l = &a->recs[f->ref_at[c]];
    ctxs[c].kl = e->kl + e->ctx_off[c];
    ctxs[c].rows = e->ctx_off[c + 1] - e->ctx_off[c];
    double mean, max;
    fdl_num_context_stats(&ctxs[c], &mean, &max);
    means[c] = mean;
    /* The hash proof takes domain and stratum from the capture record only. */
    json_t *pc = json_pack(
        "{s:I, s:O?, s:I, s:f, s:f, s:O?, s:O?}", "index", (json_int_t)f->shared[c], "window_id",
        l->window_id_v, "scored_rows", (json_int_t)ctxs[c].rows, "mean", mean, "max", max, "domain",
        l->domain_v[e->computed], "allocation_stratum", l->stratum_v[e->computed]);
    if (!(pcs[c] = pc) || json_array_append_new(per_context, pc))
      return fdl_fail(err, FDL_NOMEM, "out of memory for per_context");
  }
  return FDL_OK;
}

static json_t *buckets(const fdl_num_context *ctxs, size_t nc, fdl_status *s, fdl_err *err) {
  double val[FDL_NUM_DEPTH_BUCKETS];
  bool present[FDL_NUM_DEPTH_BUCKETS];
  *s =
      fdl_num_bucket_means(ctxs, nc, fdl_num_depth_edges, FDL_NUM_DEPTH_BUCKETS, val, present, err);
  if (*s != FDL_OK) return NULL;
  json_t *bk = json_object();
  int bad = !bk;
  for (size_t k = 0; k < FDL_NUM_DEPTH_BUCKETS && !bad; k++)
    if (present[k]) bad |= fdl_cmp_set_real(bk, BUCKET_NAMES[k], val[k]);
  if (bad) {
    json_decref(bk);
    *s = fdl_fail(err, FDL_NOMEM, "out of memory");
    return NULL;
  }
  if (json_object_size(bk)) return bk;
  json_decref(bk);
  return json_null();
}

fdl_status fdl_cmp_stats_build(const cmp_side *a, cmp_findings *f, const cmp_estimate *e,
                               const fdl_compare_opts *o, bool reproduction, json_t *rc,
                               fdl_err *err) {
  size_t n = e->n_rows, nc = f->n_shared;
  fdl_num_summary kl = {0}; /* a reproduction's statistics are exactly 0.0 */
  fdl_status s = FDL_OK;
  if (!reproduction && (s = fdl_num_summarize(e->kl, n, &kl, err)) != FDL_OK) return s;
  f->kl_mean = kl.mean;
  double *means = fdl_malloc((nc ? nc : 1) * sizeof *means);
  fdl_num_context *ctxs = fdl_malloc((nc ? nc : 1) * sizeof *ctxs);
  json_t *per_context = json_array(), **pcs = fdl_malloc((nc ? nc : 1) * sizeof *pcs);
  json_t *per_domain = NULL, *per_stratum = NULL, *bk = NULL, *high = NULL, *unc = NULL;
  json_t *js = NULL;
  double macro = 0.0, domain_macro;
  bool has_macro = false, unused, too_few = false;
  if (!means || !ctxs || !per_context || !pcs) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK) s = contexts(a, f, e, per_context, pcs, means, ctxs, err);
  if (s == FDL_OK && e->computed) { /* the hash proof leaves these maps null */
    per_domain = grouped_means(a, f, false, means, &domain_macro, &unused);
    per_stratum = grouped_means(a, f, true, means, &macro, &has_macro);
    if (!per_domain || !per_stratum) s = fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s == FDL_OK) bk = buckets(ctxs, nc, &s, err);
  }
  size_t top[5], ntop = 0;
  if (s == FDL_OK) s = fdl_num_top_desc(means, nc, 5, top, &ntop, err);
  if (s == FDL_OK && !(high = json_array())) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < ntop; i++)
    if (json_array_append_new(high, json_deep_copy(pcs[top[i]])))
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK) s = uncertainty(f, e, o, &too_few, &unc, err);
  if (s == FDL_OK && too_few)
    s = fdl_cmp_disclose(f, "uncertainty_not_estimated", "info", 0, err,
                         "no confidence interval: the context-cluster bootstrap resamples whole "
                         "contexts and needs at least 2, but %zu %s compared.",
                         nc, nc == 1 ? "context was" : "contexts were");
  if (s == FDL_OK && e->js) {
    fdl_num_summary jss;
    if ((s = fdl_num_summarize(e->js, n, &jss, err)) == FDL_OK && !(js = stats_block(&jss)))
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  if (s == FDL_OK) {
    bool have_err = e->computed && n;
    json_t *metric =
        json_pack("{s:s, s:f, s:s, s:s, s:s, s:b}", "name", "mean_tokenwise_kld", "value", kl.mean,
                  "units", "nats", "direction", "reference_to_candidate", "direction_label",
                  "KL(reference || candidate)", "higher_is_better", 0);
    int bad =
        (!metric) | json_object_set_new(rc, "metric", metric) |
        json_object_set_new(rc, "kl", stats_block(&kl)) |
        json_object_set_new(rc, "kl_micro_token_mean", json_real(kl.mean)) |
        json_object_set_new(rc, "top1_agreement",
                            n ? json_real((double)e->top1_matches / (double)n) : json_null()) |
        json_object_set_new(rc, "js", js ? json_incref(js) : json_null()) |
        json_object_set_new(
            rc, "logit_absolute_error_mean",
            have_err ? json_real(e->abs_err_sum / ((double)n * (double)a->m->capture.vocab_size))
                     : json_null()) |
        json_object_set_new(rc, "logit_absolute_error_max",
                            have_err ? json_real(e->abs_err_max) : json_null()) |
        json_object_set_new(rc, "kl_macro_stratum_mean",
                            has_macro ? json_real(macro) : json_null()) |
        json_object_set_new(rc, "per_domain", per_domain ? json_incref(per_domain) : json_null()) |
        json_object_set_new(rc, "per_stratum",
                            per_stratum ? json_incref(per_stratum) : json_null()) |
        json_object_set_new(rc, "context_depth_buckets", bk ? json_incref(bk) : json_null()) |
        json_object_set_new(rc, "per_context", nc ? json_incref(per_context) : json_null()) |
        json_object_set_new(rc, "high_kld_contexts", json_incref(high)) |
        json_object_set_new(rc, "top1_discordant_contexts", json_array()) |
        json_object_set_new(rc, "uncertainty", json_incref(unc));
    if (bad) s = fdl_fail(err, FDL_NOMEM, "out of memory building the statistics");
  }
  json_decref(per_context);
  json_decref(per_domain);
  json_decref(per_stratum);
  json_decref(bk);
  json_decref(high);
  json_decref(unc);
  json_decref(js);
  free(means);
  free(ctxs);
  free(pcs);
  return s;
}
