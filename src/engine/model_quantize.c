/* model_quantize.c - `fidelis quantize`: a Hugging Face model directory into its int4 GPTQ-v1
 * twin. Every input problem (an existing quantization, a shape that cannot be packed, a weight
 * in scope that is not a float matrix) is found before the output is staged; the weights are
 * then streamed matrix by matrix, so memory holds one float32 matrix at a time (a fused expert
 * tensor, [experts, out, in], one expert's matrix at a time: it is split into per-expert GPTQ
 * tensors, see plan).
 *
 * Divisions: planning; writing; the run. What is in scope: quantize_scope.c. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sys.h"
#include "engine/model_internal.h"
#include "engine/quantize_scope.h"
#include "fidelis/hub.h"
#include "json/json.h"
#include "fidelis/model.h"
#include "base/path.h"

/* ---- planning ----------------------------------------------------------------------------- */

static const char *const PARTS[4] = {"qweight", "qzeros", "scales", "g_idx"};

/* One input tensor: copied as stored, or quantized as nmat matrices [out, in], matrix m being
 * elements [m * out * in, (m + 1) * out * in) of the tensor. A Linear's X.weight is one matrix.
 * A fused gate_up_proj [E, 2I, H] holds expert e's gate in rows 0..I-1 of block e and its up
 * in rows I..2I-1 (as moe.c reads it), so matrix m = 2e + j is e's gate (j 0) or up (j 1); a
 * fused down_proj [E, H, I] holds expert m's down as block m. Each is written as the expert's
 * own "mlp.experts.E.<proj>" parts, the names the engine binds a quantized expert by, and is
 * quantized exactly as if it had been stored alone: RTN's groups never cross a row. */
typedef struct {
  const fdl_tensor *src;
  fdl_qs_kind k;  /* FDL_QS_NONE: copied as stored */
  size_t module;  /* where the block-relative module name starts in src's name */
  size_t out, in; /* each matrix's shape */
  size_t nmat;    /* matrices quantized from src */
  char **names;   /* 4 per matrix, the GPTQ parts in PARTS' order; owned */
  int64_t shapes[4][2];
} plan;

static void plan_free(plan *p) {
  for (size_t i = 0; p->names && i < 4 * p->nmat; i++) free(p->names[i]);
  free(p->names);
}

/* Matrix m's part k: X.qweight for X.weight; <prefix>mlp.experts.E.up_proj.qweight for an
 * expert's matrix in a fused tensor <prefix>mlp.experts.gate_up_proj. NULL when out of memory. */
static char *part_name(const plan *p, size_t m, int k) {
  const char *n = p->src->name;
  bool fused = p->k != FDL_QS_MATRIX;
  size_t stem = fused ? p->module + strlen(FDL_QS_EXPERTS) : strlen(n) - strlen("weight");
  const char *proj = p->k == FDL_QS_GATE_UP ? fdl_qs_proj(m % 2) : fdl_qs_proj(2);
  size_t cap = stem + 24 + strlen(proj) + strlen(PARTS[k]) + 1;
  char *s = fdl_malloc(cap);
  if (!s) return NULL;
  memcpy(s, n, stem);
  if (fused)
    snprintf(s + stem, cap - stem, "%zu.%s.%s", p->k == FDL_QS_GATE_UP ? m / 2 : m, proj, PARTS[k]);
  else
    snprintf(s + stem, cap - stem, "%s", PARTS[k]);
  return s;
}

/* Matrix m of p, for messages: the tensor's name, and for a fused tensor which expert and
 * projection (at most 64 bytes, into buf). */
static const char *matrix_label(const plan *p, size_t m, char *buf, size_t cap) {
  if (p->k == FDL_QS_MATRIX) return "";
  snprintf(buf, cap, " (expert %zu's %s)", p->k == FDL_QS_GATE_UP ? m / 2 : m,
           p->k == FDL_QS_GATE_UP ? fdl_qs_proj(m % 2) : fdl_qs_proj(2));
  return buf;
}

