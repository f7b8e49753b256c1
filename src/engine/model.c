/* model.c - a model's lifetime: config, weights, RoPE frequencies, and the GEMM contexts and
 * pool a run uses. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/check.h"
#include "base/sys.h"
#include "engine/internal.h"
#include "base/quote.h"
#include "base/fs.h"
#include "fidelis/hub.h"
#include "json/json.h"
#include "engine/config_json.h"

void fdl_model_free(fdl_model *m) {
  if (!m) return;
  if (m->layer)
    for (size_t i = 0; i < m->info.layers; i++) {
      eng_layer *l = &m->layer[i];
      float *v[] = {l->in_norm, l->post_norm, l->q_norm, l->k_norm,  l->q_bias, l->k_bias,
                    l->v_bias,  l->o_bias,    l->conv,   l->dt_bias, l->gnorm};
      for (size_t j = 0; j < sizeof v / sizeof *v; j++) free(v[j]);
      free(l->decay);
      free(l->ex);
      free(l->ex_view);
    }
  free(m->layer);
  free((void *)m->info.linear);
  free((void *)m->info.sliding);
  free((void *)m->info.moe);
  for (size_t i = 0; i < m->nowned; i++) {
    if (m->owned[i]) free((void *)m->owned[i]->data);
    free(m->owned[i]);
  }
  free(m->owned);
  free(m->final_norm);
  free(m->rope_factors);
  for (size_t i = 0; i < m->nshards; i++) fdl_safetensors_close(m->shards[i]);
  for (size_t i = 0; i < m->ngt; i++) free(m->gt_names[i]);
  free(m->gt_names);
  free(m->gguf_checked);
  free(m->gguf_row_bytes);
  free(m->gguf_reorder);
  free(m->gt);
  if (m->gguf) fdl_gguf_close(m->gguf);
  free(m->gguf);
  free(m->shards);
  free(m->inv_freq);
  json_decref(m->config);
  for (size_t i = 0; i < m->nfiles; i++) free(m->files[i].name);
  free(m->files);
  free(m->checked);
  if (m->wgemm)
    for (unsigned i = 0; i < m->pool.threads; i++) fdl_gemm_free(m->wgemm[i]);
  free(m->wgemm);
  if (m->sgemm)
    for (unsigned i = 0; i < m->pool.threads; i++) fdl_gemm_free(m->sgemm[i]);
  free(m->sgemm);
  fdl_pool_free(&m->pool);
  fdl_eng_work_free(&m->w);
  free(m);
}

const fdl_model_info *fdl_model_get_info(const fdl_model *m) {
  return &m->info;
}

fdl_tensor *fdl_eng_own(fdl_model *m, void *data) {
  fdl_tensor **grown = fdl_realloc(m->owned, (m->nowned + 1) * sizeof *grown);
  fdl_tensor *t = grown ? fdl_calloc(1, sizeof *t) : NULL;
  if (grown) m->owned = grown;
  if (!t) {
    free(data);
    return NULL;
  }
  t->data = data;
  return m->owned[m->nowned++] = t;
}

fdl_status fdl_model_head(const fdl_model *m, fdl_tensor *out, void **owned, fdl_err *err) {
  *out = *m->head.t;
  *owned = NULL;
  if (!m->head.row_bytes) return FDL_OK;
  size_t rows = (size_t)out->shape[0], k = (size_t)out->shape[1];
  size_t n, bytes;
  float *f = rows && fdl_size_mul(rows, k, &n) && fdl_size_mul(n, sizeof *f, &bytes)
                 ? fdl_malloc(bytes)
                 : NULL;
  if (!f) return fdl_fail(err, FDL_NOMEM, "out of memory for the float32 head %s", out->name);
  fdl_eng_mat_rows(&m->head, 0, rows, f);
  out->dtype = FDL_DTYPE_F32;
  out->data = (const uint8_t *)f;
  out->nbytes = bytes;
  *owned = f;
  return FDL_OK;
}

size_t fdl_model_file_count(const fdl_model *m) {
  return m->nfiles;
}

bool fdl_model_is_gguf(const fdl_model *m, const char **codec, bool *quantized) {
  if (!m->gguf) return false;
  if (codec) *codec = m->gguf_codec;
  if (quantized) *quantized = m->gguf_quantized;
  return true;
}

bool fdl_model_gguf_tensor(const fdl_model *m, size_t i, const char **name, uint32_t *ggml_type,
                           uint64_t *n_elems) {
  if (!m->gguf || i >= m->ngt) return false;
  *name = m->gt[i].name;
  *ggml_type = m->gguf->tensors[i].type;
  *n_elems = fdl_tensor_numel(&m->gt[i]);
  return true;
}

bool fdl_model_file_digest(const fdl_model *m, size_t i, const char **name, uint64_t *bytes,
                           char hex[65]) {
  if (i >= m->nfiles) return false;
  *name = m->files[i].name;
  *bytes = m->files[i].bytes;
  memcpy(hex, m->files[i].hex, sizeof m->files[i].hex);
  return true;
}

const json_t *fdl_model_config(const fdl_model *m) {
  return m->config;
}

/* Under AUTO on an AVX-512 machine, AVX2 contexts for few-row products (decode, attention):
 * the contract makes every kernel's bits equal, so this is a speed choice only. A forced --isa
 * is honoured as asked. */
