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

#include "base/check.h"
#include "fidelis/ggml_quant.h"
#include "gguf/dequant_internal.h"
#include "num/isa.h"

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
#define NKERNELS (sizeof KERNELS / sizeof KERNELS[0])

/* The AVX2 kernels where there is one; the scalar kernel serves the other types. */
static const fdl_dq_kernel KERNELS_AVX2[NKERNELS] = {
#ifdef FDL_DQ_HAVE_AVX2
    [2] = fdl_dq_q4_0_avx2,  [8] = fdl_dq_q8_0_avx2,  [12] = fdl_dq_q4_k_avx2,
    [13] = fdl_dq_q5_k_avx2, [14] = fdl_dq_q6_k_avx2,
#else
    [0] = NULL,
#endif
};

/* The byte offsets of the f16 scale fields of each block format (n of them, up to two): d, and
 * the minimum (m, dmin) where the format has one. fdl_ggml_check_finite reads only these. */
static const struct {
  uint8_t n, off[2];
} SCALES[NKERNELS] = {
    [2] = {1, {0}},     [3] = {2, {0, 2}},    [6] = {1, {0}},    [7] = {2, {0, 2}},
    [8] = {1, {0}},     [10] = {2, {80, 82}}, [11] = {1, {108}}, [12] = {2, {0, 2}},
    [13] = {2, {0, 2}}, [14] = {1, {208}},    [20] = {1, {0}},   [21] = {1, {0}},
    [23] = {1, {0}},    [34] = {1, {52}},     [35] = {1, {64}},
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

fdl_status fdl_ggml_decoder(uint32_t id, fdl_num_isa isa, fdl_dq_kernel *out, fdl_err *err) {
  const fdl_ggml_type_info *t = fdl_ggml_type(id);
  if (!t) return fdl_fail(err, FDL_UNSUPPORTED, "ggml type id %" PRIu32 " is not a ggml type", id);
  if (!t->dequant || id >= NKERNELS || !KERNELS[id])
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "ggml type %s (%" PRIu32 ") is not dequantized by fidelis", t->name, id);
  /* AVX-512 runs the AVX2 decoders: a byte-to-float decoder gains little from wider lanes,
   * and every AVX-512 x86 also runs AVX2 (checked below all the same). */
  const void *by_isa[4] = {[FDL_NUM_ISA_SCALAR] = KERNELS};
#ifdef FDL_DQ_HAVE_AVX2
  by_isa[FDL_NUM_ISA_AVX2] = by_isa[FDL_NUM_ISA_AVX512] = KERNELS_AVX2;
#endif
  const void *table;
  fdl_status s = fdl_num_isa_pick(isa, by_isa, "dequantization", &table, err);
  if (s) return s;
  if (table == (const void *)KERNELS_AVX2 && !fdl_num_cpu_has(FDL_NUM_ISA_AVX2)) table = KERNELS;
  const fdl_dq_kernel *k = table;
  *out = k[id] ? k[id] : KERNELS[id];
  return FDL_OK;
}

/* The checks every entry point makes on a request for n values of type id at src. */
static fdl_status request(uint32_t id, const void *src, uint64_t n, const float *dst,
                          const fdl_ggml_type_info **out, fdl_err *err) {
  const fdl_ggml_type_info *t = *out = fdl_ggml_type(id);
  uint64_t bytes;
  fdl_status s = fdl_ggml_row_bytes(id, n, &bytes, err);
  if (s) return s;
  size_t nb;
  if (bytes > SIZE_MAX || n > SIZE_MAX || !fdl_size_mul((size_t)n, sizeof *dst, &nb))
    return fdl_fail(err, FDL_BOUNDS, "ggml type %s: %" PRIu64 " values do not fit in memory",
                    t->name, n);
  if (n && (!src || !dst))
    return fdl_fail(err, FDL_INVALID, "ggml type %s: no %s buffer for %" PRIu64 " values", t->name,
                    src ? "output" : "input", n);
  return FDL_OK;
}

