/* gguf_model.c - a model from one GGUF file (docs/GGUF.md): llama.cpp's metadata read as the
 * config.json the engine takes, and its tensors bound under the Hugging Face names.
 *
 * Three things differ from a Hugging Face checkpoint, and each is undone here, once, at load:
 * - names: `blk.N.attn_q.weight` is `model.layers.N.self_attn.q_proj.weight`, and so on (NAMES);
 * - for the `llama` architecture, llama.cpp's converter reorders the rows of attn_q and attn_k
 *   from the rotate-half RoPE layout to the interleaved one: within each head of d rows, GGUF
 *   row 2i + j is Hugging Face row j*d/2 + i (i < d/2, j in {0, 1}); the rows are put back;
 * - a quantized file runs as its exact float32 reconstruction by ggml's reference to_float
 *   (fidelis/ggml_quant.h), as a GPTQ checkpoint does, without ever holding it: a quantized
 *   matrix stays in its blocks, mapped, and each product dequantizes the rows it reaches into
 *   its worker's scratch (engine/mat.c), which gives the bits of a product over the float32
 *   copy. The load dequantizes every block once, to refuse a non-finite value before any
 *   product. A file of F32, F16 or BF16 matrices keeps them as stored; when the matrices mix
 *   float types, or any is quantized, the float ones are held in float32.
 * Vectors (norms, biases) are widened to float32 by the engine whatever their type, as always;
 * a quantized vector is dequantized at load. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/check.h"
#include "base/path.h"
#include "base/sys.h"
#include "engine/internal.h"
#include "fidelis/digest.h"
#include "fidelis/ggml_quant.h"

static const struct {
  const char *gguf, *hf; /* per layer: after "blk.N." / "model.layers.N." */
} NAMES[] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
    /* qwen35 */
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"},
    {"attn_gate.weight", "linear_attn.in_proj_z.weight"},
    {"ssm_beta.weight", "linear_attn.in_proj_b.weight"},
    {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"},
    {"ssm_conv1d.weight", "linear_attn.conv1d.weight"},
    {"ssm_dt.bias", "linear_attn.dt_bias"},
    {"ssm_a", "linear_attn.A_log"}, /* holding -exp(A_log) */
    {"ssm_norm.weight", "linear_attn.norm.weight"},
    {"ssm_out.weight", "linear_attn.out_proj.weight"},
};

static const struct {
  const char *gguf, *hf_arch;
} ARCHS[] = {
    {"llama", "LlamaForCausalLM"},
    {"qwen2", "Qwen2ForCausalLM"},
    {"qwen3", "Qwen3ForCausalLM"},
    {"qwen35", "Qwen3_5ForCausalLM"},
};

bool fdl_eng_is_gguf(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  int fd = fdl_sys_open(path, O_RDONLY | O_CLOEXEC);
  char magic[4] = {0};
  bool yes = fd >= 0 && fdl_sys_read(fd, magic, 4) == 4 && !memcmp(magic, "GGUF", 4);
  if (fd >= 0) close(fd);
  return yes;
}

/* The Hugging Face name of a GGUF tensor into out; false for one the engine has no name for. */
static bool hf_name(const char *g, char *out, size_t cap) {
  if (!strcmp(g, "token_embd.weight")) return snprintf(out, cap, "model.embed_tokens.weight") > 0;
  if (!strcmp(g, "output_norm.weight")) return snprintf(out, cap, "model.norm.weight") > 0;
  if (!strcmp(g, "output.weight")) return snprintf(out, cap, "lm_head.weight") > 0;
  unsigned long n;
  int used = 0;
  if (sscanf(g, "blk.%lu.%n", &n, &used) != 1 || used == 0) return false;
  for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++)
    if (!strcmp(g + used, NAMES[i].gguf))
      return (size_t)snprintf(out, cap, "model.layers.%lu.%s", n, NAMES[i].hf) < cap;
  return false;
}

/* A float32 metadata value as the decimal a converter wrote (the shortest that reads back as
 * the same float32): 1e-6 stored as float32 is 1e-6 again, as config.json has it. */
static double shortest(double v) {
  float f = (float)v;
  for (int p = 1; p <= 9; p++) {
    char b[32];
    snprintf(b, sizeof b, "%.*g", p, (double)f);
    double d = strtod(b, NULL);
    if ((float)d == f) return d;
  }
  return v;
}

