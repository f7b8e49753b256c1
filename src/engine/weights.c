/* weights.c - opens a model's safetensors (one file, or shards named by an index) and binds every
 * tensor the architecture needs, checked against the config: present, one dtype for all, the
 * exact shape, finite, aligned for the GEMM. A tensor nobody asked for is refused too, since an
 * unknown tensor means a model the engine would silently compute differently.
 *
 * Every byte of a shard is read once from the file, into the resident copy the engine computes
 * on; the file digest and the finiteness check then run over that copy as two tasks, side by
 * side (a checkpoint's identity is computed on the bytes that are computed on). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "base/sys.h"
#include "engine/internal.h"
#include "fidelis/ggml_quant.h"
#include "gguf/qdot.h"
#include "base/quote.h"
#include "fidelis/digest.h"
#include "base/fs.h"
#include "fidelis/hub.h"
#include "json/json.h"

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"
/* The finiteness scan's unit: the bound tensors' elements whose first byte lies in a block. */
#define SCAN_BLOCK ((uint64_t)1 << 20)

/* Appends name to the model's files; dg NULL leaves the digest to the shard pass. */
static fdl_status add_file(fdl_model *m, const char *name, uint64_t bytes, const fdl_sha256 *dg,
                           fdl_err *err) {
  struct eng_file *f = fdl_realloc(m->files, (m->nfiles + 1) * sizeof *f);
  if (!f) return fdl_fail(err, FDL_NOMEM, "out of memory");
  m->files = f;
  f += m->nfiles;
  memset(f, 0, sizeof *f);
  if (!(f->name = fdl_strdup(name))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  m->nfiles++;
  f->bytes = bytes;
  if (dg) fdl_sha256_hex(dg, f->hex);
  return FDL_OK;
}

/* 1 when dir/name is a model file by the one rule (fdl_model_member; *path, if asked, is what
 * to open), 0 when it is absent, -1 after a refusal in *s. */
static int probe(const char *dir, const char *name, char **path, fdl_err *err, fdl_status *s) {
  char *p = NULL;
  if ((*s = fdl_model_member(dir, name, &p, err))) return -1;
  if (path)
    *path = p;
  else
    free(p);
  return p ? 1 : 0;
}

static fdl_status open_shard(fdl_model *m, const char *dir, const char *name, fdl_err *err) {
  fdl_status s = FDL_OK;
  char *p = NULL;
  int r = probe(dir, name, &p, err, &s);
  if (r < 0) return s;
  if (r == 0)
    return fdl_fail(err, FDL_REFUSED, "%s/%s: missing shard (named by %s)", dir, name,
                    m->nshards || strcmp(name, SINGLE_NAME) ? INDEX_NAME : "the model directory");
  /* Read, not mapped: decode streams every weight once per token from every worker, and on
   * 4 KiB file pages two workers read slower than one (docs/PERFORMANCE.md). */
  /* A cache blob named by its sha256 is checked by the pass that digests the shard; one named
   * by a git blob id (a small file the Hub keeps out of LFS) by a pass of its own. */
  char blob[65] = "";
  if (fdl_hub_blob_kind(p, blob) == 40) {
    blob[0] = '\0';
    s = fdl_hub_blob_check_file(p, err);
  }
  if (!s) s = fdl_safetensors_open_resident(p, &m->pool, &m->shards[m->nshards], err);
  free(p);
  if (s) return fdl_err_prefix(err, "model shard %s", name);
  m->nshards++;
  s = add_file(m, name, fdl_safetensors_file_size(m->shards[m->nshards - 1]), NULL, err);
  if (!s) memcpy(m->files[m->nfiles - 1].blob, blob, sizeof blob);
  return s;
}

static bool plain_name(const char *f) {
  if (!*f || strcmp(f, ".") == 0 || strcmp(f, "..") == 0) return false;
  return !strchr(f, '/') && !strchr(f, '\\');
}

fdl_status fdl_eng_json_file(fdl_model *m, const char *path, const char *name, json_t **out,
                             fdl_err *err) {
  char *data = NULL;
  size_t len = 0;
  fdl_sha256 dg;
  fdl_status s = fdl_read_file(path, FDL_JSON_MAX_FILE_BYTES, &data, &len, err);
  if (!s && (s = fdl_json_parse(data, len, NULL, out, err))) fdl_err_prefix(err, "%s", path);
  if (!s) s = fdl_hub_blob_check_buf(path, data, len, err);
  if (!s) s = fdl_sha256_buf(data, len, &dg, err);
  if (!s) s = add_file(m, name, len, &dg, err);
  free(data);
  return s;
}

static fdl_status load_index(fdl_model *m, const char *dir, json_t **idx, fdl_err *err) {
  char *p = NULL;
  fdl_status s = fdl_model_member(dir, INDEX_NAME, &p, err);
  if (s) return s;
  if (!p) return fdl_fail(err, FDL_REFUSED, "%s/%s: missing", dir, INDEX_NAME);
  s = fdl_eng_json_file(m, p, INDEX_NAME, idx, err);
  free(p);
  return s;
}

static fdl_status open_index(fdl_model *m, const char *dir, fdl_err *err) {
  json_t *idx = NULL;
  fdl_status s = load_index(m, dir, &idx, err);
  if (s) {
    json_decref(idx);
    return s;
  }
  const json_t *wm = json_object_get(idx, "weight_map");
  const char **names = NULL;
  size_t nn = 0;
  if (!json_is_object(wm) || json_object_size(wm) == 0) {
    s = fdl_fail(err, FDL_PARSE, "%s: weight_map must be a non-empty object", INDEX_NAME);
    goto out;
  }
  names = fdl_calloc(json_object_size(wm), sizeof *names);
  if (!names) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
    goto out;
  }
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)wm, key, v) {
    if (!json_is_string(v) || !plain_name(json_string_value(v))) {
      s = fdl_fail(err, FDL_PATH,
                   "%s: weight_map[%s] must name a file directly inside the model directory "
                   "(no absolute path, no '..', no subdirectory)",
                   INDEX_NAME, key);
      goto out;
    }
    names[nn++] = json_string_value(v);
  }
  /* Sorted, so shards open (and errors arise) in the same order whatever the hash order. */
  qsort(names, nn, sizeof *names, fdl_order_cstr);
  size_t u = 0;
  for (size_t i = 0; i < nn; i++)
    if (!u || strcmp(names[u - 1], names[i])) names[u++] = names[i];
  if (!(m->shards = fdl_calloc(u, sizeof *m->shards))) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
    goto out;
  }
  for (size_t i = 0; i < u && !s; i++) s = open_shard(m, dir, names[i], err);
  /* Every tensor where the index says, and nowhere else. */
  for (size_t i = 0; i < m->nshards && !s; i++) {
    const fdl_safetensors *st = m->shards[i];
    for (size_t t = 0; t < fdl_safetensors_count(st) && !s; t++) {
      const char *tn = fdl_safetensors_at(st, t)->name;
      for (size_t j = 0; j < i && !s; j++)
        if (fdl_safetensors_find(m->shards[j], tn))
          s = fdl_fail(err, FDL_PARSE, "tensor %s is in two shards (%s and %s)", tn, names[j],
                       names[i]);
      const json_t *w = json_object_get(wm, tn);
      if (!s && !w)
        s = fdl_fail(err, FDL_PARSE, "tensor %s in shard %s is not listed in %s", tn, names[i],
                     INDEX_NAME);
      else if (!s && strcmp(json_string_value(w), names[i]))
        s = fdl_fail(err, FDL_PARSE, "tensor %s is in shard %s but %s places it in %s", tn,
                     names[i], INDEX_NAME, json_string_value(w));
    }
  }
  json_object_foreach((json_t *)wm, key, v) {
    if (s) break;
    size_t i = 0;
    while (i < m->nshards && strcmp(names[i], json_string_value(v))) i++;
    if (i < m->nshards && !fdl_safetensors_find(m->shards[i], key))
      s = fdl_fail(err, FDL_PARSE, "%s lists tensor %s in shard %s, which does not hold it",
                   INDEX_NAME, key, names[i]);
  }
