/* write.c - the seal chain, written in its required order (§5.4).
 *
 *   panel/panel.json            sealed, its file digest into manifest.panel
 *   runtime/capture-runtime.json sealed, its file digest into manifest.runtime
 *   head/head.json              sealed
 *   capture/manifest.json       runtime_manifest_sha256 set, sealed, digest into manifest.capture
 *   validation/...json          the report (a pre-seal stub by default)
 *   checksums.txt               every other file, its digest into manifest.seal
 *   fidelity-dataset.json       self-sealed last
 *
 * Anything written after checksums.txt would make the dataset fail (unlisted_file), so the
 * order is the contract. Every file is serialised once, hashed from that buffer, and written
 * staged (never over an existing file). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/quote.h"
#include "dataset/ds_internal.h"
#include "json/json.h"
#include "base/path.h"
#include "base/sys.h"

/* dir + "/" + rel into out. */
static fdl_status path_in(const char *dir, const char *rel, char *out, size_t cap, fdl_err *err) {
  if (!fdl_path_join_to(dir, rel, out, cap))
    return fdl_fail(err, FDL_BOUNDS, "%s/%s: path too long", dir, rel);
  return FDL_OK;
}

/* Writes doc (indent=2, sorted keys, raw UTF-8, LF) at dir/rel; hex gets its file digest. */
static fdl_status write_doc(const char *dir, const char *rel, const json_t *doc, char *hex,
                            fdl_err *err) {
  char q[FDL_QUOTE_CAP];
  if (!rel || !fdl_relpath_ok(rel, strlen(rel), false))
    return fdl_fail(err, FDL_PATH, "seal chain: %s is not a relative path inside the dataset",
                    fdl_quote_str(rel, q, sizeof q));
  char path[DS_MAX_PATH * 2], parent[DS_MAX_PATH * 2];
  fdl_status s = path_in(dir, rel, path, sizeof path, err);
  if (s != FDL_OK) return s;
  /* the directories above it (mkdir -p, mode 0777 less the umask) */
  fdl_dirname(path, parent, sizeof parent);
  if ((s = fdl_mkdirs(parent[0] ? parent : ".", err)) != FDL_OK) return s;
  fdl_buf b;
  fdl_buf_init(&b, 0);
  s = fdl_json_dump(doc, FDL_JSON_PRETTY, &b, err);
  if (s == FDL_OK && hex) s = fdl_sha256_buf_hex(b.data, b.len, hex, err);
  if (s == FDL_OK) s = fdl_write_file(path, b.data, b.len, err);
  fdl_buf_free(&b);
  if (s != FDL_OK) fdl_err_prefix(err, "%s", rel);
  return s;
}

static fdl_status set_str(json_t *o, const char *key, const char *val, fdl_err *err) {
  if (!json_is_object(o) || json_object_set_new(o, key, json_string(val)) != 0)
    return fdl_fail(err, FDL_NOMEM, "seal chain: cannot set %s", key);
  return FDL_OK;
}

/* checksums.txt over every file now in dir except the two root exclusions. */
static fdl_status write_checksums(const char *dir, char *hex, fdl_err *err) {
  int fd = fdl_sys_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fdl_fail(err, FDL_IO, "%s: cannot open: %s", dir, strerror(errno));
  ds_tree t;
  fdl_status s = fdl_ds_tree_walk(fd, &t, err);
  if (s != FDL_OK) {
    close(fd);
    return s;
  }
  if (t.n_symlinks || t.n_others)
    s = fdl_fail(err, FDL_PATH, "%s: %s is not a regular file (PATH-4)", dir,
                 t.n_symlinks ? t.symlinks[0] : t.others[0]);
  ds_hash_job *jobs = fdl_calloc(t.n_files ? t.n_files : 1, sizeof *jobs);
  size_t n = 0;
  if (s == FDL_OK && !jobs) s = fdl_fail(err, FDL_NOMEM, "checksums: out of memory");
  for (size_t i = 0; s == FDL_OK && i < t.n_files; i++) {
    const char *f = t.files[i];
    if (!strcmp(f, FDL_DS_CHECKSUMS_NAME) || !strcmp(f, FDL_DS_MANIFEST_NAME)) continue;
    if (fdl_ds_is_credential(f))
      s = fdl_fail(err, FDL_REFUSED,
                   "%s looks like a credential; sealing it would publish a secret "
                   "(credential_in_tree)",
                   f);
    jobs[n].rel = f;
    jobs[n].length = UINT64_MAX;
    n++;
  }
  if (s == FDL_OK) s = fdl_ds_hash_jobs_run(fd, jobs, n, 0, err);
  fdl_checksums sums;
  fdl_checksums_init(&sums);
  for (size_t i = 0; s == FDL_OK && i < n; i++) {
    if (jobs[i].status != FDL_OK)
      s = fdl_fail(err, jobs[i].status, "%s: %s", jobs[i].rel, jobs[i].msg);
    else
      s = fdl_checksums_add(&sums, jobs[i].hex, jobs[i].rel, err);
  }
  fdl_buf b;
  fdl_buf_init(&b, 0);
  if (s == FDL_OK) s = fdl_checksums_format(&sums, &b, err);
  if (s == FDL_OK) s = fdl_sha256_buf_hex(b.data ? b.data : "", b.len, hex, err);
  char path[DS_MAX_PATH * 2];
  if (s == FDL_OK) s = path_in(dir, FDL_DS_CHECKSUMS_NAME, path, sizeof path, err);
  if (s == FDL_OK) s = fdl_write_file(path, b.data ? b.data : "", b.len, err);
  fdl_buf_free(&b);
  fdl_checksums_free(&sums);
  free(jobs);
  fdl_ds_tree_free(&t);
  close(fd);
  return s;
}

