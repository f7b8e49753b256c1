/* qdot_avx2.c - fused decode-and-multiply for Q4_K and Q6_K on AVX2+FMA (qdot.h): the two
 * types of a Q4_K_M file, whose decode step would otherwise write every weight out as float32
 * and read it back to transpose it.
 *
 * Lanes are 8 rows of B, as in the GEMM's few-row kernel (gemm_small_avx2.c). For each run of
 * 32 values along k, the 32 code bytes of each of the 8 rows are isolated (nibbles, high bits)
 * with byte operations, transposed as bytes in registers (8 x 32 -> 32 x 8) and stored to a
 * 256-byte scratch in k order. Then, for each k ascending, one 8-byte load widens the 8 rows'
 * codes to int32, and the lane does exactly what the scalar decoder does for that value
 * (int -> float, exact; times the sub-block factor; minus the sub-block minimum for Q4_K), then
 * the GEMM's c = fma(a[k], w, c). The factors d * sc and dmin * m come from the decoder's own
 * functions (dequant_internal.h), one rounding each. Groups of rows run side by side so that
 * several fma chains are in flight (each chain is sequential in k by contract). */
#include "gguf/qdot.h"

#include "gguf/dequant_internal.h"
#include "num/gemm.h"

#ifdef FDL_DQ_HAVE_AVX2
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma,f16c")))
#define INL static inline __attribute__((always_inline)) T256
#define LANES 8
#define MAXG 4     /* row groups side by side */
#define PF_AHEAD 4 /* blocks a row's prefetch runs ahead of its decoding */

enum { Q4K, Q6K };

/* The 8 rows x 32 bytes of r transposed and stored so that buf[8 l + row] = byte l of row. */
INL void transpose_store(const __m256i r[LANES], uint8_t *buf) {
  __m256i t[8], u[8];
  /* bytes: t[2p + x] holds rows 2p, 2p + 1 interleaved at l in 8x + [0, 8) (+16 in lane 1) */
#pragma GCC unroll 4
  for (int p = 0; p < 4; p++) {
    t[2 * p] = _mm256_unpacklo_epi8(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm256_unpackhi_epi8(r[2 * p], r[2 * p + 1]);
  }
  /* words: u[4x + 2q + y] holds rows 4q..4q+3 at l in 8x + 4y + [0, 4) */
#pragma GCC unroll 2
  for (int x = 0; x < 2; x++)
#pragma GCC unroll 2
    for (int q = 0; q < 2; q++) {
      u[4 * x + 2 * q] = _mm256_unpacklo_epi16(t[4 * q + x], t[4 * q + 2 + x]);
      u[4 * x + 2 * q + 1] = _mm256_unpackhi_epi16(t[4 * q + x], t[4 * q + 2 + x]);
    }
    /* dwords: all 8 rows at l in 8x + 4y + 2z + {0, 1}, and 16 more in lane 1 */
#pragma GCC unroll 2
  for (int x = 0; x < 2; x++)
#pragma GCC unroll 2
    for (int y = 0; y < 2; y++)
#pragma GCC unroll 2
      for (int z = 0; z < 2; z++) {
        const __m256i lo = u[4 * x + y], hi = u[4 * x + 2 + y];
        const __m256i s = z ? _mm256_unpackhi_epi32(lo, hi) : _mm256_unpacklo_epi32(lo, hi);
        const int l = 8 * x + 4 * y + 2 * z;
        _mm_storeu_si128((__m128i *)(buf + 8 * l), _mm256_castsi256_si128(s));
        _mm_storeu_si128((__m128i *)(buf + 8 * (l + 16)), _mm256_extracti128_si256(s, 1));
      }
}

/* The 32 code bytes at k in [32 run, 32 run + 32) of one block of one row. Q4_K: unsigned
 * nibbles; Q6_K: the six-bit code minus 32, as a signed byte. */
INL __m256i codes(const int fmt, const uint8_t *blk, int run) {
  const __m256i low = _mm256_set1_epi8(0x0f);
  if (fmt == Q4K) {
    const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 16 + 32 * (run / 2)));
    return _mm256_and_si256(run % 2 ? _mm256_srli_epi16(q, 4) : q, low);
  }
  const int h = run / 4, kq = run % 4;
  const __m256i ql = _mm256_loadu_si256((const __m256i *)(blk + 64 * h + 32 * (kq % 2)));
  const __m256i qh = _mm256_loadu_si256((const __m256i *)(blk + 128 + 32 * h));
  const __m256i nib = _mm256_and_si256(_mm256_srl_epi16(ql, _mm_cvtsi32_si128(4 * (kq / 2))), low);
  const __m256i top =
      _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * kq)), _mm256_set1_epi8(3));
  return _mm256_sub_epi8(_mm256_or_si256(nib, _mm256_slli_epi16(top, 4)), _mm256_set1_epi8(32));
}

