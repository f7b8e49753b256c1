/* charts.c - one function per chart of the page. Each chart is one <figure> holding one inline
 * <svg> with a stable id (the browser test looks for each), and a caption that says what is
 * drawn and from which sealed file. A chart with nothing to draw still has its SVG and says why.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "base/sys.h"
#include "report/rpt.h"

#define CW 600
/* The most contexts whose error bars are drawn (FDL_RPT_MAX_WHISKERS = 100 in the caption). */
#define FDL_RPT_MAX_WHISKERS 100
#define CH 340

/* Every chart opens its figure and SVG at one size and plots in one frame; fig_end closes both. */
static fdl_rpt_frame fig_begin(fdl_buf *b, const char *id, const char *title) {
  fdl_buf_puts(b, "<figure>");
  fdl_rpt_svg_begin(b, id, title, CW, CH);
  fdl_rpt_frame f = {0, 1, 0, 1, false, false, 78, 22, CW - 78 - 24, CH - 22 - 62};
  return f;
}

static void fig_end(fdl_buf *b, const char *caption) {
  fdl_rpt_svg_end(b);
  fdl_buf_puts(b, "<figcaption>");
  fdl_buf_puts(b, caption); /* captions are the page's own text, with escaped parts inserted */
  fdl_buf_puts(b, "</figcaption></figure>\n");
}

/* The log axis spans whole decades 10^FDL_RPT_DEC_MIN .. 10^FDL_RPT_DEC_MAX at most: both are
 * normal doubles, so a subnormal KL (5e-324) cannot round the lower bound to 0 and a KL near
 * DBL_MAX cannot round the upper bound to inf. Values outside fall into the edge bins. */
#define FDL_RPT_DEC_MIN (-307)
#define FDL_RPT_DEC_MAX 308
/* At most this many decades are drawn, counted down from the largest value. */
#define FDL_RPT_DECADES 12

/* The log-axis range of the positive KL values of rs as decade exponents: at most
 * FDL_RPT_DECADES below the largest, at least one. */
static bool log_decades(const fdl_rpt_receipt *const *rs, size_t n, int *dlo, int *dhi) {
  double mn = INFINITY, mx = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < rs[i]->n; k++) {
      double v = rs[i]->kl[k];
      if (v > 0 && v < mn) mn = v;
      if (v > mx) mx = v;
    }
  if (!(mx > 0)) return false; /* an inf maximum clamps to the top decade below */
  double a = floor(log10(mn)), z = ceil(log10(mx) - 1e-12);
  a = fmax(fmin(a, FDL_RPT_DEC_MAX - 1), FDL_RPT_DEC_MIN);
  z = fmax(fmin(z, FDL_RPT_DEC_MAX), a + 1);
  a = fmax(a, z - FDL_RPT_DECADES);
  *dlo = (int)a, *dhi = (int)z;
  return true;
}

void fdl_rpt_chart_hist(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_rpt_frame f = fig_begin(b, "chart-kl-hist", "Histogram of tokenwise KL on a log axis");
  int dlo, dhi;
  const fdl_rpt_receipt *one[1] = {r};
  size_t below = 0;
  if (!log_decades(one, 1, &dlo, &dhi)) {
    f.x0 = 1e-6, f.x1 = 1, f.xlog = true;
    fdl_rpt_axes(b, &f, "KL(reference || candidate) per token (nats, log scale)", "tokens", 0);
    fdl_rpt_svg_note(b, &f, "no token has a positive KL: every value is 0");
    fig_end(b, "Every tokenwise KL value is zero (or below): nothing to place on a log axis.");
    return;
  }
  enum { per_decade = 8, max_bins = FDL_RPT_DECADES * per_decade };
  double lo = pow(10, dlo), hi = pow(10, dhi);
  size_t nb = (size_t)(dhi - dlo) * per_decade; /* 8 .. max_bins by log_decades */
  double edges[max_bins + 1], counts[max_bins];
  for (size_t k = 0; k <= nb; k++) edges[k] = pow(10, dlo + (double)k / per_decade);
  memset(counts, 0, sizeof counts);
  double top = 0;
  for (size_t i = 0; i < r->n; i++) {
    double v = r->kl[i];
    if (!(v >= lo)) {
      below++;
      continue;
    }
    /* In decade units from the axis start; a value past the top (or inf) joins the last bin. */
    double t = floor((log10(v) - dlo) * per_decade);
    size_t k = t < (double)nb ? (size_t)fmax(t, 0) : nb - 1;
    counts[k] += 1;
  }
  for (size_t k = 0; k < nb; k++) top = fmax(top, counts[k]);
  f.x0 = lo, f.x1 = hi, f.xlog = true, f.y0 = 0, f.y1 = fdl_rpt_headroom(top);
  fdl_rpt_axes(b, &f, "KL(reference || candidate) per token (nats, log scale)", "tokens", 0);
  fdl_rpt_hist(b, &f, edges, counts, nb, fdl_rpt_colour(0));
  char cap[512];
  snprintf(cap, sizeof cap,
           "Tokenwise KL from <code>tokenwise-kld.npy</code> (%zu tokens), %d bins per decade. "
           "%zu token(s) at or below %g (zero KL included) lie left of the axis and are not "
           "drawn.",
           r->n, per_decade, below, lo);
  fig_end(b, cap);
}

