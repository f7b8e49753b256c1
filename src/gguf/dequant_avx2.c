/* dequant_avx2.c - AVX2 kernels for the block types most GGUF files are made of (Q4_0, Q8_0,
 * Q4_K, Q5_K, Q6_K: the Q4_0, Q8_0, Q4_K_M, Q5_K_M and Q6_K files), compiled for that target
 * only and chosen at run time (dequant.c).
 *
 * Same values, same bits as the scalar kernels: each lane does the scalar kernel's operations
 * on one value, in its order, one rounding each (an int -> float conversion of a small integer,
 * which is exact, then a multiply, then for Q4_K and Q5_K a subtract; never fused). The
 * per-block factors come from the very functions the scalar kernels use
 * (dequant_internal.h). tests/test_ggml_dequant.c compares both on random blocks bit for bit,
 * and every vector tensor's digest under each kernel choice. */
#include "gguf/dequant_internal.h"

#ifdef FDL_DQ_HAVE_AVX2
#include <immintrin.h>

#define T256 __attribute__((target("avx2")))
#define INL static inline __attribute__((always_inline)) T256

/* Eight bytes at p widened to eight int32 lanes. */
INL __m256i u8x8(const uint8_t *p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

INL __m256i shr(__m256i v, int n) {
  return _mm256_srl_epi32(v, _mm_cvtsi32_si128(n));
}

/* Q4_0: y = (q - 8) * d; byte j holds value j (low nibble) and j + 16 (high). */
T256 void fdl_dq_q4_0_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  const __m256i low = _mm256_set1_epi32(0x0f), eight = _mm256_set1_epi32(8);
  for (uint64_t b = 0; b < blocks; b++, src += 18, dst += 32) {
    const __m256 d = _mm256_set1_ps(fdl_dq_f16_at(src));
    for (int j = 0; j < 16; j += 8) {
      const __m256i q = u8x8(src + 2 + j);
      const __m256i lo = _mm256_sub_epi32(_mm256_and_si256(q, low), eight);
      const __m256i hi = _mm256_sub_epi32(_mm256_srli_epi32(q, 4), eight);
      _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_cvtepi32_ps(lo), d));
      _mm256_storeu_ps(dst + 16 + j, _mm256_mul_ps(_mm256_cvtepi32_ps(hi), d));
    }
  }
}

/* Q8_0: y = q * d over 32 signed bytes. */
T256 void fdl_dq_q8_0_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 34, dst += 32) {
    const __m256 d = _mm256_set1_ps(fdl_dq_f16_at(src));
    for (int j = 0; j < 32; j += 8) {
      const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(src + 2 + j)));
      _mm256_storeu_ps(dst + j, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
    }
  }
}

/* Q4_K: sub-blocks 2c and 2c + 1 are the low and high nibbles of bytes 32c .. 32c + 31;
 * y = (d * sc) * q - (dmin * m). */
T256 void fdl_dq_q4_k_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  const __m256i low = _mm256_set1_epi32(0x0f);
  for (uint64_t b = 0; b < blocks; b++, src += 144, dst += 256) {
    float dl[8], ml[8];
    fdl_dq_k4_factors(src, dl, ml);
    for (int c = 0; c < 4; c++) {
      const uint8_t *q = src + 16 + 32 * c;
      const __m256 d0 = _mm256_set1_ps(dl[2 * c]), m0 = _mm256_set1_ps(ml[2 * c]);
      const __m256 d1 = _mm256_set1_ps(dl[2 * c + 1]), m1 = _mm256_set1_ps(ml[2 * c + 1]);
      float *y = dst + 64 * c;
      for (int l = 0; l < 32; l += 8) {
        const __m256i v = u8x8(q + l);
        const __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low));
        const __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
        _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(d0, lo), m0));
        _mm256_storeu_ps(y + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d1, hi), m1));
      }
    }
  }
}

/* Q5_K: as Q4_K with bit sb of byte l of the 32 high-bit bytes as value l's fifth bit. */
T256 void fdl_dq_q5_k_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  const __m256i low = _mm256_set1_epi32(0x0f), one = _mm256_set1_epi32(1);
  for (uint64_t b = 0; b < blocks; b++, src += 176, dst += 256) {
    float dl[8], ml[8];
    fdl_dq_k4_factors(src, dl, ml);
    const uint8_t *qh = src + 16;
    for (int sb = 0; sb < 8; sb++) {
      const uint8_t *q = src + 48 + 32 * (sb / 2);
      const int shift = 4 * (sb % 2);
      const __m256 d = _mm256_set1_ps(dl[sb]), m = _mm256_set1_ps(ml[sb]);
      float *y = dst + 32 * sb;
      for (int l = 0; l < 32; l += 8) {
        const __m256i nib = _mm256_and_si256(shr(u8x8(q + l), shift), low);
        const __m256i bit = _mm256_and_si256(shr(u8x8(qh + l), sb), one);
        const __m256i v = _mm256_or_si256(nib, _mm256_slli_epi32(bit, 4));
        _mm256_storeu_ps(y + l, _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(v)), m));
      }
    }
  }
}

/* Q6_K: in half h, quarter k, value l is the nibble of low byte 64h + 32(k % 2) + l (high
 * nibble for k >= 2) with bits 2k of high byte 32h + l above it, minus 32;
 * y = (d * scale) * q, the scale changing every 16 values. */
T256 void fdl_dq_q6_k_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  const __m256i low = _mm256_set1_epi32(0x0f), pair = _mm256_set1_epi32(3);
  const __m256i bias = _mm256_set1_epi32(32);
  for (uint64_t b = 0; b < blocks; b++, src += 210, dst += 256) {
    float ds[16];
    fdl_dq_q6_k_factors(src, ds);
    for (int h = 0; h < 2; h++) {
      for (int k = 0; k < 4; k++) {
        const uint8_t *ql = src + 64 * h + 32 * (k % 2), *qh = src + 128 + 32 * h;
        const int shift = 4 * (k / 2);
        float *y = dst + 128 * h + 32 * k;
        const float *dg = ds + 8 * h + 2 * k;
        for (int l = 0; l < 32; l += 8) {
          const __m256i nib = _mm256_and_si256(shr(u8x8(ql + l), shift), low);
          const __m256i top = _mm256_and_si256(shr(u8x8(qh + l), 2 * k), pair);
          const __m256i v = _mm256_sub_epi32(_mm256_or_si256(nib, _mm256_slli_epi32(top, 4)), bias);
          _mm256_storeu_ps(y + l, _mm256_mul_ps(_mm256_set1_ps(dg[l / 16]), _mm256_cvtepi32_ps(v)));
        }
      }
    }
  }
}
#endif
