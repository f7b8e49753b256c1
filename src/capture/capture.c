/* capture.c - `fidelis capture`: the engine over a panel, packed into a sealed dataset.
 *
 * The engine's outputs are written as pack's inputs (per-record safetensors, the head as
 * stored, a meta JSON) into a staging directory beside --out, packed by fdl_ds_pack (so a
 * capture obeys every rule a packed dump does), and the dataset is renamed into place: it
 * appears whole or not at all.
 *
 * Divisions: the model's identity; the records; the meta; the run. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "fidelis/vocab.h"
#include "base/order.h"
#include "base/sys.h"
#include "fidelis/capture.h"
#include "fidelis/digest.h"
#include "base/fs.h"
#include "fidelis/model.h"
#include "json/json.h"
#include "capture/gguf_meta.h"
#include "fidelis/gguf.h"
#include "fidelis/hub.h"
#include "fidelis/tensor.h"
#include "fidelis/tokenizer.h"
#include "base/path.h"
#include "fidelis/scale.h"
#include "fdl_source_digests.h"
#include "tensor/safetensors_json.h"
#include "dataset/dataset_json.h"

/* The numeric policy recorded in the stack fingerprint: what fixes the bits. */
#define CAPTURE_NUMERIC_POLICY                                                                     \
  "fidelis engine: float32 forward; every matrix product through fdl-gemm-1; RMSNorm, RoPE, "      \
  "softmax and SiLU in a fixed order with fidelis' own exp, sin and cos (docs/NUMERICS.md); "      \
  "the same bits on any x86-64 CPU, thread count or ISA"
/* The device as the dataset names it. The arithmetic does not depend on the CPU, so the CPU's
 * model is not recorded: it would make two captures that are the same bytes on two machines
 * look like two stacks to the comparator. */
#define CAPTURE_DEVICE_NAME "x86-64 CPU (fidelis engine: the same bits on any of them)"

typedef struct {
  const fdl_capture_opts *o;
  fdl_stage st;
  char *inputs; /* staging/.inputs: pack's inputs */
  fdl_model *m;
  const fdl_model_info *info;
  const json_t *quant; /* config.json's quantization_config (borrowed from the model), or NULL */
  char config_hex[FDL_SHA256_HEX_BUF];
  char ckpt_hex[FDL_SHA256_HEX_BUF];
  char panel_hex[FDL_SHA256_HEX_BUF];
  char name[128]; /* the model directory's last component */
  char tokenizer[96];
  const fdl_ds_panel *panel;
  float *bounds; /* with --layers: [records][layers + 2][hidden] */
} capture;

/* ---- the model's identity ---------------------------------------------------------------- */

