/* gemm_small_body.h - internal to src/num: the small-M GEMM's feed and its per-type entry
 * points, compiled twice (gemm_small_avx2.c at 8 lanes, gemm_small_avx512.c at 16). The
 * includer defines LANES, TGT (its target attribute), INL, its vector types VEC and VECI, VCAST
 * (VECI's bits as VEC), VFMADD, VSET1, widen_lo and widen_hi, and after this header body, then
 * SMALL's three uses. */
#ifndef FDL_NUM_GEMM_SMALL_BODY_H
#define FDL_NUM_GEMM_SMALL_BODY_H

/* The fmas of one transposed block for ks [kk, kk + kc), A rows 0..m-1, k ascending. */
INL void feed(const fdl_gemm_type t, const size_t m, const float *const a[4], size_t kk, size_t kc,
              const VECI r[LANES], VEC c[4]) {
  if (t == FDL_GEMM_F32) {
#pragma GCC unroll 16
    for (size_t s = 0; s < kc; s++) {
      VEC bk = VCAST(r[s]);
#pragma GCC unroll 4
      for (size_t i = 0; i < m; i++) c[i] = VFMADD(VSET1(a[i][kk + s]), bk, c[i]);
    }
    return;
  }
#pragma GCC unroll 16
  for (size_t s = 0; s < kc; s += 2) {
    VEC lo = widen_lo(t, r[s / 2]);
#pragma GCC unroll 4
    for (size_t i = 0; i < m; i++) c[i] = VFMADD(VSET1(a[i][kk + s]), lo, c[i]);
    if (s + 1 < kc) {
      VEC hi = widen_hi(t, r[s / 2]);
#pragma GCC unroll 4
      for (size_t i = 0; i < m; i++) c[i] = VFMADD(VSET1(a[i][kk + s + 1]), hi, c[i]);
    }
  }
}

/* One entry point per B type, each switching m to a constant (1 to 4 rows of A per body). */
#define SMALL(name, type)                                                                          \
  static TGT void name(const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0, size_t n1) {       \
    for (; m0 < m1; m0 += 4) {                                                                     \
      switch (m1 - m0) {                                                                           \
      case 1:                                                                                      \
        body(type, 1, x, m0, n0, n1);                                                              \
        break;                                                                                     \
      case 2:                                                                                      \
        body(type, 2, x, m0, n0, n1);                                                              \
        break;                                                                                     \
      case 3:                                                                                      \
        body(type, 3, x, m0, n0, n1);                                                              \
        break;                                                                                     \
      default:                                                                                     \
        body(type, 4, x, m0, n0, n1);                                                              \
        break;                                                                                     \
      }                                                                                            \
      if (m1 - m0 <= 4) break;                                                                     \
    }                                                                                              \
  }
#endif
