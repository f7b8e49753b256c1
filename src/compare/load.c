/* load.c - one side of a comparison: full validation first (any error refuses seal_failed,
 * there is no override), then the documents, decoded into the fields the gates, statistics and
 * receipt read (section 3): the one reader of a side's keys in compare. */
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
  const fdl_ds_finding *e = rep.errors.count ? &rep.errors.items[0] : NULL;
  if (s != FDL_OK)
    s = fdl_cmp_refuse(r, err, s == FDL_NOMEM ? FDL_REF_OUT_OF_MEMORY : FDL_REF_UNREADABLE,
                       FDL_GATE_CLI, CMP_NO_OVERRIDE_DATA, "%s dataset %s: %s", who, root,
                       fdl_err_msg(err));
  else if (rep.oom != FDL_OK)
    s = fdl_cmp_refuse(r, err, FDL_REF_OUT_OF_MEMORY, FDL_GATE_SEAL, CMP_REMEDY_RESOURCES,
                       "%s dataset %s: out of memory while validating", who, root);
  else if (e)
    s = fdl_cmp_refuse(r, err, FDL_REF_SEAL_FAILED, FDL_GATE_SEAL,
                       "none: a dataset that does not validate is never compared; run `fidelis "
                       "validate` on it, then fix it or fetch it again",
                       "%s dataset %s does not validate (%zu error%s); first: [%s/%s] %s%s%s%s",
                       who, root, rep.errors.count, rep.errors.count == 1 ? "" : "s",
                       fdl_ds_code_name(e->code), e->rule, e->message,
                       fdl_cmp_empty(e->where) ? "" : " (", fdl_cmp_empty(e->where) ? "" : e->where,
                       fdl_cmp_empty(e->where) ? "" : ")");
  fdl_ds_report_free(&rep);
  return s;
}

const char *const fdl_cmp_tokenizer_fields[CMP_N_TOKENIZER] = {
    "id", "repository", "revision", "vocab_size", "add_special_tokens", "chat_template_applied"};
const char *const fdl_cmp_head_keys[CMP_N_HEAD_SHOWN] = {
    "tensor_content_sha256", "raw_tensor_sha256", "quantized", "bits", "source"};

/* An activation_scheme is declared: a non-empty string other than "none", or any truthy value. */
static bool scheme_declared(const json_t *qc) {
  const json_t *v = fdl_json_path(qc, "activation_scheme");
  const char *s = json_string_value(v);
  return s ? *s && strcmp(s, "none") : fdl_py_truthy(v);
}

/* A record's label: its own value, or (fallback) that `or` the panel record's, as Python's `or`
 * picks it. */
static const json_t *label(const fdl_ds_capture_record *c, const fdl_ds_panel_record *p,
                           const char *key, bool fallback) {
  const json_t *v = json_object_get(c->json, key);
  return fallback && p && !fdl_py_truthy(v) ? json_object_get(p->json, key) : v;
}

static fdl_status decode(cmp_side *s, fdl_err *err) {
  const json_t *m = s->ds.manifest,
               *wd = fdl_json_path(s->ds.runtime, "capture_tool.weights_decode");
  s->wd.method = fdl_json_str(wd, "method");
  s->wd.scope = fdl_json_str(wd, "scope");
  s->wd.output_dtype = fdl_json_str(wd, "output_dtype");
  s->wd.activation_quantized =
      scheme_declared(fdl_json_path(wd, "quantization_config")) ||
      scheme_declared(fdl_json_path(wd, "mixed_fp8.quantization_config")) ||
      fdl_py_truthy(fdl_json_path(wd, "activation_quantization"));
  const json_t *sf = fdl_json_obj(s->ds.runtime, "source_files");
  s->source_files = json_object_size(sf) ? sf : NULL;
  s->weights = fdl_json_path(m, "weights");
  s->context_length = fdl_json_path(m, "panel.context_length");
  s->scoring_window = fdl_json_path(m, "panel.scoring_window");
  s->tokenizer = fdl_json_path(m, "panel.tokenizer");
  for (size_t i = 0; i < CMP_N_TOKENIZER; i++) {
    const json_t *v = fdl_json_path(s->tokenizer, fdl_cmp_tokenizer_fields[i]);
    s->tokenizer_field[i] = json_is_null(v) ? NULL : v;
  }
  s->tokenizer_id = json_string_value(s->tokenizer_field[0]);
  for (size_t i = 0; i < CMP_N_HEAD_SHOWN; i++)
    s->head_shown[i] = fdl_json_path(fdl_json_path(m, "head"), fdl_cmp_head_keys[i]);
  s->recs = fdl_calloc(s->ds.n_records ? s->ds.n_records : 1, sizeof *s->recs);
  if (!s->recs) return fdl_fail(err, FDL_NOMEM, "out of memory");
  /* Both record arrays ascend by index: a merge finds each capture record's panel record. */
  const fdl_ds_panel_record *pr = s->ds.panel_records, *end = pr + s->ds.n_panel_records;
  for (size_t i = 0; i < s->ds.n_records; i++) {
    const fdl_ds_capture_record *c = &s->ds.records[i];
    while (pr < end && pr->index < c->index) pr++;
    const fdl_ds_panel_record *p = pr < end && pr->index == c->index ? pr : NULL;
    cmp_record *r = &s->recs[i];
    *r = (cmp_record){.panel = p,
                      .window_id = c->window_id,
                      .window_id_v = json_object_get(c->json, "window_id")};
    for (int k = 0; k < 2; k++) {
      r->domain_v[k] = label(c, p, "domain", k);
      r->stratum_v[k] = label(c, p, "allocation_stratum", k);
      r->domain[k] = json_string_value(r->domain_v[k]);
      r->allocation_stratum[k] = json_string_value(r->stratum_v[k]);
    }
  }
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
  return decode(s, err);
}

void fdl_cmp_side_free(cmp_side *s) {
  if (!s) return;
  fdl_dataset_free(&s->ds);
  free((char *)s->capture_dir);
  free(s->recs);
  s->capture_dir = NULL;
  s->recs = NULL;
}