/* Adds name to names[*n] unless it is there already. */
static fdl_status add_name(char ***names, size_t *n, size_t *cap, const char *name, fdl_err *err) {
  for (size_t i = 0; i < *n; i++)
    if (!strcmp((*names)[i], name)) return FDL_OK;
  if (!FDL_GROW(*names, *n, *cap, 16)) return fdl_fail(err, FDL_NOMEM, "out of memory");
  if (!((*names)[*n] = fdl_strdup(name))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  (*n)++;
  return FDL_OK;
}

/* checkpoint_identity_sha256: SHA-256 of the canonical JSON
 * [{"bytes": N, "path": NAME, "sha256": HEX}, ...] over config.json, the shard index when there
 * is one, and every *.safetensors, sorted by name. Other files (a panel, a README) do not make
 * another checkpoint. The files the model loaded carry the digests of the read that loaded them;
 * only a *.safetensors the model does not load (no index names it) is read here. */
static fdl_status checkpoint_identity(capture *c, fdl_err *err) {
  char **names = NULL;
  size_t n = 0, cap = 0, nm = fdl_model_file_count(c->m);
  fdl_status s = FDL_OK;
  for (size_t i = 0; s == FDL_OK && i < nm; i++) {
    const char *name;
    uint64_t size;
    char hex[FDL_SHA256_HEX_BUF];
    fdl_model_file_digest(c->m, i, &name, &size, hex);
    s = add_name(&names, &n, &cap, name, err);
  }
  /* a GGUF is one file, which the model loaded and digested */
  bool gguf = fdl_model_is_gguf(c->m, NULL, NULL);
  DIR *d = s == FDL_OK && !gguf ? opendir(c->o->model_dir) : NULL;
  if (s == FDL_OK && !gguf && !d)
    s = fdl_fail(err, FDL_IO, "%s: cannot list the model directory", c->o->model_dir);
  struct dirent *e;
  while (s == FDL_OK && d && (e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len > 12 && !strcmp(e->d_name + len - 12, ".safetensors"))
      s = add_name(&names, &n, &cap, e->d_name, err);
  }
  if (d) closedir(d);
  if (s == FDL_OK) qsort(names, n, sizeof *names, fdl_order_cstr);
  json_t *list = json_array();
  for (size_t i = 0; s == FDL_OK && i < n; i++) {
    const char *name = NULL;
    uint64_t size = 0;
    char hex[FDL_SHA256_HEX_BUF];
    size_t j = 0;
    while (j < nm && fdl_model_file_digest(c->m, j, &name, &size, hex) && strcmp(name, names[i]))
      j++;
    if (j == nm) {
      char *path = fdl_path_join(c->o->model_dir, names[i]);
      fdl_sha256 dg;
      s = path ? fdl_sha256_file(path, &dg, &size, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
      free(path);
      if (s != FDL_OK) break;
      fdl_sha256_hex(&dg, hex);
    }
    /* a GGUF's metadata is its config: config_sha256 names the file */
    if (!strcmp(names[i], "config.json") || gguf) memcpy(c->config_hex, hex, sizeof hex);
    if (json_array_append_new(list, json_pack("{s:I, s:s, s:s}", "bytes", (json_int_t)size, "path",
                                              names[i], "sha256", hex)))
      s = fdl_fail(err, FDL_NOMEM, "out of memory for the checkpoint's file list");
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  if (s == FDL_OK) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    s = fdl_json_dump(list, FDL_JSON_ASCII, &b, err);
    if (s == FDL_OK) s = fdl_sha256_buf_hex(b.data, b.len, c->ckpt_hex, err);
    fdl_buf_free(&b);
  }
  json_decref(list);
  return s;
}

static void dir_name(const char *dir, char *out, size_t cap) {
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') n--;
  size_t a = n;
  while (a > 0 && dir[a - 1] != '/') a--;
  size_t len = n - a < cap - 1 ? n - a : cap - 1;
  memcpy(out, dir + a, len);
  out[len] = '\0';
  fdl_path_name_safe(out); /* dataset ids and repositories allow [A-Za-z0-9._-] */
  if (!*out) snprintf(out, cap, "model");
}

/* A GGUF's own vocabulary, when it carries one (tokenizer.ggml.model other than "none"). */
static fdl_status gguf_tokenizer_id(capture *c, fdl_err *err) {
  bool has;
  fdl_status s = fdl_gguf_has_vocab(c->o->model_dir, &has, err);
  if (s != FDL_OK) return s;
  if (!has) {
    snprintf(c->tokenizer, sizeof c->tokenizer, "unknown-tokenizer-vocab-%zu", c->info->vocab);
    return FDL_OK;
  }
  fdl_tok *t = NULL;
  if ((s = fdl_tok_load(c->o->model_dir, &t, err)) != FDL_OK) return s;
  fdl_tok_info ti;
  fdl_tok_get_info(t, &ti);
  snprintf(c->tokenizer, sizeof c->tokenizer, "%s", ti.id);
  fdl_tok_free(t);
  return FDL_OK;
}

/* tokenizer.id: what makes two panels' ids mean the same text (compare's PANEL-D6 gate). The
 * digest of tokenizer.json when the model has one, so a model and its quantized twin (quantize
 * copies the file) agree and two vocabularies do not; otherwise a name that says it is unknown. */
static fdl_status tokenizer_id(capture *c, fdl_err *err) {
  const char *named = c->o->tokenizer_id ? c->o->tokenizer_id : c->panel->tokenizer.id;
  if (named) { /* a panel cut from text names the tokenizer it used */
    snprintf(c->tokenizer, sizeof c->tokenizer, "%s", named);
    return FDL_OK;
  }
  if (fdl_model_is_gguf(c->m, NULL, NULL)) return gguf_tokenizer_id(c, err);
  char *path = NULL;
  fdl_status s = fdl_model_member(c->o->model_dir, "tokenizer.json", &path, err);
  if (s != FDL_OK) return s;
  if (path) {
    fdl_sha256 d;
    char hex[FDL_SHA256_HEX_BUF];
    s = fdl_sha256_file(path, &d, NULL, err);
    if (s == FDL_OK) fdl_sha256_hex(&d, hex);
    if (s == FDL_OK) s = fdl_hub_blob_check_sha256(path, hex, err);
    if (s == FDL_OK) {
      snprintf(c->tokenizer, sizeof c->tokenizer, "tokenizer.json-sha256-%.16s", hex);
    }
  } else {
    snprintf(c->tokenizer, sizeof c->tokenizer, "unknown-tokenizer-vocab-%zu", c->info->vocab);
  }
  free(path);
  return s;
}

/* ---- the records ------------------------------------------------------------------------- */

/* The attended span of a record: a right-padded mask (ones, then zeros) gives its leading
 * ones. Any other shape would need attention masking inside the engine, which it does not do:
 * refused by name rather than run over pads. */
static fdl_status real_length(const fdl_ds_panel_line *l, size_t *n, fdl_err *err) {
  size_t k = 0;
  if (!l->mask) {
    *n = l->ntok;
    return FDL_OK;
  }
  while (k < l->ntok && l->mask[k]) k++;
  for (size_t i = k; i < l->ntok; i++)
    if (l->mask[i])
      return fdl_fail(err, FDL_REFUSED,
                      "panel record %" PRId64 ": its mask is not right padding (token %zu is "
                      "attended after the pad at %zu); capture runs right-padded panels only",
                      l->index, i, k);
  *n = k;
  return FDL_OK;
}

/* One record's rows as stored (BF16, or F32), from the engine: *t names them, in buf or bf. */
static fdl_status compute_record(capture *c, const fdl_ds_panel_line *l, float *bounds, float *buf,
                                 uint16_t *bf, int32_t *ids, fdl_tensor_in *t, int64_t shape[2],
                                 fdl_err *err) {
  size_t n = 0;
  fdl_status s = real_length(l, &n, err);
  if (s != FDL_OK) return s;
  for (size_t i = 0; i < n; i++) {
    if (l->tokens[i] < 0 || (uint64_t)l->tokens[i] >= c->info->vocab)
      return fdl_fail(err, FDL_REFUSED,
                      "panel record %" PRId64 ": token %zu is %" PRId64
                      ", outside the model's vocabulary of %zu",
                      l->index, i, l->tokens[i], c->info->vocab);
    ids[i] = (int32_t)l->tokens[i];
  }
  bool hidden = c->o->form == FDL_CAPTURE_HIDDEN;
  size_t width = hidden ? c->info->hidden : c->info->vocab;
  fdl_engine_out out = {
      .hidden = hidden ? buf : NULL, .logits = hidden ? NULL : buf, .layers = bounds};
  s = fdl_engine_run(c->m, ids, n, c->o->path, &out, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "panel record %" PRId64, l->index);
    return s;
  }
  /* Right padding keeps rows from..n-2 (§7.3: row i predicts token i+1, both attended; the
   * panel's scoring window starts at from). */
  size_t from = (size_t)c->panel->score_from;
  size_t rows = n - 1 > from ? n - 1 - from : 0;
  if ((int64_t)rows != l->scored)
    return fdl_fail(err, FDL_INVALID, "panel record %" PRId64 ": %zu rows but %" PRId64 " scored",
                    l->index, rows, l->scored);
  buf += from * width;
  shape[0] = (int64_t)rows;
  shape[1] = (int64_t)width;
  bool narrow = hidden && !c->o->hidden_f32;
  *t = (fdl_tensor_in){.name = hidden ? "hidden_states" : "logits",
                       .dtype = narrow ? FDL_DTYPE_BF16 : FDL_DTYPE_F32,
                       .ndim = 2,
                       .shape = shape,
                       .data = buf};
  if (narrow) {
    fdl_f32_to_bf16_n(buf, bf, rows * width);
    t->data = bf;
  }
  return FDL_OK;
}

static fdl_status store_record(capture *c, const fdl_ds_panel_line *l, const fdl_tensor_in *t,
                               fdl_err *err) {
  char name[64];
  snprintf(name, sizeof name, "tensors/%04" PRId64 ".safetensors", l->index);
  char *path = fdl_path_join(c->inputs, name);
  fdl_status s = path ? fdl_safetensors_write(path, t, 1, NULL, err)
                      : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  return s;
}

/* Bytes of record l's stored rows: what its owner sends rank 0. */
static size_t record_bytes(const capture *c, const fdl_ds_panel_line *l) {
  bool hidden = c->o->form == FDL_CAPTURE_HIDDEN;
  size_t width = hidden ? c->info->hidden : c->info->vocab;
  size_t elem = hidden && !c->o->hidden_f32 ? sizeof(uint16_t) : sizeof(float);
  return (size_t)(l->scored > 0 ? l->scored : 0) * width * elem;
}

/* Rank 0's copy of record l from rank k: its stored rows into buf (or bf) as compute_record
 * would have left them, and its layer boundaries. */
static fdl_status receive_record(capture *c, const fdl_ds_panel_line *l, int k, float *bounds,
                                 float *buf, uint16_t *bf, fdl_tensor_in *t, int64_t shape[2],
                                 fdl_err *err) {
  bool hidden = c->o->form == FDL_CAPTURE_HIDDEN, narrow = hidden && !c->o->hidden_f32;
  shape[0] = l->scored;
  shape[1] = (int64_t)(hidden ? c->info->hidden : c->info->vocab);
  *t = (fdl_tensor_in){.name = hidden ? "hidden_states" : "logits",
                       .dtype = narrow ? FDL_DTYPE_BF16 : FDL_DTYPE_F32,
                       .ndim = 2,
                       .shape = shape,
                       .data = narrow ? (void *)bf : (void *)buf};
  fdl_status s = fdl_scale_recv(c->o->scale, k, (void *)t->data, record_bytes(c, l), err);
  if (s == FDL_OK && bounds)
    s = fdl_scale_recv(c->o->scale, k, bounds,
                       (c->info->layers + 2) * c->info->hidden * sizeof *bounds, err);
  return s;
}

/* Records are dealt to the ranks in turn (record i to rank i mod R) and run in rounds of R:
 * every rank runs its record of the round, the ranks agree, and the others send theirs to rank
 * 0, which writes them all. One process: a round is one record. */
static fdl_status write_records(capture *c, const fdl_ds_panel *p, fdl_err *err) {
  const fdl_scale *sc = c->o->scale;
  size_t size = (size_t)fdl_scale_size(sc), rank = (size_t)fdl_scale_rank(sc);
  size_t longest = 0;
  for (size_t i = 0; i < p->n; i++)
    longest = p->lines[i].ntok > longest ? p->lines[i].ntok : longest;
  size_t width = c->o->form == FDL_CAPTURE_HIDDEN ? c->info->hidden : c->info->vocab;
  fdl_status s = FDL_OK;
  size_t bytes;
  if (!fdl_size_mul(longest, width, &bytes) || !fdl_size_mul(bytes, sizeof(float), &bytes))
    s = fdl_fail(err, FDL_TOO_LARGE, "a context of %zu tokens x %zu floats does not fit", longest,
                 width);
  size_t per = (c->info->layers + 2) * c->info->hidden;
  if (s == FDL_OK && c->o->layers_path && !(c->bounds = fdl_calloc(p->n, per * sizeof *c->bounds)))
    s = fdl_fail(err, FDL_NOMEM, "out of memory for the layer boundaries");
  float *buf = s == FDL_OK ? fdl_huge_alloc(longest * width * sizeof *buf) : NULL;
  uint16_t *bf = s == FDL_OK ? fdl_malloc(longest * width * sizeof *bf) : NULL;
  int32_t *ids = s == FDL_OK ? fdl_malloc(longest * sizeof *ids) : NULL;
  char *dir = rank == 0 && s == FDL_OK ? fdl_path_join(c->inputs, "tensors") : NULL;
  if (s == FDL_OK && (!buf || !bf || !ids || (rank == 0 && !dir)))
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK && rank == 0) s = fdl_mkdirs(dir, err);
  for (size_t r0 = 0; (s = fdl_scale_agree(sc, s, NULL, err)) == FDL_OK && r0 < p->n; r0 += size) {
    fdl_tensor_in t;
    int64_t shape[2];
    size_t i = r0 + rank;
    float *bounds = c->bounds && i < p->n ? c->bounds + i * per : NULL;
    if (i < p->n) s = compute_record(c, &p->lines[i], bounds, buf, bf, ids, &t, shape, err);
    if ((s = fdl_scale_agree(sc, s, NULL, err)) != FDL_OK) break;
    if (rank == 0) {
      if (r0 < p->n) s = store_record(c, &p->lines[r0], &t, err);
      /* Every record of the round is taken, even after a failed write: its sender waits. */
      fdl_status got = FDL_OK;
      for (size_t k = 1; got == FDL_OK && k < size && r0 + k < p->n; k++) {
        const fdl_ds_panel_line *l = &p->lines[r0 + k];
        float *kb = c->bounds ? c->bounds + (r0 + k) * per : NULL;
        got = receive_record(c, l, (int)k, kb, buf, bf, &t, shape, s == FDL_OK ? err : NULL);
        if (got != FDL_OK && s == FDL_OK) s = got;
        if (got == FDL_OK && s == FDL_OK) s = store_record(c, l, &t, err);
      }
      size_t done = r0 + size < p->n ? r0 + size : p->n;
      if (s == FDL_OK && c->o->progress) c->o->progress(c->o->progress_arg, done, p->n);
    } else if (i < p->n) {
      s = fdl_scale_send(sc, 0, t.data, record_bytes(c, &p->lines[i]), err);
      if (s == FDL_OK && bounds) s = fdl_scale_send(sc, 0, bounds, per * sizeof *bounds, err);
    }
  }
  free(buf);
  free(bf);
  free(ids);
  free(dir);
  return s;
}

