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

#include "base/order.h"
#include "base/rng.h"
#include "fidelis/num.h"
#include "base/sys.h"

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
  double *stat = fdl_malloc(B * sizeof *stat);
  if (!stat) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu bootstrap statistics", B);
  fdl_rng g;
  fdl_rng_seed(&g, seed);
  for (size_t b = 0; b < B; b++) {
    double s = 0.0, r = 0.0;
    for (size_t k = 0; k < nctx; k++) {
      size_t c = (size_t)fdl_rng_below(&g, nctx);
      s += sums[c];
      r += (double)rows[c];
    }
    /* A resample made only of empty contexts has no tokens; its mean is taken as 0. */
    stat[b] = r > 0.0 ? s / r : 0.0;
  }
  qsort(stat, B, sizeof *stat, fdl_order_double);
  out->low = fdl_num_quantile_sorted(stat, B, 0.025);
  out->high = fdl_num_quantile_sorted(stat, B, 0.975);
  out->point = total / n;
  out->clusters = nctx;
  out->samples = B;
  out->seed = seed;
  free(stat);
  return FDL_OK;
}
