/* model_quantize.c - `fidelis quantize`: a Hugging Face model directory into its int4 GPTQ-v1
 * twin. Every input problem (an existing quantization, a shape that cannot be packed, a weight
 * in scope that is not a float matrix) is found before the output is staged; the weights are
 * then streamed tensor by tensor, so memory holds one float32 matrix at a time.
 *
 * Divisions: scope; planning; writing; the run. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sys.h"
#include "engine/model_internal.h"
#include "fidelis/json.h"
#include "fidelis/model.h"
#include "fidelis/path.h"
#include "fidelis/quote.h"

/* ---- scope -------------------------------------------------------------------------------- */

static const char *const MLP[] = {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
static const char *const ATTN[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                   "self_attn.o_proj"};
/* Gated DeltaNet's attention-sized projections (Qwen3.5). in_proj_a and in_proj_b, one row per
 * value head, and the depthwise conv1d stay as stored: int4 buys nothing on them and would
 * perturb the decay and the write strength of every head. */
static const char *const DELTANET[] = {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z",
                                       "linear_attn.out_proj"};
/* Never quantized, whatever their names: a vision tower and multi-token-prediction heads,
 * which the engine does not run. */
static const char *const FOREIGN[] = {"model.visual.", "mtp."};

const char *fdl_gptq_scope_name(fdl_gptq_scope s) {
  return s == FDL_GPTQ_SCOPE_ALL_LINEAR ? "all-linear" : "mlp";
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !memcmp(s + n - m, suffix, m);
}

/* True when name is "<prefix>.<module>.weight" for a module in scope. */
static bool in_scope(const char *name, fdl_gptq_scope scope) {
  char want[64];
  for (size_t i = 0; i < sizeof FOREIGN / sizeof *FOREIGN; i++)
    if (!strncmp(name, FOREIGN[i], strlen(FOREIGN[i]))) return false;
  for (size_t i = 0; i < sizeof MLP / sizeof *MLP; i++) {
    snprintf(want, sizeof want, ".%s.weight", MLP[i]);
    if (ends_with(name, want)) return true;
  }
  for (size_t i = 0; scope == FDL_GPTQ_SCOPE_ALL_LINEAR && i < sizeof ATTN / sizeof *ATTN; i++) {
    snprintf(want, sizeof want, ".%s.weight", ATTN[i]);
    if (ends_with(name, want)) return true;
  }
  for (size_t i = 0; scope == FDL_GPTQ_SCOPE_ALL_LINEAR && i < sizeof DELTANET / sizeof *DELTANET;
       i++) {
    snprintf(want, sizeof want, ".%s.weight", DELTANET[i]);
    if (ends_with(name, want)) return true;
  }
  return false;
}

/* ---- planning ----------------------------------------------------------------------------- */

static const char *const PARTS[4] = {"qweight", "qzeros", "scales", "g_idx"};

typedef struct {
  const fdl_tensor *src;
  bool quant;
  size_t out, in;
  /* the output tensors: one copy, or the four GPTQ parts */
  char *names[4];
  int64_t shapes[4][2];
} plan;

static fdl_status plan_tensor(plan *p, const fdl_tensor *t, const fdl_gptq_opts *o, fdl_err *err) {
  p->src = t;
  p->quant = in_scope(t->name, o->scope);
  if (!p->quant) return FDL_OK;
  if (t->ndim != 2 || !fdl_tensor_widenable(t->dtype))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s is in scope %s but is not a BF16, F16 or F32 matrix (%s, %d "
                    "dimensions)",
                    t->name, fdl_gptq_scope_name(o->scope), fdl_dtype_name(t->dtype), t->ndim);
  p->out = (size_t)t->shape[0];
  p->in = (size_t)t->shape[1];
  /* No --pad: zero rows or columns would change the model's shape (its config, every tensor
   * that meets this one), so the quantized model would be another model. Say what works. */
  if (p->out % 8 || p->in % 8)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s [%zu, %zu]: GPTQ packs 8 values per int32, so in and out must be "
                    "multiples of 8; leave it out of the scope (--scope mlp keeps attention "
                    "dense), or quantize a model whose dimensions are (here [%zu, %zu]): fidelis "
                    "does not pad, which would change the model's shape",
                    t->name, p->out, p->in, (p->out + 7) / 8 * 8, (p->in + 7) / 8 * 8);
  if (p->in % o->group)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s [%zu, %zu]: group size %zu does not divide the input dimension "
                    "%zu",
                    t->name, p->out, p->in, o->group, p->in);
  size_t stem = strlen(t->name) - strlen("weight");
  for (int k = 0; k < 4; k++) {
    p->names[k] = fdl_malloc(stem + strlen(PARTS[k]) + 1);
    if (!p->names[k]) return fdl_fail(err, FDL_NOMEM, "out of memory");
    memcpy(p->names[k], t->name, stem);
    strcpy(p->names[k] + stem, PARTS[k]);
  }
  int64_t in = (int64_t)p->in, out = (int64_t)p->out, g = (int64_t)(p->in / o->group);
  int64_t shapes[4][2] = {{in / 8, out}, {g, out / 8}, {g, out}, {in, 0}};
  memcpy(p->shapes, shapes, sizeof shapes);
  return FDL_OK;
}

