/* kl_js.c - the Jensen-Shannon sweep in portable C, which runs over a row again after
 * fdl_kl_finish has fixed both normalisers; the vector kernels repeat it lane-wise.
 *
 * JS = 1/2 sum [p log(p/M) + q log(q/M)], M = (p+q)/2. With P = max(p,q), delta = |log p -
 * log q| and em = expm1(-delta) in [-1, 0], each term is
 *   P * g,  g = -(2 + em) log1p(em/2) - (1 + em) delta  (>= 0, ~delta^2/4 for small delta),
 * which is exactly +0.0 for equal log-probabilities. g is finite for every finite delta, so no
 * term is skipped: a P that underflows to 0 adds exactly nothing. exp, expm1 and log1p are the
 * project's own (kl.h, kl_js.h), so JS has the same bits on every kernel. */
#include <math.h>

#include "num/kl_js.h"

void fdl_kl_js_tail(kl_state *st, const float *t, const float *s, size_t i, size_t n) {
  for (; i < n; i++) {
    double lp = ((double)t[i] - st->mt) - st->log_st;
    double lq = ((double)s[i] - st->ms) - st->log_ss;
    double hi = lp > lq ? lp : lq;
    double delta = fabs(lp - lq);
    double big = kl_exp(hi);
    double em = kl_expm1_neg(-delta);
    double l = kl_log1p_half(0.5 * em);
    double g = (-2.0 - em) * l - (1.0 + em) * delta;
    size_t j = i % KL_LANES;
    st->js[j] = fma(big, g, st->js[j]);
  }
}

void fdl_kl_js_scalar(kl_state *st, const float *t, const float *s, size_t n) {
  fdl_kl_js_tail(st, t, s, 0, n);
}
