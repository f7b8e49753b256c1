/* validate.c - one validate run over a dataset directory (§12.1), collecting every finding.
 *
 * The run follows the reference procedure step by step and keeps its codes and rule labels;
 * where fidelis checks more than the reference (which the spec allows: sub-document schema
 * strings, the capture manifest's runtime digest, panel masks, head.json against the manifest,
 * the in-dataset validation report), the extra rules carry their own labels and are listed in
 * docs/DATASET.md.
 *
 * Divisions: loading documents; the run. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/quote.h"
#include "dataset/validate.h"
#include "base/utc.h"
#include "json/json.h"
#include "base/path.h"
#include "base/sys.h"

/* ---- loading documents ------------------------------------------------------------------- */

json_t *fdl_ds_v_load_sub(ds_vctx *v, const char *rel, const char *label, char *file_sha256,
                          bool missing_ok) {
  if (!rel || !fdl_relpath_ok(rel, strlen(rel), false) || strlen(rel) >= DS_MAX_PATH) {
    char q[FDL_QUOTE_CAP];
    fdl_ds_report_error(v->rep, FDL_DSC_PATH_ESCAPE, label, rel ? rel : "",
                        "%s is not a relative path inside the dataset root",
                        fdl_quote_str(rel, q, sizeof q));
    return NULL;
  }
  char *text;
  size_t len;
  bool missing;
  fdl_err e;
  fdl_status s = fdl_ds_read_at(v->rootfd, rel, FDL_JSON_MAX_FILE_BYTES, &text, &len, &missing, &e);
  if (s != FDL_OK) {
    char q[FDL_QUOTE_CAP];
    if (s == FDL_PATH)
      fdl_ds_report_error(v->rep, FDL_DSC_SYMLINK, label, rel, "%s", e.msg);
    else if (!(missing && missing_ok))
      fdl_ds_report_error(v->rep, FDL_DSC_MISSING_FILE, label, rel, "%s is missing (%s)",
                          fdl_quote_str(rel, q, sizeof q), e.msg);
    return NULL;
  }
  if (file_sha256 && fdl_sha256_buf_hex(text, len, file_sha256, NULL) != FDL_OK)
    file_sha256[0] = '\0';
  json_t *doc = NULL;
  s = fdl_json_parse(text, len, NULL, &doc, &e);
  free(text);
  if (s != FDL_OK) {
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, label, rel, "unparseable JSON: %s", e.msg);
    return NULL;
  }
  if (!json_is_object(doc)) {
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, label, rel, "not an object");
    json_decref(doc);
    return NULL;
  }
  return doc;
}

/* Self-seal via receipt_sha256 (SEAL-1(g)); a missing seal field fails like a wrong one. */
static void check_sub_seal(ds_vctx *v, const json_t *doc, const char *rel) {
  bool ok, present;
  fdl_err e;
  if (fdl_ds_seal_ok(doc, "receipt_sha256", &ok, &present, &e) != FDL_OK) {
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(g)", rel, "cannot recompute: %s",
                        e.msg);
    return;
  }
  if (!present)
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(g)", rel, "no receipt_sha256");
  else if (!ok)
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(g)", rel,
                        "receipt_sha256 does not recompute");
}

static void check_sub_schema(ds_vctx *v, const json_t *doc, const char *rel, const char *label,
                             const char *want) {
  const char *got = fdl_json_str(doc, "schema");
  char q[FDL_QUOTE_CAP];
  if (!got || strcmp(got, want))
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, label, rel, "schema is %s; expected '%s'",
                        got ? fdl_quote_str(got, q, sizeof q) : "(missing)", want);
}