/* ---- writing ------------------------------------------------------------------------------ */

static fdl_status write_quantized(fdl_out *f, const plan *p, size_t group, fdl_err *err) {
  size_t n = p->out * p->in, groups = p->in / group;
  size_t nq = p->in / 8 * p->out, nz = groups * (p->out / 8), ns = groups * p->out;
  float *w = fdl_malloc(n * sizeof *w);
  uint32_t *qw = fdl_malloc(nq * sizeof *qw), *qz = fdl_malloc(nz * sizeof *qz);
  uint16_t *sc = fdl_malloc(ns * sizeof *sc);
  int32_t *gi = fdl_malloc(p->in * sizeof *gi);
  uint8_t *bytes = fdl_malloc((nq > p->in ? nq : p->in) * 4 + ns * 2);
  fdl_status s = FDL_OK;
  if (!w || !qw || !qz || !sc || !gi || !bytes)
    s = fdl_fail(err, FDL_NOMEM, "out of memory quantizing %s", p->src->name);
  if (s == FDL_OK) {
    fdl_tensor_widen_f32(p->src, 0, n, w);
    s = fdl_gptq_quantize_matrix(w, p->out, p->in, group, qw, qz, sc, gi, err);
    if (s != FDL_OK) fdl_err_prefix(err, "%s", p->src->name);
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

static fdl_status write_weights(const char *path, plan *pl, size_t n, const fdl_gptq_opts *o,
                                fdl_gptq_result *res, fdl_err *err) {
  size_t nt = 0;
  for (size_t i = 0; i < n; i++) nt += pl[i].quant ? 4 : 1;
  fdl_tensor_in *ti = fdl_calloc(nt ? nt : 1, sizeof *ti);
  json_t *meta = fdl_model_st_metadata();
  if (!ti || !meta) {
    free(ti);
    json_decref(meta);
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  static const uint8_t any = 0;
  static const fdl_dtype dts[4] = {FDL_DTYPE_I32, FDL_DTYPE_I32, FDL_DTYPE_F16, FDL_DTYPE_I32};
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    const fdl_tensor *t = pl[i].src;
    if (!pl[i].quant) {
      ti[k++] = (fdl_tensor_in){t->name, t->dtype, t->ndim, t->shape, t->nbytes ? t->data : &any};
      continue;
    }
    for (int j = 0; j < 4; j++)
      ti[k++] = (fdl_tensor_in){pl[i].names[j], dts[j], j == 3 ? 1 : 2, pl[i].shapes[j], &any};
  }
  fdl_out f = {-1, NULL, NULL, false};
  fdl_status s = fdl_out_open(&f, path, err);
  bool opened = s == FDL_OK;
  uint64_t bytes = 0;
  if (s == FDL_OK) s = fdl_model_st_header(&f, ti, nt, meta, &bytes, err);
  res->bytes += bytes;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    if (pl[i].quant) {
      s = write_quantized(&f, &pl[i], o->group, err);
      res->quantized++;
      res->params_quantized += (uint64_t)pl[i].out * pl[i].in;
    } else {
      s = fdl_out_write(&f, pl[i].src->data, (size_t)pl[i].src->nbytes, err);
      res->copied++;
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

/* deltanet: a Gated DeltaNet projection was quantized, so the loader must be told of them. */
static json_t *quant_config(const fdl_gptq_opts *o, bool deltanet) {
  json_t *mods = json_array();
  for (size_t i = 0; o->scope == FDL_GPTQ_SCOPE_ALL_LINEAR && i < sizeof ATTN / sizeof *ATTN; i++)
    json_array_append_new(mods, json_string(ATTN[i]));
  for (size_t i = 0; deltanet && i < sizeof DELTANET / sizeof *DELTANET; i++)
    json_array_append_new(mods, json_string(DELTANET[i]));
  for (size_t i = 0; i < sizeof MLP / sizeof *MLP; i++)
    json_array_append_new(mods, json_string(MLP[i]));
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
    if (ends_with(name, weights[i]) || ends_with(name, ".safetensors.index.json")) return true;
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
    if (!f || !*f || strchr(f, '/') || f[0] == '.' || !ends_with(f, ".safetensors"))
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
      if (ends_with(t->name, ".qweight") || ends_with(t->name, ".qzeros"))
        s = fdl_fail(err, FDL_REFUSED, "%s is already quantized (tensor %s)", o->model_dir,
                     t->name);
      else if (!where || strcmp(where, sh->name))
        s = fdl_fail(err, FDL_PARSE,
                     "%s: tensor %s is in %s, but model.safetensors.index.json says %s",
                     o->model_dir, t->name, sh->name, where ? where : "nothing");
      else
        s = plan_tensor(&sh->pl[i], t, o, err);
      *nq += sh->pl[i].quant;
    }
  }
  if (s == FDL_OK && map && total != json_object_size(map))
    s = fdl_fail(err, FDL_PARSE,
                 "%s: model.safetensors.index.json names %zu tensors, the shards hold %zu",
                 o->model_dir, json_object_size(map), total);
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
      int parts = p->quant ? 4 : 1;
      for (int q = 0; q < parts; q++)
        if (json_object_set_new(map, p->quant ? p->names[q] : p->src->name, json_string(sh->name)))
          s = fdl_fail(err, FDL_NOMEM, "out of memory");
      if (!p->quant) {
        total += p->src->nbytes;
      } else {
        uint64_t g = p->in / j->o->group;
        total += (uint64_t)p->in / 8 * p->out * 4 + g * (p->out / 8) * 4 + g * p->out * 2 +
                 (uint64_t)p->in * 4;
      }
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
  char *path = s == FDL_OK ? fdl_path_join(dir, "model.safetensors.index.json") : NULL;
  if (s == FDL_OK)
    s = path ? fdl_json_write_file(path, idx, FDL_JSON_PRETTY, err)
             : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  json_decref(map);
  json_decref(idx);
  return s;
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
  bool deltanet = false;
  for (size_t k = 0; k < j.nshards && s == FDL_OK; k++)
    for (size_t i = 0; i < j.shards[k].n; i++)
      deltanet = deltanet ||
                 (j.shards[k].pl[i].quant && strstr(j.shards[k].pl[i].src->name, ".linear_attn."));
  if (s == FDL_OK) {
    json_t *q = quant_config(o, deltanet);
    json_t *c = json_deep_copy(j.cfg);
    char *path = fdl_path_join(stage.path, "config.json");
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
    for (size_t i = 0; j.shards[k].pl && i < j.shards[k].n; i++)
      for (int q = 0; q < 4; q++) free(j.shards[k].pl[i].names[q]);
    free(j.shards[k].pl);
    fdl_safetensors_close(j.shards[k].st);
  }
  free(j.shards);
  json_decref(j.index);
  json_decref(j.cfg);
  return s;
}