static fdl_status meta_int(const fdl_gguf *g, const char *arch, const char *key, bool required,
                           json_t *cfg, const char *as, fdl_err *err) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  const fdl_gguf_kv *kv = fdl_gguf_find(g, k);
  if (!kv) return required ? fdl_fail(err, FDL_PARSE, "%s: no %s", g->path, k) : FDL_OK;
  int64_t v;
  fdl_status s = fdl_gguf_get_int(g, kv, &v, err);
  if (s == FDL_OK && v <= 0) s = fdl_fail(err, FDL_PARSE, "%s: %s = %" PRId64, g->path, k, v);
  if (s == FDL_OK) json_object_set_new(cfg, as, json_integer(v));
  return s;
}

static fdl_status meta_real(const fdl_gguf *g, const char *arch, const char *key, json_t *cfg,
                            const char *as, fdl_err *err) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  const fdl_gguf_kv *kv = fdl_gguf_find(g, k);
  if (!kv) return FDL_OK;
  if (kv->type != FDL_GGUF_F32 && kv->type != FDL_GGUF_F64)
    return fdl_fail(err, FDL_PARSE, "%s: %s is %s, expected a float", g->path, k,
                    fdl_gguf_type_name(kv->type));
  double v = fdl_gguf_num_at(g, &(fdl_gguf_kv){.value = kv->value, .elem = kv->type}, 0);
  json_object_set_new(cfg, as, json_real(kv->type == FDL_GGUF_F32 ? shortest(v) : v));
  return FDL_OK;
}

/* llama.cpp's RoPE scaling keys as the rope_scaling transformers would read (docs/ROPE.md):
 * rope.scaling.type linear or yarn with its factor, yarn's original_context_length and betas.
 * A key whose meaning differs from transformers' (attn_factor other than 1: llama.cpp multiplies
 * yarn's own factor by it; DeepSeek's yarn_log_multiplier; ext_factor) is refused by name, and
 * so is any other type. llama3 scaling arrives as a tensor instead (rope_freqs.weight, bound
 * with the weights). */
static fdl_status rope_scaling(const fdl_gguf *g, const char *arch, json_t *cfg, fdl_err *err) {
  char k[128];
  snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
  const fdl_gguf_kv *rs = fdl_gguf_find(g, k);
  if (!rs) return FDL_OK;
  const char *v;
  size_t vl;
  fdl_status s = fdl_gguf_get_str(g, rs, &v, &vl, err);
  if (s || (vl == 4 && !memcmp(v, "none", 4))) return s;
  bool yarn = vl == 4 && !memcmp(v, "yarn", 4);
  if (!yarn && !(vl == 6 && !memcmp(v, "linear", 6)))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: %s = %.*s: the engine reads linear and yarn RoPE scaling from GGUF",
                    g->path, k, (int)vl, v);
  static const char *const refused[] = {"rope.scaling.yarn_log_multiplier",
                                        "rope.scaling.yarn_ext_factor"};
  for (size_t i = 0; yarn && i < sizeof refused / sizeof *refused; i++) {
    snprintf(k, sizeof k, "%s.%s", arch, refused[i]);
    if (fdl_gguf_find(g, k))
      return fdl_fail(err, FDL_UNSUPPORTED, "%s: %s is set: not read", g->path, k);
  }
  json_t *o = json_pack("{s:s}", "rope_type", yarn ? "yarn" : "linear"), *a = json_object();
  if (!o || !a || json_object_set_new(cfg, "rope_scaling", o)) {
    json_decref(a);
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  if (!(s = meta_real(g, arch, "rope.scaling.factor", o, "factor", err)) && yarn &&
      !(s = meta_int(g, arch, "rope.scaling.original_context_length", false, o,
                     "original_max_position_embeddings", err)) &&
      !(s = meta_real(g, arch, "rope.scaling.yarn_beta_fast", o, "beta_fast", err)) &&
      !(s = meta_real(g, arch, "rope.scaling.yarn_beta_slow", o, "beta_slow", err)))
    s = meta_real(g, arch, "rope.scaling.attn_factor", a, "f", err);
  const json_t *f = json_object_get(a, "f");
  if (!s && f && json_real_value(f) != 1.0)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "%s: %s.rope.scaling.attn_factor is %g: llama.cpp multiplies yarn's attention "
                 "factor by it, which transformers' yarn does not; not read",
                 g->path, arch, json_real_value(f));
  json_decref(a);
  return s;
}

