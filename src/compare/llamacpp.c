/* llamacpp.c - the statistics `llama-perplexity --kl-divergence` prints, computed from the
 * estimator's exact per-row arrays instead of uint16 log-probabilities with a -16 cut-off
 * (spec/LLAMACPP-KLD.md "Aggregates"; each field's formula is in docs/COMPARE.md
 * #llamacpp-compatible-statistics). They are a courtesy to llama.cpp users: the receipt's
 * headline interval stays the context-cluster bootstrap, since these errors assume independent
 * tokens.
 *
 * Every sum is numpy's pairwise sum of a per-row array (fdl_num_pairwise_sum), a fixed order
 * that no thread count or instruction set can change, and the one a numpy re-check reproduces. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare/cmp.h"
#include "base/order.h"
#include "base/sys.h"

/* llama.cpp's mean_and_uncertainty: the mean and sqrt((s2/n - mean^2)/(n-1)), the latter 0 unless
 * n > 10 and the variance term is positive. */
typedef struct {
  double mean, err;
} mu;

static mu mean_unc(double s, double s2, size_t n) {
  mu m = {0.0, 0.0};
  if (!n) return m;
  double dn = (double)n;
  m.mean = s / dn;
  double var = s2 / dn - m.mean * m.mean;
  if (n > 10 && var > 0.0) m.err = sqrt(var / (dn - 1.0));
  return m;
}

/* llama.cpp's percentile of an ascending array: linear between the two neighbours of f(n-1). */
static double pct(const double *v, size_t n, double f) {
  double p = f * (double)(n - 1);
  double ip = floor(p);
  double frac = p - ip;
  size_t i = (size_t)ip, j = i + 1 < n ? i + 1 : n - 1;
  return (1.0 - frac) * v[i] + frac * v[j];
}

/* Its median: the mean of the two middle values when n is even. */
static double median(const double *v, size_t n) {
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2] + v[n / 2 - 1]);
}

/* Sum of f(x) over an array, pairwise, through a scratch buffer. */
typedef double (*map1)(double);
static double sq(double x) {
  return x * x;
}
static double quad(double x) {
  double y = x * x;
  return y * y;
}
static double ident(double x) {
  return x;
}
static double sum_of(const double *x, size_t n, map1 f, double *tmp) {
  for (size_t i = 0; i < n; i++) tmp[i] = f(x[i]);
  return fdl_num_pairwise_sum(tmp, n);
}

static json_t *val_err(double v, double e) {
  return json_pack("{s:f, s:f}", "value", v, "stderr", e);
}

/* The fractions of the percentile keys (fidelis/compare.h), in their order. */
static const double DP_F[11] = {0.999, 0.99, 0.95, 0.9, 0.75, 0.5, 0.25, 0.1, 0.05, 0.01, 0.001};
static const char *const DP_K[11] = FDL_COMPARE_DP_PERCENTILES;
static const double KL_F[9] = {0.999, 0.99, 0.95, 0.9, 0.5, 0.1, 0.05, 0.01, 0.001};
static const char *const KL_K[9] = FDL_COMPARE_KLD_PERCENTILES;

