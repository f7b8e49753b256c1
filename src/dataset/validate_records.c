/* validate_records.c - capture_content_digest (§5.2), records REC-1..4 (§6) and coverage
 * COV-1..3 (§6.2), plus the capture manifest's header against the manifest's capture block
 * (fidelis rule "6": the two mirror each other and a consumer may read either). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "dataset/validate.h"
#include "base/sys.h"

void fdl_ds_v_capture_digest(ds_vctx *v) {
  if (!v->capture.doc) return;
  json_t *records = fdl_ds_v_records_of(v);
  size_t n = json_array_size(records);
  fdl_ds_content_item *items = fdl_calloc(n ? n : 1, sizeof *items);
  if (!fdl_ds_v_got(v, items)) return;
  size_t k = 0;
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    int64_t idx;
    if (!fdl_json_int(r, "index", &idx)) continue; /* REC-1 reports it */
    items[k].index = idx;
    items[k].content_sha256 = fdl_json_str(r, "tensor_content_sha256");
    k++;
  }
  char derived[DS_HEX_LEN + 1];
  fdl_err e;
  fdl_status s = fdl_ds_capture_content_digest(items, k, derived, &e);
  free(items);
  if (s == FDL_MISMATCH) {
    fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "5.2", v->capture.rel, "%s", e.msg);
  } else if (s != FDL_OK) {
    v->rep->oom = FDL_NOMEM;
  } else {
    const char *top = v->mf.capture.capture_content_digest;
    if (!top || strcmp(derived, top))
      fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "5.2", FDL_DS_MANIFEST_NAME,
                          "capture_content_digest %s != manifest %s", derived,
                          top ? top : "(missing)");
    const json_t *own = json_object_get(v->capture.doc, "capture_content_digest");
    if (fdl_py_truthy(own) && !(json_is_string(own) && !strcmp(json_string_value(own), derived)))
      fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "5.2", v->capture.rel,
                          "capture/manifest.json disagrees with its own records");
  }
  fdl_ds_report_check(v->rep, "digest.capture_content");
}

/* A value that must equal (Python ==) another: the finding names what (a record, a field) and
 * shows each value in at most cap bytes. */
static void must_equal(ds_vctx *v, const char *rule, const char *where, const char *what,
                       const json_t *a, const json_t *b, size_t cap, const char *fmt) {
  if (fdl_py_equal(a, b)) return;
  char sa[64], sb[64];
  fdl_py_shown(a, sa, cap);
  fdl_py_shown(b, sb, cap);
  fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, rule, where, fmt, what, sa, sb);
}

/* Header fields the capture manifest mirrors from the top manifest's capture block. */
static void check_mirror(ds_vctx *v) {
  const json_t *top = fdl_json_obj(v->m, "capture");
  static const char *const MIRRORED[] = {"form",           "semantic_point", "tensor_key", "dtype",
                                         "dtype_lossless", "hidden_width",   "vocab_size", NULL};
  for (size_t i = 0; top && MIRRORED[i]; i++) {
    const json_t *a = json_object_get(top, MIRRORED[i]),
                 *b = json_object_get(v->capture.doc, MIRRORED[i]);
    if (a && b)
      must_equal(v, "6", v->capture.rel, MIRRORED[i], b, a, 64,
                 "%s is %s here but %s in the manifest's capture block");
  }
  json_t *records = fdl_ds_v_records_of(v);
  int64_t total_rows = 0, total_size = 0, want;
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    int64_t x;
    if (fdl_json_int(r, "scored_rows", &x)) total_rows += x;
    if (fdl_json_int(r, "size_bytes", &x)) total_size += x;
  }
  if (fdl_json_int(top, "records_count", &want) && want != (int64_t)json_array_size(records))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "6", FDL_DS_MANIFEST_NAME,
                        "capture.records_count %" PRId64 " != %zu records", want,
                        json_array_size(records));
  if (fdl_json_int(top, "total_size_bytes", &want) && want != total_size)
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "6", FDL_DS_MANIFEST_NAME,
                        "capture.total_size_bytes %" PRId64 " != sum(size_bytes) %" PRId64, want,
                        total_size);
  if (fdl_json_int(top, "scored_rows_total", &want) && want != total_rows)
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "6", FDL_DS_MANIFEST_NAME,
                        "capture.scored_rows_total %" PRId64 " != sum(scored_rows) %" PRId64, want,
                        total_rows);
  if (fdl_json_int(v->capture.doc, "total_scored_rows", &want) && want != total_rows)
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "6", v->capture.rel,
                        "total_scored_rows %" PRId64 " != sum(scored_rows) %" PRId64, want,
                        total_rows);
  if (fdl_json_int(v->capture.doc, "total_size_bytes", &want) && want != total_size)
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "6", v->capture.rel,
                        "total_size_bytes %" PRId64 " != sum(size_bytes) %" PRId64, want,
                        total_size);
}

