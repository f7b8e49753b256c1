/* boundary.c - Kiln's compare_boundary and largest_relative_error_growth (spec §11): one hidden
 * row of the candidate against the reference row, float64 sums in index order, one accumulator
 * each, no contraction (do not vectorise or reorder them). */
#include <math.h>

#include "attr/internal.h"
#include "fidelis/attr.h"

fdl_status fdl_attr_compare_boundary(const float *actual, const float *reference, size_t n,
                                     fdl_attr_boundary *out, fdl_err *err) {
  if (n == 0) return fdl_fail(err, FDL_BOUNDS, "boundary: width 0, expected at least 1 element");
  fdl_status s = fdl_attr_finite(actual, n, "boundary: actual", err);
  if (s == FDL_OK) s = fdl_attr_finite(reference, n, "boundary: reference", err);
  if (s != FDL_OK) return s;
  double max_abs = 0.0, abs_sum = 0.0, sq = 0.0, dot = 0.0, kk = 0.0, hh = 0.0;
  for (size_t j = 0; j < n; j++) {
    double k = (double)actual[j], h = (double)reference[j], d = k - h;
    double e = fabs(d);
    if (e > max_abs) max_abs = e; /* fmax without the call: e is never NaN here */
    abs_sum += e;
    sq += d * d;
    dot += k * h;
    kk += k * k;
    hh += h * h;
  }
  double dn = (double)n;
  double rmse = sqrt(sq / dn), ref_rms = sqrt(hh / dn);
  if (!(ref_rms > 0.0))
    return fdl_fail(err, FDL_REFUSED,
                    "boundary: the reference row's root mean square is 0, expected > 0 (the "
                    "relative error is undefined)");
  if (!(kk > 0.0))
    return fdl_fail(err, FDL_REFUSED,
                    "boundary: the actual row's sum of squares is 0, expected > 0 (the cosine "
                    "is undefined)");
  out->cosine_similarity = fdl_attr_cosine(dot, kk, hh, max_abs == 0.0);
  out->max_abs_error = max_abs;
  out->mean_abs_error = abs_sum / dn;
  out->root_mean_square_error = rmse;
  out->reference_root_mean_square = ref_rms;
  out->relative_root_mean_square_error = rmse / ref_rms;
  s = fdl_attr_sha256_f32(reference, n, &out->hf_sha256, err);
  if (s == FDL_OK) s = fdl_attr_sha256_f32(actual, n, &out->kiln_sha256, err);
  return s;
}

void fdl_attr_largest_growth(const double *rel, size_t n, size_t *index, double *delta) {
  double prev = 0.0, best = -INFINITY;
  size_t idx = 0;
  for (size_t i = 0; i < n; i++) {
    double d = rel[i] - prev;
    if (d > best) {
      best = d;
      idx = i;
    }
    prev = rel[i];
  }
  *index = idx;
  *delta = best;
}