/* A fused expert tensor's matrices: 3-D, a float dtype, gate_up_proj with gate's and up's rows
 * of one size. */
static fdl_status plan_fused(plan *p, const fdl_tensor *t, const fdl_gptq_opts *o, fdl_err *err) {
  if (t->ndim != 3 || !fdl_tensor_widenable(t->dtype))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s is in scope %s (fused experts) but is not a BF16, F16 or F32 "
                    "[experts, out, in] tensor (%s, %d dimensions)",
                    t->name, fdl_gptq_scope_name(o->scope), fdl_dtype_name(t->dtype), t->ndim);
  size_t experts = (size_t)t->shape[0], rows = (size_t)t->shape[1];
  p->in = (size_t)t->shape[2];
  if (p->k == FDL_QS_GATE_UP && rows % 2)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s [%zu, %zu, %zu]: %zu rows per expert, not gate's and up's of one "
                    "size",
                    t->name, experts, rows, p->in, rows);
  p->out = p->k == FDL_QS_GATE_UP ? rows / 2 : rows;
  p->nmat = p->k == FDL_QS_GATE_UP ? 2 * experts : experts;
  if (!p->nmat || !p->out || !p->in)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s [%zu, %zu, %zu]: an empty dimension, no expert matrix to quantize",
                    t->name, experts, rows, p->in);
  return FDL_OK;
}

/* In and out multiples of 8, in a multiple of the group: what GPTQ packs. */
static fdl_status check_packable(const plan *p, const fdl_gptq_opts *o, fdl_err *err) {
  const char *what = p->k == FDL_QS_GATE_UP ? " (each expert's gate_proj and up_proj)"
                     : p->k == FDL_QS_DOWN  ? " (each expert's down_proj)"
                                            : "";
  /* No --pad: zero rows or columns would change the model's shape (its config, every tensor
   * that meets this one), so the quantized model would be another model. Say what works. */
  if (p->out % 8 || p->in % 8)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s%s [%zu, %zu]: GPTQ packs 8 values per int32, so in and out must "
                    "be multiples of 8; leave it out of the scope (--scope mlp keeps attention "
                    "dense), or quantize a model whose dimensions are (here [%zu, %zu]): fidelis "
                    "does not pad, which would change the model's shape",
                    p->src->name, what, p->out, p->in, (p->out + 7) / 8 * 8, (p->in + 7) / 8 * 8);
  if (p->in % o->group)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s%s [%zu, %zu]: group size %zu does not divide the input dimension "
                    "%zu",
                    p->src->name, what, p->out, p->in, o->group, p->in);
  return FDL_OK;
}

static fdl_status plan_tensor(plan *p, const fdl_tensor *t, const fdl_gptq_opts *o, fdl_err *err) {
  fdl_qs_match mt = fdl_qs_match_name(t->name, o->scope);
  p->src = t;
  p->k = mt.k;
  p->module = mt.module;
  if (p->k == FDL_QS_NONE) return FDL_OK;
  fdl_status s = FDL_OK;
  if (p->k != FDL_QS_MATRIX) {
    s = plan_fused(p, t, o, err);
  } else if (t->ndim != 2 || !fdl_tensor_widenable(t->dtype)) {
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "tensor %s is in scope %s but is not a BF16, F16 or F32 matrix (%s, %d "
                 "dimensions)",
                 t->name, fdl_gptq_scope_name(o->scope), fdl_dtype_name(t->dtype), t->ndim);
  } else {
    p->out = (size_t)t->shape[0];
    p->in = (size_t)t->shape[1];
    p->nmat = 1;
  }
  if (s == FDL_OK) s = check_packable(p, o, err);
  if (s != FDL_OK) return s;
  if (!(p->names = fdl_calloc(p->nmat, 4 * sizeof *p->names)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t m = 0; m < p->nmat; m++)
    for (int k = 0; k < 4; k++)
      if (!(p->names[4 * m + (size_t)k] = part_name(p, m, k)))
        return fdl_fail(err, FDL_NOMEM, "out of memory");
  int64_t in = (int64_t)p->in, out = (int64_t)p->out, g = (int64_t)(p->in / o->group);
  int64_t shapes[4][2] = {{in / 8, out}, {g, out / 8}, {g, out}, {in, 0}};
  memcpy(p->shapes, shapes, sizeof shapes);
  return FDL_OK;
}

