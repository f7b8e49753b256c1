/* pack_tensor.c - per-record tensors and the head payload, checked and written.
 *
 * Every value is checked finite before anything is written (a NaN names its record, row, the
 * token position that row predicts from, and its column). Hidden states are stored as BF16:
 * BF16 input is copied byte for byte; F32 input is rounded to nearest-even and the capture says
 * so (dtype_lossless false plus a disclosure). With hidden_f32 they are stored as F32, and only
 * F32 input is taken. Logits are stored in the dtype they came in.
 * Tensors are written as the reference writer lays them out (fdl_safetensors_write), then their
 * three digests are computed from the file on disk, so the manifest describes what was written.
 *
 * Divisions: finiteness; opening inputs; records; the head. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/pack.h"
#include "json/json.h"
#include "base/sys.h"
#include "base/path.h"
#include "tensor/safetensors_json.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "pack copies little-endian tensor bytes verbatim; a big-endian host needs byte swaps"
#endif

/* ---- finiteness -------------------------------------------------------------------------- */

/* The token position a stored row predicts from (§7.3 keeps rows in ascending position). */
static int64_t row_position(const pk_ctx *c, const pk_record *r, int64_t row) {
  int64_t *rows = fdl_malloc((r->ntok ? r->ntok : 1) * sizeof *rows);
  if (!rows) return -1;
  int64_t kept = fdl_ds_scored_rows(r->mask, (int64_t)r->ntok, c->score_from, rows);
  int64_t pos = row >= 0 && row < kept ? rows[row] : -1;
  free(rows);
  return pos;
}

static fdl_status check_finite(pk_ctx *c, const pk_record *r, const uint8_t *data, fdl_dtype dt,
                               int64_t rows, int64_t width, const char *label, const char *when,
                               fdl_err *err) {
  bool nan = false;
  uint64_t at = fdl_tensor_first_nonfinite(data, dt, (uint64_t)rows * (uint64_t)width, &nan);
  if (at == UINT64_MAX) return FDL_OK;
  const char *what = nan ? "NaN" : "an infinity";
  int64_t row = (int64_t)(at / (uint64_t)width), col = (int64_t)(at % (uint64_t)width);
  if (!r)
    return fdl_pk_refuse(c, err, FDL_REF_NON_FINITE, FDL_NONFINITE,
                         "head %s: row %" PRId64 " column %" PRId64
                         " is %s%s; a head must be finite",
                         label, row, col, what, when);
  return fdl_pk_refuse(c, err, FDL_REF_NON_FINITE, FDL_NONFINITE,
                       "record %" PRId64 " row %" PRId64 " (predicting from token position %" PRId64
                       "), column %" PRId64 ": %s%s in %s; a capture must be finite",
                       r->index, row, row_position(c, r, row), col, what, when, label);
}

/* ---- opening inputs ---------------------------------------------------------------------- */

typedef struct {
  fdl_safetensors *st;
  fdl_npy *npy;
  const fdl_tensor *t;
  const char *key; /* the key it was found under ("" for .npy) */
} pk_input;

static void input_close(pk_input *in) {
  fdl_safetensors_close(in->st);
  fdl_npy_close(in->npy);
  memset(in, 0, sizeof *in);
}

/* Opens path and picks the tensor: the first of keys present, else the only tensor. */
/* named: the path as the user gave it, whose extension picks the format (a resolved Hugging Face
 * cache link ends in a blob hash, not in ".npy"). */
static fdl_status input_open(pk_ctx *c, const char *path, const char *named,
                             const char *const *keys, pk_input *in, fdl_err *err) {
  memset(in, 0, sizeof *in);
  if (fdl_ends_with(named, ".npy")) {
    if (fdl_npy_open(path, &in->npy, err) != FDL_OK)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_PARSE, "%s", fdl_err_msg(err));
    in->t = fdl_npy_tensor(in->npy);
    in->key = "";
    return FDL_OK;
  }
  if (fdl_safetensors_open(path, &in->st, err) != FDL_OK)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_PARSE, "%s", fdl_err_msg(err));
  for (size_t i = 0; keys[i] && !in->t; i++)
    if ((in->t = fdl_safetensors_find(in->st, keys[i]))) in->key = keys[i];
  if (!in->t && fdl_safetensors_count(in->st) == 1) {
    in->t = fdl_safetensors_at(in->st, 0);
    in->key = in->t->name;
  }
  if (!in->t) {
    size_t n = fdl_safetensors_count(in->st);
    input_close(in);
    return fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_PARSE,
                         "%s holds %zu tensors and none is named %s%s%s; give one tensor per file",
                         path, n, keys[0], keys[1] ? " or " : "", keys[1] ? keys[1] : "");
  }
  return FDL_OK;
}

