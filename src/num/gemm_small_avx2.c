/* gemm_small_avx2.c - the AVX2+FMA small-M path, gemm_small_avx512.c's scheme at 8 lanes:
 * 8 rows of B x 32 bytes of k are transposed in registers (an 8 x 8 dword transpose) so that
 * one ymm holds B[j0..j0+7] at one k (F32) or at the pair (k, k+1) (BF16 / F16, split and
 * widened exactly), and each A row does c = fma(broadcast A[i][k], that, c) for k ascending
 * from +0.0: every lane is the contract's own chain for its element, never split or reordered.
 * Rows past n and k past the end are never read (see gemm_small_avx512.c). */
#include "num/gemm.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) T256
#define LANES 8
#define CHUNK 32 /* bytes of a row per load */
/* Row blocks in flight: independent fma chains to hide the fma latency when M = 1. */
#define NBLK 4

/* In place: r[l] element e becomes r[e] element l. Interleave pairs of rows by dword, then
 * by qword (each 128-bit lane then holds 4 rows at one k), then join the 128-bit lanes. */
INL void transpose8(__m256i r[LANES]) {
  __m256i t[LANES], u[LANES];
#pragma GCC unroll 4
  for (int p = 0; p < LANES; p += 2) {
    t[p] = _mm256_unpacklo_epi32(r[p], r[p + 1]);
    t[p + 1] = _mm256_unpackhi_epi32(r[p], r[p + 1]);
  }
#pragma GCC unroll 2
  for (int g = 0; g < LANES; g += 4) {
    u[g] = _mm256_unpacklo_epi64(t[g], t[g + 2]);
    u[g + 1] = _mm256_unpackhi_epi64(t[g], t[g + 2]);
    u[g + 2] = _mm256_unpacklo_epi64(t[g + 1], t[g + 3]);
    u[g + 3] = _mm256_unpackhi_epi64(t[g + 1], t[g + 3]);
  }
  /* u[4g + e], 128-bit lane L: rows 4g..4g+3 at element 4L + e */
#pragma GCC unroll 4
  for (int e = 0; e < 4; e++) {
    r[e] = _mm256_permute2x128_si256(u[e], u[4 + e], 0x20);
    r[4 + e] = _mm256_permute2x128_si256(u[e], u[4 + e], 0x31);
  }
}

/* rows rows of CHUNK bytes from byte off of each row (only `bytes` of them exist); the rest zero.
 */
INL void load_block(const uint8_t *b0, size_t stride, size_t rows, size_t off, size_t bytes,
                    __m256i r[LANES]) {
  if (bytes == CHUNK) {
#pragma GCC unroll 16
    for (size_t l = 0; l < LANES; l++)
      r[l] = l < rows ? _mm256_loadu_si256((const __m256i *)(b0 + l * stride + off))
                      : _mm256_setzero_si256();
    return;
  }
  _Alignas(32) uint8_t tmp[CHUNK];
  memset(tmp, 0, sizeof tmp);
  for (size_t l = 0; l < LANES; l++) {
    if (l < rows) memcpy(tmp, b0 + l * stride + off, bytes);
    r[l] = l < rows ? _mm256_load_si256((const __m256i *)tmp) : _mm256_setzero_si256();
  }
}

/* F16: the low halves of the 8 dwords, then the high halves, as two sets of 8 binary16. */
INL void halves(__m256i w, __m128i *lo, __m128i *hi) {
  __m256i p = _mm256_packus_epi32(_mm256_and_si256(w, _mm256_set1_epi32(0xFFFF)),
                                  _mm256_srli_epi32(w, 16)); /* lo0-3 hi0-3 | lo4-7 hi4-7 */
  p = _mm256_permute4x64_epi64(p, 0xD8);
  *lo = _mm256_castsi256_si128(p);
  *hi = _mm256_extracti128_si256(p, 1);
}

INL __m256 widen_lo(const fdl_gemm_type t, __m256i w) {
  if (t == FDL_GEMM_BF16) return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  __m128i lo, hi;
  halves(w, &lo, &hi);
  return _mm256_cvtph_ps(lo);
}