/* Percentiles of sorted v at the fractions f (0.5 is the median rule). */
static json_t *percentiles(const double *v, size_t n, const double *f, const char *const *k,
                           size_t m) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < m; i++) {
    double x = !n ? 0.0 : f[i] == 0.5 ? median(v, n) : pct(v, n, f[i]);
    if (fdl_cmp_set_real(o, k[i], x)) {
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

typedef struct {
  double ppl_ref, ppl_ref_err, ppl_cand, ppl_cand_err, ln_ratio, ln_ratio_err, ratio, ratio_err;
  double cor;
  double dp_mean, dp_mean_err, dp_rms, dp_rms_err;
  double top, top_err;
  double kl_mean, kl_err;
} figures;

/* Every figure but the order statistics. tmp, nll_r and nll_c are scratch of n doubles; dp
 * receives the per-row delta-p for its percentiles. */
static void sums(const cmp_estimate *e, double *tmp, double *nll_r, double *nll_c, double *dp,
                 figures *g) {
  size_t n = e->n_rows;
  double dn = (double)n;
  for (size_t i = 0; i < n; i++) {
    nll_r[i] = -e->lp_ref[i];
    nll_c[i] = -e->lp_cand[i];
    dp[i] = exp(e->lp_cand[i]) - exp(e->lp_ref[i]);
  }
  double sr = sum_of(nll_r, n, ident, tmp), sr2 = sum_of(nll_r, n, sq, tmp);
  double sc = sum_of(nll_c, n, ident, tmp), sc2 = sum_of(nll_c, n, sq, tmp);
  for (size_t i = 0; i < n; i++) tmp[i] = nll_r[i] * nll_c[i];
  double src = fdl_num_pairwise_sum(tmp, n);
  mu lr = mean_unc(sr, sr2, n), lc = mean_unc(sc, sc2, n);
  g->ppl_ref = exp(lr.mean);
  g->ppl_ref_err = g->ppl_ref * lr.err;
  g->ppl_cand = exp(lc.mean);
  g->ppl_cand_err = g->ppl_cand * lc.err;
  /* Pearson's r from population moments: llama.cpp's cov/(sigma_Q sigma_base), whose (n-1)
   * factors cancel, defined here for every n (0 when a side is constant). */
  double va = sr2 / dn - lr.mean * lr.mean, vb = sc2 / dn - lc.mean * lc.mean;
  double cov = src / dn - lr.mean * lc.mean;
  g->cor = va > 0.0 && vb > 0.0 ? cov / sqrt(va * vb) : 0.0;
  /* mean b - mean a, and sigma_Q^2 + sigma_b^2 - 2 cov, are the mean and the iid variance of
   * the per-token difference of the NLLs; taken from the differences themselves they keep the
   * digits that cancel between near-equal sides, and both are exactly 0 for a self-compare. */
  for (size_t i = 0; i < n; i++) nll_r[i] = nll_c[i] - nll_r[i];
  double sd = sum_of(nll_r, n, ident, tmp), sd2 = sum_of(nll_r, n, sq, tmp);
  mu ld = mean_unc(sd, sd2, n);
  g->ln_ratio = ld.mean;
  g->ln_ratio_err = ld.err;
  g->ratio = exp(g->ln_ratio);
  g->ratio_err = g->ratio * ld.err;
  double sp = sum_of(dp, n, ident, tmp), sp2 = sum_of(dp, n, sq, tmp),
         sp4 = sum_of(dp, n, quad, tmp);
  mu pm = mean_unc(sp, sp2, n), ps = mean_unc(sp2, sp4, n);
  g->dp_mean = pm.mean;
  g->dp_mean_err = pm.err;
  g->dp_rms = sqrt(ps.mean);
  g->dp_rms_err = g->dp_rms > 0.0 ? 0.5 / g->dp_rms * ps.err : 0.0;
  size_t same = 0;
  for (size_t i = 0; i < n; i++) same += e->top1[i] != 0;
  g->top = n ? (double)same / dn : 0.0;
  g->top_err = n > 1 ? sqrt(g->top * (1.0 - g->top) / (dn - 1.0)) : 0.0;
  mu km = mean_unc(sum_of(e->kl, n, ident, tmp), sum_of(e->kl, n, sq, tmp), n);
  g->kl_mean = km.mean;
  g->kl_err = km.err;
}

static bool all_finite(const figures *g) {
  const double *p = (const double *)g;
  for (size_t i = 0; i < sizeof *g / sizeof(double); i++)
    if (!isfinite(p[i])) return false;
  return true;
}

fdl_status fdl_cmp_llamacpp_add(const cmp_estimate *e, const cmp_tokenwise_info *tw, json_t *rc,
                                fdl_refusal *r, fdl_err *err) {
  if (!e->computed || !e->lp_ref || !tw->extra) return FDL_OK;
  size_t n = e->n_rows, m = n ? n : 1;
  double *buf = fdl_malloc(4 * m * sizeof *buf);
  if (!buf) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu per-row values", n);
  double *tmp = buf, *a = buf + m, *b = buf + 2 * m, *dp = buf + 3 * m;
  figures g;
  memset(&g, 0, sizeof g);
  if (n) sums(e, tmp, a, b, dp, &g);
  if (!all_finite(&g)) {
    free(buf);
    return fdl_cmp_refuse(r, err, FDL_REF_NON_FINITE, FDL_GATE_COMPUTE,
                          "none: the logits give a perplexity beyond float64; the KL receipt "
                          "needs no perplexity, but fidelis never writes a non-finite number",
                          "a llama.cpp-compatible statistic is not finite (mean NLL %.17g of the "
                          "reference, %.17g of the candidate)",
                          log(g.ppl_ref), log(g.ppl_cand));
  }
  qsort(dp, n, sizeof *dp, fdl_order_double);
  memcpy(a, e->kl, n * sizeof *a);
  qsort(a, n, sizeof *a, fdl_order_double);
  json_t *dpj = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:o}", "mean", g.dp_mean, "mean_stderr",
                          g.dp_mean_err, "rms", g.dp_rms, "rms_stderr", g.dp_rms_err, "max",
                          n ? dp[n - 1] : 0.0, "min", n ? dp[0] : 0.0, "percentiles",
                          percentiles(dp, n, DP_F, DP_K, 11));
  json_t *klj = json_pack("{s:f, s:f, s:f, s:f, s:o}", "mean", g.kl_mean, "stderr", g.kl_err, "max",
                          n ? a[n - 1] : 0.0, "min", n ? a[0] : 0.0, "percentiles",
                          percentiles(a, n, KL_F, KL_K, 9));
  free(buf);
  json_t *arr = json_pack("{s:s, s:s, s:s}", FDL_COMPARE_LOGPROB_REF_NAME, tw->lp_ref_sha256,
                          FDL_COMPARE_LOGPROB_CAND_NAME, tw->lp_cand_sha256, FDL_COMPARE_TOP1_NAME,
                          tw->top1_sha256);
  json_t *blk = json_pack("{s:s, s:I, s:o, s:o, s:o, s:o, s:f, s:o, s:o, s:o, s:o, s:s}", "schema",
                          FDL_COMPARE_LLAMACPP_SCHEMA, "n", (json_int_t)n, "ppl_reference",
                          val_err(g.ppl_ref, g.ppl_ref_err), "ppl_candidate",
                          val_err(g.ppl_cand, g.ppl_cand_err), "ln_ppl_ratio",
                          val_err(g.ln_ratio, g.ln_ratio_err), "ppl_ratio",
                          val_err(g.ratio, g.ratio_err), "logprob_correlation", g.cor, "delta_p",
                          dpj, "same_top", val_err(g.top, g.top_err), "kld", klj, "arrays", arr,
                          "definitions", "docs/COMPARE.md#llamacpp-compatible-statistics");
  /* json_pack steals every part, also when one is NULL and the pack fails. */
  json_t *ext = blk ? json_pack("{s:o}", "llamacpp_compatible", blk) : NULL;
  if (!ext || json_object_set_new(rc, "fidelis_extensions", ext))
    return fdl_fail(err, FDL_NOMEM, "out of memory building fidelis_extensions");
  return FDL_OK;
}