/* ---- records ----------------------------------------------------------------------------- */

static fdl_status find_record_file(pk_ctx *c, const pk_record *r, char *path, size_t cap,
                                   bool *found, fdl_err *err) {
  char st[PATH_MAX], np[PATH_MAX];
  int a = snprintf(st, sizeof st, "%s/%04" PRId64 ".safetensors", c->o->tensor_dir, r->index);
  int b = snprintf(np, sizeof np, "%s/%04" PRId64 ".npy", c->o->tensor_dir, r->index);
  if (a < 0 || b < 0 || (size_t)a >= sizeof st || (size_t)b >= sizeof np || (size_t)a >= cap)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_BOUNDS, "tensor directory path too long");
  bool has_st = fdl_path_exists(st), has_np = fdl_path_exists(np);
  if (has_st && has_np)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "record %" PRId64 ": both %s and %s exist; keep one", r->index, st, np);
  *found = has_st || has_np;
  snprintf(path, cap, "%s", has_np ? np : st);
  return FDL_OK;
}

static const char *dtype_word(fdl_dtype t) {
  switch (t) {
  case FDL_DTYPE_BF16:
    return "bfloat16";
  case FDL_DTYPE_F16:
    return "float16";
  case FDL_DTYPE_F32:
    return "float32";
  case FDL_DTYPE_F64:
    return "float64";
  default:
    return "";
  }
}

static fdl_status write_record(pk_ctx *c, pk_record *r, const void *data, int64_t rows,
                               fdl_err *err) {
  bool hidden = !strcmp(c->form, "hidden");
  const char *key = hidden ? "hidden_states" : "logits";
  char rel[64], path[PATH_MAX];
  snprintf(rel, sizeof rel, "capture/%s_%04" PRId64 ".safetensors", hidden ? "hidden" : "logits",
           r->index);
  fdl_status s = fdl_pk_stage_path(c, rel, path, sizeof path, err);
  if (s != FDL_OK) return s;
  json_t *meta =
      json_pack("{s:s, s:s, s:s, s:s, s:s}", "capture_role",
                hidden ? "hidden_states_pre_lm_head" : "logits", "cut_point",
                c->semantic_point ? c->semantic_point
                                  : (hidden ? "after_final_rmsnorm_before_lm_head"
                                            : "lm_head_output_before_sampling"),
                "window_id", r->window_id ? r->window_id : "", "cold_run",
                c->run_name ? c->run_name : c->dataset_id, "dtype", dtype_word(c->stored));
  if (!meta) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  int64_t shape[2] = {rows, c->width};
  fdl_tensor_in tin = {key, c->stored, 2, shape, data};
  s = fdl_safetensors_write(path, &tin, 1, meta, err);
  json_decref(meta);
  if (s != FDL_OK) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, s, "%s", fdl_err_msg(err));
  fdl_ds_tensor_digests dg;
  if (fdl_ds_tensor_file_digests(path, key, &dg, err) != FDL_OK)
    return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_IO, "re-reading %s: %s", rel,
                         fdl_err_msg(err));
  if (dg.dtype != c->stored || dg.ndim != 2 || dg.shape[0] != rows || dg.shape[1] != c->width)
    return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_MISMATCH, "%s does not read back as written",
                         rel);
  memcpy(r->file_hex, dg.file_sha256, sizeof r->file_hex);
  memcpy(r->payload_hex, dg.payload_sha256, sizeof r->payload_hex);
  memcpy(r->content_hex, dg.content_sha256, sizeof r->content_hex);
  r->size_bytes = (int64_t)dg.size_bytes;
  return FDL_OK;
}