out:
  free(names);
  json_decref(idx);
  return s;
}

const fdl_tensor *fdl_eng_find(const fdl_model *m, const char *name) {
  for (size_t i = 0; i < m->nshards; i++) {
    const fdl_tensor *t = fdl_safetensors_find(m->shards[i], name);
    if (t) return t;
  }
  for (size_t i = 0; i < m->ngt; i++)
    if (!strcmp(m->gt[i].name, name)) return &m->gt[i];
  return NULL;
}

/* Records a tensor the model uses (the others are refused as unexpected). */
static fdl_status fdl_eng_bound(eng_binder *b, const char *name, fdl_err *err) {
  if (!FDL_GROW(b->bound, b->nbound, b->capbound, 64))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  b->bound[b->nbound++] = name;
  return FDL_OK;
}

/* fdl_eng_bind, and with blocks_ok a matrix held in ggml blocks too (only a product reads
 * those: fdl_eng_bind_mat). */
static fdl_status bind_any(eng_binder *b, const char *name, int nd, const size_t *dim,
                           bool any_float, bool blocks_ok, const fdl_tensor **out, fdl_err *err) {
  fdl_model *m = b->m;
  const fdl_tensor *t = fdl_eng_find(m, name);
  if (!t) return fdl_fail(err, FDL_PARSE, "missing tensor %s (the config implies it)", name);
  bool float_ok = fdl_tensor_widenable(t->dtype);
  uint32_t gt;
  size_t rb;
  bool blocks = fdl_eng_gguf_blocks(m, t, &gt, &rb);
  if (blocks && !blocks_ok)
    return fdl_fail(err, FDL_UNSUPPORTED, "tensor %s: a quantized GGUF tensor, expected a float",
                    name);
  if (!blocks && (any_float ? !float_ok : t->dtype != m->info.weight_dtype))
    return fdl_fail(err, FDL_PARSE, "tensor %s: dtype mismatch: %s, expected %s", name,
                    fdl_dtype_name(t->dtype),
                    any_float ? "BF16, F16 or F32" : fdl_dtype_name(m->info.weight_dtype));
  bool same = t->ndim == nd;
  for (int i = 0; same && i < nd; i++) same = (uint64_t)t->shape[i] == dim[i];
  if (!same) {
    char got[96] = "", want[96] = "";
    size_t o = 0, w = 0;
    for (int i = 0; i < t->ndim && o < sizeof got - 24; i++)
      o += (size_t)snprintf(got + o, sizeof got - o, "%s%lld", i ? ", " : "",
                            (long long)t->shape[i]);
    for (int i = 0; i < nd && w < sizeof want - 24; i++)
      w += (size_t)snprintf(want + w, sizeof want - w, "%s%zu", i ? ", " : "", dim[i]);
    return fdl_fail(err, FDL_PARSE, "tensor %s: shape mismatch: [%s], the config implies [%s]",
                    name, got, want);
  }
  if ((uintptr_t)t->data % fdl_dtype_size(t->dtype))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s: data at file offset %llu is not aligned to its %zu-byte elements",
                    name, (unsigned long long)t->offset, fdl_dtype_size(t->dtype));
  /* Finiteness waits for the shard pass (scan_shard), which reads these bytes anyway. */
  if (!FDL_GROW(m->checked, m->nchecked, m->capchecked, 64))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  m->checked[m->nchecked++] = t;
  *out = t;
  return fdl_eng_bound(b, t->name, err);
}

