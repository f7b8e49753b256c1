/* ctensors.c - the decodes of llm-compressor's compressed-tensors checkpoints
 * (quantization_config quant_method "compressed-tensors"; docs/MODELS.md):
 *
 * pack-quantized (int4 / int8 weights):
 *   weight_packed      I32 [out, ceil(in / p)], p = 32 / bits: value j of word c of row o is
 *                      input p c + j, in bits [j bits, (j + 1) bits), stored as q + 2^(bits-1)
 *                      (q signed);
 *   weight_scale       BF16/F16/F32 [out, groups] (groups = 1 for one scale per channel);
 *   weight_zero_point  asymmetric only: I32 [ceil(out / p), groups], packed the same way along
 *                      the outputs (value j of word r is output p r + j), offset the same way;
 *   weight_g_idx       optional I32 [in]: the group of each input (activation order);
 *   w[o][i] = (q - zero) * scale[o][g].
 * float-quantized (FP8): weight F8_E4M3 [out, in], weight_scale [out, 1] or [1] (or [1, 1]);
 *   w[o][i] = fp8 * scale.
 * Facts from compressed-tensors' pack_to_int32 / unpack_from_int32 and _dequantize; the code is
 * ours. compressed-tensors multiplies in the scale's dtype, so with BF16 or F16 scales its
 * reference rounds each weight to that dtype; fidelis keeps the product in float32 (exact for
 * BF16 and F16 scales: a 9-bit difference or a 4-bit FP8 mantissa times 8 or 11 bits; rounded
 * once for F32 scales), the value the checkpoint defines, as it does for GPTQ and AWQ. */
#include <math.h>
#include <stdlib.h>

#include "base/sys.h"
#include "engine/model_internal.h"
#include "fidelis/model.h"

/* An FP8 E4M3 ("fn": no infinities, S.1111.111 is NaN) code to float32, exactly. */
static float fp8_e4m3(uint8_t b) {
  const int e = (b >> 3) & 15, m = b & 7;
  float v = e == 0 ? ldexpf((float)m, -9) : ldexpf((float)(8 + m), e - 10);
  if (e == 15 && m == 7) v = NAN;
  return b & 0x80 ? -v : v;
}

/* The scales as float32 ([n] values of a BF16/F16/F32 view), refused when not finite. */
static fdl_status scales_f32(const fdl_tensor *t, size_t n, float *out, fdl_err *err) {
  fdl_tensor_widen_f32(t, 0, n, out);
  for (size_t k = 0; k < n; k++)
    if (!isfinite(out[k]))
      return fdl_fail(err, FDL_NONFINITE, "%s[%zu] is not finite", t->name ? t->name : "scale", k);
  return FDL_OK;
}

/* The shape the checkpoint records (weight_shape, I64 or I32 [2]) must be the config's. */
static fdl_status check_shape(const fdl_tensor *ws, size_t out, size_t in, fdl_err *err) {
  if (!ws) return FDL_OK;
  size_t es = ws->dtype == FDL_DTYPE_I64 ? 8 : ws->dtype == FDL_DTYPE_I32 ? 4 : 0;
  if (!es || ws->ndim != 1 || ws->shape[0] != 2 || ws->nbytes != 2 * es)
    return fdl_fail(err, FDL_MISMATCH, "%s must be two integers (I64 or I32 [2])",
                    ws->name ? ws->name : "weight_shape");
  uint64_t v[2];
  for (int k = 0; k < 2; k++) {
    v[k] = fdl_model_le32(ws->data + k * es);
    if (es == 8) v[k] |= (uint64_t)fdl_model_le32(ws->data + k * es + 4) << 32;
  }
  if (v[0] != out || v[1] != in)
    return fdl_fail(err, FDL_MISMATCH, "%s is [%llu, %llu], expected [%zu, %zu]",
                    ws->name ? ws->name : "weight_shape", (unsigned long long)v[0],
                    (unsigned long long)v[1], out, in);
  return FDL_OK;
}

