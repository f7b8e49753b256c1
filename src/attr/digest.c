/* digest.c - what every Kiln vector must pass before it is used: the finiteness rule, and the
 * one vector digest of the records (spec §1), SHA-256 over the float32 little-endian bytes of
 * each element in index order, and its spelling in the records ("sha256:" and the hex); and the
 * cosine rule both comparisons share. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attr/internal.h"
#include "fidelis/tensor.h"

fdl_status fdl_attr_finite(const float *v, size_t n, const char *what, fdl_err *err) {
  bool nan = false;
  uint64_t i = fdl_tensor_first_nonfinite((const uint8_t *)v, FDL_DTYPE_F32, n, &nan);
  if (i == UINT64_MAX) return FDL_OK;
  return fdl_fail(err, FDL_NONFINITE, "%s element %llu is %s, expected a finite value", what,
                  (unsigned long long)i, nan ? "NaN" : "infinite");
}

void fdl_attr_sha_text(const fdl_sha256 *d, char out[FDL_SEAL_BUF]) {
  char hex[FDL_SHA256_HEX_BUF];
  fdl_sha256_hex(d, hex);
  snprintf(out, FDL_SEAL_BUF, FDL_SEAL_KILN_PREFIX "%s", hex);
}

fdl_status fdl_attr_sha256_f32(const float *v, size_t n, fdl_sha256 *out, fdl_err *err) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return fdl_sha256_buf(v, n * sizeof *v, out, err); /* memory already holds the LE bytes */
#else
  fdl_sha256_ctx *c = NULL;
  fdl_status s = fdl_sha256_new(&c, err);
  uint8_t chunk[4096];
  for (size_t i = 0; s == FDL_OK && i < n;) {
    size_t m = 0;
    for (; i < n && m + 4 <= sizeof chunk; i++, m += 4) {
      uint32_t u;
      memcpy(&u, &v[i], 4);
      for (int b = 0; b < 4; b++) chunk[m + (size_t)b] = (uint8_t)(u >> (8 * b));
    }
    s = fdl_sha256_update(c, chunk, m, err);
  }
  if (s == FDL_OK) s = fdl_sha256_final(c, out, err);
  fdl_sha256_free(c);
  return s;
#endif
}

double fdl_attr_cosine(double dot, double aa, double bb, bool same) {
  if (same) return 1.0;
  double c = dot / (sqrt(aa) * sqrt(bb));
  return c > 1.0 ? 1.0 : c < -1.0 ? -1.0 : c;
}
