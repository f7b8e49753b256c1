/* gptq_load.c - a GPTQ (2-, 4- or 8-bit, v1 or v2 zero points) or AWQ (GEMM) matrix of a
 * checkpoint, reconstructed for the forward pass.
 *
 * The engine multiplies the reconstruction w = (q - zero) * scale, computed once at load in
 * float32 by fdl_gptq_reconstruct or, for AWQ, fdl_awq_reconstruct (exact: a difference of at most
 * 9 bits times an F16 scale). That
 * is the "affine weight reconstruction" a capture declares in its weights_decode, so compare
 * discloses weights_reconstructed: the measurement covers the weights' quantization, not an int4
 * kernel's arithmetic. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "fidelis/model.h"

/* GPTQ's parts; AWQ has the first three. */
static const char *const SUFFIX[FDL_ENG_GPTQ_PARTS] = {"qweight", "qzeros", "scales", "g_idx"};

fdl_status fdl_eng_gptq_mat(fdl_model *m, const char *weight_name, size_t rows, size_t cols,
                            eng_mat *mat, const char **parts, fdl_err *err) {
  size_t n = strlen(weight_name);
  if (n < 7 || strcmp(weight_name + n - 7, ".weight"))
    return fdl_fail(err, FDL_INVALID, "%s: not a weight name", weight_name);
  const fdl_tensor *t[FDL_ENG_GPTQ_PARTS] = {NULL};
  const size_t nparts = m->info.awq ? 3 : FDL_ENG_GPTQ_PARTS;
  for (size_t i = nparts; i < FDL_ENG_GPTQ_PARTS; i++) parts[i] = NULL;
  for (size_t i = 0; i < nparts; i++) {
    char name[256];
    snprintf(name, sizeof name, "%.*s.%s", (int)(n - 7), weight_name, SUFFIX[i]);
    if (!(t[i] = fdl_eng_find(m, name)))
      return fdl_fail(err, FDL_PARSE,
                      "missing tensor %s: %s is absent, so the %s checkpoint must hold its "
                      "qweight, qzeros, scales%s",
                      name, weight_name, m->info.awq ? "AWQ" : "GPTQ",
                      m->info.awq ? "" : " and g_idx");
    parts[i] = t[i]->name;
  }
  if (rows > SIZE_MAX / sizeof(float) / (cols ? cols : 1))
    return fdl_fail(err, FDL_TOO_LARGE, "%s: [%zu, %zu] does not fit in memory", weight_name, rows,
                    cols);
  /* The reconstruction is allocated from the config's dimensions: bound it by the bytes stored
   * (8 / bits weights per byte) first, so a small file cannot ask for a huge buffer.
   * fdl_gptq_reconstruct then checks every part's exact shape. */
  const fdl_gptq_format fmt = {m->info.gptq_group, m->info.gptq_bits, m->info.gptq_v2};
  if ((uint64_t)t[0]->nbytes != (uint64_t)rows * cols * fmt.bits / 8)
    return fdl_fail(err, FDL_PARSE,
                    "tensor %s: %llu bytes, but the config's [%zu, %zu] %u-bit weights pack into "
                    "%llu",
                    parts[0], (unsigned long long)t[0]->nbytes, rows, cols, fmt.bits,
                    (unsigned long long)rows * cols * fmt.bits / 8);
  fdl_tensor **grown = realloc(m->owned, (m->nowned + 1) * sizeof *grown);
  if (!grown) return fdl_fail(err, FDL_NOMEM, "out of memory");
  m->owned = grown;
  fdl_tensor *w = calloc(1, sizeof *w);
  float *data = malloc(rows * cols * sizeof *data);
  if (!w || !data) {
    free(w);
    free(data);
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory for its float32 reconstruction",
                    weight_name);
  }
  w->data = (const uint8_t *)data;
  m->owned[m->nowned++] = w;
  fdl_status s = m->info.awq
                     ? fdl_awq_reconstruct(t[0], t[1], t[2], cols, rows, fmt.group, data, err)
                     : fdl_gptq_reconstruct(t[0], t[1], t[2], t[3], cols, rows, &fmt, data, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "%s", weight_name);
    return s;
  }
  /* A finite F16 scale can still make an infinite product; the engine multiplies finite
   * weights only. */
  uint64_t bad = fdl_tensor_first_nonfinite(w->data, FDL_DTYPE_F32, rows * cols, NULL);
  if (bad != UINT64_MAX)
    return fdl_fail(err, FDL_NONFINITE, "%s: reconstructed element %llu is not finite", weight_name,
                    (unsigned long long)bad);
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
