/* dequant_internal.h - what the ggml dequantization files share (docs/GGML-QUANTS.md).
 *
 * One kernel signature (a run of whole blocks in, float32 out), the little-endian field
 * readers every block format needs, the exact F16 widening that every block scale goes
 * through, and the constant tables. The kernels are split by family only to keep files short:
 * dequant.c (plain and legacy 32-value formats), dequant_k.c (k-quants), dequant_iq.c (IQ and
 * ternary formats), quant_tables.c (lookup tables).
 *
 * Arithmetic contract: every value is computed in float32 with the operations, and in the
 * order, of ggml's scalar reference (dequantize_row_* in ggml-quants.c), one rounding per
 * operation. The library is built with -ffp-contract=off (CMakeLists.txt) and in ISO C17 mode,
 * so no a * b - c is fused into one fma; clang is also told so by the pragma below. */
#ifndef FDL_GGUF_DEQUANT_INTERNAL_H
#define FDL_GGUF_DEQUANT_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "gguf/decoder.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

static inline uint16_t fdl_dq_le16(const uint8_t *p) {
  return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t fdl_dq_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline float fdl_dq_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* IEEE binary16 -> binary32, exact, the value ggml_compute_fp16_to_fp32 gives:
 *  - normal: rebias the exponent (15 -> 127) and widen the mantissa;
 *  - subnormal: the value is mantissa * 2^-24, which float32 holds as a normal number; the
 *    int -> float conversion and the power-of-two scaling are both exact (and immune to
 *    flush-to-zero modes, since neither operand nor result is subnormal);
 *  - infinity keeps its sign; NaN keeps sign and payload and comes out quiet (bit 22 set), as
 *    ggml's arithmetic path (and the F16C instruction) leaves a signalling NaN. */
static inline float fdl_dq_f16(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (uint32_t)(h >> 10) & 0x1fu;
  const uint32_t man = (uint32_t)h & 0x3ffu;
  /* All three candidates, then a select by masks: no branch, so a loop of these vectorizes.
   * (man + 0x3ff) has bit 10 set exactly when man != 0: that is the quiet bit of a NaN. */
  const uint32_t normal = (exp + (127u - 15u)) << 23 | man << 13;
  const uint32_t special = 0x7f800000u | man << 13 | ((man + 0x3ffu) & 0x400u) << 12;
  const float subf = (float)man * 0x1p-24f;
  uint32_t sub;
  memcpy(&sub, &subf, sizeof sub);
  const uint32_t is_sub = 0u - (uint32_t)(exp == 0), is_special = 0u - (uint32_t)(exp == 0x1fu);
  const uint32_t mag =
      (is_sub & sub) | (~is_sub & ((is_special & special) | (~is_special & normal)));
  return fdl_dq_from_bits(sign | mag);
}

/* The F16 stored little-endian at p (a block scale). */
static inline float fdl_dq_f16_at(const uint8_t *p) {
  return fdl_dq_f16(fdl_dq_le16(p));
}

/* The eight 6-bit (scale, min) pairs of Q4_K and Q5_K from their 12 packed bytes: pairs 0-3
 * are the low six bits of bytes 0-3 and 4-7; pairs 4-7 take a nibble of bytes 8-11 for the
 * low bits and the top two bits of bytes 0-3 (scale) or 4-7 (min) for the high bits. */
static inline void fdl_dq_k4_scale_min(const uint8_t *p, int j, int *sc, int *m) {
  if (j < 4) {
    *sc = p[j] & 63;
    *m = p[j + 4] & 63;
  } else {
    *sc = (p[j + 4] & 0x0f) | (p[j - 4] >> 6) << 4;
    *m = (p[j + 4] >> 4) | (p[j] >> 6) << 4;
  }
}

/* Float scale and minimum of the eight 32-value sub-blocks of a Q4_K or Q5_K block:
 * d * sc and dmin * m, rounded once each. */
static inline void fdl_dq_k4_factors(const uint8_t *block, float dl[8], float ml[8]) {
  const float d = fdl_dq_f16_at(block), dmin = fdl_dq_f16_at(block + 2);
  for (int j = 0; j < 8; j++) {
    int sc, m;
    fdl_dq_k4_scale_min(block + 4, j, &sc, &m);
    dl[j] = d * (float)sc;
    ml[j] = dmin * (float)m;
  }
}

/* Q6_K's sixteen sub-block factors: d * scale, rounded once each. */
static inline void fdl_dq_q6_k_factors(const uint8_t *block, float ds[16]) {
  const float d = fdl_dq_f16_at(block + 208);
  for (int g = 0; g < 16; g++) ds[g] = d * (float)(int8_t)block[192 + g];
}

/* dequant_avx2.c: the same values, eight at a time, for the types most GGUF files are made
 * of; NULL-free only on x86-64 builds (FDL_DQ_HAVE_AVX2). */
#if defined(__x86_64__) && defined(__GNUC__)
#define FDL_DQ_HAVE_AVX2 1
void fdl_dq_q4_0_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q8_0_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q4_k_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q5_k_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q6_k_avx2(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
#endif

/* dequant_k.c */
void fdl_dq_q2_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q3_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q4_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q5_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_q6_k(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);

/* dequant_iq.c */
void fdl_dq_iq4_nl(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_iq4_xs(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_iq3_s(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_tq1_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);
void fdl_dq_tq2_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);

/* quant_tables.c */
extern const int8_t fdl_dq_iq4nl_levels[16];
extern const uint32_t fdl_dq_iq3s_grid[512];

#endif