/* The bytes of one matrix's four parts. */
static uint64_t matrix_bytes(const plan *p, size_t group) {
  uint64_t g = p->in / group;
  return (uint64_t)p->in / 8 * p->out * 4 + g * (p->out / 8) * 4 + g * p->out * 2 +
         (uint64_t)p->in * 4;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Matrix m of p, widened, quantized and written: memory holds this one matrix in float32 and
 * its parts, never the other experts of a fused tensor. */
static fdl_status write_quantized(fdl_out *f, const plan *p, size_t m, size_t group, fdl_err *err) {
  size_t n = p->out * p->in, groups = p->in / group;
  size_t nq = p->in / 8 * p->out, nz = groups * (p->out / 8), ns = groups * p->out;
  float *w = fdl_malloc(n * sizeof *w);
  uint32_t *qw = fdl_malloc(nq * sizeof *qw), *qz = fdl_malloc(nz * sizeof *qz);
  uint16_t *sc = fdl_malloc(ns * sizeof *sc);
  int32_t *gi = fdl_malloc(p->in * sizeof *gi);
  uint8_t *bytes = fdl_malloc((nq > p->in ? nq : p->in) * 4 + ns * 2);
  char label[64];
  fdl_status s = FDL_OK;
  if (!w || !qw || !qz || !sc || !gi || !bytes)
    s = fdl_fail(err, FDL_NOMEM, "out of memory quantizing %s%s", p->src->name,
                 matrix_label(p, m, label, sizeof label));
  if (s == FDL_OK) {
    fdl_tensor_widen_f32(p->src, m * n, n, w);
    s = fdl_gptq_quantize_matrix(w, p->out, p->in, group, qw, qz, sc, gi, err);
    if (s != FDL_OK)
      fdl_err_prefix(err, "%s%s", p->src->name, matrix_label(p, m, label, sizeof label));
  }
  /* Serialized little-endian whatever the host, one part at a time. */
  if (s == FDL_OK) {
    for (size_t i = 0; i < nq; i++) fdl_model_put_le32(bytes + 4 * i, qw[i]);
    s = fdl_out_write(f, bytes, nq * 4, err);
  }
  if (s == FDL_OK) {
    for (size_t i = 0; i < nz; i++) fdl_model_put_le32(bytes + 4 * i, qz[i]);
    s = fdl_out_write(f, bytes, nz * 4, err);
  }
  if (s == FDL_OK) {
    for (size_t i = 0; i < ns; i++) fdl_model_put_le16(bytes + 2 * i, sc[i]);
    s = fdl_out_write(f, bytes, ns * 2, err);
  }
  if (s == FDL_OK) {
    for (size_t i = 0; i < p->in; i++) fdl_model_put_le32(bytes + 4 * i, (uint32_t)gi[i]);
    s = fdl_out_write(f, bytes, p->in * 4, err);
  }
  free(w);
  free(qw);
  free(qz);
  free(sc);
  free(gi);
  free(bytes);
  return s;
}

/* The output tensors of a shard in plan order, each quantized matrix as its four parts (the
 * data pointers are placeholders: the header only needs dtypes and shapes). NULL when out of
 * memory. */
static fdl_tensor_in *output_tensors(const plan *pl, size_t n, size_t *nt) {
  static const uint8_t any = 0;
  static const fdl_dtype dts[4] = {FDL_DTYPE_I32, FDL_DTYPE_I32, FDL_DTYPE_F16, FDL_DTYPE_I32};
  *nt = 0;
  for (size_t i = 0; i < n; i++) *nt += pl[i].k != FDL_QS_NONE ? 4 * pl[i].nmat : 1;
  fdl_tensor_in *ti = fdl_calloc(*nt ? *nt : 1, sizeof *ti);
  if (!ti) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const fdl_tensor *t = pl[i].src;
    if (pl[i].k == FDL_QS_NONE) {
      ti[k++] = (fdl_tensor_in){t->name, t->dtype, t->ndim, t->shape, t->nbytes ? t->data : &any};
      continue;
    }
    for (size_t j = 0; j < 4 * pl[i].nmat; j++)
      ti[k++] = (fdl_tensor_in){pl[i].names[j], dts[j % 4], j % 4 == 3 ? 1 : 2, pl[i].shapes[j % 4],
                                &any};
  }
  return ti;
}

