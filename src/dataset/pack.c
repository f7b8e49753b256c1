/* pack.c - `fidelis pack`: any engine's per-record dumps into a sealed dataset (docs/PACK.md).
 *
 * The dataset is built in a temporary sibling of the output directory, sealed in the order of
 * §5.4, validated, and only then moved into place with a no-replace rename. A refusal at any
 * point removes the staging directory: the output appears whole or not at all, and an existing
 * output is never touched.
 *
 * Divisions: staging helpers; payload files; the run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/path.h"
#include "dataset/dataset_json.h"
#include "dataset/pack.h"
#include "json/json.h"
#include "base/sys.h"

/* ---- staging helpers --------------------------------------------------------------------- */

fdl_status fdl_pk_stage_path(const pk_ctx *c, const char *rel, char *out, size_t cap,
                             fdl_err *err) {
  if (!fdl_path_join_to(c->stage, rel, out, cap))
    return fdl_fail(err, FDL_BOUNDS, "%s/%s: path too long", c->stage, rel);
  return FDL_OK;
}

fdl_status fdl_pk_mkdir(const pk_ctx *c, const char *rel, fdl_err *err) {
  char path[PATH_MAX];
  fdl_status s = fdl_pk_stage_path(c, rel, path, sizeof path, err);
  return s == FDL_OK ? fdl_mkdirs(path, err) : s;
}

static void created_now(pk_ctx *c) {
  if (c->created[0]) return;
  /* A fixed time from the caller makes a re-pack of the same inputs byte-identical. */
  if (c->o->created_utc && *c->o->created_utc) {
    snprintf(c->created, sizeof c->created, "%s", c->o->created_utc);
    return;
  }
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(c->created, sizeof c->created, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ---- payload files ----------------------------------------------------------------------- */

static fdl_status write_hashed(pk_ctx *c, const char *rel, const fdl_buf *b, char *hex,
                               fdl_err *err) {
  char path[PATH_MAX];
  fdl_status s = fdl_pk_stage_path(c, rel, path, sizeof path, err);
  if (s == FDL_OK && fdl_write_file(path, b->data, b->len, err) != FDL_OK)
    s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_IO, "%s", fdl_err_msg(err));
  if (s == FDL_OK && fdl_sha256_buf_hex(b->data, b->len, hex, err) != FDL_OK) s = FDL_NOMEM;
  return s;
}

/* panel/tokens/context-NNNN.json: the compact id list, no newline, so its file digest is its
 * token_ids_json_sha256 (§5.1). */
static fdl_status write_tokens(pk_ctx *c, pk_record *r, fdl_err *err) {
  char rel[64];
  snprintf(rel, sizeof rel, "panel/tokens/context-%04" PRId64 ".json", r->index);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = fdl_ds_token_ids_json(r->tokens, r->ntok, false, &b, err);
  if (s == FDL_OK) s = write_hashed(c, rel, &b, r->tok_hex, err);
  if (s == FDL_OK) s = fdl_ds_token_digest(r->tokens, r->ntok, true, r->tok_legacy, err);
  fdl_buf_free(&b);
  return s;
}

/* panel/masks/context-NNNN.npy: a 1-D uint8 array, laid out as np.save writes it. */
static fdl_status write_mask(pk_ctx *c, pk_record *r, fdl_err *err) {
  char rel[64];
  snprintf(rel, sizeof rel, "panel/masks/context-%04" PRId64 ".npy", r->index);
  int64_t shape[1] = {(int64_t)r->ntok};
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = fdl_npy_header(FDL_DTYPE_U8, 1, shape, &b, err);
  if (s == FDL_OK) {
    if (r->mask) {
      fdl_buf_append(&b, r->mask, r->ntok);
    } else {
      for (size_t i = 0; i < r->ntok; i++) fdl_buf_putc(&b, 1);
    }
    if (fdl_buf_status(&b) != FDL_OK) s = fdl_fail(err, FDL_NOMEM, "mask: out of memory");
  }
  if (s == FDL_OK) s = write_hashed(c, rel, &b, r->mask_hex, err);
  fdl_buf_free(&b);
  return s;
}

/* ---- the run ----------------------------------------------------------------------------- */

/* The vocabulary and widths must agree across meta, head and records. */
static fdl_status reconcile(pk_ctx *c, fdl_err *err) {
  bool hidden = !strcmp(c->form, "hidden");
  int64_t vocab = hidden ? c->head.shape[0] : c->width;
  if (c->vocab > 0 && c->vocab != vocab)
    return fdl_pk_refuse(c, err, FDL_REF_HEAD_MISMATCH, FDL_MISMATCH,
                         "meta vocab_size %" PRId64 " but the %s says %" PRId64, c->vocab,
                         hidden ? "head's first dimension" : "logit width", vocab);
  c->vocab = vocab;
  if (hidden && c->head.shape[1] != c->width)
    return fdl_pk_refuse(c, err, FDL_REF_HEAD_MISMATCH, FDL_MISMATCH,
                         "hidden states are %" PRId64 " wide but the head is [%" PRId64 ", %" PRId64
                         "]; replay multiplies one by the other",
                         c->width, c->head.shape[0], c->head.shape[1]);
  if (!hidden && c->head.shape[0] != vocab)
    return fdl_pk_refuse(c, err, FDL_REF_HEAD_MISMATCH, FDL_MISMATCH,
                         "logits are %" PRId64 " wide but the head has %" PRId64 " rows", vocab,
                         c->head.shape[0]);
  for (size_t i = 0; i < c->n; i++)
    for (size_t k = 0; k < c->recs[i].ntok; k++)
      if (c->recs[i].tokens[k] >= vocab)
        return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                             "record %" PRId64 " token %zu is id %" PRId64
                             ", outside the vocabulary of %" PRId64 " (14.1)",
                             c->recs[i].index, k, c->recs[i].tokens[k], vocab);
  return FDL_OK;
}