fdl_status fdl_eng_bind(eng_binder *b, const char *name, int nd, const size_t *dim, bool any_float,
                        const fdl_tensor **out, fdl_err *err) {
  return bind_any(b, name, nd, dim, any_float, false, out, err);
}

fdl_status fdl_eng_bind_mat(eng_binder *b, const char *name, size_t rows, size_t cols, eng_mat *mat,
                            fdl_err *err) {
  /* stored quantized: no float .weight (its parts instead), or an FP8 one */
  const fdl_tensor *dense = fdl_eng_find(b->m, name);
  if (fdl_eng_quantized(&b->m->info) &&
      (!dense || (b->m->info.ct_format && dense->dtype == FDL_DTYPE_F8_E4M3))) {
    const char *parts[FDL_ENG_QUANT_PARTS];
    fdl_status s = fdl_eng_quant_mat(b->m, name, rows, cols, mat, parts, err);
    for (size_t i = 0; s == FDL_OK && i < FDL_ENG_QUANT_PARTS && parts[i]; i++)
      s = fdl_eng_bound(b, parts[i], err);
    return s;
  }
  size_t dim[2] = {rows, cols};
  fdl_status s = bind_any(b, name, 2, dim, false, true, &mat->t, err);
  if (s) return s;
  mat->type = fdl_gemm_type_of(mat->t->dtype);
  mat->row_bytes = 0;
  if (!fdl_eng_gguf_blocks(b->m, mat->t, &mat->ggml_type, &mat->row_bytes)) return FDL_OK;
  mat->block_elems = fdl_ggml_type(mat->ggml_type)->block_elems;
  mat->rows_from = fdl_eng_gguf_rows_from(b->m, mat->t);
  s = fdl_ggml_decoder(mat->ggml_type, b->m->isa, &mat->decode, err);
  mat->qdot = s ? NULL : fdl_ggml_qdot(mat->decode);
  return s;
}