static fdl_status write_weights(const char *path, plan *pl, size_t n, const fdl_gptq_opts *o,
                                fdl_gptq_result *res, fdl_err *err) {
  size_t nt = 0;
  fdl_tensor_in *ti = output_tensors(pl, n, &nt);
  json_t *meta = fdl_model_st_metadata();
  if (!ti || !meta) {
    free(ti);
    json_decref(meta);
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  fdl_out f = {-1, NULL, NULL, false};
  fdl_status s = fdl_out_open(&f, path, err);
  bool opened = s == FDL_OK;
  uint64_t bytes = 0;
  if (s == FDL_OK) s = fdl_model_st_header(&f, ti, nt, meta, &bytes, err);
  res->bytes += bytes;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    if (pl[i].k == FDL_QS_NONE) {
      s = fdl_out_write(&f, pl[i].src->data, (size_t)pl[i].src->nbytes, err);
      res->copied++;
    }
    for (size_t m = 0; pl[i].k != FDL_QS_NONE && m < pl[i].nmat && s == FDL_OK; m++) {
      s = write_quantized(&f, &pl[i], m, o->group, err);
      res->quantized++;
      res->params_quantized += (uint64_t)pl[i].out * pl[i].in;
    }
  }
  if (s == FDL_OK)
    s = fdl_out_commit(&f, err);
  else if (opened)
    fdl_out_abort(&f);
  free(ti);
  json_decref(meta);
  return s;
}

/* mods: the block-relative modules quantized (block_modules); the reference is taken. */
static json_t *quant_config(const fdl_gptq_opts *o, json_t *mods) {
  return json_pack(
      "{s:i, s:I, s:b, s:b, s:s, s:s, s:b, s:b, s:[o], s:{s:s, s:s, s:s, s:s, s:s}}", "bits", 4,
      "group_size", (json_int_t)o->group, "desc_act", 0, "sym", 0, "quant_method", "gptq",
      "checkpoint_format", "gptq", "static_groups", 0, "true_sequential", 1,
      "modules_in_block_to_quantize", mods, "fidelis", "scope", fdl_gptq_scope_name(o->scope),
      "method", "rtn", "rounding",
      "round to nearest, ties to even, in float64 from the float32-widened weights", "range",
      "per group of group_size input columns: lo = min(0, min w), hi = max(0, max w) ([-1, 1] "
      "for an all-zero group); scale = f16((hi - lo) / 15); zero = rint(-lo / scale), and a "
      "zero of 0 becomes 1 with scale = f16(hi / 14); q = clamp(rint(w / scale) + zero, 0, 15)",
      "decode", "w = (q - zero) * scale in float32, exact; stored zeros are zero - 1 (GPTQ v1)");
}

/* ---- the run ------------------------------------------------------------------------------ */

/* A file named inside MODEL, resolved once (a Hugging Face snapshot links every file into
 * blobs/); FDL_PARSE when it is missing: MODEL was opened and is not a model directory. */
static fdl_status model_file(const char *dir, const char *name, char **resolved, fdl_err *err) {
  fdl_status s = fdl_model_member(dir, name, resolved, err);
  if (s == FDL_OK && !*resolved)
    s = fdl_fail(err, FDL_PARSE, "%s: not a model directory (no %s)", dir, name);
  return s;
}

