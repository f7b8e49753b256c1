/* dequant_iq.c - the non-linear and ternary kernels: IQ4_NL, IQ4_XS (4-bit codes through a
 * 16-level table), IQ3_S (9-bit indices into a grid of 4-value points, with sign bits) and
 * TQ1_0, TQ2_0 (ternary values -1, 0, +1 times one scale).
 *
 * The tables live in quant_tables.c; layouts and formulas in docs/GGML-QUANTS.md. As in the
 * other kernel files, each value is one or two float multiplies in ggml's order. */
#include "gguf/dequant_internal.h"

/* 32 values from 16 bytes of IQ4 nibbles (value j low, value j + 16 high), both IQ4 formats:
 * y = d * level[code]. */
static void iq4_nibbles(const uint8_t *restrict qs, float d, float *restrict y) {
  for (int j = 0; j < 16; j++) {
    y[j] = d * (float)fdl_dq_iq4nl_levels[qs[j] & 0x0f];
    y[j + 16] = d * (float)fdl_dq_iq4nl_levels[qs[j] >> 4];
  }
}

/* IQ4_NL, 18 bytes: f16 d, 16 bytes of nibbles. */
void fdl_dq_iq4_nl(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 18, dst += 32)
    iq4_nibbles(src + 2, fdl_dq_f16_at(src), dst);
}

/* IQ4_XS, 136 bytes: f16 d, a 16-bit word of scale high bits (two per sub-block), 4 bytes of
 * scale low nibbles, 128 bytes of nibbles. Sub-block ib (32 values) has the 6-bit scale
 * ls = nibble ib of the low bytes | bits 2ib of the word << 4, and the 16 bytes 16ib onwards
 * (value j low, j + 16 high). y = (d * (ls - 32)) * level[code]. */
void fdl_dq_iq4_xs(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 136, dst += 256) {
    const float d = fdl_dq_f16_at(src);
    const uint16_t sh = fdl_dq_le16(src + 2);
    for (int ib = 0; ib < 8; ib++) {
      const int ls = ((src[4 + ib / 2] >> (4 * (ib % 2))) & 0x0f) | ((sh >> (2 * ib)) & 3) << 4;
      const float dl = d * (float)(ls - 32);
      iq4_nibbles(src + 8 + 16 * ib, dl, dst + 32 * ib);
    }
  }
}

/* IQ3_S, 110 bytes: f16 d, 64 index bytes, 8 bytes of ninth index bits, 32 sign bytes, 4
 * scale bytes. Sub-block ib (32 values) uses index bytes 8ib .. 8ib + 7 (with bit g of byte
 * ib as the ninth bit of index g), sign bytes 4ib .. 4ib + 3 and scale nibble ib. Value
 * 4g + k of it is byte k of grid point g, negated when bit 4(g % 2) + k of sign byte g / 2 is
 * set.
 * y = ((d * (1 + 2 * scale)) * magnitude) * (+1 or -1). */
void fdl_dq_iq3_s(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 110, dst += 256) {
    const float d = fdl_dq_f16_at(src);
    const uint8_t *qs = src + 2, *qh = src + 66, *signs = src + 74, *scales = src + 106;
    for (int ib = 0; ib < 8; ib++) {
      const int sc = (scales[ib / 2] >> (4 * (ib % 2))) & 0x0f;
      const float db = d * (float)(1 + 2 * sc);
      const uint8_t *q = qs + 8 * ib, *sg = signs + 4 * ib;
      const int high = qh[ib];
      /* Magnitudes and signs first (integer work), then one plain float loop. */
      uint32_t mag[32];
      float sign[32];
      for (int g = 0; g < 8; g++) {
        const uint32_t point = fdl_dq_iq3s_grid[q[g] | ((high >> g) & 1) << 8];
        for (int k = 0; k < 4; k++) mag[4 * g + k] = (point >> (8 * k)) & 0xffu;
      }
      /* +1.0f or -1.0f built from its bits (0x3f800000 with the sign bit): no branch. */
      for (int v = 0; v < 32; v++)
        sign[v] = fdl_dq_from_bits(0x3f800000u | (uint32_t)((sg[v / 8] >> (v % 8)) & 1) << 31);
      float *y = dst + 32 * ib;
      for (int v = 0; v < 32; v++) y[v] = db * (float)mag[v] * sign[v];
    }
  }
}

/* One base-3 digit of a TQ1_0 byte: the byte is a fixed-point fraction of 3^n digits, so
 * multiplying by 3^n (mod 256) brings digit n to the top, and (q * 3) >> 8 reads it (0..2). */
static inline int tq1_trit(uint8_t byte, uint8_t pow3) {
  const uint8_t q = (uint8_t)(byte * pow3);
  return (int)(((uint16_t)q * 3u) >> 8);
}

/* TQ1_0, 54 bytes: 48 bytes of five trits each, 4 bytes of four trits each, f16 d. Values:
 * 0..159 are digit n of bytes 0..31 (value 32n + m from byte m), 160..239 digit n of bytes
 * 32..47 (value 160 + 16n + m), 240..255 digit n of the last 4 (value 240 + 4n + j).
 * y = (trit - 1) * d. */
void fdl_dq_tq1_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
  for (uint64_t b = 0; b < blocks; b++, src += 54, dst += 256) {
    const float d = fdl_dq_f16_at(src + 52);
    for (int n = 0; n < 5; n++) {
      for (int m = 0; m < 32; m++) dst[32 * n + m] = (float)(tq1_trit(src[m], pow3[n]) - 1) * d;
      for (int m = 0; m < 16; m++)
        dst[160 + 16 * n + m] = (float)(tq1_trit(src[32 + m], pow3[n]) - 1) * d;
    }
    for (int n = 0; n < 4; n++)
      for (int j = 0; j < 4; j++)
        dst[240 + 4 * n + j] = (float)(tq1_trit(src[48 + j], pow3[n]) - 1) * d;
  }
}

/* TQ2_0, 66 bytes: 64 bytes of four 2-bit codes each, f16 d. Value 128c + 32l + m is bits 2l
 * of byte 32c + m. y = (code - 1) * d. */
void fdl_dq_tq2_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 66, dst += 256) {
    const float d = fdl_dq_f16_at(src + 64);
    for (int c = 0; c < 2; c++)
      for (int l = 0; l < 4; l++) {
        float *y = dst + 128 * c + 32 * l;
        for (int m = 0; m < 32; m++) y[m] = (float)(((src[32 * c + m] >> (2 * l)) & 3) - 1) * d;
      }
  }
}