static fdl_status write_head(capture *c, fdl_err *err) {
  fdl_tensor h;
  void *owned;
  fdl_status s = fdl_model_head(c->m, &h, &owned, err);
  if (s) return s;
  fdl_tensor_in t = {
      .name = "lm_head.weight", .dtype = h.dtype, .ndim = h.ndim, .shape = h.shape, .data = h.data};
  char *path = fdl_path_join(c->inputs, "head.safetensors");
  s = path ? fdl_safetensors_write(path, &t, 1, NULL, err)
           : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  free(owned);
  return s;
}

/* The boundary names of Kiln's layer records (docs/KILN-ATTRIBUTION section 13): embedding,
 * layer_NN_<kind> after each layer, final_norm. */
static json_t *boundary_names(const fdl_model_info *in) {
  json_t *a = json_array();
  bool ok = a && !json_array_append_new(a, json_string("embedding"));
  for (size_t i = 0; ok && i < in->layers; i++) {
    char n[64];
    bool lin = in->linear && in->linear[i];
    snprintf(n, sizeof n, "layer_%02zu_%s", i, lin ? "linear_attention" : "full_attention");
    ok = !json_array_append_new(a, json_string(n));
  }
  ok = ok && !json_array_append_new(a, json_string("final_norm"));
  if (!ok) json_decref(a);
  return ok ? a : NULL;
}

