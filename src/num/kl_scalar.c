/* kl_scalar.c - portable chunk kernels. They define the bits: the SIMD kernels must reproduce
 * them exactly (tests/test_num.c compares all three on the same rows). */
#include <math.h>

#include "num/kl.h"

static int scan_scalar(const float *t, const float *s, size_t n, float *mt, float *ms, float *mag) {
  return kl_scan_tail(t, s, 0, n, 1, t[0], s[0], 0.0f, mt, ms, mag);
}

static void accum_scalar(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                         const float *ps, size_t pn, kl_scan *ahead) {
  /* plain C has no portable prefetch; this path is the reference */
  (void)pt, (void)ps, (void)pn, (void)ahead;
  for (size_t i = 0; i < n; i++) kl_elem(st, i % KL_LANES, t[i], s[i]);
}

static const kl_kernels scalar_kernels = {scan_scalar, accum_scalar, fdl_kl_js_scalar,
                                          FDL_NUM_ISA_SCALAR};

const kl_kernels *fdl_kl_kernels_scalar(void) {
  return &scalar_kernels;
}