fdl_status fdl_eng_bind_vec(eng_binder *b, const char *name, size_t n, float **out, fdl_err *err) {
  const fdl_tensor *t;
  /* GGUF keeps norms in F32 beside F16/BF16 matrices; a vector is widened either way */
  fdl_status s = fdl_eng_bind(b, name, 1, &n, b->m->gguf != NULL, &t, err);
  if (s) return s;
  if (!(*out = fdl_malloc(n * sizeof **out))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_tensor_widen_f32(t, 0, n, *out);
  return FDL_OK;
}

fdl_status fdl_eng_bind_mlp(eng_binder *b, size_t i, const char *pre, fdl_err *err) {
  const fdl_model_info *in = &b->m->info;
  eng_layer *l = &b->m->layer[i];
  if (in->moe && in->moe[i]) return fdl_eng_bind_moe(b, l, pre, err);
  size_t h = in->hidden, I = in->intermediate;
  char n[192];
#define NAME(suffix) (snprintf(n, sizeof n, "%smlp.%s", pre, suffix), n)
  fdl_status s;
  if ((s = fdl_eng_bind_mat(b, NAME("gate_proj.weight"), I, h, &l->gate, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("up_proj.weight"), I, h, &l->up, err)))
    return s;
  return fdl_eng_bind_mat(b, NAME("down_proj.weight"), h, I, &l->down, err);
#undef NAME
}

static fdl_status bind_layer(eng_binder *b, size_t i, fdl_err *err) {
  const fdl_model_info *in = &b->m->info;
  eng_layer *l = &b->m->layer[i];
  size_t qd = in->heads * in->head_dim, kd = in->kv_heads * in->head_dim, h = in->hidden;
  char n[160];
  fdl_status s = FDL_OK;
#define NAME(suffix) (snprintf(n, sizeof n, "model.layers.%zu.%s", i, suffix), n)
  if ((s = fdl_eng_bind_vec(b, NAME("input_layernorm.weight"), h, &l->in_norm, err)) ||
      (s = fdl_eng_bind_vec(b, NAME("post_attention_layernorm.weight"), h, &l->post_norm, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("self_attn.q_proj.weight"), qd, h, &l->q, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("self_attn.k_proj.weight"), kd, h, &l->k, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("self_attn.v_proj.weight"), kd, h, &l->v, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("self_attn.o_proj.weight"), h, qd, &l->o, err)))
    return s;
  char pre[48];
  snprintf(pre, sizeof pre, "model.layers.%zu.", i);
  if ((s = fdl_eng_bind_mlp(b, i, pre, err))) return s;
  if (in->attn_bias &&
      ((s = fdl_eng_bind_vec(b, NAME("self_attn.q_proj.bias"), qd, &l->q_bias, err)) ||
       (s = fdl_eng_bind_vec(b, NAME("self_attn.k_proj.bias"), kd, &l->k_bias, err)) ||
       (s = fdl_eng_bind_vec(b, NAME("self_attn.v_proj.bias"), kd, &l->v_bias, err))))
    return s;
  if (in->o_bias && (s = fdl_eng_bind_vec(b, NAME("self_attn.o_proj.bias"), h, &l->o_bias, err)))
    return s;
  if (in->qk_norm &&
      ((s = fdl_eng_bind_vec(b, NAME("self_attn.q_norm.weight"), in->head_dim, &l->q_norm, err)) ||
       (s = fdl_eng_bind_vec(b, NAME("self_attn.k_norm.weight"), in->head_dim, &l->k_norm, err))))
    return s;
#undef NAME
  return FDL_OK;
}

static bool parse_dtype_word(const char *w, fdl_dtype *d) {
  if (strcmp(w, "bfloat16") == 0)
    *d = FDL_DTYPE_BF16;
  else if (strcmp(w, "float16") == 0)
    *d = FDL_DTYPE_F16;
  else if (strcmp(w, "float32") == 0)
    *d = FDL_DTYPE_F32;
  else
    return false;
  return true;
}

static bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Tensors a checkpoint may carry that the text model does not use: RoPE's inverse frequencies
 * (older Llama checkpoints; the engine computes its own), and on Qwen3.5 the vision tower and the
 * multi-token-prediction head (transformers skips those too). */
static bool ignorable(const fdl_model_info *in, const char *name) {
  const char *s = strstr(name, "rotary_emb.inv_freq");
  if (s && s[strlen("rotary_emb.inv_freq")] == 0) return true;
  if (!in->linear) return false;
  return starts_with(name, "mtp.") ||
         (!strcmp(in->prefix, "model.language_model.") && starts_with(name, "model.visual."));
}

/* llama.cpp's converter stores llama3 RoPE scaling as a tensor, rope_freqs.weight: a divisor
 * per frequency, computed from the formula in float32 (docs/ROPE.md). Positive and finite, or
 * refused; beside another scaling type, refused. */
static fdl_status gguf_rope_factors(eng_binder *b, fdl_err *err) {
  fdl_model *m = b->m;
  fdl_rope_scaling *r = &m->info.rope;
  const size_t half = m->info.rotary_dim / 2;
  if (!fdl_eng_find(m, "rope_freqs.weight")) return FDL_OK;
  if (strcmp(r->type, "default"))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: rope_freqs.weight beside rope.scaling.type %s: two RoPE scalings",
                    m->gguf->path, r->type);
  fdl_status s = fdl_eng_bind_vec(b, "rope_freqs.weight", half, &m->rope_factors, err);
  for (size_t i = 0; !s && i < half; i++)
    if (!(m->rope_factors[i] > 0.0f && m->rope_factors[i] < INFINITY))
      s = fdl_fail(err, FDL_PARSE,
                   "%s: rope_freqs.weight[%zu] is %g, expected a positive finite divisor",
                   m->gguf->path, i, (double)m->rope_factors[i]);
  if (s) return s;
  r->type = "llama3";
  r->freq_factors = m->rope_factors;
  return FDL_OK;
}