/* Per row of a group, the block's factors: Q4_K d * sc and dmin * m per 32 values, Q6_K
 * d * scale per 16, laid out [factor][row] so one load gives a lane each. */
typedef struct {
  _Alignas(32) float d[16][LANES];
  _Alignas(32) float m[8][LANES];
} factors;

/* The 8 bytes at position l of a transposed scratch (one per row), widened to int32 lanes. */
INL __m256i lane_u8(const uint8_t *buf, int l) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(buf + 8 * l)));
}

/* The f16 stored at positions l, l + 1 of a transposed scratch, widened exactly (F16C's
 * conversion is exact, as fdl_dq_f16 is; the blocks were checked finite). */
INL __m256 lane_f16(const uint8_t *buf, int l) {
  const __m128i lo = _mm_loadl_epi64((const __m128i *)(buf + 8 * l));
  const __m128i hi = _mm_loadl_epi64((const __m128i *)(buf + 8 * (l + 1)));
  return _mm256_cvtph_ps(_mm_unpacklo_epi8(lo, hi));
}

/* The factors of the blocks at blk[0..8), computed for the 8 rows at once with the scalar
 * decoder's operations (fdl_dq_k4_factors, fdl_dq_q6_k_factors): the block's head bytes are
 * transposed like the codes, and each factor is one float multiply of the same operands. */
INL void block_factors(const int fmt, const uint8_t *const blk[LANES], factors *f) {
  _Alignas(32) uint8_t t[256];
  __m256i h[LANES];
  /* Q4_K: d, dmin and the 12 scale bytes open the block; Q6_K: its last 32 bytes end with the
   * 16 scales (positions 14-29) and d (30, 31) */
  for (int r = 0; r < LANES; r++)
    h[r] = _mm256_loadu_si256((const __m256i *)(blk[r] + (fmt == Q4K ? 0 : 178)));
  transpose_store(h, t);
  if (fmt == Q6K) {
    const __m256 d = lane_f16(t, 30);
#pragma GCC unroll 16
    for (int g = 0; g < 16; g++) {
      const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(t + 8 * (14 + g))));
      _mm256_store_ps(f->d[g], _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
    }
    return;
  }
  const __m256 d = lane_f16(t, 0), dmin = lane_f16(t, 2);
  const __m256i six = _mm256_set1_epi32(63), low = _mm256_set1_epi32(0x0f);
#pragma GCC unroll 8
  for (int j = 0; j < 8; j++) {
    __m256i sc, m; /* the packing of fdl_dq_k4_scale_min, 12 bytes from position 4 */
    if (j < 4) {
      sc = _mm256_and_si256(lane_u8(t, 4 + j), six);
      m = _mm256_and_si256(lane_u8(t, 8 + j), six);
    } else {
      const __m256i mid = lane_u8(t, 8 + j);
      sc = _mm256_or_si256(_mm256_and_si256(mid, low),
                           _mm256_slli_epi32(_mm256_srli_epi32(lane_u8(t, j), 6), 4));
      m = _mm256_or_si256(_mm256_srli_epi32(mid, 4),
                          _mm256_slli_epi32(_mm256_srli_epi32(lane_u8(t, 4 + j), 6), 4));
    }
    _mm256_store_ps(f->d[j], _mm256_mul_ps(d, _mm256_cvtepi32_ps(sc)));
    _mm256_store_ps(f->m[j], _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(m)));
  }
}

