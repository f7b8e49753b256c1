/* kl_scalar.c - portable chunk kernels. They define the bits: the SIMD kernels must reproduce
 * them exactly (tests/test_num.c compares all three on the same rows). */
#include <math.h>

#include "num/kl.h"

static int scan_scalar(const float *t, const float *s, size_t n, float *mt, float *ms) {
  float a = t[0], b = s[0];
  int finite = 1;
  for (size_t i = 0; i < n; i++) {
    finite &= isfinite(t[i]) && isfinite(s[i]);
    a = t[i] > a ? t[i] : a;
    b = s[i] > b ? s[i] : b;
  }
  *mt = a;
  *ms = b;
  return finite;
}

static void accum_scalar(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                         const float *ps, size_t pn) {
  (void)pt, (void)ps, (void)pn; /* plain C has no portable prefetch; this path is the reference */
  for (size_t i = 0; i < n; i++) kl_elem(st, i % KL_LANES, t[i], s[i]);
}

static const kl_kernels scalar_kernels = {scan_scalar, accum_scalar, FDL_NUM_ISA_SCALAR};

const kl_kernels *kl_kernels_scalar(void) {
  return &scalar_kernels;
}
