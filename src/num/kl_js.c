/* kl_js.c - the per-element math of the Jensen-Shannon sweep, which runs over a row again
 * after kl_finish has fixed both normalisers.
 *
 * JS = 1/2 sum [p log(p/M) + q log(q/M)], M = (p+q)/2. With P = max(p,q), delta = |log p -
 * log q| and em = expm1(-delta) in [-1, 0], each term is
 *   P * g,  g = -(2 + em) log1p(em/2) - (1 + em) delta  (>= 0, ~delta^2/4 for small delta),
 * which is exactly +0.0 for equal log-probabilities. g is finite for every finite delta, so no
 * term is skipped: a P that underflows to 0 adds exactly nothing.
 *
 * Every path performs the operations of js_elems in this order, and exp, expm1 and log1p come from
 * SLEEF's deterministic FMA family (kl_sleef.h), so the AVX2 and AVX-512 sweeps give the bits of
 * this one. A CPU without AVX and FMA cannot run that family (nor the vector kernels); there the
 * C library's functions are used, which changes only the last bits of JS on such machines. */
#include <math.h>

#include "num/kl.h"
#include "num/kl_sleef.h"

typedef struct {
  double (*exp)(double);
  double (*expm1)(double);
  double (*log1p)(double);
} js_fns;

static void js_elems(kl_state *st, const float *t, const float *s, size_t i, size_t n,
                     const js_fns *f) {
  for (; i < n; i++) {
    double lp = ((double)t[i] - st->mt) - st->log_st;
    double lq = ((double)s[i] - st->ms) - st->log_ss;
    double hi = lp > lq ? lp : lq;
    double delta = fabs(lp - lq);
    double big = f->exp(hi);
    double em = f->expm1(-delta);
    double l = f->log1p(0.5 * em);
    double g = (-2.0 - em) * l - (1.0 + em) * delta;
    size_t j = i % KL_LANES;
    st->js[j] = fma(big, g, st->js[j]);
  }
}

static const js_fns libm_fns = {exp, expm1, log1p};

#if defined(__x86_64__) && defined(__GNUC__)
static const js_fns sleef_fns = {Sleef_finz_expd1_u10purecfma, Sleef_finz_expm1d1_u10purecfma,
                                 Sleef_finz_log1pd1_u10purecfma};

static const js_fns *scalar_fns(void) {
  __builtin_cpu_init();
  int ok = __builtin_cpu_supports("avx") && __builtin_cpu_supports("fma");
  return ok ? &sleef_fns : &libm_fns;
}

void kl_js_tail(kl_state *st, const float *t, const float *s, size_t i, size_t n) {
  js_elems(st, t, s, i, n, &sleef_fns);
}
#else
static const js_fns *scalar_fns(void) {
  return &libm_fns;
}

void kl_js_tail(kl_state *st, const float *t, const float *s, size_t i, size_t n) {
  js_elems(st, t, s, i, n, &libm_fns); /* no vector kernels are built here */
}
#endif

void kl_js_scalar(kl_state *st, const float *t, const float *s, size_t n) {
  js_elems(st, t, s, 0, n, scalar_fns());
}