/* Up to this many points per CDF: each at an evenly spaced rank, so the curve is exact there. */
#define CDF_POINTS 1200

fdl_status fdl_rpt_chart_cdf(fdl_buf *b, const fdl_rpt_receipt *const *rs, size_t n, const char *id,
                             fdl_err *err) {
  fdl_rpt_frame f = fig_begin(b, id, "Cumulative distribution of tokenwise KL");
  double lo = 1e-6, hi = 1;
  int a, z;
  bool any = log_decades(rs, n, &a, &z);
  if (any) lo = pow(10, a), hi = pow(10, z);
  f.x0 = lo, f.x1 = hi, f.xlog = true, f.y0 = 0, f.y1 = 1;
  fdl_rpt_axes(b, &f, "KL(reference || candidate) per token (nats, log scale)",
               "fraction of tokens with KL \xE2\x89\xA4 x", 0);
  const char *names[FDL_REPORT_MAX_RECEIPTS], *cols[FDL_REPORT_MAX_RECEIPTS];
  for (size_t i = 0; any && i < n; i++) {
    const fdl_rpt_receipt *r = rs[i];
    double *s = fdl_malloc((r->n ? r->n : 1) * sizeof *s);
    double *x = fdl_malloc(CDF_POINTS * sizeof *x), *y = fdl_malloc(CDF_POINTS * sizeof *y);
    if (!s || !x || !y) {
      free(s), free(x), free(y);
      return fdl_fail(err, FDL_NOMEM, "out of memory for the CDF of %zu values", r->n);
    }
    memcpy(s, r->kl, r->n * sizeof *s);
    qsort(s, r->n, sizeof *s, fdl_order_double);
    size_t m = r->n < CDF_POINTS ? r->n : CDF_POINTS, used = 0;
    for (size_t k = 0; k < m; k++) {
      size_t idx = m > 1 ? (size_t)((double)k * (double)(r->n - 1) / (double)(m - 1)) : 0;
      if (!(s[idx] >= lo)) continue;
      x[used] = s[idx];
      y[used] = (double)(idx + 1) / (double)r->n;
      used++;
    }
    fdl_rpt_line(b, &f, x, y, used, fdl_rpt_colour(i), true, NULL);
    names[i] = fdl_rpt_name(r);
    cols[i] = fdl_rpt_colour(i);
    free(s), free(x), free(y);
  }
  if (!any) fdl_rpt_svg_note(b, &f, "no token has a positive KL: every value is 0");
  if (any && n == 1) {
    static const char *const labels[4] = {"p50", "p95", "p99", "p99.9"};
    static const char *const mc[4] = {"#000000", "#0072B2", "#CC79A7", "#D55E00"};
    char text[4][64];
    const char *tn[4], *tc[4];
    size_t nt = 0;
    const double marks[4] = {rs[0]->d.kl.median, rs[0]->d.kl.p95, rs[0]->d.kl.p99,
                             rs[0]->d.kl.p99_9};
    for (int k = 0; k < 4; k++) {
      double v = marks[k];
      if (!(v >= lo)) continue;
      char num[32];
      fdl_rpt_vline(b, &f, v, mc[k], labels[k], k);
      snprintf(text[nt], sizeof text[nt], "%s = %s nats", labels[k], fdl_rpt_fmt(v, 4, num));
      tn[nt] = text[nt], tc[nt] = mc[k], nt++;
    }
    fdl_rpt_legend(b, f.L + 10, f.T + 10, tn, tc, nt);
  }
  if (any && n > 1) fdl_rpt_legend(b, f.L + 10, f.T + 10, names, cols, n);
  fig_end(b, n == 1 ? "Cumulative share of tokens (from <code>tokenwise-kld.npy</code>) at or "
                      "below each KL. The dashed markers are the receipt's own sealed "
                      "<code>kl.median</code>, <code>p95</code>, <code>p99</code> and "
                      "<code>p99_9</code>."
                    : "Each receipt's cumulative share of tokens at or below each KL, from its "
                      "own verified <code>tokenwise-kld.npy</code>. Further right is worse.");
  return FDL_OK;
}