void fdl_ds_v_records(ds_vctx *v) {
  if (!v->capture.doc) return;
  json_t *records = fdl_ds_v_records_of(v);
  const json_t *tensor_key = json_object_get(v->capture.doc, "tensor_key");
  const json_t *want_width = json_object_get(
      v->capture.doc, v->mf.capture.form == FDL_FORM_HIDDEN ? "hidden_width" : "vocab_size");
  size_t n = json_array_size(records);
  int64_t *seen = fdl_malloc((n ? n : 1) * sizeof *seen);
  if (!fdl_ds_v_got(v, seen)) return;
  size_t n_seen = 0;
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    char where[DS_MAX_PATH + 32];
    snprintf(where, sizeof where, "%s:records[%zu]", v->capture.rel, i);
    const json_t *index = json_object_get(r, "index");
    char idx[64];
    fdl_py_shown(index, idx, sizeof idx);
    if (!json_is_object(r)) {
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "REC-1", where,
                          "record is not an object");
      continue;
    }
    if (!json_is_integer(index) || json_integer_value(index) < 0) {
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "REC-1", where,
                          "record index %s is not an integer >= 0", idx);
    } else {
      seen[n_seen++] = (int64_t)json_integer_value(index);
    }
    must_equal(v, "REC-2", where, idx, json_object_get(r, "key"), tensor_key, 64,
               "record %s key %s != header tensor_key %s");
    const json_t *shape = json_object_get(r, "shape");
    if (json_is_array(shape) && json_array_size(shape) == 2) {
      must_equal(v, "REC-3", where, idx, json_array_get(shape, 0),
                 json_object_get(r, "scored_rows"), 32, "record %s shape[0] %s != scored_rows %s");
      if (want_width && !json_is_null(want_width))
        must_equal(v, "REC-3", where, idx, json_array_get(shape, 1), want_width, 32,
                   "record %s shape[1] %s != %s");
    }
    const json_t *pp = json_object_get(r, "prediction_positions"),
                 *sr = json_object_get(r, "scored_rows");
    if (pp && sr && !fdl_py_equal(pp, sr))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "REC-3", where,
                          "record %s prediction_positions != scored_rows", idx);
    if (json_is_true(json_object_get(r, "raw_chunks_retained")))
      fdl_ds_report_error(v->rep, FDL_DSC_PATH_ESCAPE, "REC-4", where,
                          "record %s retains host-local chunk keys (PATH-2)", idx);
  }
  if (n_seen) qsort(seen, n_seen, sizeof *seen, fdl_order_i64);
  for (size_t k = 1; k < n_seen; k++)
    if (seen[k] == seen[k - 1] && (k < 2 || seen[k - 2] != seen[k]))
      fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "REC-1", v->capture.rel,
                          "duplicate record index %" PRId64, seen[k]);
  free(seen);
  check_mirror(v);
  fdl_ds_report_check(v->rep, "records");
}

void fdl_ds_v_coverage(ds_vctx *v) {
  const json_t *coverage = fdl_json_obj(v->m, "coverage");
  json_t *records = fdl_ds_v_records_of(v);
  size_t present = json_array_size(records);
  int64_t declared;
  if (fdl_json_int(coverage, "declared_records", &declared)) {
    int64_t *idx = fdl_malloc((present ? present : 1) * sizeof *idx);
    if (!fdl_ds_v_got(v, idx)) return;
    size_t n = 0, i;
    json_t *r;
    json_array_foreach(records, i, r) {
      int64_t x;
      if (fdl_json_int(r, "index", &x)) idx[n++] = x;
    }
    if (n) qsort(idx, n, sizeof *idx, fdl_order_i64);
    bool contiguous = declared >= 0 && n == (size_t)declared;
    for (size_t k = 0; contiguous && k < n; k++) contiguous = idx[k] == (int64_t)k;
    free(idx);
    bool complete = (int64_t)present == declared && contiguous;
    const json_t *claimed = json_object_get(coverage, "complete");
    if (fdl_py_truthy(claimed) != complete)
      fdl_ds_report_error(v->rep, FDL_DSC_INCOMPLETE, "COV-1", FDL_DS_MANIFEST_NAME,
                          "coverage.complete is %s but present=%zu declared=%" PRId64
                          " contiguous=%s",
                          fdl_py_truthy(claimed) ? "true" : "false", present, declared,
                          contiguous ? "true" : "false");
    int64_t pr;
    if (!fdl_json_int(coverage, "present_records", &pr) || pr != (int64_t)present)
      fdl_ds_report_error(v->rep, FDL_DSC_INCOMPLETE, "COV-1", FDL_DS_MANIFEST_NAME,
                          "coverage.present_records != %zu records in the capture manifest",
                          present);
    if (!complete && !fdl_py_truthy(json_object_get(coverage, "shard_of")) &&
        !fdl_py_truthy(json_object_get(coverage, "subset_detail")))
      fdl_ds_report_error(v->rep, FDL_DSC_INCOMPLETE, "COV-2", FDL_DS_MANIFEST_NAME,
                          "an incomplete capture needs shard_of or subset_detail");
    if (!complete && !v->o->allow_partial)
      fdl_ds_report_error(v->rep, FDL_DSC_INCOMPLETE, "COV-3", FDL_DS_MANIFEST_NAME,
                          "incomplete dataset; pass --allow-partial to accept it as a shard");
  }
  fdl_ds_report_check(v->rep, "coverage");
}
