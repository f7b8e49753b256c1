/* report.c - validation findings and the sealed report document (§12.2, §12.3).
 *
 * validate collects every finding rather than stopping at the first, so a report can hold many;
 * a finding that cannot be stored for lack of memory sets a sticky flag, and the run then
 * reports a fault instead of a shorter, wrongly reassuring list. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "dataset/ds_internal.h"
#include "base/sys.h"

const char *fdl_ds_level_name(fdl_ds_level l) {
  switch (l) {
  case FDL_DS_LEVEL_INVALID:
    return "invalid";
  case FDL_DS_LEVEL_MANIFESTS:
    return "manifests";
  case FDL_DS_LEVEL_STRUCTURAL:
    return "structural";
  case FDL_DS_LEVEL_SEALED:
    return "sealed";
  }
  return "invalid";
}

void fdl_ds_report_init(fdl_ds_report *r) {
  memset(r, 0, sizeof *r);
}

static void free_findings(fdl_ds_findings *f) {
  for (size_t i = 0; i < f->count; i++) {
    free(f->items[i].code);
    free(f->items[i].rule);
    free(f->items[i].message);
    free(f->items[i].where);
  }
  free(f->items);
  memset(f, 0, sizeof *f);
}

void fdl_ds_report_free(fdl_ds_report *r) {
  if (!r) return;
  free(r->subject);
  free_findings(&r->errors);
  free_findings(&r->warnings);
  for (size_t i = 0; i < r->n_checks; i++) free(r->checks[i]);
  free(r->checks);
  memset(r, 0, sizeof *r);
}

void fdl_ds_report_set_subject(fdl_ds_report *r, const char *subject) {
  char *s = fdl_strdup(subject ? subject : "");
  if (!s) {
    r->oom = FDL_NOMEM;
    return;
  }
  free(r->subject);
  r->subject = s;
}

/* Messages quote values from untrusted files; a bound keeps one finding readable. */
#define DS_MSG_MAX 2048

static void add(fdl_ds_report *r, fdl_ds_findings *f, const char *code, const char *rule,
                const char *where, const char *fmt, va_list ap) {
  char msg[DS_MSG_MAX];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (f->count == f->cap_) {
    size_t cap = f->cap_ ? f->cap_ * 2 : 16;
    fdl_ds_finding *p = fdl_realloc(f->items, cap * sizeof *p);
    if (!p) {
      r->oom = FDL_NOMEM;
      return;
    }
    f->items = p;
    f->cap_ = cap;
  }
  fdl_ds_finding x = {fdl_strdup(code), fdl_strdup(rule), fdl_strdup(msg),
                      fdl_strdup(where ? where : "")};
  if (!x.code || !x.rule || !x.message || !x.where) {
    free(x.code);
    free(x.rule);
    free(x.message);
    free(x.where);
    r->oom = FDL_NOMEM;
    return;
  }
  f->items[f->count++] = x;
}

void fdl_ds_report_error(fdl_ds_report *r, const char *code, const char *rule, const char *where,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add(r, &r->errors, code, rule, where, fmt, ap);
  va_end(ap);
}

void fdl_ds_report_warn(fdl_ds_report *r, const char *code, const char *rule, const char *where,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add(r, &r->warnings, code, rule, where, fmt, ap);
  va_end(ap);
}

