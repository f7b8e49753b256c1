/* kl_row.c - the streaming KL state of one row: chunk bookkeeping, max rescaling, the final
 * combination and the end of the optional Jensen-Shannon sweep. ISA-independent (scalar C); the hot
 * loop lives in the kl_*.c kernels.
 *
 * The row keeps, per lane, St = sum e_t, Ss = sum e_s, A = sum e_t (dt - ds) and D = sum (e_s -
 * e_t), with e_x = exp(x - m_x) and dx = x - m_x. Then exactly
 *   KL = A/St + log(Ss/St) = A/St + log1p(D/St).
 * A and D are sums of small terms when the rows are close (even when one is shifted by a
 * constant), so the result keeps its relative precision instead of inheriting the rounding of
 * two log-sum-exps of size ~log V. See docs/NUMERICS.md. */
#include <math.h>
#include <string.h>

#include "num/kl.h"

void fdl_kl_state_init(kl_state *st) {
  memset(st, 0, sizeof *st); /* all-zero bytes are +0.0 */
  st->at = st->as = -1;
  st->tgt = -1;
}

static size_t first_equal(const float *x, size_t n, float v) {
  for (size_t i = 0; i < n; i++)
    if (x[i] == v) return i;
  return 0; /* unreachable: v is the maximum of x */
}

static fdl_status nonfinite_input(const float *t, const float *s, size_t n, size_t c0,
                                  const kl_where *w, fdl_err *err) {
  for (size_t i = 0; i < n; i++) {
    for (int side = 0; side < 2; side++) {
      float v = side ? s[i] : t[i];
      if (isfinite(v)) continue;
      int replayed = side ? w->cand_replayed : w->ref_replayed;
      return fdl_fail(err, FDL_NONFINITE,
                      "non-finite %s %s (%g) in output row %zu at vocabulary index %zu",
                      side ? "candidate" : "reference", replayed ? "replayed logit" : "logit",
                      (double)v, w->slot, c0 + i);
    }
  }
  return fdl_fail(err, FDL_NONFINITE, "non-finite logit in output row %zu", w->slot);
}

/* New maxima: scale every lane so that all sums refer to (mt, ms). With ft = exp(-(mt' - mt))
 * and fs likewise: St' = ft St, Ss' = fs Ss, A' = ft (A + c St) with c = (ms'-ms) - (mt'-mt),
 * D' = fs D + (fs - ft) St, where fs - ft = ft expm1(-c) keeps its precision when c is small. */
static void rescale(kl_state *st, double mt, double ms) {
  double dt = mt - st->mt, ds = ms - st->ms;
  double ft = kl_exp(-dt), fs = kl_exp(-ds);
  double c = ds - dt;
  double g = fabs(c) <= 0.5 ? ft * expm1(-c) : fs - ft;
  for (size_t j = 0; j < KL_LANES; j++) {
    st->a[j] = ft * fma(c, st->st[j], st->a[j]);
    st->d[j] = fma(g, st->st[j], fs * st->d[j]);
    st->st[j] *= ft;
    st->ss[j] *= fs;
  }
  st->mt = mt;
  st->ms = ms;
}

fdl_status fdl_kl_chunk(const kl_kernels *k, kl_state *st, const float *t, const float *s, size_t n,
                        size_t c0, const kl_next *next, kl_scan *ahead, const kl_where *w,
                        fdl_err *err) {
  float cmt, cms, mag;
  int finite;
  kl_scan local = {0};
  if (ahead && ahead->valid && ahead->t == t && ahead->s == s && ahead->n == n) {
    cmt = ahead->mt, cms = ahead->ms, mag = ahead->mag, finite = ahead->finite;
  } else {
    finite = k->scan(t, s, n, &cmt, &cms, &mag);
  }
  if (!ahead) ahead = &local;
  ahead->valid = 0;
  if (!finite) return nonfinite_input(t, s, n, c0, w, err);
  /* -0.0 and +0.0 compare equal; keep one of them so the state never depends on which one a
   * SIMD max happened to return. */
  cmt += 0.0f;
  cms += 0.0f;
  if (!st->started) {
    st->mt = cmt;
    st->ms = cms;
    st->at = (int64_t)(c0 + first_equal(t, n, cmt));
    st->as = (int64_t)(c0 + first_equal(s, n, cms));
    st->started = 1;
  } else {
    int up_t = cmt > st->mt, up_s = cms > st->ms;
    if (up_t) st->at = (int64_t)(c0 + first_equal(t, n, cmt));
    if (up_s) st->as = (int64_t)(c0 + first_equal(s, n, cms));
    if (up_t || up_s) rescale(st, up_t ? cmt : st->mt, up_s ? cms : st->ms);
  }
  /* Every x - m in this chunk is >= -(mag + m); see KL_FAST_MIN. */
  st->fast = st->mt + mag <= -KL_FAST_MIN && st->ms + mag <= -KL_FAST_MIN;
  k->accum(st, t, s, n, next ? next->t : NULL, next ? next->s : NULL, next ? next->n : 0, ahead);
  return FDL_OK;
}

/* Fixed pairwise tree over the lanes, the same on every path. */
static double lane_sum(const double *l) {
  double h[8];
  for (int i = 0; i < 8; i++) h[i] = l[i] + l[i + 8];
  return ((h[0] + h[1]) + (h[2] + h[3])) + ((h[4] + h[5]) + (h[6] + h[7]));
}

fdl_status fdl_kl_finish(kl_state *st, fdl_num_row *res, const kl_where *w, fdl_err *err) {
  double sum_t = lane_sum(st->st), sum_s = lane_sum(st->ss);
  double a = lane_sum(st->a), d = lane_sum(st->d);
  double x = a / sum_t;
  /* log1p(D/St) is the precise form for close rows; far apart, D carries no advantage and
   * the ratio of the directly summed Ss and St is used. */
  double l = fabs(d) <= 0.5 * sum_t ? log1p(d / sum_t) : log(sum_s / sum_t);
  double kl = (x + l) + 0.0; /* never -0.0 */
  if (!isfinite(kl))
    return fdl_fail(err, FDL_NONFINITE, "KL of output row %zu is not finite (%g)", w->slot, kl);
  double amax = 0.0;
  for (size_t j = 0; j < KL_LANES; j++) amax = st->abs_max[j] > amax ? st->abs_max[j] : amax;
  st->log_st = log(sum_t);
  st->log_ss = log(sum_s);
  res->kl = kl;
  res->ref_argmax = st->at;
  res->cand_argmax = st->as;
  res->abs_err_sum = lane_sum(st->abs_sum);
  res->abs_err_max = amax;
  return FDL_OK;
}

double fdl_kl_js_finish(const kl_state *st) {
  return 0.5 * lane_sum(st->js) + 0.0;
}