typedef struct {
  fdl_model *m;
  struct eng_file *files; /* the shards' entries, in shard order */
} scan_job;

/* Elements [e0, e1) of t are those whose first byte lies in the block [lo, hi): an element cut
 * by the block's end is checked with this block, from the mapping, which holds it whole. */
static fdl_status scan_block(const fdl_tensor *t, uint64_t lo, uint64_t hi, fdl_err *err) {
  uint64_t es = fdl_dtype_size(t->dtype), end = t->offset + t->nbytes;
  uint64_t e0 = lo <= t->offset ? 0 : (lo - t->offset + es - 1) / es;
  uint64_t e1 = hi >= end ? t->nbytes / es : (hi - t->offset + es - 1) / es;
  if (e0 >= e1) return FDL_OK;
  bool nan = false;
  uint64_t bad = fdl_tensor_first_nonfinite(t->data + e0 * es, t->dtype, e1 - e0, &nan);
  if (bad == UINT64_MAX) return FDL_OK;
  return fdl_fail(err, FDL_NONFINITE, "tensor %s: element %llu is %s (weights must be finite)",
                  t->name, (unsigned long long)(e0 + bad), nan ? "NaN" : "infinite");
}

/* The bound tensors of shard i, checked block by block in file order: the first non-finite
 * element in file order is reported (the pool reports the lowest task's), so the error is the
 * same whatever the thread count. */