/* --layers: one F32 tensor per record, layer_last_rows.<index> [layers + 2, hidden] (the name
 * the HF layer artifacts use), the names in __metadata__ as `layers diff` reads them. */
static fdl_status write_layers(const capture *c, const fdl_ds_panel *p, fdl_err *err) {
  const fdl_model_info *in = c->info;
  size_t per = (in->layers + 2) * in->hidden;
  json_t *names = boundary_names(in);
  char *list = names ? json_dumps(names, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
  json_t *meta =
      list ? json_pack("{s:s, s:s, s:s}", "boundary_names", list, "architecture", in->arch, "path",
                       c->o->path == FDL_ENGINE_DECODE ? "decode" : "prefill")
           : NULL;
  fdl_tensor_in *t = fdl_calloc(p->n, sizeof *t);
  char(*tn)[48] = fdl_calloc(p->n, sizeof *tn);
  int64_t shape[2] = {(int64_t)in->layers + 2, (int64_t)in->hidden};
  fdl_status s = meta && t && tn ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < p->n; i++) {
    snprintf(tn[i], sizeof tn[i], "layer_last_rows.%04" PRId64, p->lines[i].index);
    t[i] = (fdl_tensor_in){.name = tn[i],
                           .dtype = FDL_DTYPE_F32,
                           .ndim = 2,
                           .shape = shape,
                           .data = c->bounds + i * per};
  }
  if (s == FDL_OK) s = fdl_safetensors_write(c->o->layers_path, t, p->n, meta, err);
  if (s != FDL_OK) fdl_err_prefix(err, "capture --layers %s", c->o->layers_path);
  free(t);
  free(tn);
  free(list);
  json_decref(names);
  json_decref(meta);
  return s;
}

