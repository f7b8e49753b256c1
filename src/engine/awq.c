/* awq.c - the decode of an AWQ checkpoint in AutoAWQ's GEMM layout (quantization_config
 * quant_method "awq", version "gemm"), the format AutoAWQ and transformers write.
 *
 * Layout (facts from AutoAWQ's packing and dequantization utilities; the code is ours):
 *   qweight int32 [in, out/8]: word c of input row i holds outputs 8c .. 8c + 7, output 8c + t
 *           in nibble ORDER[t] (AutoAWQ interleaves the eight: nibbles 0..7 hold outputs
 *           0, 2, 4, 6, 1, 3, 5, 7 of the word);
 *   qzeros  int32 [in/group, out/8]: the zero points, packed the same way, stored as is;
 *   scales  float16 [in/group, out];
 *   w[o][i] = (q - zero) * scale, group i / group (AWQ has no act order).
 * As for GPTQ, the engine takes the exact float32 value of that product (a 5-bit difference
 * times an 11-bit scale); AutoAWQ's reference dequantization multiplies in float16 and would
 * round it to float16 (docs/MODELS.md). */

#include "base/check.h"
#include "engine/model_internal.h"
#include "fidelis/model.h"

/* The nibble that holds output 8c + t of word c. */
static const unsigned NIBBLE[8] = {0, 4, 1, 5, 2, 6, 3, 7};

fdl_status fdl_awq_reconstruct(const fdl_tensor *qweight, const fdl_tensor *qzeros,
                               const fdl_tensor *scales, size_t in, size_t out, size_t group,
                               float *w, fdl_err *err) {
  if (!w) return fdl_fail(err, FDL_INVALID, "awq: no output buffer");
  fdl_status s = FDL_OK;
  size_t n;
  if (!out || !in || !group)
    s = fdl_fail(err, FDL_INVALID, "awq: empty matrix or group (out %zu, in %zu, group %zu)", out,
                 in, group);
  else if (out % 8)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "awq: %zu outputs cannot be packed: 8 outputs share an int32", out);
  else if (in % group)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "awq: group size %zu does not divide the input dimension %zu", group, in);
  else if (!fdl_size_mul(out, in, &n))
    s = fdl_fail(err, FDL_TOO_LARGE, "awq: %zu x %zu overflows", out, in);
  size_t groups = s == FDL_OK ? in / group : 0;
  if (!s) s = fdl_model_check_part(qweight, "qweight", FDL_DTYPE_I32, 2, in, out / 8, err);
  if (!s) s = fdl_model_check_part(qzeros, "qzeros", FDL_DTYPE_I32, 2, groups, out / 8, err);
  if (!s) s = fdl_model_check_part(scales, "scales", FDL_DTYPE_F16, 2, groups, out, err);
  if (s) return fdl_err_prefix(err, "awq");
  uint64_t bad = fdl_tensor_first_nonfinite(scales->data, FDL_DTYPE_F16, groups * out, NULL);
  if (bad != UINT64_MAX)
    return fdl_fail(err, FDL_NONFINITE, "awq: %s[%llu, %llu] is not finite",
                    scales->name ? scales->name : "scales", (unsigned long long)(bad / out),
                    (unsigned long long)(bad % out));
  for (size_t i = 0; i < in; i++) {
    size_t g = i / group;
    for (size_t c = 0; c < out / 8; c++) {
      uint32_t word = fdl_model_le32(qweight->data + 4 * (i * (out / 8) + c));
      uint32_t zword = fdl_model_le32(qzeros->data + 4 * (g * (out / 8) + c));
      for (size_t t = 0; t < 8; t++) {
        size_t o = 8 * c + t;
        int q = (int)((word >> (4 * NIBBLE[t])) & 15u);
        int zero = (int)((zword >> (4 * NIBBLE[t])) & 15u);
        const uint8_t *sp = scales->data + 2 * (g * out + o);
        float scale = fdl_f16_to_f32((uint16_t)(sp[0] | sp[1] << 8));
        w[o * in + i] = (float)(q - zero) * scale; /* 5 bits times 11: exact */
      }
    }
  }
  return FDL_OK;
}
