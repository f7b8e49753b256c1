/* gemm_avx2.c - AVX2+FMA GEMM micro-kernel, compiled for that target only and chosen at run
 * time. 16 rows of A (two ymm of packed A^T per k) times up to 6 rows of B: 12 accumulators,
 * each lane one element's chain, doing per k exactly the scalar kernel's
 * c = fmaf(a, widen(b), c). B elements are broadcast and widened in the register as in
 * gemm_avx512.c (BF16: mask the word that starts one element earlier; at k == 0 shift the
 * element up; F16: vcvtph2ps). */
#include "num/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) T256
#define MR 16
#define NR 6
#define V (MR / 8)
/* Up to this many rows of A, gemm_small_avx2.c's kernel (lanes over B's rows) is faster: this
 * one would spend most of its 16 lanes on padding. */
#define SMALL_M 4

INL __m256 bcast(const fdl_gemm_type t, const int at_zero, const void *row, size_t k) {
  if (t == FDL_GEMM_F32) return _mm256_broadcast_ss((const float *)row + k);
  const uint16_t *h = row;
  if (t == FDL_GEMM_F16) return _mm256_cvtph_ps(_mm_set1_epi16((short)h[k]));
  if (at_zero) return _mm256_set1_ps(fdl_gemm_bits_f32((uint32_t)h[k] << 16));
  uint32_t w;
  memcpy(&w, h + k - 1, sizeof w);
  return _mm256_castsi256_ps(
      _mm256_and_si256(_mm256_set1_epi32((int)w), _mm256_set1_epi32((int)0xFFFF0000u)));
}

INL void body(const fdl_gemm_type t, const size_t nr, size_t k0, size_t kc, const float *ap,
              const void *b, size_t ldb, float *acc, int first) {
  __m256 c[NR][V];
  const void *row[NR];
  size_t es = t == FDL_GEMM_F32 ? 4 : 2;
#pragma GCC unroll 6
  for (size_t j = 0; j < nr; j++) {
    row[j] = (const uint8_t *)b + j * ldb * es;
#pragma GCC unroll 2
    for (int v = 0; v < V; v++)
      c[j][v] = first ? _mm256_setzero_ps() : _mm256_load_ps(acc + j * MR + v * 8);
  }
  size_t k = 0;
  if (k0 == 0 && kc) {
    __m256 a[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; v++) a[v] = _mm256_load_ps(ap + v * 8);
#pragma GCC unroll 6
    for (size_t j = 0; j < nr; j++) {
      __m256 bj = bcast(t, 1, row[j], 0);
#pragma GCC unroll 2
      for (int v = 0; v < V; v++) c[j][v] = _mm256_fmadd_ps(a[v], bj, c[j][v]);
    }
    k = 1;
  }
  for (; k < kc; k++) {
    const float *ak = ap + k * MR;
    __m256 a[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; v++) a[v] = _mm256_load_ps(ak + v * 8);
#pragma GCC unroll 6
    for (size_t j = 0; j < nr; j++) {
      __m256 bj = bcast(t, 0, row[j], k0 + k);
#pragma GCC unroll 2
      for (int v = 0; v < V; v++) c[j][v] = _mm256_fmadd_ps(a[v], bj, c[j][v]);
    }
  }
#pragma GCC unroll 6
  for (size_t j = 0; j < nr; j++)
#pragma GCC unroll 2
    for (int v = 0; v < V; v++) _mm256_store_ps(acc + j * MR + v * 8, c[j][v]);
}

#define MICRO(name, type)                                                                          \
  static T256 void name(size_t nr, size_t k0, size_t kc, const float *ap, const void *b,           \
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

static const gemm_kernel avx2_kernel = {
    FDL_NUM_ISA_AVX2, MR, NR, {micro_f32, micro_bf16, micro_f16}, SMALL_M, fdl_gemm_small_avx2};

const gemm_kernel *fdl_gemm_kernel_avx2(void) {
  return &avx2_kernel;
}
#else
const gemm_kernel *fdl_gemm_kernel_avx2(void) {
  return NULL;
}
#endif
