/* sha256x2.c - two SHA-256 block streams through the SHA extensions, interleaved (sha256x2.h).
 *
 * The state of one stream lives in two registers, the words (A, B, E, F) and (C, D, G, H), the
 * order `sha256rnds2` takes; each instruction does two rounds with W[t] + K[t] from its third
 * operand's low half. The schedule W[16..63] comes four words at a time from `sha256msg1`
 * (W[t-16] + sigma0(W[t-15])), the four words W[t-7] (an align of the two previous groups) and
 * `sha256msg2` (adds sigma1(W[t-2])). The two streams share nothing but the instruction order. */
#include "digest/sha256x2.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>

/* FIPS 180-4 section 4.2.2: the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
    0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
    0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
    0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
    0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
    0xc67178f2u};

bool fdl_sha256x2_available(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1)) return false;
  if (__get_cpuid_max(0, NULL) < 7) return false;
  __cpuid_count(7, 0, a, b, c, d);
  return (b & bit_SHA) != 0;
}

#define TARGET __attribute__((target("sha,ssse3,sse4.1")))

typedef struct {
  __m128i abef, cdgh, w[4];
} lane;

TARGET static inline void load_state(lane *l, const uint32_t h[8]) {
  __m128i abcd = _mm_loadu_si128((const __m128i *)h),
          efgh = _mm_loadu_si128((const __m128i *)(h + 4));
  __m128i badc = _mm_shuffle_epi32(abcd, 0xB1); /* lanes B A D C */
  __m128i hgfe = _mm_shuffle_epi32(efgh, 0x1B); /* lanes H G F E */
  l->abef = _mm_alignr_epi8(badc, hgfe, 8);     /* F E B A */
  l->cdgh = _mm_blend_epi16(hgfe, badc, 0xF0);  /* H G D C */
}

TARGET static inline void store_state(const lane *l, uint32_t h[8]) {
  __m128i feba = _mm_shuffle_epi32(l->abef, 0x1B); /* lanes A B E F */
  __m128i ghcd = _mm_shuffle_epi32(l->cdgh, 0xB1); /* lanes G H C D */
  _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, ghcd, 0xF0));
  _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(ghcd, feba, 8));
}

/* Four rounds from group g of the schedule; groups 4..15 are made from the four before. */
TARGET static inline void rounds4(lane *l, int g) {
  __m128i *w = l->w;
  if (g >= 4) {
    __m128i t = _mm_add_epi32(_mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]),
                              _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
    w[g & 3] = _mm_sha256msg2_epu32(t, w[(g + 3) & 3]);
  }
  __m128i wk = _mm_add_epi32(w[g & 3], _mm_loadu_si128((const __m128i *)(K + 4 * g)));
  l->cdgh = _mm_sha256rnds2_epu32(l->cdgh, l->abef, wk);
  l->abef = _mm_sha256rnds2_epu32(l->abef, l->cdgh, _mm_shuffle_epi32(wk, 0x0E));
}

TARGET static inline void load_block(lane *l, const uint8_t *p) {
  /* The message words are big-endian. */
  const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  for (int i = 0; i < 4; i++)
    l->w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), swap);
}

TARGET void fdl_sha256x2_blocks(uint32_t ha[8], const uint8_t *pa, uint32_t hb[8],
                                const uint8_t *pb, size_t nblocks) {
  lane a, b;
  load_state(&a, ha);
  load_state(&b, hb);
  for (size_t n = 0; n < nblocks; n++, pa += 64, pb += 64) {
    __m128i a0 = a.abef, a1 = a.cdgh, b0 = b.abef, b1 = b.cdgh;
    load_block(&a, pa);
    load_block(&b, pb);
    /* Unrolled, so that the schedule's ring of four registers is indexed by constants and
     * stays in registers (a loop kept them on the stack: 0.8 GB/s a stream instead of 2). */
#pragma GCC unroll 16
    for (int g = 0; g < 16; g++) {
      rounds4(&a, g);
      rounds4(&b, g);
    }
    a.abef = _mm_add_epi32(a.abef, a0), a.cdgh = _mm_add_epi32(a.cdgh, a1);
    b.abef = _mm_add_epi32(b.abef, b0), b.cdgh = _mm_add_epi32(b.cdgh, b1);
  }
  store_state(&a, ha);
  store_state(&b, hb);
}

#else
bool fdl_sha256x2_available(void) {
  return false;
}

void fdl_sha256x2_blocks(uint32_t ha[8], const uint8_t *pa, uint32_t hb[8], const uint8_t *pb,
                         size_t nblocks) {
  (void)ha, (void)pa, (void)hb, (void)pb, (void)nblocks;
}
#endif
