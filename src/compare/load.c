/* load.c - one side of a comparison: full validation first (any error refuses seal_failed,
 * there is no override), then the documents and the fields the gates read (section 3). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/path.h"
#include "compare/cmp.h"
#include "base/sys.h"

char *fdl_cmp_path_join(const char *root, const char *rel, const char *rel2) {
  if (!rel2) return fdl_path_join(root, rel);
  if (!*rel) return fdl_path_join(root, rel2);
  char *dir = fdl_path_join(root, rel);
  char *p = dir ? fdl_path_join(dir, rel2) : NULL;
  free(dir);
  return p;
}

static bool regular_file(const char *root, const char *rel) {
  if (fdl_cmp_empty(rel)) return false;
  char *p = fdl_cmp_path_join(root, rel, NULL);
  struct stat st;
  bool ok = p && lstat(p, &st) == 0 && S_ISREG(st.st_mode);
  free(p);
  return ok;
}

static fdl_status validate(const char *root, const char *who, const fdl_compare_opts *o,
                           fdl_refusal *r, fdl_err *err) {
  /* The tensors are hashed in the read that computes on them (vread.c, verify.c), not here. */
  fdl_ds_validate_opts vo = {
      .defer_tensor_hashes = true, .allow_partial = o->allow_partial, .threads = o->threads};
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_status s = fdl_ds_validate(root, &vo, &rep, err);
  if (s != FDL_OK) {
    fdl_ds_report_free(&rep);
    return fdl_cmp_refuse(r, err, s == FDL_NOMEM ? FDL_REF_OUT_OF_MEMORY : FDL_REF_UNREADABLE,
                          FDL_GATE_CLI, CMP_NO_OVERRIDE_DATA, "%s dataset %s: %s", who, root,
                          fdl_err_msg(err));
  }
  if (rep.oom != FDL_OK) {
    fdl_ds_report_free(&rep);
    return fdl_cmp_refuse(r, err, FDL_REF_OUT_OF_MEMORY, FDL_GATE_SEAL, CMP_REMEDY_RESOURCES,
                          "%s dataset %s: out of memory "
                          "while validating",
                          who, root);
  }
  if (rep.errors.count) {
    const fdl_ds_finding *e = &rep.errors.items[0];
    fdl_cmp_refuse(r, err, FDL_REF_SEAL_FAILED, FDL_GATE_SEAL,
                   "none: a dataset that does not validate is never compared; run `fidelis "
                   "validate` on it, then fix it or fetch it again",
                   "%s dataset %s does not validate (%zu error%s); first: [%s/%s] %s%s%s%s", who,
                   root, rep.errors.count, rep.errors.count == 1 ? "" : "s",
                   fdl_ds_code_name(e->code), e->rule, e->message,
                   fdl_cmp_empty(e->where) ? "" : " (", fdl_cmp_empty(e->where) ? "" : e->where,
                   fdl_cmp_empty(e->where) ? "" : ")");
    fdl_ds_report_free(&rep);
    return FDL_REFUSED;
  }
  fdl_ds_report_free(&rep);
  return FDL_OK;
}

fdl_status fdl_cmp_side_load(cmp_side *s, const char *root, const char *who, const char *label,
                             const fdl_compare_opts *o, fdl_refusal *r, fdl_err *err) {
  memset(s, 0, sizeof *s);
  s->root = root;
  s->who = who;
  s->label = label;
  fdl_status st = validate(root, who, o, r, err);
  if (st != FDL_OK) return st;
  if ((st = fdl_dataset_load(root, &s->ds, err)) != FDL_OK)
    return fdl_cmp_refuse(r, err, FDL_REF_UNREADABLE, FDL_GATE_CLI, CMP_NO_OVERRIDE_DATA,
                          "%s dataset %s: %s", who, root, fdl_err_msg(err));
  const fdl_ds_manifest *m = s->m = &s->ds.m;
  if (!s->ds.capture || !s->ds.panel || !s->ds.runtime)
    return fdl_cmp_refuse(r, err, FDL_REF_UNREADABLE, FDL_GATE_CLI, CMP_NO_OVERRIDE_DATA,
                          "%s dataset %s: a sub-document (capture manifest, panel binding or "
                          "capture runtime) could not be read after validation",
                          who, root);
  s->head_payload = regular_file(root, m->head.file);
  s->hidden = m->capture.form == FDL_FORM_HIDDEN;
  if (m->capture.vocab_size < 1 || (s->hidden && m->capture.hidden_width < 1))
    return fdl_cmp_refuse(r, err, FDL_REF_GEOMETRY_MISMATCH, FDL_GATE_GEOMETRY,
                          CMP_NO_OVERRIDE_DATA,
                          "%s dataset %s: capture.vocab_size%s is not a positive integer", who,
                          root, s->hidden ? " or capture.hidden_width" : "");
  /* Record files are relative to the capture manifest's directory. */
  const char *mf = m->capture.manifest_file ? m->capture.manifest_file : "";
  size_t cap = strlen(mf) + 1;
  char *dir = fdl_malloc(cap);
  if (!dir) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_dirname(mf, dir, cap);
  s->capture_dir = dir;
  return FDL_OK;
}

void fdl_cmp_side_free(cmp_side *s) {
  if (!s) return;
  fdl_dataset_free(&s->ds);
  free((char *)s->capture_dir);
  s->capture_dir = NULL;
}
