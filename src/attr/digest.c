/* digest.c - the one vector digest of the Kiln records (spec §1): SHA-256 over the float32
 * little-endian bytes of each element in index order. */
#include <stdint.h>
#include <string.h>

#include "attr/internal.h"

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