fdl_status fdl_pk_pack_record(pk_ctx *c, pk_record *r, fdl_err *err) {
  char path[PATH_MAX];
  bool found = false;
  fdl_status s = find_record_file(c, r, path, sizeof path, &found, err);
  if (s != FDL_OK) return s;
  if (!found) {
    if (c->o->allow_partial) return FDL_OK;
    return fdl_pk_refuse(c, err, FDL_REF_MISSING_FILE, FDL_REFUSED,
                         "record %" PRId64 ": no %04" PRId64 ".safetensors or %04" PRId64
                         ".npy in %s (a partial pack may leave records out)",
                         r->index, r->index, r->index, c->o->tensor_dir);
  }
  bool hidden = !strcmp(c->form, "hidden");
  static const char *const HIDDEN_KEYS[] = {"hidden_states", "hidden", NULL};
  static const char *const LOGIT_KEYS[] = {"logits", NULL};
  pk_input in;
  s = input_open(c, path, path, hidden ? HIDDEN_KEYS : LOGIT_KEYS, &in, err);
  if (s != FDL_OK) return s;
  const fdl_tensor *t = in.t;
  if (!strcmp(in.key, "hidden")) c->legacy_key = true;
  int64_t rows = t->ndim == 2 ? t->shape[0] : -1, width = t->ndim == 2 ? t->shape[1] : -1;
  uint16_t *converted = NULL;
  const void *data = t->data;
  if (t->ndim != 2) {
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_INVALID,
                      "%s: a record tensor is 2-D [scored_rows, %s], not %d-D", path,
                      hidden ? "hidden" : "vocab", t->ndim);
  } else if (rows != r->scored) {
    s = fdl_pk_refuse(
        c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
        "record %" PRId64 ": %s has %" PRId64 " rows but the panel record scores %" PRId64
        " positions (positions i < %zu-1 with mask[i] and mask[i+1]%s)",
        r->index, path, rows, r->scored, r->ntok, c->score_from ? " and i >= score_from" : "");
  } else if (width < 1 || (c->width > 0 && width != c->width)) {
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_INVALID,
                      "record %" PRId64 ": %s is %" PRId64 " wide but earlier records are %" PRId64,
                      r->index, path, width, c->width);
  } else if (hidden && c->o->hidden_f32 && t->dtype != FDL_DTYPE_F32) {
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_UNSUPPORTED,
                      "%s: F32 hidden-state storage was asked for (--hidden-dtype f32) but this "
                      "record is %s; widening would claim a precision it never had",
                      path, fdl_dtype_name(t->dtype));
  } else if (hidden && t->dtype != FDL_DTYPE_BF16 && t->dtype != FDL_DTYPE_F32) {
    s = fdl_pk_refuse(
        c, err, FDL_REF_BAD_TENSOR_FILE, FDL_UNSUPPORTED,
        "%s: hidden states come as BF16 (stored as is) or F32 (rounded to BF16), not %s", path,
        fdl_dtype_name(t->dtype));
  } else if (!hidden && t->dtype != FDL_DTYPE_BF16 && t->dtype != FDL_DTYPE_F16 &&
             t->dtype != FDL_DTYPE_F32 && t->dtype != FDL_DTYPE_F64) {
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_UNSUPPORTED,
                      "%s: logits come as F32, BF16, F16 or F64, not %s", path,
                      fdl_dtype_name(t->dtype));
  }
  fdl_dtype stored = hidden && !c->o->hidden_f32 ? FDL_DTYPE_BF16 : t->dtype;
  if (s == FDL_OK && c->stored != FDL_DTYPE_COUNT && stored != c->stored)
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_INVALID,
                      "record %" PRId64
                      ": %s is %s but earlier records were stored as %s; one dtype "
                      "per capture",
                      r->index, path, fdl_dtype_name(t->dtype), fdl_dtype_name(c->stored));
  bool narrow = hidden && !c->o->hidden_f32 && t->dtype == FDL_DTYPE_F32;
  if (s == FDL_OK && c->present && hidden && narrow != c->narrowed)
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_INVALID,
                      "record %" PRId64 ": %s mixes F32 and BF16 inputs across records", r->index,
                      path);
  if (s == FDL_OK) s = check_finite(c, r, t->data, t->dtype, rows, width, path, "", err);
  if (s == FDL_OK && narrow) {
    uint64_t n = (uint64_t)rows * (uint64_t)width;
    float *f = fdl_malloc(n ? n * sizeof *f : 1);
    converted = fdl_malloc(n ? n * sizeof *converted : 1);
    if (!f || !converted) {
      s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "record %" PRId64 ": out of memory",
                        r->index);
    } else {
      memcpy(f, t->data, n * sizeof *f);
      fdl_f32_to_bf16_n(f, converted, n);
      c->narrowed = true;
      data = converted;
      s = check_finite(c, r, (const uint8_t *)converted, FDL_DTYPE_BF16, rows, width, path,
                       " after rounding to BF16", err);
    }
    free(f);
  }
  if (s == FDL_OK) {
    c->stored = stored;
    c->width = width;
    s = write_record(c, r, data, rows, err);
  }
  free(converted);
  input_close(&in);
  if (s == FDL_OK) {
    r->present = true;
    c->present++;
    c->total_rows += rows;
    c->total_size += r->size_bytes;
  }
  return s;
}

/* ---- the head ---------------------------------------------------------------------------- */

