/* kl_js.c - the per-element math of the Jensen-Shannon sweep, which runs over a row again
 * after kl_finish has fixed both normalisers.
 *
 * JS = 1/2 sum [p log(p/M) + q log(q/M)], M = (p+q)/2. With P = max(p,q), delta = |log p -
 * log q| and em = expm1(-delta) in [-1, 0], each term is
 *   P * g,  g = -(2 + em) log1p(em/2) - (1 + em) delta  (>= 0, ~delta^2/4 for small delta),
 * which is exactly +0.0 for equal log-probabilities. g is finite for every finite delta, so no
 * term is skipped: a P that underflows to 0 adds exactly nothing.
 *
 * Every path performs the operations of js_elem in this order, and exp, expm1 and log1p come from
 * SLEEF's deterministic FMA family (kl_sleef.h), so the AVX2 and AVX-512 sweeps give the bits of
 * this one. A CPU without AVX and FMA cannot run that family (nor the vector kernels); there the
 * C library's functions are used, which changes only the last bits of JS on such machines. */
#include <math.h>

#include "num/kl.h"
#include "num/kl_sleef.h"

#if defined(__x86_64__) && defined(__GNUC__)
KL_SLEEF_FMA static inline void js_elem_sleef(kl_state *st, size_t j, float tf, float sf) {
  double lp = ((double)tf - st->mt) - st->log_st;
  double lq = ((double)sf - st->ms) - st->log_ss;
  double hi = lp > lq ? lp : lq;
  double delta = fabs(lp - lq);
  double big = Sleef_finz_expd1_u10purecfma(hi);
  double em = Sleef_finz_expm1d1_u10purecfma(-delta);
  double l = Sleef_finz_log1pd1_u10purecfma(0.5 * em);
  double g = (-2.0 - em) * l - (1.0 + em) * delta;
  st->js[j] = fma(big, g, st->js[j]);
}

static int has_sleef_fma(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
}

KL_SLEEF_FMA void kl_js_tail(kl_state *st, const float *t, const float *s, size_t i, size_t n) {
  for (; i < n; i++) js_elem_sleef(st, i % KL_LANES, t[i], s[i]);
}
#else
static int has_sleef_fma(void) {
  return 0;
}

void kl_js_tail(kl_state *st, const float *t, const float *s, size_t i, size_t n) {
  (void)st, (void)t, (void)s, (void)i, (void)n; /* no vector kernels call it here */
}
#endif

static void js_elem_libm(kl_state *st, size_t j, float tf, float sf) {
  double lp = ((double)tf - st->mt) - st->log_st;
  double lq = ((double)sf - st->ms) - st->log_ss;
  double hi = lp > lq ? lp : lq;
  double delta = fabs(lp - lq);
  double big = exp(hi);
  double em = expm1(-delta);
  double l = log1p(0.5 * em);
  double g = (-2.0 - em) * l - (1.0 + em) * delta;
  st->js[j] = fma(big, g, st->js[j]);
}

void kl_js_scalar(kl_state *st, const float *t, const float *s, size_t n) {
  if (has_sleef_fma()) {
    kl_js_tail(st, t, s, 0, n);
    return;
  }
  for (size_t i = 0; i < n; i++) js_elem_libm(st, i % KL_LANES, t[i], s[i]);
}