static fdl_status content_digest(pk_ctx *c, fdl_err *err) {
  fdl_ds_content_item *items = fdl_calloc(c->n, sizeof *items);
  if (!items) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < c->n; i++)
    if (c->recs[i].present)
      items[k++] = (fdl_ds_content_item){c->recs[i].index, c->recs[i].content_hex};
  fdl_status s = fdl_ds_capture_content_digest(items, k, c->content_digest, err);
  free(items);
  return s;
}

/* The built manifest must pass the schema layer before anything is sealed. */
static fdl_status precheck(pk_ctx *c, const fdl_ds_docs *docs, fdl_err *err) {
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_ds_check_manifest_schema(docs->manifest, &rep);
  fdl_status s = FDL_OK;
  if (rep.errors.count)
    s = fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_REFUSED,
                      "the manifest built from the meta is "
                      "not schema-valid: %s",
                      rep.errors.items[0].message);
  else if (rep.oom != FDL_OK)
    s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  fdl_ds_report_free(&rep);
  return s;
}

/* Validates the staged dataset; any error is a refusal (the reference's dataset_invalid). */
static fdl_status validate_stage(pk_ctx *c, fdl_err *err) {
  fdl_ds_validate_opts vo;
  memset(&vo, 0, sizeof vo);
  vo.allow_partial = c->o->allow_partial;
  vo.threads = c->o->threads;
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_status s = fdl_ds_validate(c->stage, &vo, &rep, err);
  if (s == FDL_OK && rep.errors.count) {
    const fdl_ds_finding *f = &rep.errors.items[0];
    s = fdl_pk_refuse(
        c, err, FDL_REF_DATASET_INVALID, FDL_REFUSED,
        "the packed dataset fails validation with %zu error(s); first: [%s/%s] %s (%s)",
        rep.errors.count, fdl_ds_code_name(f->code), f->rule, f->message, f->where);
  } else if (s != FDL_OK) {
    c->res->refusal.code = FDL_REF_IO_ERROR;
  }
  fdl_ds_report_free(&rep);
  return s;
}

/* Created before any input is read: it is the check that OUT can be written at all. */
static fdl_status make_stage(pk_ctx *c, fdl_err *err) {
  fdl_status s = fdl_stage_open(&c->st, c->o->out_dir, 0, c->o->notice, c->o->notice_arg, err);
  if (s != FDL_OK)
    return fdl_pk_refuse(c, err, s == FDL_EXISTS ? FDL_REF_DESTINATION_EXISTS : FDL_REF_IO_ERROR, s,
                         "%s", fdl_err_msg(err));
  int w = snprintf(c->stage, sizeof c->stage, "%s", c->st.path);
  if (w < 0 || (size_t)w >= sizeof c->stage)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_BOUNDS, "%s: path too long", c->st.path);
  return FDL_OK;
}