static fdl_status declared_head(pk_ctx *c, fdl_err *err) {
  const char *content = c->decl.content, *dtype = c->decl.dtype;
  bool hidden = !strcmp(c->form, "hidden");
  if (!strcmp(c->role, "root"))
    return fdl_pk_refuse(c, err, FDL_REF_HEAD_MISMATCH, FDL_REFUSED,
                         "role root ships its head (HEAD-6): give its head file");
  if (hidden && !(content && fdl_sha256_hex_ok(content, strlen(content))))
    return fdl_pk_refuse(c, err, FDL_REF_HEAD_MISMATCH, FDL_REFUSED,
                         "a hidden-form dataset needs its head's content digest (HEAD-4): give "
                         "the head file, or meta head.tensor_content_sha256 with head.shape and "
                         "head.dtype");
  if (!c->decl.shaped || !dtype ||
      (strcmp(dtype, "BF16") && strcmp(dtype, "F16") && strcmp(dtype, "F32")))
    return fdl_pk_refuse(
        c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
        "without a head file, meta head.shape [vocab, hidden] and head.dtype (BF16, F16 "
        "or F32) describe the head the capture used");
  c->head.present = false;
  memcpy(c->head.shape, c->decl.shape, sizeof c->head.shape);
  c->head.dtype = !strcmp(dtype, "BF16") ? "BF16" : !strcmp(dtype, "F16") ? "F16" : "F32";
  if (c->head.shape[0] < 1 || c->head.shape[1] < 1)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "meta head.shape must be positive");
  snprintf(c->head.content_hex, sizeof c->head.content_hex, "%s", content ? content : "");
  snprintf(c->head.file_hex, sizeof c->head.file_hex, "%s", c->decl.file ? c->decl.file : "");
  return FDL_OK;
}

fdl_status fdl_pk_pack_head(pk_ctx *c, fdl_err *err) {
  if (!c->o->head_path) return declared_head(c, err);
  if (c->decl.content)
    return fdl_pk_refuse(
        c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
        "meta head.tensor_content_sha256 is computed from the head file; drop one of them");
  static const char *const KEYS[] = {"lm_head.weight", "weight", NULL};
  pk_input in;
  /* A file the user named may be a link (docs/DATASET.md, "Files and directories"): resolved
   * once, the target is opened without following anything further. */
  char *real = NULL;
  fdl_status s = fdl_resolve_named(c->o->head_path, &real, err);
  if (s != FDL_OK)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, s, "head: %s", fdl_err_msg(err));
  s = input_open(c, real, c->o->head_path, KEYS, &in, err);
  free(real);
  if (s != FDL_OK) return s;
  const fdl_tensor *t = in.t;
  if (t->ndim != 2 || t->shape[0] < 1 || t->shape[1] < 1)
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_INVALID,
                      "%s: the head is 2-D [vocab, hidden]", c->o->head_path);
  else if (t->dtype != FDL_DTYPE_BF16 && t->dtype != FDL_DTYPE_F16 && t->dtype != FDL_DTYPE_F32)
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_TENSOR_FILE, FDL_UNSUPPORTED,
                      "%s: a head is BF16, F16 or F32, not %s", c->o->head_path,
                      fdl_dtype_name(t->dtype));
  if (s == FDL_OK)
    s = check_finite(c, NULL, t->data, t->dtype, t->shape[0], t->shape[1], c->o->head_path, "",
                     err);
  char path[PATH_MAX];
  if (s == FDL_OK) s = fdl_pk_mkdir(c, "head", err);
  if (s == FDL_OK) s = fdl_pk_stage_path(c, "head/weight.safetensors", path, sizeof path, err);
  if (s == FDL_OK) {
    fdl_tensor_in tin = {"lm_head.weight", t->dtype, 2, t->shape, t->data};
    if (fdl_safetensors_write(path, &tin, 1, NULL, err) != FDL_OK)
      s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_IO, "%s", fdl_err_msg(err));
  }
  fdl_ds_tensor_digests dg;
  if (s == FDL_OK && fdl_ds_tensor_file_digests(path, "lm_head.weight", &dg, err) != FDL_OK)
    s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_IO, "re-reading the head: %s",
                      fdl_err_msg(err));
  if (s == FDL_OK) {
    c->head.present = true;
    c->head.shape[0] = t->shape[0];
    c->head.shape[1] = t->shape[1];
    c->head.dtype = fdl_dtype_name(t->dtype);
    memcpy(c->head.file_hex, dg.file_sha256, sizeof c->head.file_hex);
    memcpy(c->head.content_hex, dg.content_sha256, sizeof c->head.content_hex);
  }
  input_close(&in);
  return s;
}