typedef struct {
  double mean;
  size_t i;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->mean != y->mean) return x->mean < y->mean ? 1 : -1; /* descending */
  return (x->i > y->i) - (x->i < y->i);
}

fdl_status fdl_rpt_chart_contexts(fdl_buf *b, const fdl_rpt_receipt *r, fdl_err *err) {
  fdl_rpt_frame f =
      fig_begin(b, "chart-contexts", "Per-context mean KL with CI95, sorted, by domain");
  f.H -= 6;
  size_t n = r->nctx;
  ranked *o = fdl_malloc((n ? n : 1) * sizeof *o);
  double *v = fdl_malloc((n ? n : 1) * 3 * sizeof *v);
  const char **cols = fdl_malloc((n ? n : 1) * 2 * sizeof *cols);
  char(*labs)[24] = fdl_malloc((n ? n : 1) * sizeof *labs);
  if (!o || !v || !cols || !labs) {
    free(o), free(v), free(cols), free(labs);
    return fdl_fail(err, FDL_NOMEM, "out of memory for %zu contexts", n);
  }
  if (n == 0) {
    fdl_rpt_axes(b, &f, "contexts", "mean KL (nats)", 1);
    fdl_rpt_svg_note(b, &f, "the receipt has no per_context list");
    fig_end(b, "No per-context means to show.");
    free(o), free(v), free(cols), free(labs);
    return FDL_OK;
  }
  for (size_t i = 0; i < n; i++) o[i] = (ranked){r->ctx[i].mean, i};
  qsort(o, n, sizeof *o, cmp_ranked);
  double *lo = v + n, *hi = v + 2 * n, top = 0;
  const char **labels = cols + n;
  bool derived = false;
  for (size_t k = 0; k < n; k++) {
    const fdl_rpt_ctx *c = &r->ctx[o[k].i];
    v[k] = c->mean;
    lo[k] = c->lo;
    hi[k] = c->hi;
    derived |= !c->ci_sealed && isfinite(c->lo);
    cols[k] = c->domain < 0 ? "#777777" : fdl_rpt_colour((size_t)c->domain);
    snprintf(labs[k], sizeof labs[k], "%lld", c->index);
    labels[k] = n <= 32 ? labs[k] : NULL;
    top = fmax(top, fmax(c->mean, isfinite(c->hi) ? c->hi : 0));
  }
  f.y0 = 0, f.y1 = fdl_rpt_headroom(top);
  fdl_rpt_axes(b, &f,
               n <= 32 ? "contexts, highest mean first (panel index under each bar)"
                       : "contexts, highest mean first",
               "mean KL per context (nats)", n);
  /* Past this many bars the error bars would cover each other: the caption says so instead. */
  bool whiskers = n <= FDL_RPT_MAX_WHISKERS;
  fdl_rpt_bars(b, &f, v, whiskers ? lo : NULL, whiskers ? hi : NULL, cols, labels, n);
  const char *dn[FDL_RPT_MAX_DOMAINS], *dc[FDL_RPT_MAX_DOMAINS];
  for (size_t k = 0; k < r->ndomains; k++) dn[k] = r->domains[k], dc[k] = fdl_rpt_colour(k);
  fdl_rpt_legend(b, f.L + f.W - 150, f.T + 8, dn, dc, r->ndomains);
  char cap[640], how[256];
  snprintf(how, sizeof how,
           "CI95 of the context mean by a percentile bootstrap over the context's own tokens in "
           "<code>tokenwise-kld.npy</code> (%d resamples, seed 0), derived by the report",
           FDL_RPT_CTX_B);
  snprintf(cap, sizeof cap,
           "Each bar is one context's sealed <code>per_context[].mean</code>, coloured by its "
           "domain%s. Error bars: %s%s.",
           r->domains_cut ? " (more domains than colours: the last colour is shared)" : "",
           derived ? how : "the receipt's sealed per-context CI95",
           whiskers ? "" : " (not drawn: more than 100 contexts)");
  fig_end(b, cap);
  free(o), free(v), free(cols), free(labs);
  return FDL_OK;
}