static fdl_status scan_shard(const scan_job *job, size_t i, fdl_err *err) {
  const fdl_safetensors *st = job->m->shards[i];
  size_t n = fdl_safetensors_count(st);
  bool *check = fdl_calloc(n ? n : 1, sizeof *check);
  if (!check) return fdl_fail(err, FDL_NOMEM, "out of memory");
  /* The shard's entries are one array: a bound tensor of this shard is found by its address
   * (as integers: the other shards' entries are other objects), in O(bound) for the shard. */
  uintptr_t first = n ? (uintptr_t)fdl_safetensors_at(st, 0) : 0;
  for (size_t j = 0; n && j < job->m->nchecked; j++) {
    uintptr_t at = (uintptr_t)job->m->checked[j];
    if (at >= first && at < first + n * sizeof(fdl_tensor))
      check[(at - first) / sizeof(fdl_tensor)] = true;
  }
  uint64_t size = fdl_safetensors_file_size(st);
  size_t next = 0; /* tensors before next end in blocks already scanned */
  fdl_status s = FDL_OK;
  for (uint64_t lo = 0; !s && lo < size; lo += SCAN_BLOCK) {
    uint64_t hi = size - lo < SCAN_BLOCK ? size : lo + SCAN_BLOCK;
    for (size_t k = next; !s && k < n; k++) {
      const fdl_tensor *t = fdl_safetensors_at(st, k);
      if (t->offset >= hi) break;
      if (check[k] && t->nbytes) s = scan_block(t, lo, hi, err);
    }
    while (next < n &&
           fdl_safetensors_at(st, next)->offset + fdl_safetensors_at(st, next)->nbytes <= hi)
      next++;
  }
  free(check);
  return s;
}

/* Shard i's file digest, over the resident copy the engine computes on; a Hugging Face cache
 * blob is digested even when the digests are not wanted, since its name is checked. */
static fdl_status digest_shard(const scan_job *job, size_t i, fdl_err *err) {
  const fdl_safetensors *st = job->m->shards[i];
  struct eng_file *f = &job->files[i];
  if (job->m->skip_digests && !f->blob[0]) return FDL_OK;
  fdl_status s =
      fdl_sha256_buf_hex(fdl_safetensors_bytes(st), fdl_safetensors_file_size(st), f->hex, err);
  if (!s && f->blob[0] && strcmp(f->hex, f->blob))
    s = fdl_fail(err, FDL_MISMATCH,
                 "model shard %s: the bytes read have sha256 %s, but the Hugging Face cache "
                 "names its blob %s: corrupt (remove the blob and fetch again)",
                 f->name, f->hex, f->blob);
  return s;
}

/* Tasks [0, nshards) scan the shards, [nshards, 2 nshards) digest them: a shard's SHA-256 is one
 * sequential chain, so the scan runs beside it on another worker rather than after it. */
