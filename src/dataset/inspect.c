/* inspect.c - a dataset summarised for a person (or a script): what was captured, of what, how,
 * and whether its seal still holds.
 *
 * The seal status is cheap on purpose: the manifest's self-seal and the digest of checksums.txt
 * are recomputed (two small files); `fidelis validate --verify-tensors` is the full check. The
 * summary is the decoded documents' fields (fdl_dataset_load) and what it adds up: no key is
 * read here. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset/ds_internal.h"
#include "base/sys.h"

/* Records and positions per domain, and the positions in all, in the order the records (sorted by
 * index) first name them; a record with no domain counts under "(none)". */
static fdl_status domains(fdl_ds_summary *s, fdl_err *err) {
  const fdl_dataset *ds = &s->ds;
  s->domains = fdl_calloc(ds->n_records ? ds->n_records : 1, sizeof *s->domains);
  if (!s->domains) return fdl_fail(err, FDL_NOMEM, "inspect: out of memory");
  for (size_t i = 0; i < ds->n_records; i++) {
    const fdl_ds_capture_record *r = &ds->records[i];
    const char *name = r->domain ? r->domain : "(none)";
    size_t d = 0;
    while (d < s->n_domains && strcmp(s->domains[d].name, name)) d++;
    if (d == s->n_domains) s->domains[s->n_domains++].name = name;
    s->domains[d].records++;
    int64_t rows = r->scored_rows > 0 ? r->scored_rows : 0;
    s->domains[d].positions += rows;
    s->positions += rows;
  }
  return FDL_OK;
}

static void seal_status(const char *root, fdl_ds_summary *s) {
  bool ok = false, present = false;
  (void)fdl_ds_seal_ok(s->ds.manifest, "dataset_sha256", &ok, &present, NULL);
  s->manifest_seal = !present ? "absent" : ok ? "recomputes" : "MISMATCH";
  const char *want = s->ds.m.seal.checksums_sha256;
  s->checksums_txt = "absent";
  int fd = fdl_sys_open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char hex[DS_HEX_LEN + 1];
  if (fd >= 0) {
    if (fdl_ds_kind_at(fd, FDL_DS_CHECKSUMS_NAME) == DS_REGULAR &&
        fdl_ds_sha256_at(fd, FDL_DS_CHECKSUMS_NAME, hex, NULL, NULL) == FDL_OK)
      s->checksums_txt = want && !strcmp(want, hex) ? "matches" : "MISMATCH";
    close(fd);
  }
}

fdl_status fdl_ds_inspect(const char *root, fdl_ds_summary *out, fdl_err *err) {
  memset(out, 0, sizeof *out);
  fdl_status st = fdl_dataset_load(root, &out->ds, err);
  if (st != FDL_OK) return st;
  seal_status(root, out);
  st = domains(out, err);
  if (st != FDL_OK) fdl_ds_summary_free(out);
  return st;
}

void fdl_ds_summary_free(fdl_ds_summary *s) {
  fdl_dataset_free(&s->ds);
  free(s->domains);
  memset(s, 0, sizeof *s);
}

/* A count the manifest states (-1: absent or mistyped) as JSON. */
static json_t *count(int64_t v) {
  return v < 0 ? json_null() : json_integer((json_int_t)v);
}

static json_t *flag(fdl_ds_bool b) {
  return b == FDL_DS_UNSET ? json_null() : json_boolean(b);
}

static json_t *domains_json(const fdl_ds_summary *s) {
  json_t *out = json_object();
  for (size_t i = 0; out && i < s->n_domains; i++) {
    const fdl_ds_domain_count *d = &s->domains[i];
    if (json_object_set_new(out, d->name,
                            json_pack("{s:I, s:I}", "records", (json_int_t)d->records, "positions",
                                      (json_int_t)d->positions)) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

fdl_status fdl_ds_summary_to_json(const fdl_ds_summary *s, json_t **out, fdl_err *err) {
  const fdl_ds_manifest *m = &s->ds.m;
  const fdl_ds_runtime_view *rt = &s->ds.rt;
  json_t *shape = m->head.shape[0] < 0 ? json_null()
                                       : json_pack("[I, I]", (json_int_t)m->head.shape[0],
                                                   (json_int_t)m->head.shape[1]);
  json_error_t je;
  json_t *doc = json_pack_ex(
      &je, 0,
      "{s:s?, s:s?, s:s?, s:s?, s:s?, s:{s:I, s:o, s:o, s:I}, s:o, s:o, s:o, s:s?, s:o, s:s?, "
      "s:{s:o, s:s?, s:o, s:s?}, s:{s:s?, s:s?, s:s?, s:s?, s:s?}, s:{s:s?, s:s?, s:o}, s:s?, "
      "s:{s:s, s:s, s:s, s:s?}, s:o}",
      "id", m->dataset.id, "name", m->dataset.name, "role", fdl_role_names[m->dataset.role], "form",
      fdl_form_names[m->capture.form], "semantic_point", m->capture.semantic_point, "records",
      "present", (json_int_t)s->ds.n_records, "declared", count(m->coverage.declared_records),
      "complete", flag(m->coverage.complete), "positions", (json_int_t)s->positions,
      "context_length", count(m->panel.context_length), "vocab_size", count(m->capture.vocab_size),
      "hidden_width", count(m->capture.hidden_width), "dtype", m->capture.dtype, "dtype_lossless",
      flag(m->capture.dtype_lossless), "capture_content_digest", m->capture.capture_content_digest,
      "head", "present", flag(m->head.present), "tensor_content_sha256",
      m->head.tensor_content_sha256, "shape", shape, "source", m->head.source, "runtime", "lane",
      fdl_lane_names[m->runtime.lane], "stack_fingerprint_sha256",
      m->runtime.stack_fingerprint_sha256, "engine", rt->stack_fingerprint.engine, "device",
      rt->stack_fingerprint.device, "device_name", rt->stack_fingerprint.device_name, "panel",
      "panel_id", m->panel.panel_id, "suite_token_hash_sha256", m->panel.suite_token_hash_sha256,
      "contexts", count(m->panel.contexts), "weights_repository", m->weights.repository, "seal",
      "manifest_seal", s->manifest_seal, "checksums_txt", s->checksums_txt, "claimed_status",
      m->dataset.structural_status ? m->dataset.structural_status : "unknown", "dataset_sha256",
      m->dataset_sha256, "domains", domains_json(s));
  if (!doc)
    return fdl_fail(err, json_error_code(&je) == json_error_out_of_memory ? FDL_NOMEM : FDL_INVALID,
                    "inspect: cannot build the summary: %s", je.text);
  *out = doc;
  return FDL_OK;
}