/* Step 1: the manifest must load, be an object, and carry the exact v1 schema. */
static bool load_manifest(ds_vctx *v, const char *root) {
  char *text;
  size_t len;
  bool missing;
  fdl_err e;
  fdl_status s = fdl_ds_read_at(v->rootfd, FDL_DS_MANIFEST_NAME, FDL_JSON_MAX_FILE_BYTES, &text,
                                &len, &missing, &e);
  if (s != FDL_OK) {
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "SCHEMA", FDL_DS_MANIFEST_NAME,
                        "%s is missing or unreadable in %s (%s)", FDL_DS_MANIFEST_NAME, root,
                        e.msg);
    return false;
  }
  s = fdl_json_parse(text, len, NULL, &v->m, &e);
  free(text);
  if (s != FDL_OK) {
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "SCHEMA", FDL_DS_MANIFEST_NAME,
                        "unparseable JSON (NaN, Infinity and duplicate keys are refused): %s",
                        e.msg);
    return false;
  }
  if (!json_is_object(v->m)) {
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "SCHEMA", FDL_DS_MANIFEST_NAME,
                        "%s is not an object", FDL_DS_MANIFEST_NAME);
    return false;
  }
  fdl_ds_manifest_decode(v->m, &v->mf);
  const char *id = v->mf.dataset.id;
  if (id) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    fdl_buf_printf(&b, "dataset:%s", id);
    fdl_ds_report_set_subject(v->rep, b.data ? b.data : root);
    fdl_buf_free(&b);
  }
  const char *schema = fdl_json_str(v->m, "schema");
  if (!schema || strcmp(schema, FDL_DS_SCHEMA)) {
    char shown[128];
    fdl_py_shown(json_object_get(v->m, "schema"), shown, sizeof shown);
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "SCHEMA", FDL_DS_MANIFEST_NAME,
                        "schema is %s; this tool reads only '%s'", shown, FDL_DS_SCHEMA);
    return false;
  }
  int64_t fv;
  if (!fdl_json_int(v->m, "format_version", &fv) || fv != 1) {
    char shown[64];
    fdl_py_shown(json_object_get(v->m, "format_version"), shown, sizeof shown);
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "SCHEMA", FDL_DS_MANIFEST_NAME,
                        "format_version is %s, expected 1", shown);
    return false;
  }
  return true;
}

json_t *fdl_ds_v_records_of(const ds_vctx *v) {
  return fdl_json_arr(v->capture.doc, "records");
}

bool fdl_ds_v_got(ds_vctx *v, const void *p) {
  if (!p) v->rep->oom = FDL_NOMEM;
  return p != NULL;
}

void fdl_ds_v_mirror(ds_vctx *v, const json_t *a, const json_t *b, const char *const *keys,
                     fdl_ds_code code, const char *rule, const char *where, const char *fmt) {
  for (size_t i = 0; keys[i]; i++) {
    const json_t *x = json_object_get(a, keys[i]), *y = json_object_get(b, keys[i]);
    if (x && y && !fdl_py_equal(x, y)) fdl_ds_report_error(v->rep, code, rule, where, fmt, keys[i]);
  }
}

