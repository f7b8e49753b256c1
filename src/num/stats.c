/* stats.c - the receipt's statistics, bit-identical to the reference implementation's numpy
 * 1.24 and CPython 3.12 on the same array (COMPARISON-RECEIPT.md section 7). Every loop below
 * mirrors the reference's operation order; do not "improve" one without changing the spec. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "fidelis/num.h"
#include "base/sys.h"

/* numpy's pairwise_sum (umath loops_utils.h): blocks of at most 128 summed with 8 running
 * partial sums, larger ranges split at a multiple of 8 near the middle. */
static double pairwise(const double *a, size_t n) {
  if (n < 8) {
    double res = 0.0;
    for (size_t i = 0; i < n; i++) res += a[i];
    return res;
  }
  if (n <= 128) {
    double r[8];
    memcpy(r, a, sizeof r);
    size_t i;
    for (i = 8; i < n - n % 8; i += 8)
      for (size_t j = 0; j < 8; j++) r[j] += a[i + j];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

/* numpy's reduction iterator is buffered (NPY_BUFSIZE = 8192 elements): add.reduce starts from
 * the identity and adds the pairwise sum of each 8192-element buffer in turn. Verified bitwise
 * against numpy 1.24 for lengths up to 10^6; COMPARISON-RECEIPT.md 7.1 shows only one buffer. */
#define NUMPY_BUFSIZE 8192

double fdl_num_pairwise_sum(const double *a, size_t n) {
  double res = 0.0;
  for (size_t i = 0; i < n; i += NUMPY_BUFSIZE)
    res += pairwise(a + i, n - i < NUMPY_BUFSIZE ? n - i : NUMPY_BUFSIZE);
  return res;
}

double fdl_num_mean(const double *a, size_t n) {
  if (n == 0) return NAN;
  return fdl_num_pairwise_sum(a, n) / (double)n;
}

/* Starting from +0.0 matches sum() starting from the int 0: 0 + x[0] is x[0] with -0.0 turned
 * into +0.0, and that first step adds nothing to the compensation. */
void fdl_num_neumaier_add(fdl_num_neumaier *acc, double x) {
  double t = acc->sum + x;
  if (fabs(acc->sum) >= fabs(x))
    acc->c += (acc->sum - t) + x;
  else
    acc->c += (x - t) + acc->sum;
  acc->sum = t;
}

double fdl_num_neumaier_value(const fdl_num_neumaier *acc) {
  return acc->c != 0.0 && isfinite(acc->c) ? acc->sum + acc->c : acc->sum;
}

double fdl_num_neumaier_mean(const double *a, size_t n) {
  if (n == 0) return NAN;
  fdl_num_neumaier acc = {0.0, 0.0};
  for (size_t i = 0; i < n; i++) fdl_num_neumaier_add(&acc, a[i]);
  return fdl_num_neumaier_value(&acc) / (double)n;
}

double fdl_num_quantile_sorted(const double *x, size_t n, double q) {
  double v = (double)(n - 1) * q;
  double lo = floor(v);
  size_t ilo = (size_t)lo;
  size_t ihi = ilo + 1 < n ? ilo + 1 : n - 1;
  double t = v - lo, d = x[ihi] - x[ilo];
  /* numpy's _lerp: a + d*t, replaced by b - d*(1-t) where t >= 0.5. */
  return t >= 0.5 ? x[ihi] - d * (1.0 - t) : x[ilo] + d * t;
}

fdl_status fdl_num_summarize(const double *a, size_t n, fdl_num_summary *out, fdl_err *err) {
  if (n == 0) {
    memset(out, 0, sizeof *out); /* the spec's empty-array rule: all 0.0 */
    return FDL_OK;
  }
  for (size_t i = 0; i < n; i++)
    if (isnan(a[i])) return fdl_fail(err, FDL_NONFINITE, "token-wise KL value %zu is NaN", i);
  double *x = fdl_malloc(n * sizeof *x);
  if (!x) return fdl_fail(err, FDL_NOMEM, "out of memory sorting %zu KL values", n);
  memcpy(x, a, n * sizeof *x);
  qsort(x, n, sizeof *x, fdl_order_double);
  fdl_num_summary r;
  r.mean = fdl_num_mean(a, n);
  r.median = fdl_num_quantile_sorted(x, n, 0.5);
  r.p95 = fdl_num_quantile_sorted(x, n, 0.95);
  r.p99 = fdl_num_quantile_sorted(x, n, 0.99);
  r.p99_9 = fdl_num_quantile_sorted(x, n, 0.999);
  /* np.max propagates the largest value; among equal zeros the sign is immaterial to JSON's
   * 0.0 but keep numpy's choice: the maximum as found by > over the array. */
  double m = a[0];
  for (size_t i = 1; i < n; i++) m = a[i] > m ? a[i] : m;
  r.max = m;
  free(x);
  *out = r;
  return FDL_OK;
}

void fdl_num_context_stats(const fdl_num_context *c, double *mean, double *max) {
  if (c->rows == 0) {
    *mean = *max = 0.0;
    return;
  }
  *mean = fdl_num_mean(c->kl, c->rows);
  double m = c->kl[0];
  for (size_t i = 1; i < c->rows; i++) m = c->kl[i] > m ? c->kl[i] : m;
  *max = m;
}

const size_t fdl_num_depth_edges[FDL_NUM_DEPTH_BUCKETS + 1] = {0, 256, 512, 1024, 1536, 2047};

fdl_status fdl_num_bucket_means(const fdl_num_context *ctxs, size_t nctx, const size_t *edges,
                                size_t nbuckets, double *value, bool *present, fdl_err *err) {
  if (nbuckets > 64) return fdl_fail(err, FDL_INVALID, "at most 64 buckets (got %zu)", nbuckets);
  for (size_t k = 0; k < nbuckets; k++)
    if (edges[k + 1] <= edges[k])
      return fdl_fail(err, FDL_INVALID, "bucket edges must increase (edge %zu)", k + 1);
  double *means = fdl_malloc((nctx ? nctx : 1) * sizeof *means);
  if (!means) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu context means", nctx);
  for (size_t k = 0; k < nbuckets; k++) {
    size_t m = 0;
    for (size_t c = 0; c < nctx; c++) {
      size_t lo = edges[k], hi = edges[k + 1] < ctxs[c].rows ? edges[k + 1] : ctxs[c].rows;
      if (lo < hi) means[m++] = fdl_num_mean(ctxs[c].kl + lo, hi - lo);
    }
    present[k] = m > 0;
    value[k] = m ? fdl_num_neumaier_mean(means, m) : 0.0;
  }
  free(means);
  return FDL_OK;
}

typedef struct {
  double v;
  size_t i;
} ranked;

static int cmp_desc_stable(const void *pa, const void *pb) {
  const ranked *a = pa, *b = pb;
  if (a->v != b->v) return a->v > b->v ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

fdl_status fdl_num_top_desc(const double *v, size_t n, size_t k, size_t *idx, size_t *count,
                            fdl_err *err) {
  ranked *r = fdl_malloc((n ? n : 1) * sizeof *r);
  if (!r) return fdl_fail(err, FDL_NOMEM, "out of memory ranking %zu values", n);
  for (size_t i = 0; i < n; i++) {
    if (isnan(v[i])) {
      free(r);
      return fdl_fail(err, FDL_NONFINITE, "value %zu to rank is NaN", i);
    }
    r[i].v = v[i];
    r[i].i = i;
  }
  qsort(r, n, sizeof *r, cmp_desc_stable); /* the index tie-break makes qsort stable */
  size_t m = k < n ? k : n;
  for (size_t i = 0; i < m; i++) idx[i] = r[i].i;
  *count = m;
  free(r);
  return FDL_OK;
}
