/* kl_scalar.c - portable chunk kernels. They define the bits: the SIMD kernels must reproduce
 * them exactly (tests/test_num.c compares all three on the same rows). */
#include <math.h>

#include "num/kl.h"

static int scan_scalar(const float *t, const float *s, size_t n, float *mt, float *ms, float *mag) {
  float a = t[0], b = s[0], m = 0.0f;
  int finite = 1;
  for (size_t i = 0; i < n; i++) {
    finite &= isfinite(t[i]) && isfinite(s[i]);
    a = t[i] > a ? t[i] : a;
    b = s[i] > b ? s[i] : b;
    m = fabsf(t[i]) > m ? fabsf(t[i]) : m;
    m = fabsf(s[i]) > m ? fabsf(s[i]) : m;
  }
  *mt = a;
  *ms = b;
  *mag = m;
  return finite;
}

static void accum_scalar(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                         const float *ps, size_t pn, kl_scan *ahead) {
  /* plain C has no portable prefetch; this path is the reference */
  (void)pt, (void)ps, (void)pn, (void)ahead;
  for (size_t i = 0; i < n; i++) kl_elem(st, i % KL_LANES, t[i], s[i]);
}

static const kl_kernels scalar_kernels = {scan_scalar, accum_scalar, kl_js_scalar,
                                          FDL_NUM_ISA_SCALAR};

const kl_kernels *kl_kernels_scalar(void) {
  return &scalar_kernels;
}