void fdl_ds_report_check(fdl_ds_report *r, const char *fmt, ...) {
  char name[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  if (r->n_checks == r->cap_checks_) {
    size_t cap = r->cap_checks_ ? r->cap_checks_ * 2 : 16;
    char **p = fdl_realloc(r->checks, cap * sizeof *p);
    if (!p) {
      r->oom = FDL_NOMEM;
      return;
    }
    r->checks = p;
    r->cap_checks_ = cap;
  }
  char *c = fdl_strdup(name);
  if (!c) {
    r->oom = FDL_NOMEM;
    return;
  }
  r->checks[r->n_checks++] = c;
}

bool fdl_ds_report_has(const fdl_ds_report *r, const char *code) {
  for (size_t i = 0; i < r->errors.count; i++)
    if (!strcmp(r->errors.items[i].code, code)) return true;
  for (size_t i = 0; i < r->warnings.count; i++)
    if (!strcmp(r->warnings.items[i].code, code)) return true;
  return false;
}

fdl_ds_verdict fdl_ds_report_verdict(const fdl_ds_report *r) {
  if (r->errors.count) return FDL_DS_VERDICT_ERRORS;
  if (r->warnings.count) return FDL_DS_VERDICT_WARNINGS;
  return FDL_DS_VERDICT_OK;
}

static json_t *findings_json(const fdl_ds_findings *f) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < f->count; i++) {
    json_t *o =
        json_pack("{s:s, s:s, s:s, s:s}", "code", f->items[i].code, "rule", f->items[i].rule,
                  "message", f->items[i].message, "where", f->items[i].where);
    if (!o || json_array_append_new(a, o) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

fdl_status fdl_ds_report_to_json(const fdl_ds_report *r, bool with_level, json_t **out,
                                 fdl_err *err) {
  if (r->oom != FDL_OK) return fdl_fail(err, FDL_NOMEM, "report: findings were lost to OOM");
  char **sorted = fdl_malloc((r->n_checks ? r->n_checks : 1) * sizeof *sorted);
  if (!sorted) return fdl_fail(err, FDL_NOMEM, "report: out of memory");
  if (r->n_checks) memcpy(sorted, r->checks, r->n_checks * sizeof *sorted);
  if (r->n_checks) qsort(sorted, r->n_checks, sizeof *sorted, fdl_order_cstr);
  json_t *checks = json_array();
  for (size_t i = 0; checks && i < r->n_checks; i++)
    if (json_array_append_new(checks, json_string(sorted[i])) != 0) {
      json_decref(checks);
      checks = NULL;
    }
  free(sorted);
  json_t *errors = findings_json(&r->errors), *warnings = findings_json(&r->warnings);
  json_t *doc = json_object();
  if (!checks || !errors || !warnings || !doc) {
    json_decref(checks);
    json_decref(errors);
    json_decref(warnings);
    json_decref(doc);
    return fdl_fail(err, FDL_NOMEM, "report: out of memory");
  }
  int bad = 0;
  bad |= json_object_set_new(doc, "schema", json_string(FDL_DS_VALIDATION_SCHEMA));
  bad |= json_object_set_new(doc, "format_version", json_integer(1));
  bad |= json_object_set_new(doc, "receipt_sha256", json_string(""));
  bad |= json_object_set_new(doc, "subject", json_string(r->subject ? r->subject : ""));
  bad |= json_object_set_new(doc, "structural_status",
                             json_string(r->errors.count ? "invalid" : "sealed"));
  bad |= json_object_set_new(doc, "checks_run", checks);
  bad |= json_object_set_new(doc, "errors", errors);
  bad |= json_object_set_new(doc, "warnings", warnings);
  bad |= json_object_set_new(doc, "error_count", json_integer((json_int_t)r->errors.count));
  bad |= json_object_set_new(doc, "warning_count", json_integer((json_int_t)r->warnings.count));
  if (with_level)
    bad |= json_object_set_new(doc, "conformance_level", json_string(fdl_ds_level_name(r->level)));
  if (bad) {
    json_decref(doc);
    return fdl_fail(err, FDL_NOMEM, "report: out of memory");
  }
  fdl_status s = fdl_ds_seal(doc, "receipt_sha256", err);
  if (s != FDL_OK) {
    json_decref(doc);
    return s;
  }
  *out = doc;
  return FDL_OK;
}

fdl_status fdl_ds_preseal_report(const char *dataset_id, json_t **out, fdl_err *err) {
  fdl_ds_report r;
  fdl_ds_report_init(&r);
  fdl_buf subject;
  fdl_buf_init(&subject, 0);
  fdl_buf_printf(&subject, "dataset:%s", dataset_id ? dataset_id : "");
  fdl_ds_report_set_subject(&r, subject.data);
  if (fdl_buf_status(&subject) != FDL_OK) r.oom = FDL_NOMEM;
  fdl_buf_free(&subject);
  fdl_ds_report_check(&r, "pre-seal");
  fdl_status s = fdl_ds_report_to_json(&r, false, out, err);
  fdl_ds_report_free(&r);
  return s;
}
