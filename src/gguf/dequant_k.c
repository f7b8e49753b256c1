/* dequant_k.c - the k-quant kernels (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K): 256-value super-blocks
 * made of 16- or 32-value sub-blocks, each with its own small integer scale (and, for Q2_K,
 * Q4_K and Q5_K, a minimum) relative to the super-block's f16 scales.
 *
 * Every kernel first turns the packed sub-block scales into floats (d * scale, dmin * min,
 * rounded once each, as ggml does) and then decodes the values of each sub-block with one
 * float multiply (and one subtract), so the inner loops are plain and vectorizable. Layouts
 * and formulas: docs/GGML-QUANTS.md. */
#include "gguf/dequant_internal.h"

/* Q2_K, 84 bytes: 16 scale bytes (low nibble scale, high nibble min, one per 16 values), 64
 * bytes of 2-bit codes, f16 d, f16 dmin. Values 128h + 32j + s (h < 2, j < 4, s < 32) sit in
 * bits 2j of byte 32h + s; the 16 values of group g use scale byte g.
 * y = (d * sc) * q - (dmin * m). */
void fdl_dq_q2_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 84, dst += 256) {
    const float d = fdl_dq_f16_at(src + 80), dmin = fdl_dq_f16_at(src + 82);
    for (int g = 0; g < 16; g++) {
      const uint8_t sc = src[g];
      const float dl = d * (float)(sc & 0x0f), ml = dmin * (float)(sc >> 4);
      const uint8_t *q = src + 16 + 32 * (g / 8) + 16 * (g % 2);
      const int shift = 2 * ((g % 8) / 2);
      float *y = dst + 16 * g;
      for (int l = 0; l < 16; l++) y[l] = dl * (float)((q[l] >> shift) & 3) - ml;
    }
  }
}

/* The 16 six-bit Q3_K scales from their 12 packed bytes: the low four bits of scale g are a
 * nibble of byte g % 8 (low nibble for g < 8), the high two bits are bits 2 * (g / 4) of byte
 * 8 + g % 4. Stored with a bias of 32. */
static void q3_k_scales(const uint8_t *p, int sc[16]) {
  for (int g = 0; g < 16; g++) {
    const int lo = g < 8 ? p[g] & 0x0f : p[g - 8] >> 4;
    const int hi = (p[8 + g % 4] >> (2 * (g / 4))) & 3;
    sc[g] = (lo | hi << 4) - 32;
  }
}

/* Q3_K, 110 bytes: 32 bytes of high bits, 64 bytes of 2-bit codes, 12 bytes of packed scales,
 * f16 d. Value 128h + 32j + s has its low two bits in bits 2j of code byte 32h + s and its
 * high bit in bit 4h + j of high-bit byte s; a clear high bit means q - 4.
 * y = (d * (scale - 32)) * q. */
void fdl_dq_q3_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 110, dst += 256) {
    const uint8_t *hmask = src, *qs = src + 32;
    const float d = fdl_dq_f16_at(src + 108);
    int sc[16];
    q3_k_scales(src + 96, sc);
    for (int g = 0; g < 16; g++) {
      const float dl = d * (float)sc[g];
      const int h = g / 8, j = (g % 8) / 2, s0 = 16 * (g % 2);
      const uint8_t *q = qs + 32 * h + s0, *hm = hmask + s0;
      const int bit = 4 * h + j;
      float *y = dst + 16 * g;
      for (int l = 0; l < 16; l++) {
        const int v = ((q[l] >> (2 * j)) & 3) - (((hm[l] >> bit) & 1) ? 0 : 4);
        y[l] = dl * (float)v;
      }
    }
  }
}

/* Q4_K, 144 bytes: f16 d, f16 dmin, 12 bytes of packed scales and mins, 128 bytes of
 * nibbles. Sub-blocks 2c and 2c + 1 are the low and high nibbles of bytes 32c .. 32c + 31.
 * y = (d * sc) * q - (dmin * m). */
void fdl_dq_q4_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 144, dst += 256) {
    float dl[8], ml[8];
    fdl_dq_k4_factors(src, dl, ml);
    for (int sb = 0; sb < 8; sb++) {
      const uint8_t *q = src + 16 + 32 * (sb / 2);
      const int shift = 4 * (sb % 2);
      float *y = dst + 32 * sb;
      for (int l = 0; l < 32; l++) y[l] = dl[sb] * (float)((q[l] >> shift) & 0x0f) - ml[sb];
    }
  }
}

/* Q5_K, 176 bytes: as Q4_K with 32 bytes of fifth bits before the nibbles: bit sb of byte l
 * is the fifth bit of value l of sub-block sb. y = (d * sc) * q - (dmin * m). */
void fdl_dq_q5_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 176, dst += 256) {
    float dl[8], ml[8];
    fdl_dq_k4_factors(src, dl, ml);
    const uint8_t *qh = src + 16;
    for (int sb = 0; sb < 8; sb++) {
      const uint8_t *q = src + 48 + 32 * (sb / 2);
      const int shift = 4 * (sb % 2);
      float *y = dst + 32 * sb;
      for (int l = 0; l < 32; l++) {
        const int v = ((q[l] >> shift) & 0x0f) | ((qh[l] >> sb) & 1) << 4;
        y[l] = dl[sb] * (float)v - ml[sb];
      }
    }
  }
}

/* Q6_K, 210 bytes: 128 bytes of low nibbles, 64 bytes of high bit pairs, 16 signed scales
 * (one per 16 values), f16 d. In half h (128 values), quarter k (32 values), value l takes the
 * nibble of low byte 64h + 32(k % 2) + l (high nibble for k >= 2) and bits 2k of high byte
 * 32h + l; q is that 6-bit number minus 32. y = (d * scale) * q. */
void fdl_dq_q6_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 210, dst += 256) {
    float ds[16];
    fdl_dq_q6_k_factors(src, ds);
    for (int h = 0; h < 2; h++) {
      for (int k = 0; k < 4; k++) {
        const uint8_t *ql = src + 64 * h + 32 * (k % 2), *qh = src + 128 + 32 * h;
        const int shift = 4 * (k / 2);
        float *y = dst + 128 * h + 32 * k;
        const float *dg = ds + 8 * h + 2 * k;
        for (int l = 0; l < 32; l++) {
          const int v = (((ql[l] >> shift) & 0x0f) | ((qh[l] >> (2 * k)) & 3) << 4) - 32;
          y[l] = dg[l / 16] * (float)v;
        }
      }
    }
  }
}
