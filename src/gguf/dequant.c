/* dequant.c - fdl_ggml_dequant (fidelis/ggml_quant.h): ggml tensor data to float32 with the
 * bits of ggml's reference to_float, so a tensor fidelis computes with is the very tensor
 * llama.cpp's CPU reference computes with (docs/GGML-QUANTS.md).
 *
 * This file checks the request, picks the kernel for the type and checks the result finite;
 * it also holds the kernels of the plain types (F32, F16, BF16) and of the 32-value legacy
 * formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0). The k-quants are in dequant_k.c, the IQ and ternary
 * formats in dequant_iq.c. Each kernel loops over whole blocks with the per-value arithmetic
 * written out inline, in ggml's operation order (dequant_internal.h). */
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>

#include "fidelis/ggml_quant.h"
#include "gguf/dequant_internal.h"

/* ---- plain types ------------------------------------------------------------------------ */

/* F32 is stored as is: a copy on a little-endian host. */
static void dq_f32(const uint8_t *restrict src, uint64_t n, float *restrict dst) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  memcpy(dst, src, n * sizeof *dst);
#else
  for (uint64_t i = 0; i < n; i++) dst[i] = fdl_dq_from_bits(fdl_dq_le32(src + 4 * i));
#endif
}

/* The plain types loop in fixed groups of 64 (so the compiler vectorizes) and then a tail. */
static void dq_f16(const uint8_t *restrict src, uint64_t n, float *restrict dst) {
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int j = 0; j < 64; j++) dst[i + j] = fdl_dq_f16_at(src + 2 * (i + j));
  for (; i < n; i++) dst[i] = fdl_dq_f16_at(src + 2 * i);
}

/* bfloat16 is the high half of a float32: widening is a 16-bit shift. */
static void dq_bf16(const uint8_t *restrict src, uint64_t n, float *restrict dst) {
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int j = 0; j < 64; j++)
      dst[i + j] = fdl_dq_from_bits((uint32_t)fdl_dq_le16(src + 2 * (i + j)) << 16);
  for (; i < n; i++) dst[i] = fdl_dq_from_bits((uint32_t)fdl_dq_le16(src + 2 * i) << 16);
}

/* ---- 32-value legacy formats ------------------------------------------------------------ */

/* Q4_0, 18 bytes: f16 d, 16 bytes of nibbles. Byte j holds value j (low) and j + 16 (high);
 * y = (q - 8) * d. */
static void dq_q4_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 18, dst += 32) {
    const float d = fdl_dq_f16_at(src);
    const uint8_t *qs = src + 2;
    for (int j = 0; j < 16; j++) {
      dst[j] = (float)((qs[j] & 0x0f) - 8) * d;
      dst[j + 16] = (float)((qs[j] >> 4) - 8) * d;
    }
  }
}

/* Q4_1, 20 bytes: f16 d, f16 m, 16 bytes of nibbles; y = q * d + m. */
static void dq_q4_1(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 20, dst += 32) {
    const float d = fdl_dq_f16_at(src), m = fdl_dq_f16_at(src + 2);
    const uint8_t *qs = src + 4;
    for (int j = 0; j < 16; j++) {
      dst[j] = (float)(qs[j] & 0x0f) * d + m;
      dst[j + 16] = (float)(qs[j] >> 4) * d + m;
    }
  }
}

/* Q5_0, 22 bytes: f16 d, a 32-bit word whose bit i is the fifth bit of value i, 16 bytes of
 * nibbles laid out as Q4_0; y = (q - 16) * d. */
static void dq_q5_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 22, dst += 32) {
    const float d = fdl_dq_f16_at(src);
    const uint32_t qh = fdl_dq_le32(src + 2);
    const uint8_t *qs = src + 6;
    for (int j = 0; j < 16; j++) {
      const int lo = (int)((qs[j] & 0x0fu) | (qh & 1u << j ? 0x10u : 0u));
      const int hi = (int)((qs[j] >> 4) | (qh & 1u << (j + 16) ? 0x10u : 0u));
      dst[j] = (float)(lo - 16) * d;
      dst[j + 16] = (float)(hi - 16) * d;
    }
  }
}

/* Q5_1, 24 bytes: f16 d, f16 m, the fifth-bit word, 16 bytes of nibbles; y = q * d + m. */
static void dq_q5_1(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 24, dst += 32) {
    const float d = fdl_dq_f16_at(src), m = fdl_dq_f16_at(src + 2);
    const uint32_t qh = fdl_dq_le32(src + 4);
    const uint8_t *qs = src + 8;
    for (int j = 0; j < 16; j++) {
      const uint32_t lo = (qs[j] & 0x0fu) | (qh & 1u << j ? 0x10u : 0u);
      const uint32_t hi = (qs[j] >> 4) | (qh & 1u << (j + 16) ? 0x10u : 0u);
      dst[j] = (float)lo * d + m;
      dst[j + 16] = (float)hi * d + m;
    }
  }
}