INL __m256 widen_hi(const fdl_gemm_type t, __m256i w) {
  if (t == FDL_GEMM_BF16)
    return _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32((int)0xFFFF0000u)));
  __m128i lo, hi;
  halves(w, &lo, &hi);
  return _mm256_cvtph_ps(hi);
}

#define TGT T256
#define VEC __m256
#define VECI __m256i
#define VCAST _mm256_castsi256_ps
#define VFMADD _mm256_fmadd_ps
#define VSET1 _mm256_set1_ps
#include "num/gemm_small_body.h"

INL void body(const fdl_gemm_type t, const size_t m, const fdl_gemm_args *x, size_t m0, size_t n0,
              size_t n1) {
  const size_t es = t == FDL_GEMM_F32 ? 4 : 2, per = CHUNK / es, k = x->k;
  const size_t stride = x->ldb * es;
  const float *a[4];
  for (size_t i = 0; i < m; i++) a[i] = x->a + (m0 + i) * x->lda;
  const __m256 qnan = _mm256_set1_ps(fdl_gemm_bits_f32(FDL_GEMM_NAN_BITS));
  for (size_t j = n0; j < n1; j += LANES * NBLK) {
    size_t rows[NBLK];
    __m256 c[NBLK][4];
    for (size_t b = 0; b < NBLK; b++) {
      size_t jb = j + b * LANES;
      rows[b] = jb >= n1 ? 0 : n1 - jb < LANES ? n1 - jb : LANES;
      for (size_t i = 0; i < 4; i++) c[b][i] = _mm256_setzero_ps();
    }
    const uint8_t *b0 = (const uint8_t *)x->b + j * stride;
    /* The next row group, a cache line per row every other step: the loads walk LANES * NBLK
     * rows side by side, more streams than the hardware prefetchers follow. */
    size_t ahead = j + 2 * LANES * NBLK <= n1 ? LANES * NBLK : 0;
    for (size_t kk = 0; kk < k; kk += per) {
      size_t kc = k - kk < per ? k - kk : per;
      for (size_t l = 0; (kk * es) % 64 == 0 && l < ahead; l++)
        _mm_prefetch((const char *)b0 + (ahead + l) * stride + kk * es, _MM_HINT_T1);
#pragma GCC unroll 4
      for (size_t b = 0; b < NBLK; b++) {
        if (!rows[b]) continue;
        __m256i r[LANES];
        load_block(b0 + b * LANES * stride, stride, rows[b], kk * es, kc * es, r);
        transpose8(r);
        if (kc == per)
          feed(t, m, a, kk, per, r, c[b]);
        else
          feed(t, m, a, kk, kc, r, c[b]);
      }
    }
    for (size_t b = 0; b < NBLK; b++) {
      if (!rows[b]) continue;
      for (size_t i = 0; i < m; i++) {
        __m256 v = c[b][i];
        v = _mm256_blendv_ps(v, qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        float *dst = x->c + (m0 + i) * x->ldc + j + b * LANES;
        if (rows[b] == LANES) {
          _mm256_storeu_ps(dst, v);
        } else {
          _Alignas(32) float tmp[LANES];
          _mm256_store_ps(tmp, v);
          memcpy(dst, tmp, rows[b] * sizeof *dst);
        }
      }
    }
  }
}

SMALL(small_f32, FDL_GEMM_F32)
SMALL(small_bf16, FDL_GEMM_BF16)
SMALL(small_f16, FDL_GEMM_F16)

T256 void fdl_gemm_small_avx2(const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0, size_t n1) {
  if (x->b_type == FDL_GEMM_F32)
    small_f32(x, m0, m1, n0, n1);
  else if (x->b_type == FDL_GEMM_BF16)
    small_bf16(x, m0, m1, n0, n1);
  else
    small_f16(x, m0, m1, n0, n1);
}
#else
/* ISO C wants a declaration in every translation unit. */
typedef int fdl_gemm_small_avx2_absent;
#endif
