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

#define TGT T256
#define VEC __m256
#define W 8
#define UNROLL_V _Pragma("GCC unroll 2")
#define VZERO _mm256_setzero_ps
#define VLOAD _mm256_load_ps
#define VSTORE _mm256_store_ps
#define VFMADD _mm256_fmadd_ps
#include "num/gemm_body.h"

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