/* The G groups' chains over one run of 32 values along k, k ascending. */
INL void run32(const int fmt, const int G, const size_t m, const float *const a[FDL_QDOT_MAX_M],
               size_t k0, int run, const uint8_t buf[][256], const factors *f,
               __m256 acc[MAXG][FDL_QDOT_MAX_M]) {
#pragma GCC unroll 2
  for (int half = 0; half < 2; half++) {
    __m256 d[MAXG], mn[MAXG];
#pragma GCC unroll 4
    for (int g = 0; g < G; g++) {
      d[g] = _mm256_load_ps(fmt == Q4K ? f[g].d[run] : f[g].d[2 * run + half]);
      mn[g] = fmt == Q4K ? _mm256_load_ps(f[g].m[run]) : _mm256_setzero_ps();
    }
#pragma GCC unroll 16
    for (int l = 16 * half; l < 16 * half + 16; l++) {
      __m256 av[FDL_QDOT_MAX_M];
#pragma GCC unroll 4
      for (size_t i = 0; i < m; i++) av[i] = _mm256_broadcast_ss(a[i] + k0 + (size_t)l);
#pragma GCC unroll 4
      for (int g = 0; g < G; g++) {
        const __m128i b8 = _mm_loadl_epi64((const __m128i *)(buf[g] + 8 * l));
        __m256 w;
        if (fmt == Q4K)
          w = _mm256_sub_ps(_mm256_mul_ps(d[g], _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b8))),
                            mn[g]);
        else
          w = _mm256_mul_ps(d[g], _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b8)));
#pragma GCC unroll 4
        for (size_t i = 0; i < m; i++) acc[g][i] = _mm256_fmadd_ps(av[i], w, acc[g][i]);
      }
    }
  }
}

/* Run `run` (32 values) of block s: the groups' codes transposed into buf, then the chains. */
INL void one_run(const int fmt, const int G, const size_t m, const float *const a[FDL_QDOT_MAX_M],
                 const uint8_t *const *rows, size_t s, int run, uint8_t buf[][256],
                 const factors *f, __m256 acc[MAXG][FDL_QDOT_MAX_M]) {
  const size_t bytes = fmt == Q4K ? 144 : 210;
  for (int g = 0; g < G; g++) {
    __m256i c[LANES];
    for (int r = 0; r < LANES; r++) c[r] = codes(fmt, rows[LANES * g + r] + s * bytes, run);
    transpose_store(c, buf[g]);
  }
  run32(fmt, G, m, a, 256 * s + 32 * (size_t)run, run, (const uint8_t(*)[256])buf, f, acc);
}

/* G groups of 8 rows (rows[8g + r]; every pointer valid) against m rows of A; the chains'
 * results, canonical NaN, to out[g][i][0..8). The chains live in registers throughout. */
INL void groups(const int fmt, const int G, const size_t m, const float *const a[FDL_QDOT_MAX_M],
                size_t k, const uint8_t *const *rows, const uint8_t *const *next,
                float out[MAXG][FDL_QDOT_MAX_M][LANES]) {
  const size_t bytes = fmt == Q4K ? 144 : 210;
  _Alignas(32) uint8_t buf[MAXG][256];
  factors f[MAXG];
  __m256 acc[MAXG][FDL_QDOT_MAX_M];
#pragma GCC unroll 4
  for (int g = 0; g < G; g++)
#pragma GCC unroll 4
    for (size_t i = 0; i < m; i++) acc[g][i] = _mm256_setzero_ps();
  const size_t blocks = k / 256;
  for (size_t s = 0; s < blocks; s++) {
    /* 8G rows are 8G streams, more than the hardware prefetchers follow: fetch each row's
     * block PF_AHEAD blocks on while this one is decoded, and near a row's end the first blocks
     * of the row that comes next in its lane (rows are short: 8 blocks at k = 2048) */
    const size_t ahead = s + PF_AHEAD;
    if (ahead < 2 * blocks)
      for (int g = 0; g < G; g++)
        for (int r = 0; r < LANES; r++) {
          const uint8_t *p = ahead < blocks ? rows[LANES * g + r] + ahead * bytes
                                            : next[LANES * g + r] + (ahead - blocks) * bytes;
          for (size_t at = 0; at < bytes; at += 64) _mm_prefetch((const char *)p + at, _MM_HINT_T1);
        }
    for (int g = 0; g < G; g++) {
      const uint8_t *blk[LANES];
      for (int r = 0; r < LANES; r++) blk[r] = rows[LANES * g + r] + s * bytes;
      block_factors(fmt, blk, &f[g]);
    }
    /* Q6_K's code shifts depend on the run: unrolled, they are immediates */
    if (fmt == Q6K) {
#pragma GCC unroll 8
      for (int run = 0; run < 8; run++) one_run(fmt, G, m, a, rows, s, run, buf, f, acc);
    } else {
      for (int run = 0; run < 8; run++) one_run(fmt, G, m, a, rows, s, run, buf, f, acc);
    }
  }
  const __m256 qnan = _mm256_set1_ps(fdl_gemm_bits_f32(FDL_GEMM_NAN_BITS));
#pragma GCC unroll 4
  for (int g = 0; g < G; g++)
#pragma GCC unroll 4
    for (size_t i = 0; i < m; i++)
      _mm256_storeu_ps(
          out[g][i],
          _mm256_blendv_ps(acc[g][i], qnan, _mm256_cmp_ps(acc[g][i], acc[g][i], _CMP_UNORD_Q)));
}