static fdl_status fdl_eng_gguf_config(const fdl_gguf *g, json_t **out, fdl_err *err) {
  *out = NULL;
  const fdl_gguf_kv *ak = fdl_gguf_find(g, "general.architecture");
  const char *a;
  size_t al;
  if (!ak) return fdl_fail(err, FDL_PARSE, "%s: no general.architecture", g->path);
  fdl_status s = fdl_gguf_get_str(g, ak, &a, &al, err);
  if (s) return s;
  char arch[64];
  snprintf(arch, sizeof arch, "%.*s", (int)(al < 63 ? al : 63), a);
  size_t ai = 0;
  while (ai < sizeof ARCHS / sizeof *ARCHS && strcmp(ARCHS[ai].gguf, arch)) ai++;
  if (ai == sizeof ARCHS / sizeof *ARCHS)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: general.architecture %s is not one the engine runs from GGUF (llama, "
                    "qwen2, qwen3, qwen35)",
                    g->path, arch);
  json_t *cfg = json_object();
  if (!cfg) return fdl_fail(err, FDL_NOMEM, "out of memory");
  json_object_set_new(cfg, "architectures", json_pack("[s]", ARCHS[ai].hf_arch));
  bool q35 = !strcmp(arch, "qwen35");
  json_object_set_new(cfg, "model_type", json_string(q35 ? "qwen3_5_text" : arch));
  if (!(s = meta_int(g, arch, "embedding_length", true, cfg, "hidden_size", err)) &&
      !(s = meta_int(g, arch, "feed_forward_length", true, cfg, "intermediate_size", err)) &&
      !(s = meta_int(g, arch, "block_count", true, cfg, "num_hidden_layers", err)) &&
      !(s = meta_int(g, arch, "attention.head_count", true, cfg, "num_attention_heads", err)) &&
      !(s = meta_int(g, arch, "attention.head_count_kv", false, cfg, "num_key_value_heads", err)) &&
      !(s = meta_int(g, arch, "attention.key_length", false, cfg, "head_dim", err)) &&
      !(s = meta_int(g, arch, "context_length", true, cfg, "max_position_embeddings", err)) &&
      !(s = meta_real(g, arch, "attention.layer_norm_rms_epsilon", cfg, "rms_norm_eps", err)))
    s = meta_real(g, arch, "rope.freq_base", cfg, "rope_theta", err);
  if (!s && q35) s = fdl_eng_gguf_qwen35_config(g, cfg, err);
  if (!s) s = rope_scaling(g, arch, cfg, err);
  const fdl_gguf_tensor *emb = s ? NULL : fdl_gguf_tensor_find(g, "token_embd.weight");
  if (!s && (!emb || emb->n_dims != 2))
    s = fdl_fail(err, FDL_PARSE, "%s: no 2-D token_embd.weight", g->path);
  if (!s) {
    json_object_set_new(cfg, "vocab_size", json_integer((json_int_t)emb->ne[1]));
    json_object_set_new(cfg, "tie_word_embeddings",
                        json_boolean(!fdl_gguf_tensor_find(g, "output.weight")));
    /* Qwen2 carries q/k/v biases; the engine learns it from the architecture. */
  }
  if (s) {
    json_decref(cfg);
    return s;
  }
  *out = cfg;
  return FDL_OK;
}

static fdl_dtype dtype_of(uint32_t type) {
  return type == 1 ? FDL_DTYPE_F16 : type == 30 ? FDL_DTYPE_BF16 : FDL_DTYPE_F32;
}

static bool reordered(const eng_reorder *o) {
  return o->head_dim || o->v_r;
}

/* A [rows, cols] array of esize-byte elements back in Hugging Face order (rows, or columns). */
static void put_back(const eng_reorder *o, const uint8_t *src, uint8_t *dst, size_t rows,
                     size_t cols, size_t esize) {
  size_t rb = cols * esize;
  if (!o->cols) {
    for (size_t r = 0; r < rows; r++)
      memcpy(dst + r * rb, src + fdl_eng_reorder_src(o, r) * rb, rb);
    return;
  }
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++)
      memcpy(dst + r * rb + c * esize, src + r * rb + fdl_eng_reorder_src(o, c) * esize, esize);
}

