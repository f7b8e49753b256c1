/* gemm_avx512.c - AVX-512F GEMM micro-kernel, compiled for that target only and chosen at run
 * time. 64 rows of A (four zmm of packed A^T per k) times up to 6 rows of B: 24 accumulators,
 * each lane one element's chain. Per k every lane does exactly the scalar kernel's
 * c = fmaf(a, widen(b), c); a B element reaches all 16 lanes by broadcast, widened in the
 * register:
 *   BF16 at k >= 1: the 32-bit word that starts one element earlier holds element k in its
 *        high half, so masking the low half off is the exact float (no shift, no copy);
 *   BF16 at k == 0: the element shifted up by 16 (the word before it is outside the row);
 *   F16: vcvtph2ps, exact for every binary16 including subnormals. */
#include "num/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f")))
#define INL static inline __attribute__((always_inline)) T512
#define MR 64
#define NR 6
#define V (MR / 16)
/* Up to this many rows of A, gemm_small_avx512.c's kernel (lanes over B's rows) is faster:
 * this one would spend most of its 64 lanes on padding. */
#define SMALL_M 4

INL __m512 bcast(const fdl_gemm_type t, const int at_zero, const void *row, size_t k) {
  if (t == FDL_GEMM_F32) return _mm512_set1_ps(((const float *)row)[k]);
  const uint16_t *h = row;
  if (t == FDL_GEMM_F16) return _mm512_cvtph_ps(_mm256_set1_epi16((short)h[k]));
  if (at_zero) return _mm512_set1_ps(fdl_gemm_bits_f32((uint32_t)h[k] << 16));
  uint32_t w;
  memcpy(&w, h + k - 1, sizeof w);
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_set1_epi32((int)w), _mm512_set1_epi32((int)0xFFFF0000u)));
}

INL void body(const fdl_gemm_type t, const size_t nr, size_t k0, size_t kc, const float *ap,
              const void *b, size_t ldb, float *acc, int first) {
  __m512 c[NR][V];
  const void *row[NR];
  size_t es = t == FDL_GEMM_F32 ? 4 : 2;
#pragma GCC unroll 6
  for (size_t j = 0; j < nr; j++) {
    row[j] = (const uint8_t *)b + j * ldb * es;
#pragma GCC unroll 4
    for (int v = 0; v < V; v++)
      c[j][v] = first ? _mm512_setzero_ps() : _mm512_load_ps(acc + j * MR + v * 16);
  }
  size_t k = 0;
  if (k0 == 0 && kc) {
    __m512 a[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) a[v] = _mm512_load_ps(ap + v * 16);
#pragma GCC unroll 6
    for (size_t j = 0; j < nr; j++) {
      __m512 bj = bcast(t, 1, row[j], 0);
#pragma GCC unroll 4
      for (int v = 0; v < V; v++) c[j][v] = _mm512_fmadd_ps(a[v], bj, c[j][v]);
    }
    k = 1;
  }
  for (; k < kc; k++) {
    const float *ak = ap + k * MR;
    __m512 a[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) a[v] = _mm512_load_ps(ak + v * 16);
#pragma GCC unroll 6
    for (size_t j = 0; j < nr; j++) {
      __m512 bj = bcast(t, 0, row[j], k0 + k);
#pragma GCC unroll 4
      for (int v = 0; v < V; v++) c[j][v] = _mm512_fmadd_ps(a[v], bj, c[j][v]);
    }
  }
#pragma GCC unroll 6
  for (size_t j = 0; j < nr; j++)
#pragma GCC unroll 4
    for (int v = 0; v < V; v++) _mm512_store_ps(acc + j * MR + v * 16, c[j][v]);
}

#define MICRO(name, type)                                                                          \
  static T512 void name(size_t nr, size_t k0, size_t kc, const float *ap, const void *b,           \
                        size_t ldb, float *acc, int first) {                                       \
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

static const gemm_kernel avx512_kernel = {
    FDL_NUM_ISA_AVX512, MR, NR, {micro_f32, micro_bf16, micro_f16}, SMALL_M, fdl_gemm_small_avx512};

const gemm_kernel *fdl_gemm_kernel_avx512(void) {
  return &avx512_kernel;
}
#else
const gemm_kernel *fdl_gemm_kernel_avx512(void) {
  return NULL;
}
#endif