static fdl_status run(pk_ctx *c, fdl_ds_docs *docs, fdl_err *err) {
  fdl_status s = make_stage(c, err);
  if (s == FDL_OK) s = fdl_pk_read_meta(c, err);
  if (s == FDL_OK) s = fdl_pk_read_panel(c, err);
  if (s == FDL_OK) s = fdl_pk_check_tensor_dir(c, err);
  if (s != FDL_OK) return s;
  created_now(c);
  c->stored = FDL_DTYPE_COUNT;
  s = fdl_pk_mkdir(c, "panel/tokens", err);
  if (s == FDL_OK && c->masks) s = fdl_pk_mkdir(c, "panel/masks", err);
  if (s == FDL_OK) s = fdl_pk_mkdir(c, "capture", err);
  if (s == FDL_OK) s = fdl_pk_pack_head(c, err);
  for (size_t i = 0; s == FDL_OK && i < c->n; i++) {
    pk_record *r = &c->recs[i];
    s = write_tokens(c, r, err);
    if (s == FDL_OK && c->masks) s = write_mask(c, r, err);
    if (s == FDL_OK) s = fdl_pk_pack_record(c, r, err);
  }
  if (s != FDL_OK) return s;
  if (!c->present)
    return fdl_pk_refuse(c, err, FDL_REF_MISSING_FILE, FDL_REFUSED, "no record tensor found in %s",
                         c->o->tensor_dir);
  s = reconcile(c, err);
  if (s == FDL_OK) s = content_digest(c, err);
  if (s == FDL_OK) s = fdl_pk_build_docs(c, docs, err);
  if (s == FDL_OK) s = precheck(c, docs, err);
  if (s == FDL_OK) s = fdl_pk_write_card(c, docs, err);
  if (s == FDL_OK &&
      (s = fdl_ds_write_sealed(c->stage, docs, c->res->dataset_sha256, err)) != FDL_OK)
    s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, s, "sealing: %s", fdl_err_msg(err));
  if (s == FDL_OK) s = validate_stage(c, err);
  /* one rename: whole or not at all */
  if (s == FDL_OK && (s = fdl_stage_commit(&c->st, err)) != FDL_OK)
    s = fdl_pk_refuse(c, err, s == FDL_EXISTS ? FDL_REF_DESTINATION_EXISTS : FDL_REF_IO_ERROR, s,
                      "%s", fdl_err_msg(err));
  return s;
}

fdl_status fdl_ds_pack(const fdl_ds_pack_opts *o, fdl_ds_pack_result *res, fdl_err *err) {
  fdl_ds_pack_result r;
  memset(&r, 0, sizeof r);
  pk_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.res = &r;
  fdl_status s;
  if (!o || !o->panel_path || !o->tensor_dir || !o->meta_path || !o->out_dir) {
    s = fdl_pk_refuse(
        &c, err, FDL_REF_BAD_USAGE, FDL_INVALID,
        "pack needs a panel, a tensor directory, a meta file and an output directory");
  } else if (fdl_path_exists(o->out_dir)) {
    s = fdl_pk_refuse(&c, err, FDL_REF_DESTINATION_EXISTS, FDL_EXISTS,
                      "%s already exists; pack never overwrites (choose a new directory)",
                      o->out_dir);
  } else {
    fdl_ds_docs docs;
    memset(&docs, 0, sizeof docs);
    s = run(&c, &docs, err);
    fdl_pk_free_docs(&docs);
  }
  fdl_stage_abort(&c.st); /* after a commit, only releases */
  if (s == FDL_OK) {
    memcpy(r.capture_content_digest, c.content_digest, sizeof r.capture_content_digest);
    r.records = c.present;
    r.scored_rows = (uint64_t)c.total_rows;
    r.refusal.code = FDL_REF_NONE;
  } else {
    if (r.refusal.code == FDL_REF_NONE) r.refusal.code = FDL_REF_IO_ERROR;
    r.refusal.status = s;
  }
  if (res) *res = r;
  fdl_pk_free_panel(&c);
  json_decref(c.meta);
  return s;
}

fdl_status fdl_ds_pack_staged(const char *dir, const char *head, const char *meta_name,
                              const json_t *meta, const char *out, const fdl_ds_pack_opts *base,
                              fdl_ds_pack_result *res, fdl_err *err) {
  char *panel = fdl_path_join(dir, "panel.jsonl"), *tensors = fdl_path_join(dir, "tensors"),
       *head_path = head ? fdl_path_join(dir, head) : NULL,
       *meta_path = fdl_path_join(dir, meta_name);
  fdl_status s = panel && tensors && meta_path && (head_path || !head)
                     ? FDL_OK
                     : fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK && meta) s = fdl_json_write_file(meta_path, meta, FDL_JSON_PRETTY, err);
  if (s == FDL_OK) {
    fdl_ds_pack_opts o = *base;
    o.panel_path = base->panel_path ? base->panel_path : panel;
    o.tensor_dir = tensors;
    o.head_path = head_path;
    o.meta_path = meta_path;
    o.out_dir = out;
    s = fdl_ds_pack(&o, res, err);
  }
  free(panel);
  free(tensors);
  free(head_path);
  free(meta_path);
  return s;
}