/* Steps 7-8: the four sealed sub-documents and the file digests the manifest claims. */
static void load_subdocs(ds_vctx *v) {
  const fdl_ds_manifest *m = &v->mf;
  v->capture.rel = m->capture.manifest_file ? m->capture.manifest_file : "capture/manifest.json";
  v->panel.rel = m->panel.panel_file ? m->panel.panel_file : "panel/panel.json";
  v->head.rel = m->head.head_json && *m->head.head_json ? m->head.head_json : NULL;
  v->runtime.rel = m->runtime.file ? m->runtime.file : "runtime/capture-runtime.json";

  v->capture.doc = fdl_ds_v_load_sub(v, v->capture.rel, "CAPTURE", v->capture.file_sha256, false);
  v->panel.doc = fdl_ds_v_load_sub(v, v->panel.rel, "PANEL", v->panel.file_sha256, false);
  if (v->head.rel) /* In --manifests-only an absent head.json is a payload gap, not a finding. */
    v->head.doc = fdl_ds_v_load_sub(v, v->head.rel, "HEAD", v->head.file_sha256, !v->payload);
  v->runtime.doc = fdl_ds_v_load_sub(v, v->runtime.rel, "RUNTIME", v->runtime.file_sha256, false);

  struct {
    ds_subdoc *d;
    const char *label, *schema;
  } subs[] = {{&v->capture, "CAPTURE", FDL_DS_CAPTURE_SCHEMA},
              {&v->panel, "PANEL", FDL_DS_PANEL_SCHEMA},
              {&v->head, "HEAD", FDL_DS_HEAD_SCHEMA},
              {&v->runtime, "RUNTIME", FDL_DS_RUNTIME_SCHEMA}};
  for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
    if (!subs[i].d->doc) continue;
    check_sub_schema(v, subs[i].d->doc, subs[i].d->rel, subs[i].label, subs[i].schema);
    check_sub_seal(v, subs[i].d->doc, subs[i].d->rel);
    fdl_ds_walk_paths(subs[i].d->doc, subs[i].d->rel, v->rep);
  }
  if (v->head.rel && !v->head.doc && !v->payload) fdl_ds_report_check(v->rep, "head.json(absent)");
  fdl_ds_report_check(v->rep, "seal.submanifests");

  struct {
    const char *label, *want;
    ds_subdoc *d;
  } digests[] = {{"capture.manifest_file_sha256", m->capture.manifest_file_sha256, &v->capture},
                 {"panel.panel_file_sha256", m->panel.panel_file_sha256, &v->panel},
                 {"runtime.file_sha256", m->runtime.file_sha256, &v->runtime}};
  for (size_t i = 0; i < sizeof digests / sizeof digests[0]; i++) {
    const char *want = digests[i].want;
    if (!want || !want[0] || !digests[i].d->doc || !digests[i].d->file_sha256[0]) continue;
    if (strcmp(want, digests[i].d->file_sha256))
      fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "SEAL-1", digests[i].d->rel,
                          "%s: %s != %s", digests[i].label, digests[i].d->file_sha256, want);
  }

  /* The capture manifest names the runtime document by digest too (§5.4). */
  const char *rm = fdl_json_str(v->capture.doc, "runtime_manifest");
  const char *rm_sha = fdl_json_str(v->capture.doc, "runtime_manifest_sha256");
  if (rm && rm_sha && v->runtime.doc) {
    char resolved[DS_MAX_PATH], want_rel[DS_MAX_PATH];
    fdl_dirname(v->capture.rel, v->capture_dir, sizeof v->capture_dir);
    if (fdl_ds_join_norm(v->capture_dir, rm, resolved, sizeof resolved) &&
        fdl_ds_join_norm("", v->runtime.rel, want_rel, sizeof want_rel)) {
      if (strcmp(resolved, want_rel))
        fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "SEAL-1", v->capture.rel,
                            "runtime_manifest names %s but the manifest's runtime file is %s",
                            resolved, want_rel);
      else if (strcmp(rm_sha, v->runtime.file_sha256))
        fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, "SEAL-1", v->capture.rel,
                            "runtime_manifest_sha256 %s != %s, the digest of %s", rm_sha,
                            v->runtime.file_sha256, want_rel);
    }
  }
}

/* The schema asks only for a string; a time that never happened is still refused. */
static void check_created(const json_t *manifest, fdl_ds_report *rep) {
  const char *when = fdl_json_str(manifest, "created_utc");
  if (when && !fdl_utc_valid(when))
    fdl_ds_report_error(rep, FDL_DSC_BAD_TIMESTAMP, "created_utc", FDL_DS_MANIFEST_NAME,
                        "created_utc '%s' is not a real UTC time written YYYY-MM-DDTHH:MM:SSZ",
                        when);
}

void fdl_ds_check_manifest(const json_t *manifest, fdl_ds_report *rep) {
  fdl_ds_check_manifest_schema(manifest, rep);
  check_created(manifest, rep);
  fdl_ds_walk_paths(manifest, FDL_DS_MANIFEST_NAME, rep);
}

/* ---- the run ----------------------------------------------------------------------------- */