static fdl_status small_contexts(fdl_model *m, fdl_num_isa isa, fdl_err *err) {
  if (isa != FDL_NUM_ISA_AUTO || strcmp(fdl_gemm_isa_name(m->wgemm[0]), "avx512") != 0)
    return FDL_OK;
  if (!(m->sgemm = fdl_calloc(m->pool.threads, sizeof *m->sgemm)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (unsigned i = 0; i < m->pool.threads; i++) {
    if (fdl_gemm_new(FDL_NUM_ISA_AVX2, 1, &m->sgemm[i], NULL) != FDL_OK) {
      for (unsigned j = 0; j < i; j++) fdl_gemm_free(m->sgemm[j]);
      free(m->sgemm);
      m->sgemm = NULL; /* no AVX2 here: the AVX-512 contexts serve every product */
      return FDL_OK;
    }
  }
  return FDL_OK;
}

fdl_status fdl_model_load(const char *dir, const fdl_model_opts *o, fdl_model **out, fdl_err *err) {
  *out = NULL;
  fdl_model_opts def = {.threads = 0, .isa = FDL_NUM_ISA_AUTO};
  if (!o) o = &def;
  fdl_model *m = fdl_calloc(1, sizeof *m);
  if (!m) return fdl_fail(err, FDL_NOMEM, "out of memory");
  /* A GGUF file: its metadata is the config (gguf_model.c). Otherwise config.json by the one
   * model-file rule (fdl_model_member); a directory without it holds no model: a finding about
   * the input (exit 3), not a failure to read it. */
  bool gguf = fdl_eng_is_gguf(dir);
  struct stat st;
  if (!gguf && stat(dir, &st) == 0 && S_ISREG(st.st_mode)) {
    char q[FDL_QUOTE_CAP];
    free(m);
    return fdl_fail(err, FDL_REFUSED,
                    "%s: a regular file that is not GGUF (expected a Hugging Face model "
                    "directory or a .gguf file)",
                    fdl_quote_str(dir, q, sizeof q));
  }
  char *cp = NULL;
  fdl_status s =
      gguf ? fdl_eng_gguf_open(m, dir, err) : fdl_model_member(dir, "config.json", &cp, err);
  if (!s && gguf) {
    s = fdl_eng_config(m->config, dir, &m->info, err);
  } else if (!s && !cp) {
    char q[FDL_QUOTE_CAP];
    s = fdl_path_exists(dir)
            ? fdl_fail(err, FDL_REFUSED,
                       "%s/config.json: missing: not a Hugging Face model "
                       "directory (expected config.json and safetensors "
                       "weights)",
                       fdl_quote_str(dir, q, sizeof q))
            : fdl_fail(err, FDL_IO, "%s: cannot open the model directory to read its config.json",
                       fdl_quote_str(dir, q, sizeof q));
  }
  if (!s && !gguf) s = fdl_eng_json_file(m, cp, "config.json", &m->config, err);
  if (!s && !gguf) s = fdl_eng_config(m->config, cp, &m->info, err);
  /* The pool first: the weights' one pass (digest and finiteness) spreads shards over it. The
   * GEMM contexts next: a forced isa the CPU lacks is refused before any weight is read. */
  m->isa = o->isa;
  m->skip_digests = o->skip_digests;
  if (!s) s = fdl_pool_init(&m->pool, o->threads, err);
  if (!s && !(m->wgemm = fdl_calloc(m->pool.threads, sizeof *m->wgemm)))
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (unsigned i = 0; !s && i < m->pool.threads; i++)
    s = fdl_gemm_new(o->isa, 1, &m->wgemm[i], err);
  if (!s) s = small_contexts(m, o->isa, err);
  if (!s) s = fdl_eng_weights(m, dir, m->config, err);
  free(cp);
  if (s) goto fail;
  if (!(m->inv_freq = fdl_malloc(m->info.rotary_dim / 2 * sizeof *m->inv_freq))) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
    goto fail;
  }
  *out = m;
  return FDL_OK;
fail:
  fdl_model_free(m);
  return s;
}
