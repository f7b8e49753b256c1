/* quantize.c - the int4 weight quantizer synth uses to make an honest candidate: symmetric
 * round-to-nearest in groups along a row, decoded back to float32 exactly. Symmetric (no zero
 * point) because it is the simplest scheme whose decode is a single multiply, so the measured
 * KL is the quantization error and nothing else. */
#include <math.h>

#include "fidelis/engine.h"

void fdl_quant_int4_rtn(const float *in, size_t rows, size_t cols, size_t group, float *out) {
  if (!group) group = cols;
  for (size_t r = 0; r < rows; r++) {
    const float *w = in + r * cols;
    float *o = out + r * cols;
    for (size_t g0 = 0; g0 < cols; g0 += group) {
      size_t n = cols - g0 < group ? cols - g0 : group;
      float amax = 0.0f;
      for (size_t i = 0; i < n; i++) amax = fmaxf(amax, fabsf(w[g0 + i]));
      /* float32 division, as an int4 checkpoint stores a float scale. */
      float scale = amax / 7.0f;
      for (size_t i = 0; i < n; i++) {
        if (scale == 0.0f) {
          o[g0 + i] = 0.0f;
          continue;
        }
        float q = rintf(w[g0 + i] / scale); /* ties to even in the default rounding mode */
        q = fminf(7.0f, fmaxf(-7.0f, q));
        o[g0 + i] = q * scale; /* |q| <= 7 has 3 bits: the product is exact in float32 */
      }
    }
  }
}