/* Q8_0, 34 bytes: f16 d, 32 signed bytes; y = q * d. */
static void dq_q8_0(const uint8_t *restrict src, uint64_t blocks, float *restrict dst) {
  for (uint64_t b = 0; b < blocks; b++, src += 34, dst += 32) {
    const float d = fdl_dq_f16_at(src);
    for (int j = 0; j < 32; j++) dst[j] = (float)(int8_t)src[2 + j] * d;
  }
}

/* ---- dispatch --------------------------------------------------------------------------- */

/* Indexed by ggml type id; the plain types take a value count, the others a block count
 * (the same thing, their blocks being one value). */
static const fdl_dq_kernel KERNELS[] = {
    [0] = dq_f32,         [1] = dq_f16,        [2] = dq_q4_0,        [3] = dq_q4_1,
    [6] = dq_q5_0,        [7] = dq_q5_1,       [8] = dq_q8_0,        [10] = fdl_dq_q2_k,
    [11] = fdl_dq_q3_k,   [12] = fdl_dq_q4_k,  [13] = fdl_dq_q5_k,   [14] = fdl_dq_q6_k,
    [20] = fdl_dq_iq4_nl, [21] = fdl_dq_iq3_s, [23] = fdl_dq_iq4_xs, [30] = dq_bf16,
    [34] = fdl_dq_tq1_0,  [35] = fdl_dq_tq2_0,
};

/* Values decoded between two finiteness scans: few enough that the scan reads them back from
 * cache, many enough that the per-chunk overhead vanishes. */
#define CHUNK_VALUES 8192u

static bool nonfinite(const float *p) {
  uint32_t u;
  memcpy(&u, p, sizeof u);
  return (u & 0x7f800000u) == 0x7f800000u;
}

/* The index of the first infinite or NaN value of p[0..n), or n. A branch-free pass in
 * fixed-size groups (which the compiler vectorizes) says whether there is one; only then is it
 * looked for. */
static uint64_t first_nonfinite(const float *p, uint64_t n) {
  uint32_t any = 0;
  uint64_t i = 0;
  for (; i + 64 <= n; i += 64)
    for (int j = 0; j < 64; j++) any |= (uint32_t)nonfinite(p + i + j);
  for (; i < n; i++) any |= (uint32_t)nonfinite(p + i);
  if (!any) return n;
  for (i = 0; !nonfinite(p + i);) i++;
  return i;
}

/* Runs the kernel over all of src in chunks, scanning each chunk while it is still in cache;
 * returns the index of the first non-finite value, or n. All of dst is written either way. */
static uint64_t decode_checked(const fdl_ggml_type_info *t, fdl_dq_kernel kernel,
                               const uint8_t *src, uint64_t n, float *dst) {
  const uint64_t chunk_blocks = CHUNK_VALUES / t->block_elems, blocks = n / t->block_elems;
  uint64_t bad = n;
  for (uint64_t b = 0; b < blocks; b += chunk_blocks) {
    const uint64_t nb = blocks - b < chunk_blocks ? blocks - b : chunk_blocks;
    float *out = dst + b * t->block_elems;
    kernel(src + b * t->block_bytes, nb, out);
    if (bad == n) {
      const uint64_t at = first_nonfinite(out, nb * t->block_elems);
      if (at < nb * t->block_elems) bad = b * t->block_elems + at;
    }
  }
  return bad;
}

fdl_status fdl_ggml_dequant(uint32_t id, const void *src, uint64_t n, float *dst, fdl_err *err) {
  const fdl_ggml_type_info *t = fdl_ggml_type(id);
  if (!t) return fdl_fail(err, FDL_UNSUPPORTED, "ggml type id %" PRIu32 " is not a ggml type", id);
  fdl_dq_kernel kernel = id < sizeof KERNELS / sizeof KERNELS[0] ? KERNELS[id] : NULL;
  if (!t->dequant || !kernel)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "ggml type %s (%" PRIu32 ") is not dequantized by fidelis", t->name, id);
  uint64_t bytes;
  fdl_status s = fdl_ggml_row_bytes(id, n, &bytes, err);
  if (s != FDL_OK) return s;
  if (n == 0) return FDL_OK;
  if (bytes > SIZE_MAX || n > SIZE_MAX / sizeof *dst)
    return fdl_fail(err, FDL_BOUNDS, "ggml type %s: %" PRIu64 " values do not fit in memory",
                    t->name, n);
  if (!src || !dst)
    return fdl_fail(err, FDL_INVALID, "ggml type %s: no %s buffer for %" PRIu64 " values", t->name,
                    src ? "output" : "input", n);
  const uint64_t bad = decode_checked(t, kernel, src, n, dst);
  if (bad < n)
    return fdl_fail(err, FDL_INVALID,
                    "ggml type %s: value %" PRIu64 " (block %" PRIu64 ") of %" PRIu64
                    " is %s; expected finite values (the block's scale or the stored value is "
                    "not finite)",
                    t->name, bad, bad / t->block_elems, n, isnan(dst[bad]) ? "NaN" : "infinite");
  return FDL_OK;
}
