/* inspect.c - a dataset summarised for a person (or a script): what was captured, of what, how,
 * and whether its seal still holds.
 *
 * The seal status is cheap on purpose: the manifest's self-seal and the digest of checksums.txt
 * are recomputed (two small files); `fidelis validate --verify-tensors` is the full check. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "dataset/ds_internal.h"
#include "base/sys.h"

/* The value at key of obj, copied; null where absent. */
static json_t *copied(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  return v ? json_deep_copy(v) : json_null();
}

/* {domain: {records, positions}} over the capture records, null domain as "(none)". */
static json_t *domains(const fdl_dataset *ds) {
  json_t *out = json_object();
  for (size_t i = 0; out && i < ds->n_records; i++) {
    const fdl_ds_capture_record *r = &ds->records[i];
    const char *d = r->domain ? r->domain : "(none)";
    json_t *e = json_object_get(out, d);
    if (!e) {
      e = json_pack("{s:I, s:I}", "records", (json_int_t)0, "positions", (json_int_t)0);
      if (!e || json_object_set_new(out, d, e) != 0) {
        json_decref(out);
        return NULL;
      }
    }
    json_int_t recs = json_integer_value(json_object_get(e, "records")) + 1;
    json_int_t pos = json_integer_value(json_object_get(e, "positions")) +
                     (r->scored_rows > 0 ? (json_int_t)r->scored_rows : 0);
    json_object_set_new(e, "records", json_integer(recs));
    json_object_set_new(e, "positions", json_integer(pos));
  }
  return out;
}

static json_t *seal_status(const char *root, const fdl_dataset *ds) {
  bool ok = false, present = false;
  (void)fdl_ds_seal_ok(ds->manifest, "dataset_sha256", &ok, &present, NULL);
  const char *want = ds->m.seal.checksums_sha256;
  const char *checksums = "absent";
  int fd = fdl_sys_open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char hex[DS_HEX_LEN + 1];
  if (fd >= 0) {
    if (fdl_ds_kind_at(fd, FDL_DS_CHECKSUMS_NAME) == DS_REGULAR &&
        fdl_ds_sha256_at(fd, FDL_DS_CHECKSUMS_NAME, hex, NULL, NULL) == FDL_OK)
      checksums = want && !strcmp(want, hex) ? "matches" : "MISMATCH";
    close(fd);
  }
  return json_pack("{s:s, s:s, s:s, s:s?}", "manifest_seal",
                   !present ? "absent"
                   : ok     ? "recomputes"
                            : "MISMATCH",
                   "checksums_txt", checksums, "claimed_status",
                   ds->m.dataset.structural_status ? ds->m.dataset.structural_status : "unknown",
                   "dataset_sha256", ds->m.dataset_sha256);
}

fdl_status fdl_ds_inspect(const char *root, json_t **out, fdl_err *err) {
  fdl_dataset ds;
  fdl_status s = fdl_dataset_load(root, &ds, err);
  if (s != FDL_OK) return s;
  const json_t *m = ds.manifest;
  const json_t *dataset = fdl_json_obj(m, "dataset"), *capture = fdl_json_obj(m, "capture"),
               *panel = fdl_json_obj(m, "panel"), *head = fdl_json_obj(m, "head"),
               *runtime = fdl_json_obj(m, "runtime"), *coverage = fdl_json_obj(m, "coverage"),
               *weights = fdl_json_obj(m, "weights");
  const json_t *fp = fdl_json_obj(ds.runtime, "stack_fingerprint");
  int64_t positions = 0;
  for (size_t i = 0; i < ds.n_records; i++)
    if (ds.records[i].scored_rows > 0) positions += ds.records[i].scored_rows;
  json_error_t je;
  json_t *doc = json_pack_ex(
      &je, 0,
      "{s:o, s:o, s:o, s:o, s:o, s:{s:I, s:o, s:o, s:I}, s:o, s:o, s:o, s:o, s:o, s:o, "
      "s:{s:o, s:o, s:o, s:o}, s:{s:o, s:o, s:o, s:o, s:o}, s:{s:o, s:o, s:o}, s:o, s:o, s:o}",
      "id", copied(dataset, "id"), "name", copied(dataset, "name"), "role", copied(dataset, "role"),
      "form", copied(capture, "form"), "semantic_point", copied(capture, "semantic_point"),
      "records", "present", (json_int_t)ds.n_records, "declared",
      copied(coverage, "declared_records"), "complete", copied(coverage, "complete"), "positions",
      (json_int_t)positions, "context_length", copied(panel, "context_length"), "vocab_size",
      copied(capture, "vocab_size"), "hidden_width", copied(capture, "hidden_width"), "dtype",
      copied(capture, "dtype"), "dtype_lossless", copied(capture, "dtype_lossless"),
      "capture_content_digest", copied(capture, "capture_content_digest"), "head", "present",
      copied(head, "present"), "tensor_content_sha256", copied(head, "tensor_content_sha256"),
      "shape", copied(head, "shape"), "source", copied(head, "source"), "runtime", "lane",
      copied(runtime, "lane"), "stack_fingerprint_sha256",
      copied(runtime, "stack_fingerprint_sha256"), "engine", copied(fp, "engine"), "device",
      copied(fp, "device"), "device_name", copied(fp, "device_name"), "panel", "panel_id",
      copied(panel, "panel_id"), "suite_token_hash_sha256",
      copied(panel, "suite_token_hash_sha256"), "contexts", copied(panel, "contexts"),
      "weights_repository", copied(weights, "repository"), "seal", seal_status(root, &ds),
      "domains", domains(&ds));
  fdl_dataset_free(&ds);
  if (!doc)
    return fdl_fail(err, json_error_code(&je) == json_error_out_of_memory ? FDL_NOMEM : FDL_INVALID,
                    "inspect: cannot build the summary: %s", je.text);
  *out = doc;
  return FDL_OK;
}