/* ---- the meta ---------------------------------------------------------------------------- */

/* The codec of a quantized checkpoint's matrices ("int4", "int8", "fp8", ...) and its bits. */
static json_int_t quant_codec(const fdl_model_info *in, char *codec, size_t cap) {
  bool fp8 = in->ct_format && !strcmp(in->ct_format, "float-quantized");
  json_int_t bits = fp8 ? 8 : in->ct_format ? (json_int_t)in->ct.bits : (json_int_t)in->gptq_bits;
  if (fp8)
    snprintf(codec, cap, "fp8");
  else
    snprintf(codec, cap, "int%d", (int)bits);
  return bits;
}

/* The reference's nine-class scope, with the classes the checkpoint stores quantized (as the
 * loader found them) marked so. */
static json_t *scope(const fdl_model_info *in) {
  char fmt[16];
  json_int_t bits = quant_codec(in, fmt, sizeof fmt);
  json_t *a = json_array();
  for (int i = 0; i < FDL_TCLASS_COUNT; i++) {
    if (i == FDL_TCLASS_MOE_EXPERTS) continue; /* the dense scope */
    const char *cls = fdl_tensor_class_names[i];
    bool mlp = !strncmp(cls, "mlp.", 4), attn = !strncmp(cls, "attn.", 5);
    bool qd = (mlp && in->quant_mlp) || (attn && in->quant_attn);
    json_array_append_new(a,
                          json_pack("{s:s, s:s, s:s, s:I, s:n}", "tensor_class", cls, "treatment",
                                    qd ? "quantized" : "native", "format", qd ? fmt : "bf16",
                                    "bits_per_weight", qd ? bits : (json_int_t)16, "layer_range"));
  }
  return json_pack("{s:o, s:s, s:s, s:s}", "assignments", a, "policy", "mixed", "head_policy",
                   "native", "kv_cache_dtype", "bf16");
}