static fdl_status shard_task(void *arg, size_t i, unsigned worker, fdl_err *err) {
  (void)worker;
  const scan_job *job = arg;
  size_t n = job->m->nshards;
  return i < n ? scan_shard(job, i, err) : digest_shard(job, i - n, err);
}

static int cmp_file(const void *a, const void *b) {
  return strcmp(((const struct eng_file *)a)->name, ((const struct eng_file *)b)->name);
}

fdl_status fdl_eng_weights(fdl_model *m, const char *dir, const json_t *cfg, fdl_err *err) {
  fdl_status s = FDL_OK;
  /* transformers' rule for a local directory (modeling_utils): model.safetensors when it is
   * there, the shard index only without it; quantize applies the same (docs/MODELS.md). */
  int one = m->gguf ? 0 : probe(dir, SINGLE_NAME, NULL, err, &s);
  if (one < 0) return s;
  if (m->gguf) {
    if ((s = fdl_eng_gguf_tensors(m, err))) return s;
  } else if (!one) {
    int has_index = probe(dir, INDEX_NAME, NULL, err, &s);
    if (has_index < 0) return s;
    if (!has_index)
      return fdl_fail(err, FDL_REFUSED, "%s: no %s and no %s: missing shard", dir, SINGLE_NAME,
                      INDEX_NAME);
    if ((s = open_index(m, dir, err))) return s;
  } else {
    if (!(m->shards = fdl_calloc(1, sizeof *m->shards)))
      return fdl_fail(err, FDL_NOMEM, "out of memory");
    if ((s = open_shard(m, dir, SINGLE_NAME, err))) return s;
  }

  fdl_model_info *in = &m->info;
  char emb_name[64], norm_name[64];
  snprintf(emb_name, sizeof emb_name, "%sembed_tokens.weight", in->prefix);
  snprintf(norm_name, sizeof norm_name, "%snorm.weight", in->prefix);
  const fdl_tensor *emb = fdl_eng_find(m, emb_name);
  if (!emb) return fdl_fail(err, FDL_PARSE, "missing tensor %s", emb_name);
  uint32_t gt;
  size_t rb;
  /* A file of quantized matrices runs as its float32 reconstruction (gguf_model.c). */
  bool blocks = fdl_eng_gguf_blocks(m, emb, &gt, &rb);
  if (!blocks && !fdl_tensor_widenable(emb->dtype))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s: dtype %s is not supported (expected BF16, F16 or F32)", emb_name,
                    fdl_dtype_name(emb->dtype));
  in->weight_dtype = blocks ? FDL_DTYPE_F32 : emb->dtype;
  const char *keys[] = {"torch_dtype", "dtype"};
  for (int i = 0; i < 2; i++) {
    const json_t *v = fdl_eng_cfg_given(cfg, keys[i]);
    fdl_dtype d;
    if (!v) continue;
    if (!json_is_string(v) || !parse_dtype_word(json_string_value(v), &d)) {
      char q[FDL_QUOTE_CAP];
      return fdl_fail(err, FDL_PARSE,
                      "config.json %s is %s, expected \"bfloat16\", \"float16\" or \"float32\" "
                      "(the dtypes the engine runs)",
                      keys[i],
                      json_is_string(v) ? fdl_quote_str(json_string_value(v), q, sizeof q)
                                        : "not a string");
    }
    if (d != emb->dtype)
      return fdl_fail(err, FDL_PARSE, "dtype mismatch: config.json %s is %s but %s is %s", keys[i],
                      json_string_value(v), emb_name, fdl_dtype_name(emb->dtype));
  }
  /* Every layer has tensors of its own, so the checkpoint bounds the layer count: nothing is
   * allocated for layers the files cannot hold. */
  size_t stored = 0;
  for (size_t i = 0; i < m->nshards; i++) stored += fdl_safetensors_count(m->shards[i]);
  stored += m->ngt;
  if (in->layers > stored)
    return fdl_fail(err, FDL_PARSE,
                    "config.json num_hidden_layers is %zu, but the checkpoint holds %zu tensors in "
                    "all (each layer needs its own)",
                    in->layers, stored);

  eng_binder b = {m, NULL, 0, 0};
  if (!(m->layer = fdl_calloc(in->layers, sizeof *m->layer)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  if ((s = fdl_eng_bind_mat(&b, emb_name, in->vocab, in->hidden, &m->embed, err))) goto out;
  for (size_t i = 0; i < in->layers && !s; i++)
    s = in->linear ? fdl_eng_bind_qwen35_layer(&b, i, err) : bind_layer(&b, i, err);
  if (s || (s = fdl_eng_bind_vec(&b, norm_name, in->hidden, &m->final_norm, err)) ||
      (m->gguf && (s = gguf_rope_factors(&b, err))))
    goto out;
  if (in->zero_centred && !m->gguf_converted) fdl_eng_zero_centred(m->final_norm, in->hidden);
  if (!in->tied) {
    s = fdl_eng_bind_mat(&b, "lm_head.weight", in->vocab, in->hidden, &m->head, err);
  } else {
    m->head = m->embed;
    const fdl_tensor *lm = fdl_eng_find(m, "lm_head.weight");
    /* Some writers store the tied head anyway; only an exact copy is the same model. */
    if (lm && (lm->dtype != emb->dtype || lm->nbytes != emb->nbytes ||
               memcmp(lm->data, emb->data, emb->nbytes)))
      s = fdl_fail(err, FDL_PARSE,
                   "tensor lm_head.weight differs from %s but tie_word_embeddings is true",
                   emb_name);
  }
  if (s) goto out;
  if (fdl_eng_quantized(in) && !m->nowned)
    s = fdl_fail(err, FDL_PARSE,
                 "config.json declares a quantized (GPTQ, AWQ or compressed-tensors) checkpoint "
                 "(quantization_config) but no matrix is stored quantized: a dense model would "
                 "be declared quantized");
  /* Sorted once, so the check below is O(n log n) in the tensors, not quadratic. */
  if (b.nbound > 1) qsort(b.bound, b.nbound, sizeof *b.bound, fdl_order_cstr);
  for (size_t i = 0; i < m->nshards && !s; i++)
    for (size_t t = 0; t < fdl_safetensors_count(m->shards[i]) && !s; t++) {
      const char *tn = fdl_safetensors_at(m->shards[i], t)->name;
      if (in->linear && starts_with(tn, "model.visual.")) in->vision_tower = true;
      bool known = ignorable(in, tn) || (in->tied && strcmp(tn, "lm_head.weight") == 0);
      known =
          known || (b.nbound && bsearch(&tn, b.bound, b.nbound, sizeof *b.bound, fdl_order_cstr));
      if (!known)
        s = fdl_fail(err, FDL_UNSUPPORTED,
                     "unexpected tensor %s (%s with this config.json has no such weight)", tn,
                     in->arch);
    }
  for (size_t i = 0; i < m->ngt && !s; i++) {
    const char *tn = m->gt[i].name;
    if (!(in->tied && !strcmp(tn, "lm_head.weight")) && !ignorable(in, tn) &&
        !(b.nbound && bsearch(&tn, b.bound, b.nbound, sizeof *b.bound, fdl_order_cstr)))
      s = fdl_fail(err, FDL_UNSUPPORTED, "%s: unexpected tensor %s (%s has no such weight)",
                   m->gguf->path, m->gguf->tensors[i].name, in->arch);
  }
  if (!s && m->gguf) {
    s = fdl_eng_gguf_scan(m, err);
  } else if (!s) {
    /* open_shard appended the shards' entries last, in shard order. */
    scan_job job = {m, m->files + m->nfiles - m->nshards};
    s = fdl_pool_run(&m->pool, 2 * m->nshards, shard_task, &job, err);
  }
  if (!s) qsort(m->files, m->nfiles, sizeof *m->files, cmp_file);
out:
  free(b.bound);
  return s;
}