bool fdl_eng_gguf_blocks(const fdl_model *m, const fdl_tensor *t, uint32_t *type,
                         size_t *row_bytes) {
  if (!m->gguf || t < m->gt || t >= m->gt + m->ngt || !m->gguf_row_bytes[t - m->gt]) return false;
  *type = m->gguf->tensors[t - m->gt].type;
  *row_bytes = m->gguf_row_bytes[t - m->gt];
  return true;
}

const eng_reorder *fdl_eng_gguf_rows_from(const fdl_model *m, const fdl_tensor *t) {
  if (!m->gguf || t < m->gt || t >= m->gt + m->ngt || !m->gguf_row_bytes[t - m->gt]) return NULL;
  const eng_reorder *o = &m->gguf_reorder[t - m->gt];
  return reordered(o) ? o : NULL;
}

/* One GGUF tensor as the engine's view: mapped as stored (a quantized matrix as U8 blocks of
 * its logical shape), or an owned float32 / reordered copy whose bytes fill() writes later (on
 * the pool: tensors are independent). */
static fdl_status view(fdl_model *m, const fdl_gguf_tensor *gt, bool widen, fdl_tensor *t,
                       fdl_err *err) {
  const fdl_gguf *g = m->gguf;
  const eng_reorder *o = &m->gguf_reorder[gt - g->tensors];
  uint64_t n = 1;
  t->ndim = (int)gt->n_dims;
  for (uint32_t i = 0; i < gt->n_dims; i++) {
    t->shape[i] = (int64_t)gt->ne[gt->n_dims - 1 - i]; /* ggml's ne reversed: row-major */
    n *= gt->ne[i];
  }
  /* the converter squeezed Qwen3.5's conv1d [C, 1, K] to [C, K] */
  if (m->gguf_converted && gt->n_dims == 2 && strstr(t->name, "conv1d.weight")) {
    t->ndim = 3;
    t->shape[2] = t->shape[1];
    t->shape[1] = 1;
  }
  /* columns cannot be moved inside ggml blocks: such a matrix is held in float32 */
  bool blocks =
      !fdl_ggml_is_float(gt->type) && gt->n_dims == 2 && !o->cols && gt->ne[0] && gt->ne[1];
  bool stored =
      blocks || (fdl_ggml_is_float(gt->type) && !(widen && gt->type != 0 && gt->n_dims == 2));
  t->dtype = blocks ? FDL_DTYPE_U8 : stored ? dtype_of(gt->type) : FDL_DTYPE_F32;
  t->offset = gt->offset;
  if (blocks) {
    m->gguf_row_bytes[gt - g->tensors] = (size_t)(gt->nbytes / gt->ne[1]);
    m->gguf_checked[gt - g->tensors] = true; /* by fill() */
  }
  /* blocks stay mapped in their stored row order: mat.c reads each row where it lies */
  if (blocks || (stored && !reordered(o))) {
    t->data = fdl_gguf_tensor_data(g, gt);
    t->nbytes = gt->nbytes;
    return FDL_OK;
  }
  size_t es = fdl_dtype_size(t->dtype);
  size_t bytes;
  if (!fdl_size_mul(n, es, &bytes))
    return fdl_fail(err, FDL_TOO_LARGE, "tensor %s: too large", gt->name);
  uint8_t *buf = fdl_malloc(bytes);
  if (!buf || !fdl_eng_own(m, buf))
    return fdl_fail(err, FDL_NOMEM, "tensor %s: out of memory for its float32 copy", gt->name);
  t->data = buf;
  t->nbytes = n * es;
  if (!stored) m->gguf_checked[gt - g->tensors] = true;
  return FDL_OK;
}

/* Every block of a matrix held in ggml blocks checked finite, from its scales alone (the
 * values are decoded as products reach them). */
static fdl_status check_blocks(const fdl_model *m, size_t i, fdl_err *err) {
  const fdl_gguf_tensor *gt = &m->gguf->tensors[i];
  fdl_status s = fdl_ggml_check_finite(gt->type, m->gt[i].data, gt->ne[0] * gt->ne[1], err);
  return s ? fdl_err_prefix(err, "%s: tensor %s", m->gguf->path, gt->name) : FDL_OK;
}

/* Task 0: the file's digest, one pass over its bytes, beside the others (the longest task
 * first). Task i + 1: tensor i's owned bytes, dequantized and/or put back in Hugging Face row
 * order, or its blocks checked. */