static fdl_status refuse(const fdl_ggml_type_info *t, uint64_t bad, uint64_t n, float v,
                         fdl_err *err) {
  return fdl_fail(err, FDL_INVALID,
                  "ggml type %s: value %" PRIu64 " (block %" PRIu64 ") of %" PRIu64
                  " is %s; expected finite values (the block's scale or the stored value is "
                  "not finite)",
                  t->name, bad, bad / t->block_elems, n, isnan(v) ? "NaN" : "infinite");
}

fdl_status fdl_ggml_dequant_isa(uint32_t id, fdl_num_isa isa, const void *src, uint64_t n,
                                float *dst, fdl_err *err) {
  fdl_dq_kernel kernel;
  const fdl_ggml_type_info *t;
  fdl_status s = fdl_ggml_decoder(id, isa, &kernel, err);
  if (!s) s = request(id, src, n, dst, &t, err);
  if (s || n == 0) return s;
  const uint64_t bad = decode_checked(t, kernel, src, n, dst);
  return bad < n ? refuse(t, bad, n, dst[bad], err) : FDL_OK;
}

fdl_status fdl_ggml_dequant(uint32_t id, const void *src, uint64_t n, float *dst, fdl_err *err) {
  return fdl_ggml_dequant_isa(id, FDL_NUM_ISA_AUTO, src, n, dst, err);
}

static bool f16_nonfinite(const uint8_t *p) {
  return (fdl_dq_le16(p) & 0x7c00u) == 0x7c00u;
}

/* Why the scales decide: every value of a block is a product with the block's d (and, where
 * there is one, a sum with or difference from a product with its minimum). A non-finite d or
 * minimum makes each of those products, and so each value, infinite or NaN (inf * 0 is NaN).
 * With finite scales (|d| <= 65504, a float16's largest) and the formats' small integer codes,
 * sub-scales and grid values (each below 2^8), no value exceeds about 2^32: far from float32's
 * overflow. So a block dequantizes to finite values exactly when its f16 scales are finite. The
 * first block whose scales are not is decoded to name its first non-finite value, as
 * fdl_ggml_dequant would; the plain float types, which have no scales, are decoded and scanned
 * a chunk at a time. */
fdl_status fdl_ggml_check_finite(uint32_t id, const void *src, uint64_t n, fdl_err *err) {
  fdl_dq_kernel kernel;
  const fdl_ggml_type_info *t;
  float buf[CHUNK_VALUES];
  fdl_status s = fdl_ggml_decoder(id, FDL_NUM_ISA_SCALAR, &kernel, err);
  if (!s) s = request(id, src, n, buf, &t, err);
  if (s || n == 0) return s;
  const uint8_t *p = src;
  const uint64_t blocks = n / t->block_elems;
  if (!SCALES[id].n) {
    const uint64_t chunk = CHUNK_VALUES / t->block_elems;
    for (uint64_t b = 0; b < blocks; b += chunk) {
      const uint64_t nb = blocks - b < chunk ? blocks - b : chunk;
      kernel(p + b * t->block_bytes, nb, buf);
      const uint64_t at = first_nonfinite(buf, nb * t->block_elems);
      if (at < nb * t->block_elems) return refuse(t, b * t->block_elems + at, n, buf[at], err);
    }
    return FDL_OK;
  }
  const unsigned o0 = SCALES[id].off[0], o1 = SCALES[id].n > 1 ? SCALES[id].off[1] : o0;
  for (uint64_t b = 0; b < blocks; b++) {
    const uint8_t *blk = p + b * t->block_bytes;
    if (!f16_nonfinite(blk + o0) && !f16_nonfinite(blk + o1)) continue;
    kernel(blk, 1, buf);
    const uint64_t at = first_nonfinite(buf, t->block_elems);
    if (at < t->block_elems) return refuse(t, b * t->block_elems + at, n, buf[at], err);
  }
  return FDL_OK;
}
