/* kl_js.h - internal to src/num: the two functions the Jensen-Shannon sweep needs besides
 * kl_exp, in the same style: built only from +, *, /, fma and exact scalings, so the scalar,
 * AVX2 and AVX-512 sweeps give the same bits (kl_avx2.c and kl_avx512.c repeat these
 * operations lane-wise, in this order).
 *
 * kl_expm1_neg(x), x <= 0: kl_exp's reduction x = (16k + j) ln2/16 + r and polynomial
 * p = e^r - 1, then e^x - 1 = (2^k T_hi - 1) + 2^k (T_hi p + T_lo). For k >= -1 the first
 * subtraction is exact (Sterbenz), so near 0 the result keeps full relative precision (at n = 0
 * it is p itself); below x = -40, e^x - 1 rounds to -1, so x is clamped there and 2^k stays
 * normal. Within 1.5 ulp (tests/test_num.c, against expm1l; below x = -1.4 the two roundings
 * of (2^k T_hi - 1) and of the sum add up).
 *
 * kl_log1p_half(y), -1/2 <= y <= 0 (the sweep's y = (e^-delta - 1)/2): with z = y / (2 + y) in
 * [-1/3, 0], log1p(y) = 2 atanh(z) = 2z + 2z w P(w), w = z^2, where P approximates
 * (atanh(sqrt w)/sqrt w - 1)/w on [0, 1/9] by a Chebyshev fit of degree 9 (error 7e-17, which
 * w <= 1/9 shrinks further). Within 2 ulp (the division and z^2 round). */
#ifndef FDL_NUM_KL_JS_H
#define FDL_NUM_KL_JS_H

#include "num/kl.h"

#define KL_EXPM1_MIN (-40.0)
#define KL_L0 0x1.5555555555555p-2
#define KL_L1 0x1.999999999a3ddp-3
#define KL_L2 0x1.24924923d44c6p-3
#define KL_L3 0x1.c71c727143318p-4
#define KL_L4 0x1.745cf0b0e03bdp-4
#define KL_L5 0x1.3b18b294bebf9p-4
#define KL_L6 0x1.10ac75dc602b1p-4
#define KL_L7 0x1.eb905e8575054p-5
#define KL_L8 0x1.687a6e7c95176p-5
#define KL_L9 0x1.4b0a26c5f2aefp-4

static inline double kl_expm1_neg(double x) {
  double kf;
  unsigned j;
  double p = kl_exp_reduce(x < KL_EXPM1_MIN ? KL_EXPM1_MIN : x, &kf, &j);
  double sc = kl_pow2i(floor(kf * 0.0625));
  double a = sc * kl_exp2_hi[j] - 1.0;
  return a + sc * fma(kl_exp2_hi[j], p, kl_exp2_lo[j]);
}

static inline double kl_log1p_half(double y) {
  double z = y / (2.0 + y);
  double w = z * z;
  double p = KL_L9;
  p = fma(p, w, KL_L8);
  p = fma(p, w, KL_L7);
  p = fma(p, w, KL_L6);
  p = fma(p, w, KL_L5);
  p = fma(p, w, KL_L4);
  p = fma(p, w, KL_L3);
  p = fma(p, w, KL_L2);
  p = fma(p, w, KL_L1);
  p = fma(p, w, KL_L0);
  double z2 = z + z;
  return fma(z2 * w, p, z2);
}

#endif
