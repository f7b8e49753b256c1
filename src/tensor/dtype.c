/* dtype.c - dtype table, shape arithmetic, and exact BF16/F16 <-> F32 conversion.
 *
 * Divisions: the dtype table; shape products; conversions (scalar forms share one inline
 * kernel with the bulk loops so there is a single definition of each rounding rule). */
#include <string.h>

#include "fidelis/tensor.h"
#include "tensor/tensor_internal.h"

/* ---- dtype table ------------------------------------------------------------------------- */

static const struct {
  const char *name;
  size_t size;
} DTYPES[FDL_DTYPE_COUNT] = {
    [FDL_DTYPE_BOOL] = {"BOOL", 1},       [FDL_DTYPE_U8] = {"U8", 1},
    [FDL_DTYPE_I8] = {"I8", 1},           [FDL_DTYPE_I16] = {"I16", 2},
    [FDL_DTYPE_U16] = {"U16", 2},         [FDL_DTYPE_I32] = {"I32", 4},
    [FDL_DTYPE_U32] = {"U32", 4},         [FDL_DTYPE_I64] = {"I64", 8},
    [FDL_DTYPE_U64] = {"U64", 8},         [FDL_DTYPE_F16] = {"F16", 2},
    [FDL_DTYPE_BF16] = {"BF16", 2},       [FDL_DTYPE_F32] = {"F32", 4},
    [FDL_DTYPE_F64] = {"F64", 8},         [FDL_DTYPE_F8_E4M3] = {"F8_E4M3", 1},
    [FDL_DTYPE_F8_E5M2] = {"F8_E5M2", 1},
};

/* The enum may hold any int a caller casts into it; index the table only after this check. */
static bool dtype_valid(fdl_dtype t) {
  return (int)t >= 0 && (int)t < (int)FDL_DTYPE_COUNT;
}

size_t fdl_dtype_size(fdl_dtype t) {
  return dtype_valid(t) ? DTYPES[t].size : 0;
}

const char *fdl_dtype_name(fdl_dtype t) {
  return dtype_valid(t) ? DTYPES[t].name : "INVALID";
}

bool fdl_dtype_parse(const char *name, fdl_dtype *t) {
  if (!name) return false;
  for (int i = 0; i < (int)FDL_DTYPE_COUNT; i++) {
    if (!strcmp(name, DTYPES[i].name)) {
      *t = (fdl_dtype)i;
      return true;
    }
  }
  return false;
}

/* ---- shapes ------------------------------------------------------------------------------ */

bool fdl_shape_nbytes(fdl_dtype dtype, int ndim, const int64_t *shape, uint64_t *numel,
                      uint64_t *nbytes) {
  size_t size = fdl_dtype_size(dtype);
  if (size == 0 || ndim < 0 || ndim > FDL_MAX_DIMS) return false;
  uint64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return false;
    if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n)) return false;
  }
  uint64_t b;
  if (__builtin_mul_overflow(n, (uint64_t)size, &b)) return false;
  if (numel) *numel = n;
  if (nbytes) *nbytes = b;
  return true;
}

uint64_t fdl_tensor_numel(const fdl_tensor *t) {
  uint64_t n = 1;
  /* Views come from the readers, which proved the product fits; saturate anyway so a
   * hand-built view cannot wrap. */
  for (int i = 0; i < t->ndim && i < FDL_MAX_DIMS; i++) {
    if (t->shape[i] < 0 || __builtin_mul_overflow(n, (uint64_t)t->shape[i], &n)) return UINT64_MAX;
  }
  return n;
}

/* ---- conversions ------------------------------------------------------------------------- */

static inline float bits_to_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float bf16_widen(uint16_t h) {
  return bits_to_f32((uint32_t)h << 16);
}

/* Moves exponent and mantissa into F32 position and rebiases (15 -> 127). Inf/NaN need a
 * second rebias to reach exponent 255; subnormals are renormalised by one exact subtraction
 * (the result is a normal F32, and the subtraction of two nearby normals is exact), which
 * keeps the whole kernel branch-free so the bulk loop vectorises. */
static inline float f16_widen(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = ((uint32_t)h & 0x7fffu) << 13;
  uint32_t exp = o & shifted_exp;
  o += (uint32_t)(127 - 15) << 23;
  uint32_t is_special = (uint32_t)0 - (uint32_t)(exp == shifted_exp);
  uint32_t is_sub = (uint32_t)0 - (uint32_t)(exp == 0);
  o += is_special & ((uint32_t)(128 - 16) << 23);
  o += is_sub & (1u << 23);
  float sub_fixed = bits_to_f32(o) - bits_to_f32(113u << 23);
  uint32_t r = (is_sub & f32_to_bits(sub_fixed)) | (~is_sub & o);
  return bits_to_f32(r | (((uint32_t)h & 0x8000u) << 16));
}

/* Round to nearest even on the low 16 bits. Adding 0x7fff plus the kept LSB carries into the
 * kept half exactly when the dropped half is above one half, or equal to it with an odd LSB;
 * a carry out of the largest finite value reaches the infinity pattern, as RNE requires. NaN is
 * handled apart: rounding could carry it to infinity or clear its payload to infinity, so its
 * high half is kept and the quiet bit set. */
static inline uint16_t bf16_narrow(float f) {
  uint32_t u = f32_to_bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t quiet_nan = (u >> 16) | 0x0040u;
  uint32_t is_nan = (uint32_t)0 - (uint32_t)((u & 0x7fffffffu) > 0x7f800000u);
  return (uint16_t)((is_nan & quiet_nan) | (~is_nan & rounded));
}

float fdl_bf16_to_f32(uint16_t h) {
  return bf16_widen(h);
}

float fdl_f16_to_f32(uint16_t h) {
  return f16_widen(h);
}

uint16_t fdl_f32_to_bf16(float f) {
  return bf16_narrow(f);
}

void fdl_bf16_to_f32_n(const uint16_t *restrict in, float *restrict out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = bf16_widen(in[i]);
}

void fdl_f16_to_f32_n(const uint16_t *restrict in, float *restrict out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = f16_widen(in[i]);
}

void fdl_f32_to_bf16_n(const float *restrict in, uint16_t *restrict out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = bf16_narrow(in[i]);
}