static json_t *source_files(void) {
  json_t *o = json_object();
  for (size_t i = 0; o && i < FDL_SOURCE_DIGEST_COUNT; i++)
    if (json_object_set_new(o, fdl_source_digests[i].path,
                            json_string(fdl_source_digests[i].sha256))) {
      json_decref(o);
      return NULL;
    }
  return o;
}

/* Where the tokenizer and the panel came from, as the reference records them: the panel
 * header's tokenizer repository/revision when it names them, else the model's own Hub
 * repository and commit when the tokenizer is the model's; the panel's, when it was a file of a
 * Hub snapshot. */
static void provenance(const capture *c, json_t *tok, json_t *panel) {
  const fdl_capture_opts *o = c->o;
  const char *hr = c->panel->tokenizer.repository, *hv = c->panel->tokenizer.revision;
  bool own = !o->tokenizer_id && !c->panel->tokenizer.id;
  if (hr) {
    json_object_set_new(tok, "repository", json_string(hr));
    json_object_set_new(tok, "revision", hv ? json_string(hv) : json_null());
  } else if (own && o->revision && o->repository) {
    json_object_set_new(tok, "repository", json_string(o->repository));
    json_object_set_new(tok, "revision", json_string(o->revision));
  }
  if (o->panel_repository) {
    json_object_set_new(panel, "repository", json_string(o->panel_repository));
    json_object_set_new(panel, "revision",
                        o->panel_revision ? json_string(o->panel_revision) : json_null());
  }
}