fdl_status fdl_ds_write_sealed(const char *dir, fdl_ds_docs *d, char *dataset_sha256,
                               fdl_err *err) {
  json_t *m = d->manifest;
  json_t *panel = fdl_json_obj(m, "panel"), *runtime = fdl_json_obj(m, "runtime"),
         *head = fdl_json_obj(m, "head"), *capture = fdl_json_obj(m, "capture"),
         *seal = fdl_json_obj(m, "seal");
  if (!panel || !runtime || !head || !capture || !seal || !d->panel || !d->runtime || !d->capture)
    return fdl_fail(err, FDL_INVALID,
                    "seal chain: the manifest needs panel, runtime, head, "
                    "capture and seal blocks, and the panel, runtime and capture documents");
  char hex[DS_HEX_LEN + 1];
  fdl_status s = fdl_ds_seal(d->panel, "receipt_sha256", err);
  if (s == FDL_OK) s = write_doc(dir, fdl_json_str(panel, "panel_file"), d->panel, hex, err);
  if (s == FDL_OK) s = set_str(panel, "panel_file_sha256", hex, err);

  char runtime_hex[DS_HEX_LEN + 1];
  if (s == FDL_OK) s = fdl_ds_seal(d->runtime, "receipt_sha256", err);
  if (s == FDL_OK) s = write_doc(dir, fdl_json_str(runtime, "file"), d->runtime, runtime_hex, err);
  if (s == FDL_OK) s = set_str(runtime, "file_sha256", runtime_hex, err);

  const char *head_json = fdl_json_str(head, "head_json");
  if (s == FDL_OK && head_json) {
    if (!d->head)
      return fdl_fail(err, FDL_INVALID,
                      "seal chain: head.head_json names %s but "
                      "no head document was given",
                      head_json);
    s = fdl_ds_seal(d->head, "receipt_sha256", err);
    if (s == FDL_OK) s = write_doc(dir, head_json, d->head, NULL, err);
  }

  if (s == FDL_OK) s = set_str(d->capture, "runtime_manifest_sha256", runtime_hex, err);
  if (s == FDL_OK) s = fdl_ds_seal(d->capture, "receipt_sha256", err);
  if (s == FDL_OK) s = write_doc(dir, fdl_json_str(capture, "manifest_file"), d->capture, hex, err);
  if (s == FDL_OK) s = set_str(capture, "manifest_file_sha256", hex, err);

  if (s == FDL_OK) {
    json_t *report = d->validation ? json_incref(d->validation) : NULL;
    if (!report)
      s = fdl_ds_preseal_report(fdl_json_str(fdl_json_obj(m, "dataset"), "id"), &report, err);
    if (s == FDL_OK) s = write_doc(dir, FDL_DS_VALIDATION_FILE, report, NULL, err);
    json_decref(report);
  }

  if (s == FDL_OK) s = write_checksums(dir, hex, err);
  if (s == FDL_OK) s = set_str(seal, "checksums_sha256", hex, err);
  if (s == FDL_OK) s = fdl_ds_seal(m, "dataset_sha256", err);
  if (s == FDL_OK) s = write_doc(dir, FDL_DS_MANIFEST_NAME, m, NULL, err);
  if (s == FDL_OK && dataset_sha256) {
    const char *seal_value = fdl_json_str(m, "dataset_sha256");
    snprintf(dataset_sha256, DS_HEX_LEN + 1, "%s", seal_value ? seal_value : "");
  }
  return s;
}
