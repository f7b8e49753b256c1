/* bootstrap.c - context-cluster bootstrap CI95 of the token-weighted mean KL.
 *
 * Rows within one context are correlated (they share a prefix), so resampling rows would
 * understate the uncertainty; whole contexts are the resampling unit. The statistic is the
 * token-weighted mean sum(sums) / sum(rows) of the resample, i.e. the same estimator as
 * kl.mean applied to the resampled panel. The interval is the percentile interval (numpy
 * linear quantiles at 0.025 and 0.975 of the B statistics). Everything is single-threaded and a
 * pure function of (sums, rows, B, seed): xoshiro256** seeded by splitmix64, Lemire's unbiased
 * bounded draw, sums in draw order. */
#include <math.h>
#include <stdlib.h>

#include "fidelis/num.h"

typedef struct {
  uint64_t s[4];
} xoshiro;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

static uint64_t next(xoshiro *g) {
  uint64_t *s = g->s;
  uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

/* Uniform in [0, n) without modulo bias (Lemire 2019), n >= 1. */
static uint64_t below(xoshiro *g, uint64_t n) {
  __extension__ typedef unsigned __int128 u128;
  u128 m = (u128)next(g) * n;
  uint64_t lo = (uint64_t)m;
  if (lo < n) {
    uint64_t thresh = (0 - n) % n;
    while (lo < thresh) {
      m = (u128)next(g) * n;
      lo = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

fdl_status fdl_num_bootstrap_ci95(const double *sums, const size_t *rows, size_t nctx, size_t B,
                                  uint64_t seed, fdl_num_ci *out, fdl_err *err) {
  if (nctx < 2)
    return fdl_fail(err, FDL_REFUSED, "bootstrap needs at least 2 contexts to resample (got %zu)",
                    nctx);
  if (B < 2) return fdl_fail(err, FDL_REFUSED, "bootstrap needs at least 2 resamples (got %zu)", B);
  double total = 0.0, n = 0.0;
  for (size_t c = 0; c < nctx; c++) {
    if (!isfinite(sums[c]))
      return fdl_fail(err, FDL_NONFINITE, "context %zu has a non-finite KL sum", c);
    total += sums[c];
    n += (double)rows[c];
  }
  if (n == 0.0) return fdl_fail(err, FDL_REFUSED, "bootstrap over contexts with no rows");
  double *stat = malloc(B * sizeof *stat);
  if (!stat) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu bootstrap statistics", B);
  xoshiro g;
  uint64_t sm = seed;
  for (int i = 0; i < 4; i++) g.s[i] = splitmix64(&sm);
  for (size_t b = 0; b < B; b++) {
    double s = 0.0, r = 0.0;
    for (size_t k = 0; k < nctx; k++) {
      size_t c = (size_t)below(&g, nctx);
      s += sums[c];
      r += (double)rows[c];
    }
    /* A resample made only of empty contexts has no tokens; its mean is taken as 0. */
    stat[b] = r > 0.0 ? s / r : 0.0;
  }
  qsort(stat, B, sizeof *stat, cmp_double);
  out->low = fdl_num_quantile_sorted(stat, B, 0.025);
  out->high = fdl_num_quantile_sorted(stat, B, 0.975);
  out->point = total / n;
  out->clusters = nctx;
  out->samples = B;
  out->seed = seed;
  free(stat);
  return FDL_OK;
}