static json_t *meta(const capture *c) {
  const fdl_capture_opts *o = c->o;
  const char *gguf_codec = NULL;
  bool gguf_quant = false, gguf = fdl_model_is_gguf(c->m, &gguf_codec, &gguf_quant);
  bool quant = c->quant != NULL || gguf_quant, hidden = o->form == FDL_CAPTURE_HIDDEN;
  char id[200], repo[200], panel_id[64];
  if (o->dataset_id)
    snprintf(id, sizeof id, "%s", o->dataset_id);
  else
    snprintf(id, sizeof id, "fidelity--local.%s.%s", c->name, hidden ? "hidden" : "logits");
  if (o->repository)
    snprintf(repo, sizeof repo, "%s", o->repository);
  else
    snprintf(repo, sizeof repo, "local/%s", c->name);
  snprintf(panel_id, sizeof panel_id, "panel--fidelis.sha256-%.16s", c->panel_hex);
  const char *wdt = fdl_dtype_name(c->info->weight_dtype);
  json_t *tok =
             json_pack("{s:s, s:I}", "id", c->tokenizer, "vocab_size", (json_int_t)c->info->vocab),
         *panel = json_pack("{s:s}", "panel_id", panel_id);
  int bad = 0; /* an allocation failed inside jansson: no meta, never a partial one */
  fdl_ds_bool ast = c->panel->tokenizer.add_special_tokens;
  if (ast != FDL_DS_UNSET)
    bad |= json_object_set_new(tok, "add_special_tokens", json_boolean(ast == FDL_DS_TRUE));
  provenance(c, tok, panel);
  json_t *m = json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:I, s:{s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:o, s:o, s:s, s:o}",
      "role", quant ? "quant" : "root", "form", hidden ? "hidden" : "logit", "lane", "other",
      "device", "cpu", "device_name", CAPTURE_DEVICE_NAME, "vocab_size", (json_int_t)c->info->vocab,
      "engine", "name", "fidelis", "version", fdl_version(), "dtypes", "forward", "F32", "weights",
      wdt, "compute", "F32", "numeric_policy", CAPTURE_NUMERIC_POLICY, "tokenizer", tok, "panel",
      panel, "runtime_source", gguf ? "gguf" : "safetensors", "source_files", source_files());
  if (!m) return NULL;
  bad |= json_object_set_new(m, "dataset", json_pack("{s:s}", "id", id));
  json_t *w =
      json_pack("{s:s, s:n, s:b, s:s, s:s}", "repository", repo, "revision", "quantized", quant,
                "config_sha256", c->config_hex, "checkpoint_identity_sha256", c->ckpt_hex);
  if (o->revision) json_object_set_new(w, "revision", json_string(o->revision));
  if (gguf_quant) {
    bad |= json_object_set_new(w, "codec", json_string(gguf_codec));
    bad |= json_object_set_new(m, "scope", fdl_capture_gguf_scope(c->m));
    bad |= json_object_set_new(m, "weights_decode", fdl_capture_gguf_decode(c->m));
  } else if (quant) {
    char codec[16];
    json_int_t bits = quant_codec(c->info, codec, sizeof codec);
    bad |= json_object_set_new(w, "codec", json_string(codec));
    bad |= json_object_set_new(w, "declared_bits", json_real((double)bits));
    bad |= json_object_set_new(w, "declared_head_bits", json_integer(16));
    bad |= json_object_set_new(m, "scope", scope(c->info));
    bad |= json_object_set_new(m, "weights_decode",
                               json_pack("{s:s, s:s, s:s, s:O}", "method",
                                         "affine-weight-reconstruction", "scope",
                                         "weights_reconstructed", "output_dtype", "float32",
                                         "quantization_config", c->quant));
  }
  bad |= json_object_set_new(m, "weights", w);
  if (o->created_utc) json_object_set_new(m, "created_utc", json_string(o->created_utc));
  if (c->info->vision_tower)
    bad |= json_object_set_new(
        m, "disclosures",
        json_pack("[{s:b, s:s, s:s, s:s}]", "affects_comparability", 0, "code",
                  "vision_tower_ignored", "detail",
                  "the checkpoint carries a vision tower; fidelis ran its text model only "
                  "(token inputs, text positions), as for any text-only panel",
                  "severity", "info"));
  if (bad) {
    json_decref(m);
    return NULL;
  }
  return m;
}

/* ---- the run ----------------------------------------------------------------------------- */

static fdl_status prepare(capture *c, fdl_ds_panel *p, fdl_err *err) {
  const fdl_capture_opts *o = c->o;
  fdl_sha256 dg;
  fdl_status s = fdl_ds_panel_load(o->panel_path, p, err);
  if (s == FDL_OK) s = fdl_sha256_file(o->panel_path, &dg, NULL, err);
  if (s != FDL_OK) return s;
  fdl_sha256_hex(&dg, c->panel_hex);
  c->panel = p;
  fdl_model_opts mo = {.threads = o->threads, .isa = o->isa};
  s = fdl_model_load(o->model_dir, &mo, &c->m, err);
  if (s != FDL_OK) return s;
  c->info = fdl_model_get_info(c->m);
  /* The model's own parse: the config read here is the one config_sha256 digests. */
  c->quant = fdl_capture_quant_config(c->m);
  dir_name(o->model_dir, c->name, sizeof c->name);
  /* a Hub snapshot's folder is its commit: the repository's name names the model better */
  const char *slash = o->revision && o->repository ? strrchr(o->repository, '/') : NULL;
  if (slash && slash[1]) snprintf(c->name, sizeof c->name, "%s", slash + 1);
  s = tokenizer_id(c, err);
  return s == FDL_OK ? checkpoint_identity(c, err) : s;
}

