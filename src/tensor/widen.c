/* widen.c - tensor bytes to float32 rows, and the one bit-level test for a stored NaN or
 * infinity (pack refuses them, validate reports them). Reads little-endian bytes one element at a
 * time, so neither the mapping's alignment (safetensors data often starts at an odd offset) nor the
 * host byte order matters; BF16 and F16 widen exactly. F32 on a little-endian host is a plain copy,
 * which the reference writer's unpadded headers make the usual case for logit rows. */
#include <string.h>

#include "fidelis/tensor.h"

/* A little-endian host reads stored elements in place (F32 widening, the finiteness pre-scan). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WIDEN_LE 1
#else
#define WIDEN_LE 0
#endif

bool fdl_tensor_widenable(fdl_dtype t) {
  return t == FDL_DTYPE_BF16 || t == FDL_DTYPE_F16 || t == FDL_DTYPE_F32;
}

void fdl_tensor_widen_f32(const fdl_tensor *t, size_t first, size_t n, float *out) {
  const uint8_t *p = t->data + first * fdl_dtype_size(t->dtype);
  switch (t->dtype) {
  case FDL_DTYPE_BF16: {
    /* A BF16 value is the top half of the float32 with the same bits (NaN payloads included),
     * so widening is a shift; written as integer loads and stores, the loop vectorises. */
    for (size_t i = 0; i < n; i++, p += 2) {
      uint32_t u = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
      memcpy(&out[i], &u, sizeof u);
    }
    break;
  }
  case FDL_DTYPE_F16:
    for (size_t i = 0; i < n; i++, p += 2) out[i] = fdl_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
    break;
  case FDL_DTYPE_F32:
#if WIDEN_LE
    memcpy(out, p, n * sizeof *out);
#else
    for (size_t i = 0; i < n; i++, p += 4) {
      uint32_t u =
          (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
      memcpy(&out[i], &u, sizeof u);
    }
#endif
    break;
  default:
    memset(out, 0, n * sizeof *out);
    break;
  }
}

/* The element at p as a little-endian integer of its width (2, 4 or 8 bytes). */
static uint64_t le_bits(const uint8_t *p, size_t width) {
  uint64_t v = 0;
  for (size_t k = width; k-- > 0;) v = v << 8 | p[k];
  return v;
}

/* Elements per pre-scanned block: a multiple of every lane count below. */
#define SCAN_BLOCK 8192

/* Whether any of a block's little-endian 16- or 32-bit elements has every bit of exp set
 * (infinite or NaN), sixteen or eight lanes at a time: the load scans every weight byte with
 * this, and the element loop alone ran at a third of a GB/s (issue 24). Only a block that says
 * yes, and a last partial one, is looked at element by element. */
typedef uint16_t v16u16 __attribute__((vector_size(32)));
typedef uint32_t v8u32 __attribute__((vector_size(32)));

static bool block_has_exp16(const uint8_t *p, uint16_t exp) {
  v16u16 acc = {0}, x;
  for (size_t i = 0; i < SCAN_BLOCK; i += 16) {
    memcpy(&x, p + 2 * i, sizeof x);
    acc |= (v16u16)((x & exp) == exp);
  }
  uint16_t any = 0;
  for (int k = 0; k < 16; k++) any |= acc[k];
  return any != 0;
}

static bool block_has_exp32(const uint8_t *p, uint32_t exp) {
  v8u32 acc = {0}, x;
  for (size_t i = 0; i < SCAN_BLOCK; i += 8) {
    memcpy(&x, p + 4 * i, sizeof x);
    acc |= (v8u32)((x & exp) == exp);
  }
  uint32_t any = 0;
  for (int k = 0; k < 8; k++) any |= acc[k];
  return any != 0;
}

uint64_t fdl_tensor_first_nonfinite(const uint8_t *p, fdl_dtype t, uint64_t n, bool *nan) {
  uint64_t exp, man;
  switch (t) {
  case FDL_DTYPE_BF16:
    exp = 0x7f80u, man = 0x007fu;
    break;
  case FDL_DTYPE_F16:
    exp = 0x7c00u, man = 0x03ffu;
    break;
  case FDL_DTYPE_F32:
    exp = 0x7f800000u, man = 0x007fffffu;
    break;
  case FDL_DTYPE_F64:
    exp = 0x7ff0000000000000ull, man = 0x000fffffffffffffull;
    break;
  default:
    return UINT64_MAX;
  }
  size_t w = fdl_dtype_size(t);
  const bool lanes = WIDEN_LE && (w == 2 || w == 4);
  for (uint64_t b = 0; b < n; b += SCAN_BLOCK) {
    uint64_t e = n - b < SCAN_BLOCK ? n : b + SCAN_BLOCK;
    if (lanes && e - b == SCAN_BLOCK &&
        !(w == 2 ? block_has_exp16(p + b * w, (uint16_t)exp)
                 : block_has_exp32(p + b * w, (uint32_t)exp)))
      continue;
    for (uint64_t i = b; i < e; i++) {
      uint64_t v = le_bits(p + i * w, w);
      if ((v & exp) != exp) continue;
      if (nan) *nan = (v & man) != 0;
      return i;
    }
  }
  return UINT64_MAX;
}