static bool skipped_file(const char *name) {
  static const char *const weights[] = {".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt"};
  if (name[0] == '.' || !strcmp(name, "config.json") || !strcmp(name, "quantize_config.json"))
    return true;
  for (size_t i = 0; i < sizeof weights / sizeof *weights; i++)
    if (fdl_ends_with(name, weights[i]) || fdl_ends_with(name, ".safetensors.index.json"))
      return true;
  return false;
}

/* Copies MODEL's other regular files (tokenizer, generation config, panel) byte for byte. A
 * link is followed only by the model-file rule (fdl_model_member): one that leads elsewhere is
 * refused by name, so OUT never holds a byte from outside the model. */
static fdl_status copy_others(const char *dir, const char *to, fdl_err *err) {
  DIR *d = opendir(dir);
  if (!d) return fdl_fail(err, FDL_IO, "%s: cannot list the directory: %s", dir, strerror(errno));
  fdl_status s = FDL_OK;
  struct dirent *e;
  while (s == FDL_OK && (e = readdir(d))) {
    if (skipped_file(e->d_name)) continue;
    char *path = fdl_path_join(dir, e->d_name), *dst = fdl_path_join(to, e->d_name);
    struct stat st;
    if (!path || !dst)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      char *real = NULL, *data = NULL;
      size_t len = 0;
      s = fdl_model_member(dir, e->d_name, &real, err); /* a link only into MODEL or its blobs */
      if (s == FDL_OK && !real) s = fdl_fail(err, FDL_IO, "%s: vanished while copying", path);
      if (s == FDL_OK) s = fdl_read_file(real, (size_t)1 << 30, &data, &len, err);
      if (s == FDL_OK) s = fdl_write_file(dst, data, len, err);
      free(real);
      free(data);
    }
    free(path);
    free(dst);
  }
  closedir(d);
  return s;
}

/* One safetensors file of the checkpoint and the plan for each of its tensors. */
typedef struct {
  const char *name; /* borrowed: "model.safetensors" or a weight_map value */
  fdl_safetensors *st;
  plan *pl;
  size_t n;
} shard;

typedef struct {
  const fdl_gptq_opts *o;
  json_t *cfg, *index; /* index: model.safetensors.index.json, or NULL for one file */
  shard *shards;
  size_t nshards;
} job;

/* The shard names of a sharded checkpoint: the distinct weight_map values, which must be plain
 * file names ending in .safetensors (a name with a slash could leave MODEL or OUT). */
static fdl_status list_shards(job *j, fdl_err *err) {
  json_t *map = json_object_get(j->index, "weight_map");
  if (!json_is_object(map) || !json_object_size(map))
    return fdl_fail(err, FDL_PARSE,
                    "model.safetensors.index.json: weight_map is not a non-empty object");
  j->shards = fdl_calloc(json_object_size(map), sizeof *j->shards);
  if (!j->shards) return fdl_fail(err, FDL_NOMEM, "out of memory");
  const char *key;
  json_t *v;
  json_object_foreach(map, key, v) {
    const char *f = json_string_value(v);
    if (!f || !*f || strchr(f, '/') || f[0] == '.' || !fdl_ends_with(f, ".safetensors"))
      return fdl_fail(err, FDL_PARSE,
                      "model.safetensors.index.json: weight_map[%s] is not a file name ending "
                      "in .safetensors",
                      key);
    bool seen = false;
    for (size_t i = 0; i < j->nshards && !seen; i++) seen = !strcmp(j->shards[i].name, f);
    if (!seen) j->shards[j->nshards++].name = f;
  }
  return FDL_OK;
}

/* A fused tensor's expert must not also be stored alone: OUT would hold its parts twice (and
 * the engine would not know which to run). */