static fdl_status pack(capture *c, fdl_capture_result *r, fdl_err *err) {
  json_t *m = meta(c);
  char *out = fdl_path_join(c->st.path, "dataset");
  fdl_ds_pack_opts po = {.panel_path = c->o->panel_path,
                         .threads = c->o->threads,
                         .created_utc = c->o->created_utc,
                         .hidden_f32 = c->o->hidden_f32 && c->o->form == FDL_CAPTURE_HIDDEN,
                         .notice = c->o->notice,
                         .notice_arg = c->o->notice_arg};
  fdl_ds_pack_result pr;
  memset(&pr, 0, sizeof pr);
  fdl_status s = m && out ? fdl_ds_pack_staged(c->inputs, "head.safetensors", "meta.json", m, out,
                                               &po, &pr, err)
                          : fdl_fail(err, FDL_NOMEM, "out of memory");
  json_decref(m);
  free(out);
  r->refusal = pr.refusal;
  if (pr.refusal.code != FDL_REF_NONE) {
    fdl_err_prefix(err, "capture: packing [%s]", fdl_refusal_name(pr.refusal.code));
  } else if (s == FDL_OK) {
    memcpy(r->dataset_sha256, pr.dataset_sha256, sizeof r->dataset_sha256);
    memcpy(r->capture_content_digest, pr.capture_content_digest, sizeof r->capture_content_digest);
    r->records = pr.records;
    r->scored_rows = pr.scored_rows;
  }
  return s;
}

/* The dataset leaves the staging directory by one no-replace rename; the inputs stay behind
 * and go with it. */
static fdl_status publish(capture *c, fdl_err *err) {
  char *out = fdl_path_join(c->st.path, "dataset");
  fdl_status s = out ? fdl_rename_noreplace(out, c->o->out_dir, err)
                     : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(out);
  return s;
}

/* What this rank loaded as the model and the panel: every rank must have read the same. */
static fdl_status same_inputs(const capture *c, fdl_status s, fdl_err *err) {
  char text[3 * FDL_SHA256_HEX_BUF + 8] = "", hex[FDL_SHA256_HEX_BUF] = "";
  if (s == FDL_OK) {
    snprintf(text, sizeof text, "%s|%s|%s", c->panel_hex, c->ckpt_hex, c->config_hex);
    s = fdl_sha256_buf_hex(text, strlen(text), hex, err);
  }
  if ((s = fdl_scale_agree(c->o->scale, s, NULL, err)) != FDL_OK) return s;
  int differs = -1;
  if ((s = fdl_scale_same(c->o->scale, hex, &differs, err)) != FDL_OK || differs < 0) return s;
  return fdl_fail(err, FDL_MISMATCH,
                  "rank %d read another model or panel than rank 0 (their digests differ); put "
                  "them on a filesystem every rank reads alike",
                  differs);
}

/* Every rank loads the model and runs its records; rank 0 alone stages, writes, packs and
 * publishes, after the ranks' last agreement (docs/SCALE.md). */
fdl_status fdl_capture(const fdl_capture_opts *o, fdl_capture_result *r, fdl_err *err) {
  memset(r, 0, sizeof *r);
  if (!o->model_dir || !o->panel_path || !o->out_dir)
    return fdl_fail(err, FDL_INVALID, "capture: --model, --panel and --out are required");
  capture c = {.o = o};
  fdl_ds_panel p = {0};
  bool lead = fdl_scale_rank(o->scale) == 0;
  /* Staged beside --out before any work: an existing --out or an unwritable parent is found
   * before the model is loaded. */
  fdl_status s = FDL_OK;
  if (lead) {
    s = o->layers_path && fdl_path_exists(o->layers_path)
            ? fdl_fail(err, FDL_EXISTS, "capture: --layers %s exists (never overwritten)",
                       o->layers_path)
            : fdl_stage_open(&c.st, o->out_dir, 0, o->notice, o->notice_arg, err);
    if (s == FDL_OK) {
      c.inputs = fdl_path_join(c.st.path, ".inputs");
      s = c.inputs ? fdl_mkdirs(c.inputs, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
    }
  }
  if (s == FDL_OK) s = prepare(&c, &p, err);
  if ((s = same_inputs(&c, s, err)) == FDL_OK) s = write_records(&c, &p, err);
  if (s == FDL_OK && lead) s = write_head(&c, err);
  if (s == FDL_OK && lead) s = pack(&c, r, err);
  /* The last agreement: nothing is published unless every rank reached here. */
  s = fdl_scale_agree(o->scale, s, lead ? &r->refusal : NULL, err);
  if (s == FDL_OK && lead) s = publish(&c, err);
  if (s == FDL_OK && lead && o->layers_path) s = write_layers(&c, &p, err);
  r->quantized = c.quant != NULL;
  fdl_stage_abort(&c.st);
  if (s != FDL_OK && err && strncmp(err->msg, "capture", 7)) fdl_err_prefix(err, "capture");
  fdl_ds_panel_free(&p);
  fdl_model_free(c.m);
  free(c.inputs);
  free(c.bounds);
  return s;
}
