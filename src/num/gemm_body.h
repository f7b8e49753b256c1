/* gemm_body.h - internal to src/num: the tile GEMM micro-kernel, compiled twice (gemm_avx2.c at
 * 8 lanes, gemm_avx512.c at 16): MR rows of A (V registers of packed A^T per k) times up to NR
 * rows of B. The includer defines its vector type VEC, W (lanes), MR, NR, V, TGT (its target
 * attribute), INL, UNROLL_V (the pragma that unrolls over V), VZERO, VLOAD, VSTORE and VFMADD,
 * and bcast (one B element widened and broadcast); it gets micro_f32, micro_bf16 and micro_f16. */
#ifndef FDL_NUM_GEMM_BODY_H
#define FDL_NUM_GEMM_BODY_H

INL void body(const fdl_gemm_type t, const size_t nr, size_t k0, size_t kc, const float *ap,
              const void *b, size_t ldb, float *acc, int first) {
  VEC c[NR][V];
  const void *row[NR];
  size_t es = t == FDL_GEMM_F32 ? 4 : 2;
#pragma GCC unroll 6
  for (size_t j = 0; j < nr; j++) {
    row[j] = (const uint8_t *)b + j * ldb * es;
    UNROLL_V
    for (int v = 0; v < V; v++) c[j][v] = first ? VZERO() : VLOAD(acc + j * MR + v * W);
  }
  size_t k = 0;
  if (k0 == 0 && kc) {
    VEC a[V];
    UNROLL_V
    for (int v = 0; v < V; v++) a[v] = VLOAD(ap + v * W);
#pragma GCC unroll 6
    for (size_t j = 0; j < nr; j++) {
      VEC bj = bcast(t, 1, row[j], 0);
      UNROLL_V
      for (int v = 0; v < V; v++) c[j][v] = VFMADD(a[v], bj, c[j][v]);
    }
    k = 1;
  }
  for (; k < kc; k++) {
    const float *ak = ap + k * MR;
    VEC a[V];
    UNROLL_V
    for (int v = 0; v < V; v++) a[v] = VLOAD(ak + v * W);
#pragma GCC unroll 6
    for (size_t j = 0; j < nr; j++) {
      VEC bj = bcast(t, 0, row[j], k0 + k);
      UNROLL_V
      for (int v = 0; v < V; v++) c[j][v] = VFMADD(a[v], bj, c[j][v]);
    }
  }
#pragma GCC unroll 6
  for (size_t j = 0; j < nr; j++) {
    UNROLL_V
    for (int v = 0; v < V; v++) VSTORE(acc + j * MR + v * W, c[j][v]);
  }
}

/* One micro-kernel per B type, each switching nr to a constant so body unrolls over it. */
#define MICRO(name, type)                                                                          \
  static TGT void name(size_t nr, size_t k0, size_t kc, const float *ap, const void *b,            \
                       size_t ldb, float *acc, int first) {                                        \
    switch (nr) {                                                                                  \
    case 6:                                                                                        \
      body(type, 6, k0, kc, ap, b, ldb, acc, first);                                               \
      break;                                                                                       \
    case 5:                                                                                        \
      body(type, 5, k0, kc, ap, b, ldb, acc, first);                                               \
      break;                                                                                       \
    case 4:                                                                                        \
      body(type, 4, k0, kc, ap, b, ldb, acc, first);                                               \
      break;                                                                                       \
    case 3:                                                                                        \
      body(type, 3, k0, kc, ap, b, ldb, acc, first);                                               \
      break;                                                                                       \
    case 2:                                                                                        \
      body(type, 2, k0, kc, ap, b, ldb, acc, first);                                               \
      break;                                                                                       \
    default:                                                                                       \
      body(type, 1, k0, kc, ap, b, ldb, acc, first);                                               \
      break;                                                                                       \
    }                                                                                              \
  }
MICRO(micro_f32, FDL_GEMM_F32)
MICRO(micro_bf16, FDL_GEMM_BF16)
MICRO(micro_f16, FDL_GEMM_F16)

#endif