static fdl_status check_split(const job *j, const plan *p, fdl_err *err) {
  for (size_t m = 0; p->k != FDL_QS_NONE && p->k != FDL_QS_MATRIX && m < p->nmat; m++) {
    size_t stem = strlen(p->names[4 * m]) - strlen("qweight");
    char *w = fdl_malloc(stem + strlen("weight") + 1), label[64];
    if (!w) return fdl_fail(err, FDL_NOMEM, "out of memory");
    memcpy(w, p->names[4 * m], stem);
    strcpy(w + stem, "weight");
    bool twice = false;
    for (size_t k = 0; k < j->nshards && !twice; k++)
      twice = fdl_safetensors_find(j->shards[k].st, w) != NULL;
    if (twice)
      fdl_fail(err, FDL_PARSE, "tensor %s and tensor %s%s are the same expert matrix, stored twice",
               w, p->src->name, matrix_label(p, m, label, sizeof label));
    free(w);
    if (twice) return FDL_PARSE;
  }
  return FDL_OK;
}

/* Opens every shard and plans every tensor; for a sharded checkpoint, each tensor must be where
 * the index says, and the index must name no tensor that is missing. */
static fdl_status plan_all(job *j, size_t *nq, fdl_err *err) {
  const fdl_gptq_opts *o = j->o;
  json_t *map = j->index ? json_object_get(j->index, "weight_map") : NULL;
  size_t total = 0;
  fdl_status s = FDL_OK;
  for (size_t k = 0; k < j->nshards && s == FDL_OK; k++) {
    shard *sh = &j->shards[k];
    char *path = NULL;
    s = model_file(o->model_dir, sh->name, &path, err);
    if (s == FDL_OK) s = fdl_safetensors_open(path, &sh->st, err);
    free(path);
    if (s != FDL_OK) break;
    sh->n = fdl_safetensors_count(sh->st);
    total += sh->n;
    sh->pl = fdl_calloc(sh->n ? sh->n : 1, sizeof *sh->pl);
    if (!sh->pl) s = fdl_fail(err, FDL_NOMEM, "out of memory");
    for (size_t i = 0; i < sh->n && s == FDL_OK; i++) {
      const fdl_tensor *t = fdl_safetensors_at(sh->st, i);
      const char *where = map ? json_string_value(json_object_get(map, t->name)) : sh->name;
      if (fdl_ends_with(t->name, ".qweight") || fdl_ends_with(t->name, ".qzeros"))
        s = fdl_fail(err, FDL_REFUSED, "%s is already quantized (tensor %s)", o->model_dir,
                     t->name);
      else if (!where || strcmp(where, sh->name))
        s = fdl_fail(err, FDL_PARSE,
                     "%s: tensor %s is in %s, but model.safetensors.index.json says %s",
                     o->model_dir, t->name, sh->name, where ? where : "nothing");
      else
        s = plan_tensor(&sh->pl[i], t, o, err);
      *nq += sh->pl[i].k != FDL_QS_NONE;
    }
  }
  if (s == FDL_OK && map && total != json_object_size(map))
    s = fdl_fail(err, FDL_PARSE,
                 "%s: model.safetensors.index.json names %zu tensors, the shards hold %zu",
                 o->model_dir, json_object_size(map), total);
  for (size_t k = 0; k < j->nshards && s == FDL_OK; k++)
    for (size_t i = 0; i < j->shards[k].n && s == FDL_OK; i++)
      s = check_split(j, &j->shards[k].pl[i], err);
  return s;
}

/* The output index: the input's, with each quantized weight replaced by its four parts in the
 * same shard and metadata.total_size (the tensors' data bytes) recomputed. */
