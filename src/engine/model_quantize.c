/* model_quantize.c - `fidelis quantize`: a Hugging Face model directory into its int4 GPTQ-v1
 * twin. Every input problem (an existing quantization, a shape that cannot be packed, a weight
 * in scope that is not a float matrix) is found before the output is staged; the weights are
 * then streamed tensor by tensor, so memory holds one float32 matrix at a time.
 *
 * Divisions: scope; planning; writing; the run. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sys.h"
#include "engine/model_internal.h"
#include "fidelis/json.h"
#include "fidelis/model.h"

/* ---- scope -------------------------------------------------------------------------------- */

static const char *const MLP[] = {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
static const char *const ATTN[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                   "self_attn.o_proj"};

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
  for (size_t i = 0; i < sizeof MLP / sizeof *MLP; i++) {
    snprintf(want, sizeof want, ".%s.weight", MLP[i]);
    if (ends_with(name, want)) return true;
  }
  for (size_t i = 0; scope == FDL_GPTQ_SCOPE_ALL_LINEAR && i < sizeof ATTN / sizeof *ATTN; i++) {
    snprintf(want, sizeof want, ".%s.weight", ATTN[i]);
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
  if (p->out % 8 || p->in % 8)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "tensor %s [%zu, %zu]: GPTQ packs 8 values per int32, so in and out must be "
                    "multiples of 8",
                    t->name, p->out, p->in);
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
  fdl_out f = {-1, NULL, NULL};
  fdl_status s = fdl_out_open(&f, path, err);
  bool opened = s == FDL_OK;
  if (s == FDL_OK) s = fdl_model_st_header(&f, ti, nt, meta, &res->bytes, err);
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

static json_t *quant_config(const fdl_gptq_opts *o) {
  json_t *mods = json_array();
  for (size_t i = 0; o->scope == FDL_GPTQ_SCOPE_ALL_LINEAR && i < sizeof ATTN / sizeof *ATTN; i++)
    json_array_append_new(mods, json_string(ATTN[i]));
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
  char *path = fdl_model_join(dir, name);
  if (!path) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s;
  if (!fdl_path_exists(path))
    s = fdl_fail(err, FDL_PARSE, "%s: not a model directory (no %s)", dir, name);
  else
    s = fdl_resolve_named(path, resolved, err);
  free(path);
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

/* Copies MODEL's other regular files (tokenizer, generation config, panel) byte for byte. */
static fdl_status copy_others(const char *dir, const char *to, fdl_err *err) {
  DIR *d = opendir(dir);
  if (!d) return fdl_fail(err, FDL_IO, "%s: cannot list the directory: %s", dir, strerror(errno));
  fdl_status s = FDL_OK;
  struct dirent *e;
  while (s == FDL_OK && (e = readdir(d))) {
    if (skipped_file(e->d_name)) continue;
    char *path = fdl_model_join(dir, e->d_name), *dst = fdl_model_join(to, e->d_name);
    struct stat st;
    if (!path || !dst)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      char *real = NULL, *data = NULL;
      size_t len = 0;
      s = fdl_resolve_named(path, &real, err);
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

fdl_status fdl_gptq_quantize_model(const fdl_gptq_opts *o, fdl_gptq_result *res, fdl_err *err) {
  memset(res, 0, sizeof *res);
  if (!o->model_dir || !*o->model_dir || !o->out_dir || !*o->out_dir)
    return fdl_fail(err, FDL_INVALID, "quantize: MODEL and OUT are required");
  if (o->group < 1) return fdl_fail(err, FDL_INVALID, "quantize: the group size must be >= 1");
  char *cfg_path = NULL, *st_path = NULL;
  json_t *cfg = NULL;
  fdl_safetensors *st = NULL;
  plan *pl = NULL;
  size_t n = 0;
  fdl_stage stage;
  memset(&stage, 0, sizeof stage);
  fdl_status s = model_file(o->model_dir, "config.json", &cfg_path, err);
  if (s == FDL_OK) s = fdl_json_load_file(cfg_path, NULL, &cfg, err);
  if (s == FDL_OK && !json_is_object(cfg))
    s = fdl_fail(err, FDL_PARSE, "%s: config.json is not a JSON object", o->model_dir);
  if (s == FDL_OK && json_object_get(cfg, "quantization_config"))
    s = fdl_fail(err, FDL_REFUSED,
                 "%s is already quantized (config.json has a quantization_config): quantize "
                 "the original model",
                 o->model_dir);
  if (s == FDL_OK) {
    char *idx = fdl_model_join(o->model_dir, "model.safetensors.index.json");
    char *one = fdl_model_join(o->model_dir, "model.safetensors");
    if (!idx || !one)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    else if (!fdl_path_exists(one) && fdl_path_exists(idx))
      s = fdl_fail(err, FDL_UNSUPPORTED,
                   "%s: a sharded checkpoint (model.safetensors.index.json); quantize reads one "
                   "model.safetensors",
                   o->model_dir);
    free(idx);
    free(one);
  }
  if (s == FDL_OK) s = model_file(o->model_dir, "model.safetensors", &st_path, err);
  if (s == FDL_OK) s = fdl_safetensors_open(st_path, &st, err);
  if (s == FDL_OK) {
    n = fdl_safetensors_count(st);
    pl = fdl_calloc(n ? n : 1, sizeof *pl);
    if (!pl) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  size_t nq = 0;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    const fdl_tensor *t = fdl_safetensors_at(st, i);
    if (ends_with(t->name, ".qweight") || ends_with(t->name, ".qzeros"))
      s = fdl_fail(err, FDL_REFUSED, "%s is already quantized (tensor %s)", o->model_dir, t->name);
    else
      s = plan_tensor(&pl[i], t, o, err);
    nq += pl[i].quant;
  }
  if (s == FDL_OK && !nq)
    s = fdl_fail(err, FDL_INVALID,
                 "%s: no weight in scope %s (expected *.mlp.gate_proj.weight ...)", o->model_dir,
                 fdl_gptq_scope_name(o->scope));
  if (s != FDL_OK && s != FDL_NOMEM) fdl_err_prefix(err, "quantize");
  if (s == FDL_OK) {
    s = fdl_stage_open(&stage, o->out_dir, 0, o->notice, o->notice_arg, err);
    if (s != FDL_OK) fdl_err_prefix(err, "quantize");
  }
  if (s == FDL_OK) {
    json_t *q = quant_config(o);
    json_t *c = json_deep_copy(cfg);
    char *path = fdl_model_join(stage.path, "config.json");
    if (!q || !c || !path || json_object_set_new(c, "quantization_config", q))
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    else
      s = fdl_json_write_file(path, c, FDL_JSON_PRETTY, err);
    json_decref(c);
    free(path);
  }
  if (s == FDL_OK) {
    char *path = fdl_model_join(stage.path, "model.safetensors");
    s = path ? write_weights(path, pl, n, o, res, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s != FDL_OK) fdl_err_prefix(err, "quantize %s", o->model_dir);
    free(path);
  }
  if (s == FDL_OK) s = copy_others(o->model_dir, stage.path, err);
  if (s == FDL_OK) s = fdl_stage_commit(&stage, err);
  fdl_stage_abort(&stage);
  for (size_t i = 0; pl && i < n; i++)
    for (int k = 0; k < 4; k++) free(pl[i].names[k]);
  free(pl);
  fdl_safetensors_close(st);
  json_decref(cfg);
  free(cfg_path);
  free(st_path);
  return s;
}