fdl_status fdl_ct_reconstruct_packed(const fdl_ct_parts *p, size_t in, size_t out,
                                     const fdl_ct_scheme *sc, float *w, fdl_err *err) {
  if (!w || !p || !sc) return fdl_fail(err, FDL_INVALID, "no output buffer, parts or scheme");
  const unsigned bits = sc->bits;
  if (bits != 4 && bits != 8)
    return fdl_fail(err, FDL_UNSUPPORTED, "%u-bit pack-quantized weights are not read (4 or 8)",
                    bits);
  const size_t per = 32 / bits, group = sc->group ? sc->group : in;
  const uint32_t mask = (1u << bits) - 1u;
  const int offset = 1 << (bits - 1);
  if (!in || !out || in % group)
    return fdl_fail(err, FDL_UNSUPPORTED, "group size %zu does not divide the input dimension %zu",
                    group, in);
  const size_t groups = in / group, words = (in + per - 1) / per;
  if (!p->scale || !fdl_tensor_widenable(p->scale->dtype))
    return fdl_fail(err, FDL_MISMATCH, "%s must be BF16, F16 or F32",
                    p->scale && p->scale->name ? p->scale->name : "weight_scale");
  fdl_status s =
      fdl_model_check_part(p->packed, "weight_packed", FDL_DTYPE_I32, 2, out, words, err);
  if (!s) s = fdl_model_check_part(p->scale, "weight_scale", p->scale->dtype, 2, out, groups, err);
  if (!s && !sc->symmetric)
    s = fdl_model_check_part(p->zero, "weight_zero_point", FDL_DTYPE_I32, 2, (out + per - 1) / per,
                             groups, err);
  if (!s && p->g_idx)
    s = fdl_model_check_part(p->g_idx, "weight_g_idx", FDL_DTYPE_I32, 1, in, 0, err);
  if (!s) s = check_shape(p->shape, out, in, err);
  if (s) return s;
  /* activation order: every group must hold `group` inputs (the reference reshapes the permuted
   * inputs into equal groups); a g_idx holding -1 means column order */
  bool column_order = !p->g_idx;
  for (size_t i = 0; p->g_idx && i < in; i++)
    if ((int32_t)fdl_model_le32(p->g_idx->data + 4 * i) == -1) column_order = true;
  size_t *count = column_order ? NULL : fdl_calloc(groups, sizeof *count);
  if (!column_order && !count) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; !column_order && i < in && !s; i++) {
    int32_t g = (int32_t)fdl_model_le32(p->g_idx->data + 4 * i);
    if (g < 0 || (size_t)g >= groups)
      s = fdl_fail(err, FDL_BOUNDS, "%s[%zu] = %d, expected a group in [0, %zu)", p->g_idx->name, i,
                   (int)g, groups);
    else
      count[g]++;
  }
  for (size_t g = 0; count && g < groups && !s; g++)
    if (count[g] != group)
      s = fdl_fail(err, FDL_PARSE,
                   "%s is not a permutation of the groups: group %zu has %zu inputs, expected %zu",
                   p->g_idx->name, g, count[g], group);
  free(count);
  float *scale = s ? NULL : fdl_malloc(out * groups * sizeof *scale);
  if (!s && !scale) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (!s) s = scales_f32(p->scale, out * groups, scale, err);
  for (size_t o = 0; o < out && !s; o++)
    for (size_t i = 0; i < in; i++) {
      size_t g = column_order ? i / group : (size_t)fdl_model_le32(p->g_idx->data + 4 * i);
      uint32_t word = fdl_model_le32(p->packed->data + 4 * (o * words + i / per));
      int q = (int)((word >> (bits * (i % per))) & mask) - offset, zero = 0;
      if (!sc->symmetric) {
        uint32_t zw = fdl_model_le32(p->zero->data + 4 * ((o / per) * groups + g));
        zero = (int)((zw >> (bits * (o % per))) & mask) - offset;
      }
      w[o * in + i] = (float)(q - zero) * scale[o * groups + g];
    }
  free(scale);
  return s;
}

fdl_status fdl_ct_reconstruct_fp8(const fdl_tensor *weight, const fdl_tensor *scale_t, size_t in,
                                  size_t out, float *w, fdl_err *err) {
  if (!w || !weight || !scale_t) return fdl_fail(err, FDL_INVALID, "no output, weight or scale");
  fdl_status s = fdl_model_check_part(weight, "weight", FDL_DTYPE_F8_E4M3, 2, out, in, err);
  if (s) return s;
  if (!fdl_tensor_widenable(scale_t->dtype))
    return fdl_fail(err, FDL_MISMATCH, "%s must be BF16, F16 or F32",
                    scale_t->name ? scale_t->name : "weight_scale");
  /* one scale for the tensor ([], [1] or [1, 1]) or one per output channel ([out] or [out, 1]) */
  size_t n = 1;
  for (int k = 0; k < scale_t->ndim; k++) n *= (size_t)scale_t->shape[k];
  bool per_tensor = n == 1 && scale_t->ndim <= 2;
  bool per_channel =
      n == out && scale_t->ndim >= 1 && scale_t->ndim <= 2 && (size_t)scale_t->shape[0] == out;
  if ((!per_tensor && !per_channel) || scale_t->nbytes != n * fdl_dtype_size(scale_t->dtype))
    return fdl_fail(err, FDL_MISMATCH,
                    "%s: expected one scale ([1]) or one per output channel ([%zu, 1])",
                    scale_t->name ? scale_t->name : "weight_scale", out);
  float *scale = fdl_malloc(n * sizeof *scale);
  if (!scale) return fdl_fail(err, FDL_NOMEM, "out of memory");
  s = scales_f32(scale_t, n, scale, err);
  for (size_t o = 0; o < out && !s; o++) {
    float sc = scale[per_channel ? o : 0];
    for (size_t i = 0; i < in; i++) {
      float v = fp8_e4m3(weight->data[o * in + i]);
      if (isnan(v)) {
        s = fdl_fail(err, FDL_NONFINITE, "%s[%zu, %zu] is the FP8 NaN code",
                     weight->name ? weight->name : "weight", o, i);
        break;
      }
      w[o * in + i] = v * sc;
    }
  }
  free(scale);
  return s;
}
