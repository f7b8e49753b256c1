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

#define TGT T512
#define VEC __m512
#define W 16
#define UNROLL_V _Pragma("GCC unroll 4")
#define VZERO _mm512_setzero_ps
#define VLOAD _mm512_load_ps
#define VSTORE _mm512_store_ps
#define VFMADD _mm512_fmadd_ps
#include "num/gemm_body.h"

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