static fdl_status write_index(const job *j, const char *dir, fdl_err *err) {
  json_t *idx = json_deep_copy(j->index), *map = json_object();
  fdl_status s = idx && map ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  uint64_t total = 0;
  for (size_t k = 0; k < j->nshards && s == FDL_OK; k++) {
    const shard *sh = &j->shards[k];
    for (size_t i = 0; i < sh->n && s == FDL_OK; i++) {
      const plan *p = &sh->pl[i];
      size_t parts = p->k != FDL_QS_NONE ? 4 * p->nmat : 1;
      for (size_t q = 0; q < parts; q++)
        if (json_object_set_new(map, p->k != FDL_QS_NONE ? p->names[q] : p->src->name,
                                json_string(sh->name)))
          s = fdl_fail(err, FDL_NOMEM, "out of memory");
      total += p->k != FDL_QS_NONE ? p->nmat * matrix_bytes(p, j->o->group) : p->src->nbytes;
    }
  }
  json_t *meta = s == FDL_OK ? json_object_get(idx, "metadata") : NULL;
  if (s == FDL_OK && !json_is_object(meta)) {
    meta = json_object();
    if (!meta || json_object_set_new(idx, "metadata", meta))
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  if (s == FDL_OK && (json_object_set_new(meta, "total_size", json_integer((json_int_t)total)) ||
                      json_object_set(idx, "weight_map", map)))
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  json_decref(map);
  if (s == FDL_OK) return fdl_model_write_json(dir, "model.safetensors.index.json", idx, err);
  json_decref(idx);
  return s;
}

/* The block-relative names of the modules quantized ("mlp.experts.3.up_proj"), each once, in
 * fdl_qs_module_cmp's order: quantization_config.modules_in_block_to_quantize, so a loader that
 * replaces exactly those Linears (optimum matches each name as a suffix of the module's) finds
 * what was written and nothing else. Only modules that were quantized are listed: a MoE model
 * without a dense MLP lists no mlp.gate_proj, and neither the router nor shared_expert_gate is
 * ever listed. NULL when out of memory. */
static json_t *block_modules(const job *j) {
  size_t n = 0, k = 0;
  for (size_t h = 0; h < j->nshards; h++)
    for (size_t i = 0; i < j->shards[h].n; i++)
      if (j->shards[h].pl[i].k != FDL_QS_NONE) n += j->shards[h].pl[i].nmat;
  char **mods = fdl_calloc(n ? n : 1, sizeof *mods);
  json_t *arr = mods ? json_array() : NULL;
  bool ok = arr != NULL;
  for (size_t h = 0; ok && h < j->nshards; h++)
    for (size_t i = 0; ok && i < j->shards[h].n; i++) {
      const plan *p = &j->shards[h].pl[i];
      for (size_t m = 0; ok && p->k != FDL_QS_NONE && m < p->nmat; m++) {
        const char *qw = p->names[4 * m] + p->module; /* "<module>.qweight" */
        size_t len = strlen(qw) - strlen(".qweight");
        char *mod = fdl_strndup(qw, len);
        if (!(ok = mod != NULL)) break;
        mods[k++] = mod;
      }
    }
  if (ok) qsort(mods, k, sizeof *mods, fdl_qs_module_cmp);
  for (size_t i = 0; ok && i < k; i++)
    if (!i || strcmp(mods[i - 1], mods[i])) ok = !json_array_append_new(arr, json_string(mods[i]));
  for (size_t i = 0; i < k; i++) free(mods[i]);
  free(mods);
  if (!ok) json_decref(arr);
  return ok ? arr : NULL;
}

/* Reads config.json and finds the checkpoint's files; every refusal about what MODEL holds. */
static fdl_status open_model(job *j, fdl_err *err) {
  const fdl_gptq_opts *o = j->o;
  char *cfg_path = NULL;
  fdl_status s = model_file(o->model_dir, "config.json", &cfg_path, err);
  if (s == FDL_OK) s = fdl_json_load_file(cfg_path, NULL, &j->cfg, err);
  free(cfg_path);
  if (s == FDL_OK && !json_is_object(j->cfg))
    s = fdl_fail(err, FDL_PARSE, "%s: config.json is not a JSON object", o->model_dir);
  if (s == FDL_OK && json_object_get(j->cfg, "quantization_config"))
    s = fdl_fail(err, FDL_REFUSED,
                 "%s is already quantized (config.json has a quantization_config): quantize "
                 "the original model",
                 o->model_dir);
  if (s != FDL_OK) return s;
  char *one = fdl_path_join(o->model_dir, "model.safetensors");
  if (!one) return fdl_fail(err, FDL_NOMEM, "out of memory");
  bool single = fdl_path_exists(one); /* transformers' rule, as the engine's loader applies */
  free(one);
  if (single) {
    j->shards = fdl_calloc(1, sizeof *j->shards);
    if (!j->shards) return fdl_fail(err, FDL_NOMEM, "out of memory");
    j->shards[0].name = "model.safetensors";
    j->nshards = 1;
    return FDL_OK;
  }
  char *idx_path = NULL;
  s = model_file(o->model_dir, "model.safetensors.index.json", &idx_path, err);
  if (s == FDL_PARSE) {
    return fdl_fail(err, FDL_PARSE,
                    "%s: not a model directory (no model.safetensors, and no "
                    "model.safetensors.index.json)",
                    o->model_dir);
  }
  if (s == FDL_OK) s = fdl_json_load_file(idx_path, NULL, &j->index, err);
  free(idx_path);
  if (s == FDL_OK && !json_is_object(j->index))
    s = fdl_fail(err, FDL_PARSE, "%s: model.safetensors.index.json is not a JSON object",
                 o->model_dir);
  if (s == FDL_OK) s = list_shards(j, err);
  return s;
}

fdl_status fdl_gptq_quantize_model(const fdl_gptq_opts *o, fdl_gptq_result *res, fdl_err *err) {
  memset(res, 0, sizeof *res);
  if (!o->model_dir || !*o->model_dir || !o->out_dir || !*o->out_dir)
    return fdl_fail(err, FDL_INVALID, "quantize: MODEL and OUT are required");
  if (o->group < 1) return fdl_fail(err, FDL_INVALID, "quantize: the group size must be >= 1");
  job j = {.o = o};
  fdl_stage stage;
  memset(&stage, 0, sizeof stage);
  size_t nq = 0;
  fdl_status s = open_model(&j, err);
  if (s == FDL_OK) s = plan_all(&j, &nq, err);
  if (s == FDL_OK && !nq)
    s = fdl_fail(err, FDL_INVALID,
                 "%s: no weight in scope %s (expected *.mlp.gate_proj.weight ...)", o->model_dir,
                 fdl_gptq_scope_name(o->scope));
  if (s != FDL_OK && s != FDL_NOMEM) fdl_err_prefix(err, "quantize");
  /* Staged only now: every refusal of what MODEL holds came first. */
  if (s == FDL_OK) {
    s = fdl_stage_open(&stage, o->out_dir, 0, o->notice, o->notice_arg, err);
    if (s != FDL_OK) fdl_err_prefix(err, "quantize");
  }
  if (s == FDL_OK) {
    json_t *mods = block_modules(&j);
    json_t *q = mods ? quant_config(o, mods) : NULL;
    json_t *c = json_deep_copy(j.cfg);
    char *path = fdl_path_join(stage.path, "config.json");
    if (!q || !c || !path) json_decref(q);
    if (!q || !c || !path || json_object_set_new(c, "quantization_config", q))
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    else
      s = fdl_json_write_file(path, c, FDL_JSON_PRETTY, err);
    json_decref(c);
    free(path);
  }
  /* The other files first: a link that leads out of MODEL is refused before the long part. */
  if (s == FDL_OK) s = copy_others(o->model_dir, stage.path, err);
  for (size_t k = 0; k < j.nshards && s == FDL_OK; k++) {
    char *path = fdl_path_join(stage.path, j.shards[k].name);
    s = path ? write_weights(path, j.shards[k].pl, j.shards[k].n, o, res, err)
             : fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s != FDL_OK) fdl_err_prefix(err, "quantize %s/%s", o->model_dir, j.shards[k].name);
    free(path);
  }
  if (s == FDL_OK && j.index) s = write_index(&j, stage.path, err);
  if (s == FDL_OK) s = fdl_stage_commit(&stage, err);
  fdl_stage_abort(&stage);
  for (size_t k = 0; k < j.nshards; k++) {
    for (size_t i = 0; j.shards[k].pl && i < j.shards[k].n; i++) plan_free(&j.shards[k].pl[i]);
    free(j.shards[k].pl);
    fdl_safetensors_close(j.shards[k].st);
  }
  free(j.shards);
  json_decref(j.index);
  json_decref(j.cfg);
  return s;
}