static fdl_status fill(void *arg, size_t task, unsigned worker, fdl_err *err) {
  (void)worker;
  fdl_model *m = arg;
  if (task == 0) {
    if (m->skip_digests) return FDL_OK;
    return fdl_sha256_buf_hex(m->gguf->map.data, m->gguf->map.size, m->files[0].hex, err);
  }
  size_t i = task - 1;
  const fdl_gguf_tensor *gt = &m->gguf->tensors[i];
  fdl_tensor *t = &m->gt[i];
  const eng_reorder *o = &m->gguf_reorder[i];
  bool d = reordered(o);
  const uint8_t *src = fdl_gguf_tensor_data(m->gguf, gt);
  uint8_t *dst = (uint8_t *)t->data, *tmp = NULL;
  if (m->gguf_row_bytes[i]) return check_blocks(m, i, err);
  if (!d && !m->gguf_checked[i]) return FDL_OK; /* mapped as stored */
  uint64_t n = t->nbytes / fdl_dtype_size(t->dtype);
  fdl_status s = FDL_OK;
  if (m->gguf_checked[i]) {
    if (d && !(tmp = fdl_malloc((size_t)t->nbytes)))
      return fdl_fail(err, FDL_NOMEM, "tensor %s: out of memory", gt->name);
    s = fdl_ggml_dequant(gt->type, src, n, (float *)(d ? tmp : dst), err);
    if (s) fdl_err_prefix(err, "%s: tensor %s", m->gguf->path, gt->name);
    src = tmp;
  }
  size_t cols = gt->n_dims >= 2 ? (size_t)gt->ne[0] : 1; /* a vector's elements are its rows */
  if (!s && d) put_back(o, src, dst, (size_t)n / cols, cols, fdl_dtype_size(t->dtype));
  free(tmp);
  return s;
}

/* The type name counted most among the matrices (ties to the lower type id), for the codec. */
static void dominant(const fdl_gguf *g, char *out, size_t cap) {
  size_t count[64] = {0}, best = 0;
  for (uint64_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].n_dims == 2 && g->tensors[i].type < 64) count[g->tensors[i].type]++;
  for (size_t t = 1; t < 64; t++)
    if (count[t] > count[best]) best = t;
  const fdl_ggml_type_info *ti = fdl_ggml_type((uint32_t)best);
  snprintf(out, cap, "%s", ti ? ti->name : "unknown");
}

