/* quant_load.c - a quantized matrix of a checkpoint, reconstructed for the forward pass: GPTQ
 * (2-, 3-, 4- or 8-bit, v1 or v2 zero points), AWQ (GEMM) or compressed-tensors (pack-quantized
 * int4 / int8, float-quantized FP8), whichever quantization_config declares (docs/MODELS.md).
 *
 * The engine multiplies the reconstruction w = (q - zero) * scale (FP8: e4m3 * scale), computed
 * once at load in float32 by the format's decode (gptq.c, awq.c, ctensors.c). That is the
 * "affine weight reconstruction" a capture declares in its weights_decode, so compare discloses
 * weights_reconstructed: the measurement covers the weights' quantization, not a quantized
 * kernel's arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "base/check.h"
#include "engine/internal.h"
#include "fidelis/model.h"

/* The parts each format stores beside (or instead of) X.weight, and how many are required. */
static const char *const GPTQ[] = {"qweight", "qzeros", "scales", "g_idx", NULL};
static const char *const CT_PACKED[] = {"weight_packed", "weight_scale", "weight_zero_point",
                                        "weight_g_idx", "weight_shape"};
static const char *const CT_FP8[] = {"weight", "weight_scale", NULL, NULL, NULL};

typedef struct {
  const char *const *suffix;
  size_t required;
  char what[48];  /* the format, for messages */
  uint64_t bytes; /* what the first part holds for the config's [rows, cols] */
} layout;

static layout layout_of(const fdl_model_info *in, size_t rows, size_t cols) {
  uint64_t n = (uint64_t)rows * cols;
  layout L;
  if (in->ct_format && !strcmp(in->ct_format, "float-quantized")) {
    L = (layout){CT_FP8, 2, "compressed-tensors FP8", n};
  } else if (in->ct_format) {
    uint64_t per = 32 / in->ct.bits;
    L = (layout){CT_PACKED, in->ct.symmetric ? 2 : 3, "", rows * ((cols + per - 1) / per) * 4};
    snprintf(L.what, sizeof L.what, "%u-bit compressed-tensors", in->ct.bits);
  } else if (in->awq) {
    L = (layout){GPTQ, 3, "AWQ", n / 2};
  } else {
    L = (layout){GPTQ, 4, "", n * in->gptq_bits / 8};
    snprintf(L.what, sizeof L.what, "%u-bit GPTQ", in->gptq_bits);
  }
  return L;
}

/* Where the rest of the model's quantized matrices live: MLP or attention. */
static void note_class(fdl_model_info *in, const char *name) {
  if (strstr(name, ".mlp."))
    in->quant_mlp = true;
  else
    in->quant_attn = true;
}

fdl_status fdl_eng_quant_mat(fdl_model *m, const char *weight_name, size_t rows, size_t cols,
                             eng_mat *mat, const char **parts, fdl_err *err) {
  size_t n = strlen(weight_name);
  if (n < 7 || strcmp(weight_name + n - 7, ".weight"))
    return fdl_fail(err, FDL_INVALID, "%s: not a weight name", weight_name);
  const layout L = layout_of(&m->info, rows, cols);
  const fdl_tensor *t[FDL_ENG_QUANT_PARTS] = {NULL};
  for (size_t i = 0; i < FDL_ENG_QUANT_PARTS; i++) {
    parts[i] = NULL;
    if (!L.suffix[i]) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s.%s", (int)(n - 7), weight_name, L.suffix[i]);
    t[i] = fdl_eng_find(m, name);
    if (!t[i] && i < L.required)
      return fdl_fail(err, FDL_PARSE,
                      "missing tensor %s: %s is stored quantized, so the %s checkpoint must hold "
                      "its %s",
                      name, weight_name, L.what, L.suffix[i]);
  }
  /* the parts that exist are bound (named as read), so none counts as unexpected */
  for (size_t i = 0, k = 0; i < FDL_ENG_QUANT_PARTS; i++)
    if (t[i]) parts[k++] = t[i]->name;
  size_t fl;
  if (!fdl_size_mul(rows, cols ? cols : 1, &fl) || !fdl_size_mul(fl, sizeof(float), &fl))
    return fdl_fail(err, FDL_TOO_LARGE, "%s: [%zu, %zu] does not fit in memory", weight_name, rows,
                    cols);
  /* The reconstruction is allocated from the config's dimensions: bound it by the bytes stored
   * first, so a small file cannot ask for a huge buffer. The decode then checks every part's
   * exact shape. */
  if ((uint64_t)t[0]->nbytes != L.bytes)
    return fdl_fail(err, FDL_PARSE,
                    "tensor %s: %llu bytes, but the config's [%zu, %zu] matrix as %s takes %llu",
                    t[0]->name, (unsigned long long)t[0]->nbytes, rows, cols, L.what,
                    (unsigned long long)L.bytes);
  float *data = fdl_malloc(rows * cols * sizeof *data);
  fdl_tensor *w = data ? fdl_eng_own(m, data) : NULL;
  if (!w)
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory for its float32 reconstruction",
                    weight_name);
  const fdl_model_info *in = &m->info;
  const fdl_gptq_format fmt = {in->gptq_group, in->gptq_bits, in->gptq_v2};
  const fdl_ct_parts ctp = {t[0], t[1], t[2], t[3], t[4]};
  fdl_status s;
  if (L.suffix == CT_FP8)
    s = fdl_ct_reconstruct_fp8(t[0], t[1], cols, rows, data, err);
  else if (L.suffix == CT_PACKED)
    s = fdl_ct_reconstruct_packed(&ctp, cols, rows, &in->ct, data, err);
  else if (in->awq)
    s = fdl_awq_reconstruct(t[0], t[1], t[2], cols, rows, fmt.group, data, err);
  else
    s = fdl_gptq_reconstruct(t[0], t[1], t[2], t[3], cols, rows, &fmt, data, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "%s", weight_name);
    return s;
  }
  /* A finite scale can still make an infinite product; the engine multiplies finite weights
   * only. */
  uint64_t bad = fdl_tensor_first_nonfinite(w->data, FDL_DTYPE_F32, rows * cols, NULL);
  if (bad != UINT64_MAX)
    return fdl_fail(err, FDL_NONFINITE, "%s: reconstructed element %llu is not finite", weight_name,
                    (unsigned long long)bad);
  note_class(&m->info, weight_name);
  w->name = parts[0];
  w->dtype = FDL_DTYPE_F32;
  w->ndim = 2;
  w->shape[0] = (int64_t)rows;
  w->shape[1] = (int64_t)cols;
  w->nbytes = rows * cols * sizeof *data;
  mat->t = w;
  mat->type = FDL_GEMM_F32;
  return FDL_OK;
}
