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

/* A string member of a decoded struct, named as its document's (dotted) key path. */
typedef struct {
  const char *path;
  size_t at; /* offsetof the const char * member */
} str_field;
#define STR_FIELD(type, member)                                                                    \
  { #member, offsetof(type, member) }

/* Sets every string member listed in f from o (NULL when absent or not a string). */
static void decode_strings(const json_t *o, const str_field *f, size_t n, void *out) {
  for (size_t i = 0; i < n; i++)
    *(const char **)((char *)out + f[i].at) = fdl_json_path_str(o, f[i].path);
}

/* The boolean at path, FDL_DS_UNSET when absent or not a boolean. */
static fdl_ds_bool bool_at(const json_t *o, const char *path) {
  const json_t *v = fdl_json_path(o, path);
  return json_is_boolean(v) ? (fdl_ds_bool)json_is_true(v) : FDL_DS_UNSET;
}

/* The enum of the name at path in a vocab.h list, or count when absent or not listed. */
static int enum_at(const json_t *o, const char *path, const char *const *names, int count) {
  int i = fdl_vocab_find(names, fdl_json_path_str(o, path));
  return i < 0 ? count : i;
}

#define MF(member) STR_FIELD(fdl_ds_manifest, member)
static const str_field MANIFEST_STRINGS[] = {MF(dataset.id),
                                             MF(dataset.name),
                                             MF(dataset.license),
                                             MF(dataset.repository),
                                             MF(dataset.revision),
                                             MF(dataset.structural_status),
                                             MF(dataset_sha256),
                                             MF(seal.checksums_sha256),
                                             MF(weights.repository),
                                             MF(weights.revision),
                                             MF(weights.model_revision),
                                             MF(weights.checkpoint_identity_sha256),
                                             MF(scope.scope_digest),
                                             MF(scope.policy),
                                             MF(panel.panel_id),
                                             MF(panel.panel_file),
                                             MF(panel.panel_file_sha256),
                                             MF(panel.suite_token_hash_sha256),
                                             MF(panel.panel_token_sha256_legacy),
                                             MF(panel.panel_receipt_file),
                                             MF(panel.panel_receipt_sha256),
                                             MF(panel.remap_file),
                                             MF(capture.manifest_file),
                                             MF(capture.manifest_file_sha256),
                                             MF(capture.capture_content_digest),
                                             MF(capture.dtype),
                                             MF(capture.semantic_point),
                                             MF(head.head_json),
                                             MF(head.file),
                                             MF(head.file_sha256),
                                             MF(head.tensor_key),
                                             MF(head.tensor_content_sha256),
                                             MF(head.raw_tensor_sha256),
                                             MF(head.source),
                                             MF(head.dtype),
                                             MF(runtime.file),
                                             MF(runtime.file_sha256),
                                             MF(runtime.lane_identity_sha256),
                                             MF(runtime.stack_fingerprint_sha256)};

void fdl_ds_manifest_decode(const json_t *m, fdl_ds_manifest *d) {
  decode_strings(m, MANIFEST_STRINGS, sizeof MANIFEST_STRINGS / sizeof *MANIFEST_STRINGS, d);
  d->dataset.role = (fdl_role)enum_at(m, "dataset.role", fdl_role_names, FDL_ROLE_COUNT);
  d->capture.form = (fdl_form)enum_at(m, "capture.form", fdl_form_names, FDL_FORM_COUNT);
  d->runtime.lane = (fdl_lane)enum_at(m, "runtime.lane", fdl_lane_names, FDL_LANE_COUNT);
  d->not_submittable = json_is_true(json_object_get(m, "not_submittable"));
  d->preview = json_object_size(fdl_json_obj(m, "preview")) > 0;
  const json_t *c = fdl_json_obj(m, "capture"), *lc = json_object_get(c, "lossy_codec");
  d->capture.dtype_lossless = bool_at(c, "dtype_lossless");
  d->capture.lossy_codec = lc && !json_is_null(lc);
  d->capture.vocab_size = fdl_json_path_int(c, "vocab_size", -1);
  d->capture.hidden_width = fdl_json_path_int(c, "hidden_width", -1);
  d->capture.records_count = fdl_json_path_int(c, "records_count", -1);
  d->panel.context_length = fdl_json_path_int(m, "panel.context_length", -1);
  d->panel.contexts = fdl_json_path_int(m, "panel.contexts", -1);
  d->panel.scored_positions_total = fdl_json_path_int(m, "panel.scored_positions_total", -1);
  d->head.present = bool_at(m, "head.present");
  const json_t *shape = fdl_json_path(m, "head.shape");
  bool pair = json_array_size(shape) == 2 && json_is_integer(json_array_get(shape, 0)) &&
              json_is_integer(json_array_get(shape, 1));
  for (size_t k = 0; k < 2; k++)
    d->head.shape[k] = pair ? (int64_t)json_integer_value(json_array_get(shape, k)) : -1;
  d->panel.scoring_window.score_from = fdl_json_path_int(m, "panel.scoring_window.score_from", 0);
  d->panel.tokenizer.vocab_size = fdl_json_path_int(m, "panel.tokenizer.vocab_size", -1);
  d->coverage.complete = bool_at(m, "coverage.complete");
  d->coverage.declared_records = fdl_json_path_int(m, "coverage.declared_records", -1);
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

#define CR(member) STR_FIELD(fdl_ds_capture_record, member)
static const str_field CAPTURE_STRINGS[] = {CR(file),
                                            CR(key),
                                            CR(dtype),
                                            CR(sha256),
                                            CR(payload_sha256),
                                            CR(tensor_content_sha256),
                                            CR(token_ids_json_sha256),
                                            CR(attention_mask_sha256),
                                            CR(window_id),
                                            CR(domain),
                                            CR(allocation_stratum)};
#define PR(member) STR_FIELD(fdl_ds_panel_record, member)
static const str_field PANEL_STRINGS[] = {PR(token_file),
                                          PR(attention_mask_file),
                                          PR(token_ids_json_sha256),
                                          PR(attention_mask_sha256),
                                          PR(window_id),
                                          PR(domain)};

static const str_field RUNTIME_STRINGS[] = {
    STR_FIELD(fdl_ds_runtime_view, stack_fingerprint.engine),
    STR_FIELD(fdl_ds_runtime_view, stack_fingerprint.device),
    STR_FIELD(fdl_ds_runtime_view, stack_fingerprint.device_name)};

static fdl_status capture_views(fdl_dataset *ds, fdl_err *err) {
  const json_t *records = fdl_json_arr(ds->capture, "records");
  size_t n = json_array_size(records);
  ds->records = fdl_calloc(n ? n : 1, sizeof *ds->records);
  if (!ds->records) return fdl_fail(err, FDL_NOMEM, "dataset: out of memory");
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    fdl_ds_capture_record *c = &ds->records[ds->n_records++];
    c->json = r;
    c->index = fdl_json_path_int(r, "index", -1);
    const json_t *shape = fdl_json_arr(r, "shape");
    for (size_t k = 0; k < 2; k++) {
      const json_t *d = json_array_get(shape, k);
      c->shape[k] = json_is_integer(d) ? (int64_t)json_integer_value(d) : -1;
    }
    c->scored_rows = fdl_json_path_int(r, "scored_rows", -1);
    c->size_bytes = fdl_json_path_int(r, "size_bytes", -1);
    decode_strings(r, CAPTURE_STRINGS, sizeof CAPTURE_STRINGS / sizeof *CAPTURE_STRINGS, c);
  }
  if (ds->n_records) qsort(ds->records, ds->n_records, sizeof *ds->records, cmp_capture);
  return FDL_OK;
}

static fdl_status panel_views(fdl_dataset *ds, fdl_err *err) {
  const json_t *records = fdl_json_arr(ds->panel, "records");
  size_t n = json_array_size(records);
  ds->panel_records = fdl_calloc(n ? n : 1, sizeof *ds->panel_records);
  if (!ds->panel_records) return fdl_fail(err, FDL_NOMEM, "dataset: out of memory");
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    fdl_ds_panel_record *p = &ds->panel_records[ds->n_panel_records++];
    p->json = r;
    p->index = fdl_json_path_int(r, "index", -1);
    p->num_tokens = fdl_json_path_int(r, "num_tokens", -1);
    p->prediction_positions = fdl_json_path_int(r, "prediction_positions", -1);
    decode_strings(r, PANEL_STRINGS, sizeof PANEL_STRINGS / sizeof *PANEL_STRINGS, p);
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
  const char *schema = fdl_json_str(tmp.manifest, "schema");
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
  decode_strings(tmp.runtime, RUNTIME_STRINGS, sizeof RUNTIME_STRINGS / sizeof *RUNTIME_STRINGS,
                 &tmp.rt);
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