INL void kernel(const int fmt, const float *const a[], size_t m, size_t k,
                const uint8_t *const rows[], size_t n, float *const c[]) {
  const float *ar[FDL_QDOT_MAX_M];
  for (size_t i = 0; i < m; i++) ar[i] = a[i];
  for (size_t j = 0; j < n; j += LANES * MAXG) {
    /* a short last group repeats its last row; those lanes are never stored. rp also holds
     * the next rows (or the last one again), for the prefetches. */
    const uint8_t *rp[2 * LANES * MAXG];
    const size_t have = n - j < LANES * MAXG ? n - j : LANES * MAXG;
    for (size_t r = 0; r < 2 * LANES * MAXG; r++) rp[r] = rows[j + r < n ? j + r : n - 1];
    for (size_t r = have; r < LANES * MAXG; r++) rp[r] = rows[j + have - 1];
    /* Enough chains in flight (each is sequential in k): 2 groups for one or two rows of A,
     * 1 for more; the register file holds groups x rows accumulators. */
    _Alignas(32) float out[MAXG][FDL_QDOT_MAX_M][LANES];
    for (int g = 0; g < MAXG; g += m <= 2 ? 2 : 1) {
      const uint8_t *const *cur = rp + LANES * g, *const *nxt = rp + LANES * (g + (m <= 2 ? 2 : 1));
      if (m == 1)
        groups(fmt, 2, 1, ar, k, cur, nxt, out + g);
      else if (m == 2)
        groups(fmt, 2, 2, ar, k, cur, nxt, out + g);
      else if (m == 3)
        groups(fmt, 1, 3, ar, k, cur, nxt, out + g);
      else
        groups(fmt, 1, 4, ar, k, cur, nxt, out + g);
    }
    for (size_t g = 0; g * LANES < have; g++) {
      const size_t cnt = have - g * LANES < LANES ? have - g * LANES : LANES;
      for (size_t i = 0; i < m; i++) memcpy(c[i] + j + g * LANES, out[g][i], cnt * sizeof(float));
    }
  }
}

static T256 void qdot_q4_k(const float *const a[], size_t m, size_t k, const uint8_t *const rows[],
                           size_t n, float *const c[]) {
  kernel(Q4K, a, m, k, rows, n, c);
}

static T256 void qdot_q6_k(const float *const a[], size_t m, size_t k, const uint8_t *const rows[],
                           size_t n, float *const c[]) {
  kernel(Q6K, a, m, k, rows, n, c);
}

fdl_qdot_kernel fdl_ggml_qdot(fdl_dq_kernel decoder) {
  if (decoder == fdl_dq_q4_k_avx2) return qdot_q4_k;
  if (decoder == fdl_dq_q6_k_avx2) return qdot_q6_k;
  return NULL;
}
#else
fdl_qdot_kernel fdl_ggml_qdot(fdl_dq_kernel decoder) {
  (void)decoder;
  return NULL;
}
#endif