fdl_status fdl_eng_gguf_tensors(fdl_model *m, fdl_err *err) {
  const fdl_gguf *g = m->gguf;
  bool widen = false; /* any matrix quantized, or the matrices of mixed float types */
  uint32_t first = UINT32_MAX;
  for (uint64_t i = 0; i < g->n_tensors; i++) {
    const fdl_gguf_tensor *gt = &g->tensors[i];
    if (gt->n_dims != 2) continue;
    if (first == UINT32_MAX) first = gt->type;
    if (!fdl_ggml_is_float(gt->type) || gt->type != first) widen = true;
  }
  const fdl_model_info *in = &m->info;
  bool llama = !strcmp(in->arch, "LlamaForCausalLM");
  if (!(m->gt = fdl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *m->gt)) ||
      !(m->gguf_checked = fdl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof(bool))) ||
      !(m->gguf_row_bytes = fdl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof(size_t))) ||
      !(m->gguf_reorder = fdl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *m->gguf_reorder)) ||
      !(m->gt_names = fdl_calloc(g->n_tensors ? g->n_tensors : 1, sizeof *m->gt_names)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = FDL_OK;
  int64_t blocks = 0; /* qwen35: the trunk's, then nextn_predict_layers more */
  const fdl_gguf_kv *bc = m->gguf_converted ? fdl_gguf_find(g, "qwen35.block_count") : NULL;
  if (bc && (s = fdl_gguf_get_int(g, bc, &blocks, err))) return s;
  for (uint64_t i = 0; i < g->n_tensors && !s; i++) {
    const fdl_gguf_tensor *gt = &g->tensors[i];
    char name[256];
    unsigned long blk;
    if (m->gguf_converted && sscanf(gt->name, "blk.%lu.", &blk) == 1 && blk >= in->layers &&
        (int64_t)blk < blocks)
      snprintf(name, sizeof name, "mtp.%s", gt->name); /* the multi-token-prediction blocks */
    else if (!hf_name(gt->name, name, sizeof name))
      snprintf(name, sizeof name, "%s", gt->name);
    /* two GGUF names for one weight (blk.0.attn_q and a literal model.layers.0...q_proj) would
     * leave the engine to pick one */
    for (size_t j = 0; j < i; j++)
      if (!strcmp(m->gt_names[j], name))
        return fdl_fail(err, FDL_PARSE, "%s: tensors %s and %s are both %s", g->path,
                        g->tensors[j].name, gt->name, name);
    if (!(m->gt_names[i] = fdl_strdup(name))) return fdl_fail(err, FDL_NOMEM, "out of memory");
    m->ngt = (size_t)i + 1;
    eng_reorder *o = &m->gguf_reorder[i];
    if (llama && gt->n_dims == 2 &&
        (strstr(name, "q_proj.weight") || strstr(name, "k_proj.weight")))
      o->head_dim = in->head_dim;
    if (o->head_dim && (o->head_dim % 2 || gt->ne[1] % o->head_dim))
      return fdl_fail(err, FDL_PARSE, "%s: tensor %s has %" PRIu64 " rows, not heads of %zu",
                      g->path, gt->name, gt->ne[1], o->head_dim);
    if (m->gguf_converted) fdl_eng_gguf_qwen35_reorder(in, name, o);
    /* the reordered axis must hold its heads exactly */
    uint64_t axis = o->cols || gt->n_dims < 2 ? gt->ne[0] : gt->ne[1];
    if (o->v_r && axis != o->v_first + o->v_nk * o->v_r * o->v_hd)
      return fdl_fail(err, FDL_PARSE, "%s: tensor %s: %" PRIu64 " %s, expected %zu", g->path,
                      gt->name, axis, o->cols ? "columns" : "rows",
                      o->v_first + o->v_nk * o->v_r * o->v_hd);
    m->gt[i].name = m->gt_names[i];
    s = view(m, gt, widen, &m->gt[i], err);
  }
  /* The first failing tensor in file order is reported, whatever the thread count. */
  if (!s) s = fdl_pool_run(&m->pool, (size_t)g->n_tensors + 1, fill, m, err);
  char dom[32];
  dominant(g, dom, sizeof dom);
  snprintf(m->gguf_codec, sizeof m->gguf_codec, "gguf:%s", dom);
  for (uint64_t i = 0; i < g->n_tensors; i++)
    if (g->tensors[i].n_dims == 2 && !fdl_ggml_is_float(g->tensors[i].type))
      m->gguf_quantized = true;
  return s;
}

/* Every bound tensor that fill() did not dequantize (dequantization checks its output as it
 * makes it) checked finite. */
fdl_status fdl_eng_gguf_scan(fdl_model *m, fdl_err *err) {
  const fdl_gguf *g = m->gguf;
  for (size_t i = 0; i < m->nchecked; i++) {
    const fdl_tensor *t = m->checked[i];
    if (t >= m->gt && t < m->gt + m->ngt && m->gguf_checked[t - m->gt]) continue;
    bool nan = false;
    uint64_t bad =
        fdl_tensor_first_nonfinite(t->data, t->dtype, t->nbytes / fdl_dtype_size(t->dtype), &nan);
    if (bad != UINT64_MAX)
      return fdl_fail(err, FDL_NONFINITE,
                      "%s: tensor %s (%s): element %" PRIu64 " is %s (weights must be finite)",
                      g->path, g->tensors[t - m->gt].name, t->name, bad, nan ? "NaN" : "infinite");
  }
  return FDL_OK;
}

fdl_status fdl_eng_gguf_open(fdl_model *m, const char *path, fdl_err *err) {
  if (!(m->gguf = fdl_calloc(1, sizeof *m->gguf))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = fdl_gguf_open(path, m->gguf, err);
  if (s) {
    free(m->gguf);
    m->gguf = NULL;
    return s;
  }
  if ((s = fdl_eng_gguf_config(m->gguf, &m->config, err))) return s;
  m->gguf_converted =
      !strcmp(json_string_value(json_object_get(m->config, "model_type")), "qwen3_5_text");
  if (!(m->files = fdl_calloc(1, sizeof *m->files)) ||
      !(m->files->name = fdl_strdup(fdl_path_base(path))))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  m->nfiles = 1;
  m->files->bytes = m->gguf->map.size;
  return FDL_OK;
}