static void finish(ds_vctx *v) {
  if (v->o->strict) {
    for (size_t i = 0; i < v->rep->warnings.count; i++) {
      fdl_ds_finding *f = &v->rep->warnings.items[i];
      fdl_ds_report_error(v->rep, f->code, f->rule, f->where, "%s", f->message);
    }
    fdl_ds_findings *w = &v->rep->warnings;
    for (size_t i = 0; i < w->count; i++) {
      free(w->items[i].rule);
      free(w->items[i].message);
      free(w->items[i].where);
    }
    w->count = 0;
  }
  if (v->rep->errors.count)
    v->rep->level = FDL_DS_LEVEL_INVALID;
  else if (v->o->manifest_only || v->o->manifests_only || v->o->skip_hashing)
    v->rep->level = FDL_DS_LEVEL_MANIFESTS;
  else if (v->o->verify_tensors)
    v->rep->level = FDL_DS_LEVEL_SEALED;
  else
    v->rep->level = FDL_DS_LEVEL_STRUCTURAL;
}

fdl_status fdl_ds_validate(const char *root, const fdl_ds_validate_opts *opts, fdl_ds_report *rep,
                           fdl_err *err) {
  static const fdl_ds_validate_opts defaults = {0};
  ds_vctx v;
  memset(&v, 0, sizeof v);
  v.o = opts ? opts : &defaults;
  v.rep = rep;
  v.payload = !v.o->manifests_only;
  fdl_ds_report_set_subject(rep, root);
  fdl_status s = FDL_OK;
  v.rootfd = fdl_sys_open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (v.rootfd < 0) {
    fdl_ds_report_error(rep, FDL_DSC_BAD_SCHEMA, "SCHEMA", "", "%s is not a readable directory",
                        root);
    finish(&v);
    return rep->oom != FDL_OK ? fdl_fail(err, FDL_NOMEM, "validate: out of memory") : FDL_OK;
  }
  if (!load_manifest(&v, root)) goto done;

  fdl_ds_check_manifest_schema(v.m, rep); /* step 2 */
  check_created(v.m, rep);
  fdl_ds_report_check(rep, "schema");

  bool ok, present; /* step 3 */
  fdl_err e;
  if (fdl_ds_seal_ok(v.m, "dataset_sha256", &ok, &present, &e) != FDL_OK)
    fdl_ds_report_error(rep, FDL_DSC_SEAL_FAILED, "SEAL-1(a)", FDL_DS_MANIFEST_NAME,
                        "cannot recompute dataset_sha256: %s", e.msg);
  else if (!ok)
    fdl_ds_report_error(rep, FDL_DSC_SEAL_FAILED, "SEAL-1(a)", FDL_DS_MANIFEST_NAME,
                        "dataset_sha256 does not recompute over the self-blanked manifest");
  fdl_ds_report_check(rep, "seal.manifest");

  fdl_ds_walk_paths(v.m, FDL_DS_MANIFEST_NAME, rep); /* step 4 */
  if (v.o->manifest_only) goto done;                 /* step 5 */

  fdl_ds_v_tree(&v); /* PATH-4 and the credential guard, over the whole tree */
  load_subdocs(&v);
  fdl_dirname(v.capture.rel, v.capture_dir, sizeof v.capture_dir);
  if (v.payload) {
    s = fdl_ds_v_files(&v, err); /* steps 6 and 19: every byte hashed in one parallel pass */
    if (s != FDL_OK) goto done;
  }
  fdl_ds_v_capture_digest(&v); /* step 9 */
  fdl_ds_v_records(&v);        /* step 10 */
  fdl_ds_v_panel(&v);          /* step 11 */
  fdl_ds_v_coverage(&v);       /* step 12 */
  fdl_ds_v_head(&v);           /* step 13 */
  fdl_ds_v_determinism(&v);    /* step 14 */
  fdl_ds_v_role(&v);           /* step 15 */
  fdl_ds_v_scope(&v);          /* step 16 */
  fdl_ds_v_lane(&v);           /* step 17 */
  fdl_ds_v_remap(&v);          /* step 18 */

done:
  finish(&v);
  json_decref(v.m);
  json_decref(v.capture.doc);
  json_decref(v.panel.doc);
  json_decref(v.head.doc);
  json_decref(v.runtime.doc);
  if (v.have_tree) fdl_ds_tree_free(&v.tree);
  close(v.rootfd);
  if (s == FDL_OK && rep->oom != FDL_OK) s = fdl_fail(err, FDL_NOMEM, "validate: out of memory");
  return s;
}
