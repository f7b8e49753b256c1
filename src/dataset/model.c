/* model.c - a dataset's documents as parsed trees plus typed, borrowed views of its records.
 *
 * Loading is lenient on purpose: it never judges (fdl_ds_validate does, with codes), it only
 * refuses a directory that is not a v1 dataset at all. Mistyped fields read as NULL / -1 so a
 * consumer can still summarise a damaged dataset. The json_t trees are kept whole, unknown keys
 * included, so re-serialising a loaded document reproduces every key it was read with. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/order.h"
#include "dataset/ds_internal.h"
#include "base/sys.h"

static int64_t int_or(const json_t *o, const char *key, int64_t dflt) {
  int64_t v;
  return fdl_ds_int(o, key, &v) ? v : dflt;
}

static fdl_role role_of(const char *s) {
  int i = fdl_vocab_find(fdl_role_names, s);
  return i < 0 ? FDL_ROLE_COUNT : (fdl_role)i;
}

static fdl_form form_of(const char *s) {
  int i = fdl_vocab_find(fdl_form_names, s);
  return i < 0 ? FDL_FORM_COUNT : (fdl_form)i;
}

static fdl_lane lane_of(const char *s) {
  int i = fdl_vocab_find(fdl_lane_names, s);
  return i < 0 ? FDL_LANE_COUNT : (fdl_lane)i;
}

void fdl_ds_manifest_decode(const json_t *m, fdl_ds_manifest *d) {
  const json_t *ds = fdl_ds_obj(m, "dataset"), *w = fdl_ds_obj(m, "weights"),
               *p = fdl_ds_obj(m, "panel"), *c = fdl_ds_obj(m, "capture"),
               *h = fdl_ds_obj(m, "head"), *r = fdl_ds_obj(m, "runtime"),
               *pv = fdl_ds_obj(m, "preview");
  d->dataset.id = fdl_ds_str(ds, "id");
  d->dataset.repository = fdl_ds_str(ds, "repository");
  d->dataset.revision = fdl_ds_str(ds, "revision");
  d->dataset.role = role_of(fdl_ds_str(ds, "role"));
  d->dataset_sha256 = fdl_ds_str(m, "dataset_sha256");
  d->not_submittable = json_is_true(json_object_get(m, "not_submittable"));
  d->preview = json_object_size(pv) > 0;
  d->weights.model_revision = fdl_ds_str(w, "model_revision");
  d->weights.checkpoint_identity_sha256 = fdl_ds_str(w, "checkpoint_identity_sha256");
  d->scope.scope_digest = fdl_ds_str(fdl_ds_obj(m, "scope"), "scope_digest");
  d->panel.panel_id = fdl_ds_str(p, "panel_id");
  d->panel.panel_file = fdl_ds_str(p, "panel_file");
  d->panel.panel_file_sha256 = fdl_ds_str(p, "panel_file_sha256");
  d->panel.suite_token_hash_sha256 = fdl_ds_str(p, "suite_token_hash_sha256");
  d->panel.panel_token_sha256_legacy = fdl_ds_str(p, "panel_token_sha256_legacy");
  d->capture.form = form_of(fdl_ds_str(c, "form"));
  d->capture.manifest_file = fdl_ds_str(c, "manifest_file");
  d->capture.manifest_file_sha256 = fdl_ds_str(c, "manifest_file_sha256");
  d->capture.capture_content_digest = fdl_ds_str(c, "capture_content_digest");
  d->capture.dtype = fdl_ds_str(c, "dtype");
  d->capture.dtype_lossy = json_is_false(json_object_get(c, "dtype_lossless"));
  const json_t *lc = json_object_get(c, "lossy_codec");
  d->capture.lossy_codec = lc && !json_is_null(lc);
  d->capture.vocab_size = int_or(c, "vocab_size", -1);
  d->capture.hidden_width = int_or(c, "hidden_width", -1);
  d->head.head_json = fdl_ds_str(h, "head_json");
  d->head.file = fdl_ds_str(h, "file");
  d->head.file_sha256 = fdl_ds_str(h, "file_sha256");
  d->head.tensor_key = fdl_ds_str(h, "tensor_key");
  d->head.tensor_content_sha256 = fdl_ds_str(h, "tensor_content_sha256");
  d->head.raw_tensor_sha256 = fdl_ds_str(h, "raw_tensor_sha256");
  d->runtime.lane = lane_of(fdl_ds_str(r, "lane"));
  d->runtime.file = fdl_ds_str(r, "file");
  d->runtime.file_sha256 = fdl_ds_str(r, "file_sha256");
  d->runtime.lane_identity_sha256 = fdl_ds_str(r, "lane_identity_sha256");
  d->runtime.stack_fingerprint_sha256 = fdl_ds_str(r, "stack_fingerprint_sha256");
  d->coverage.complete = json_is_true(json_object_get(fdl_ds_obj(m, "coverage"), "complete"));
}

static json_t *load_opt(int rootfd, const char *rel) {
  json_t *doc = NULL;
  if (!rel) return NULL;
  if (fdl_ds_load_json_at(rootfd, rel, &doc, NULL, NULL) != FDL_OK) return NULL;
  if (!json_is_object(doc)) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

static int cmp_capture(const void *a, const void *b) {
  return fdl_order_cmp_i64(((const fdl_ds_capture_record *)a)->index,
                           ((const fdl_ds_capture_record *)b)->index);
}

static int cmp_panel(const void *a, const void *b) {
  return fdl_order_cmp_i64(((const fdl_ds_panel_record *)a)->index,
                           ((const fdl_ds_panel_record *)b)->index);
}

static fdl_status capture_views(fdl_dataset *ds, fdl_err *err) {
  const json_t *records = fdl_ds_arr(ds->capture, "records");
  size_t n = json_array_size(records);
  ds->records = fdl_calloc(n ? n : 1, sizeof *ds->records);
  if (!ds->records) return fdl_fail(err, FDL_NOMEM, "dataset: out of memory");
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    fdl_ds_capture_record *c = &ds->records[ds->n_records++];
    c->json = r;
    c->index = int_or(r, "index", -1);
    c->file = fdl_ds_str(r, "file");
    c->key = fdl_ds_str(r, "key");
    c->dtype = fdl_ds_str(r, "dtype");
    const json_t *shape = fdl_ds_arr(r, "shape");
    for (size_t k = 0; k < 2; k++) {
      const json_t *d = json_array_get(shape, k);
      c->shape[k] = json_is_integer(d) ? (int64_t)json_integer_value(d) : -1;
    }
    c->scored_rows = int_or(r, "scored_rows", -1);
    c->size_bytes = int_or(r, "size_bytes", -1);
    c->sha256 = fdl_ds_str(r, "sha256");
    c->payload_sha256 = fdl_ds_str(r, "payload_sha256");
    c->tensor_content_sha256 = fdl_ds_str(r, "tensor_content_sha256");
    c->token_ids_json_sha256 = fdl_ds_str(r, "token_ids_json_sha256");
    c->attention_mask_sha256 = fdl_ds_str(r, "attention_mask_sha256");
    c->window_id = fdl_ds_str(r, "window_id");
    c->domain = fdl_ds_str(r, "domain");
    c->allocation_stratum = fdl_ds_str(r, "allocation_stratum");
  }
  if (ds->n_records) qsort(ds->records, ds->n_records, sizeof *ds->records, cmp_capture);
  return FDL_OK;
}

static fdl_status panel_views(fdl_dataset *ds, fdl_err *err) {
  const json_t *records = fdl_ds_arr(ds->panel, "records");
  size_t n = json_array_size(records);
  ds->panel_records = fdl_calloc(n ? n : 1, sizeof *ds->panel_records);
  if (!ds->panel_records) return fdl_fail(err, FDL_NOMEM, "dataset: out of memory");
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    fdl_ds_panel_record *p = &ds->panel_records[ds->n_panel_records++];
    p->json = r;
    p->index = int_or(r, "index", -1);
    p->token_file = fdl_ds_str(r, "token_file");
    p->attention_mask_file = fdl_ds_str(r, "attention_mask_file");
    p->token_ids_json_sha256 = fdl_ds_str(r, "token_ids_json_sha256");
    p->attention_mask_sha256 = fdl_ds_str(r, "attention_mask_sha256");
    p->num_tokens = int_or(r, "num_tokens", -1);
    p->prediction_positions = int_or(r, "prediction_positions", -1);
    p->window_id = fdl_ds_str(r, "window_id");
    p->domain = fdl_ds_str(r, "domain");
  }
  if (ds->n_panel_records)
    qsort(ds->panel_records, ds->n_panel_records, sizeof *ds->panel_records, cmp_panel);
  return FDL_OK;
}

fdl_status fdl_dataset_load(const char *root, fdl_dataset *ds, fdl_err *err) {
  fdl_dataset tmp;
  memset(&tmp, 0, sizeof tmp);
  int fd = fdl_sys_open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fdl_fail(err, FDL_IO, "%s: not a readable directory", root);
  fdl_status s = fdl_ds_load_json_at(fd, FDL_DS_MANIFEST_NAME, &tmp.manifest, NULL, err);
  if (s != FDL_OK) {
    close(fd);
    return fdl_err_prefix(err, "%s", root);
  }
  const char *schema = fdl_ds_str(tmp.manifest, "schema");
  if (!schema || strcmp(schema, FDL_DS_SCHEMA)) {
    close(fd);
    json_decref(tmp.manifest);
    return fdl_fail(err, FDL_UNSUPPORTED, "%s/%s: schema is not %s (bad_schema)", root,
                    FDL_DS_MANIFEST_NAME, FDL_DS_SCHEMA);
  }
  const fdl_ds_manifest *m = &tmp.m;
  fdl_ds_manifest_decode(tmp.manifest, &tmp.m);
  tmp.capture =
      load_opt(fd, m->capture.manifest_file ? m->capture.manifest_file : "capture/manifest.json");
  tmp.panel = load_opt(fd, m->panel.panel_file ? m->panel.panel_file : "panel/panel.json");
  tmp.head = load_opt(fd, m->head.head_json);
  tmp.runtime = load_opt(fd, m->runtime.file ? m->runtime.file : "runtime/capture-runtime.json");
  close(fd);
  s = capture_views(&tmp, err);
  if (s == FDL_OK) s = panel_views(&tmp, err);
  if (s != FDL_OK) {
    fdl_dataset_free(&tmp);
    return s;
  }
  *ds = tmp;
  return FDL_OK;
}

void fdl_dataset_free(fdl_dataset *ds) {
  if (!ds) return;
  json_decref(ds->manifest);
  json_decref(ds->capture);
  json_decref(ds->panel);
  json_decref(ds->head);
  json_decref(ds->runtime);
  free(ds->records);
  free(ds->panel_records);
  memset(ds, 0, sizeof *ds);
}