fdl_status fdl_rpt_chart_position(fdl_buf *b, const fdl_rpt_receipt *r, fdl_err *err) {
  double *pos, *mean;
  size_t np = 0, w = 1;
  fdl_status s = fdl_rpt_position_means(r, &pos, &mean, &np, &w, err);
  if (s != FDL_OK) return s;
  fdl_rpt_frame f = fig_begin(b, "chart-position", "Mean KL by position in the context");
  double top = 0;
  for (size_t k = 0; k < np; k++) top = fmax(top, mean[k]);
  f.x0 = 1, f.x1 = np ? fmax(pos[np - 1] + (double)w - 1, 2) : 2;
  f.y0 = 0, f.y1 = fdl_rpt_headroom(top);
  fdl_rpt_axes(b, &f, "position of the predicted token in its context (tokens)", "mean KL (nats)",
               0);
  if (np) {
    fdl_rpt_line(b, &f, pos, mean, np, fdl_rpt_colour(0), false, NULL);
    if (np <= 128) fdl_rpt_scatter(b, &f, pos, mean, np, fdl_rpt_colour(0), 2.5);
  } else {
    fdl_rpt_svg_note(b, &f, "the receipt has no per_context list to place rows in");
  }
  char cap[512];
  snprintf(cap, sizeof cap,
           "Mean of <code>tokenwise-kld.npy</code> over all contexts at each position. The "
           "array is in scored-row order: contexts in <code>per_context</code> order, each "
           "<code>scored_rows</code> long; row k of a context predicts token k+1, so its "
           "position is k+1.");
  if (w > 1) {
    char more[128];
    snprintf(more, sizeof more,
             " Positions are pooled in buckets of %zu, so at most %d points "
             "remain.",
             w, FDL_RPT_POS_POINTS);
    strncat(cap, more, sizeof cap - strlen(cap) - 1);
  }
  fig_end(b, cap);
  free(pos);
  free(mean);
  return FDL_OK;
}

void fdl_rpt_chart_top1(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_rpt_frame f = fig_begin(b, "chart-top1", "Top-1 agreement per domain");
  double v[FDL_RPT_MAX_DOMAINS + 1], lo[FDL_RPT_MAX_DOMAINS + 1], hi[FDL_RPT_MAX_DOMAINS + 1];
  const char *cols[FDL_RPT_MAX_DOMAINS + 1], *labels[FDL_RPT_MAX_DOMAINS + 1];
  size_t n = 0;
  if (r->top1 && r->nctx) {
    double hit[FDL_RPT_MAX_DOMAINS + 1] = {0}, cnt[FDL_RPT_MAX_DOMAINS + 1] = {0};
    for (size_t i = 0; i < r->nctx; i++) {
      const fdl_rpt_ctx *c = &r->ctx[i];
      size_t d = c->domain < 0 ? FDL_RPT_MAX_DOMAINS : (size_t)c->domain;
      for (size_t k = 0; k < c->rows; k++) {
        hit[d] += r->top1[c->first + k] ? 1 : 0;
        cnt[d] += 1;
      }
    }
    for (size_t d = 0; d <= FDL_RPT_MAX_DOMAINS; d++) {
      if (cnt[d] == 0) continue;
      double p = hit[d] / cnt[d], e = 1.96 * sqrt(p * (1 - p) / cnt[d]);
      v[n] = p, lo[n] = fmax(0, p - e), hi[n] = fmin(1, p + e);
      cols[n] = d < r->ndomains ? fdl_rpt_colour(d) : "#777777";
      labels[n] = d < r->ndomains ? r->domains[d] : "(none)";
      n++;
    }
  }
  v[n] = r->d.top1_agreement, lo[n] = hi[n] = NAN;
  cols[n] = "#555555", labels[n] = "all tokens";
  n++;
  f.y0 = 0, f.y1 = 1;
  fdl_rpt_axes(b, &f, "domain", "top-1 agreement (fraction of tokens)", n);
  fdl_rpt_bars(b, &f, v, lo, hi, cols, labels, n);
  fig_end(b, r->top1 ? "Share of tokens whose candidate argmax equals the reference argmax, per "
                       "domain, from <code>tokenwise-top1.npy</code>; error bars \xC2\xB1"
                       "1.96 binomial standard errors (tokens treated as independent). "
                       "<q>all tokens</q> is the receipt's sealed <code>top1_agreement</code>."
                     : "Only the receipt's sealed <code>top1_agreement</code> over all tokens: "
                       "the per-token top-1 array (<code>tokenwise-top1.npy</code>) is not in "
                       "this receipt (made by an older fidelis), so there is no per-domain "
                       "split.");
}

/* Points drawn in the Δp scatter; the binned mean line uses every token. */
#define DP_POINTS 3000
#define DP_BINS 20

void fdl_rpt_chart_deltap(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_rpt_frame f =
      fig_begin(b, "chart-deltap",
                "Change in the target token's probability against its reference probability");
  double amax = 0, sum[DP_BINS] = {0}, cnt[DP_BINS] = {0};
  for (size_t i = 0; i < r->n; i++) {
    double p = exp(r->lp_ref[i]), d = exp(r->lp_cand[i]) - p;
    amax = fmax(amax, fabs(d));
    /* A log-probability above 0 (finite, but not a probability) gives p > 1, or inf. */
    size_t k = p < 1 ? (size_t)(p * DP_BINS) : DP_BINS - 1;
    sum[k] += d, cnt[k] += 1;
  }
  double lim = amax > 0 ? fmin(amax * 1.05, 1) : 1e-6; /* |Δp| <= 1 */
  f.x0 = 0, f.x1 = 1, f.y0 = -lim, f.y1 = lim;
  fdl_rpt_axes(b, &f, "reference probability of the target token p_ref",
               "\xCE\x94p = p_cand \xE2\x88\x92 p_ref", 0);
  double zx[2] = {0, 1}, zy[2] = {0, 0};
  fdl_rpt_line(b, &f, zx, zy, 2, "#888888", false, "4 3");
  size_t stride = r->n > DP_POINTS ? (r->n + DP_POINTS - 1) / DP_POINTS : 1, m = 0;
  double xs[DP_POINTS], ys[DP_POINTS];
  for (size_t i = 0; i < r->n && m < DP_POINTS; i += stride) {
    xs[m] = exp(r->lp_ref[i]);
    ys[m] = exp(r->lp_cand[i]) - xs[m];
    m++;
  }
  fdl_rpt_scatter(b, &f, xs, ys, m, fdl_rpt_colour(0), 2);
  double bx[DP_BINS], by[DP_BINS];
  size_t nb = 0;
  for (size_t k = 0; k < DP_BINS; k++)
    if (cnt[k] > 0) bx[nb] = (k + 0.5) / DP_BINS, by[nb] = sum[k] / cnt[k], nb++;
  fdl_rpt_line(b, &f, bx, by, nb, fdl_rpt_colour(1), false, NULL);
  const char *ln[2] = {"token", "mean per 0.05 of p_ref"};
  const char *lc[2] = {fdl_rpt_colour(0), fdl_rpt_colour(1)};
  fdl_rpt_legend(b, f.L + f.W - 190, f.T + 8, ln, lc, 2);
  char cap[512];
  snprintf(cap, sizeof cap,
           "p = exp of <code>tokenwise-logprob-ref.npy</code> and "
           "<code>tokenwise-logprob-cand.npy</code> (the target token's log-probability on each "
           "side). %s The line is the mean \xCE\x94p in each twentieth of p_ref over all %zu "
           "tokens.",
           stride > 1 ? "Dots: every k-th token (at most 3000)." : "Dots: every token.", r->n);
  fig_end(b, cap);
}
