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
#include "base/quote.h"
#include "dataset/ds_internal.h"
#include "json/json.h"
#include "base/sys.h"

#define CODE_NAME_(id, name) name,
static const char *const CODE_NAMES[] = {FDL_DS_CODES(CODE_NAME_)};

const char *fdl_ds_code_name(fdl_ds_code c) {
  return (unsigned)c < FDL_DSC_COUNT ? CODE_NAMES[c] : "";
}

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
  char shown[DS_MAX_PATH + 64];
  subject = subject ? subject : "";
  char *s = fdl_strdup(fdl_quote_text(subject, strlen(subject), shown, sizeof shown));
  if (!s) {
    r->oom = FDL_NOMEM;
    return;
  }
  free(r->subject);
  r->subject = s;
}

/* Messages quote values from untrusted files; a bound keeps one finding readable. */
#define DS_MSG_MAX 2048

static void add(fdl_ds_report *r, fdl_ds_findings *f, fdl_ds_code code, const char *rule,
                const char *where, const char *fmt, va_list ap) {
  /* Call sites quote what they insert (fdl_quote); passing the whole line and its location
   * through the same escaping as well means no finding can ever stop the report from becoming
   * JSON or from printing safely, whatever a caller forgot. */
  char raw[2 * DS_MSG_MAX], msg[DS_MSG_MAX], at[DS_MAX_PATH + 64];
  int len = vsnprintf(raw, sizeof raw, fmt, ap);
  size_t n = len < 0 ? 0 : (size_t)len < sizeof raw ? (size_t)len : sizeof raw - 1;
  fdl_quote_text(raw, n, msg, sizeof msg);
  where = where ? where : "";
  fdl_quote_text(where, strlen(where), at, sizeof at);
  if (!FDL_GROW(f->items, f->count, f->cap_, 16)) {
    r->oom = FDL_NOMEM;
    return;
  }
  fdl_ds_finding x = {code, fdl_strdup(rule), fdl_strdup(msg), fdl_strdup(at)};
  if (!x.rule || !x.message || !x.where) {
    free(x.rule);
    free(x.message);
    free(x.where);
    r->oom = FDL_NOMEM;
    return;
  }
  f->items[f->count++] = x;
}

void fdl_ds_report_error(fdl_ds_report *r, fdl_ds_code code, const char *rule, const char *where,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add(r, &r->errors, code, rule, where, fmt, ap);
  va_end(ap);
}

void fdl_ds_report_warn(fdl_ds_report *r, fdl_ds_code code, const char *rule, const char *where,
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
  if (!FDL_GROW(r->checks, r->n_checks, r->cap_checks_, 16)) {
    r->oom = FDL_NOMEM;
    return;
  }
  char *c = fdl_strdup(name);
  if (!c) {
    r->oom = FDL_NOMEM;
    return;
  }
  r->checks[r->n_checks++] = c;
}

bool fdl_ds_report_has(const fdl_ds_report *r, fdl_ds_code code) {
  for (size_t i = 0; i < r->errors.count; i++)
    if (r->errors.items[i].code == code) return true;
  for (size_t i = 0; i < r->warnings.count; i++)
    if (r->warnings.items[i].code == code) return true;
  return false;
}

fdl_ds_verdict fdl_ds_report_verdict(const fdl_ds_report *r) {
  if (r->errors.count) return FDL_DS_VERDICT_ERRORS;
  if (r->warnings.count) return FDL_DS_VERDICT_WARNINGS;
  return FDL_DS_VERDICT_OK;
}

/* jansson refuses a string that is not UTF-8 as well as one it cannot allocate; the two are
 * told apart so a hostile value is never reported as a memory fault. */
static fdl_status str_value(const char *s, const char *field, json_t **out, fdl_err *err) {
  *out = s ? json_string(s) : NULL;
  if (*out) return FDL_OK;
  if (!s) return fdl_fail(err, FDL_INVALID, "report: %s is missing", field);
  if (!fdl_utf8_valid(s, strlen(s)))
    return fdl_fail(err, FDL_INVALID,
                    "report: %s is not valid UTF-8, so it cannot be a JSON string", field);
  return fdl_fail(err, FDL_NOMEM, "report: out of memory storing %s", field);
}

static fdl_status set_str(json_t *o, const char *key, const char *s, const char *field,
                          fdl_err *err) {
  json_t *v;
  fdl_status st = str_value(s, field, &v, err);
  if (st != FDL_OK) return st;
  if (json_object_set_new(o, key, v))
    return fdl_fail(err, FDL_NOMEM, "report: out of memory storing %s", field);
  return FDL_OK;
}

static fdl_status set_new(json_t *o, const char *key, json_t *v, fdl_err *err) {
  if (!v || json_object_set_new(o, key, v))
    return fdl_fail(err, FDL_NOMEM, "report: out of memory storing %s", key);
  return FDL_OK;
}

static fdl_status findings_json(const fdl_ds_findings *f, const char *list, json_t **out,
                                fdl_err *err) {
  json_t *a = json_array();
  if (!a) return fdl_fail(err, FDL_NOMEM, "report: out of memory for %s", list);
  fdl_status s = FDL_OK;
  for (size_t i = 0; s == FDL_OK && i < f->count; i++) {
    const fdl_ds_finding *x = &f->items[i];
    static const char *const keys[] = {"code", "rule", "message", "where"};
    const char *vals[] = {fdl_ds_code_name(x->code), x->rule, x->message, x->where};
    json_t *o = json_object();
    if (!o) s = fdl_fail(err, FDL_NOMEM, "report: out of memory for %s[%zu]", list, i);
    for (size_t k = 0; s == FDL_OK && k < 4; k++) {
      char field[64];
      snprintf(field, sizeof field, "%s[%zu].%s", list, i, keys[k]);
      s = set_str(o, keys[k], vals[k], field, err);
    }
    if (s == FDL_OK && json_array_append_new(a, o) != 0)
      s = fdl_fail(err, FDL_NOMEM, "report: out of memory for %s[%zu]", list, i);
    else if (s != FDL_OK)
      json_decref(o);
  }
  return fdl_json_hand_over(s, a, out);
}

static fdl_status checks_json(const fdl_ds_report *r, json_t **out, fdl_err *err) {
  char **sorted = fdl_malloc((r->n_checks ? r->n_checks : 1) * sizeof *sorted);
  json_t *checks = json_array();
  fdl_status s = FDL_OK;
  if (!sorted || !checks) s = fdl_fail(err, FDL_NOMEM, "report: out of memory for checks_run");
  if (s == FDL_OK && r->n_checks) {
    memcpy(sorted, r->checks, r->n_checks * sizeof *sorted);
    qsort(sorted, r->n_checks, sizeof *sorted, fdl_order_cstr);
  }
  for (size_t i = 0; s == FDL_OK && i < r->n_checks; i++) {
    json_t *v;
    char field[48];
    snprintf(field, sizeof field, "checks_run[%zu]", i);
    s = str_value(sorted[i], field, &v, err);
    if (s == FDL_OK && json_array_append_new(checks, v) != 0)
      s = fdl_fail(err, FDL_NOMEM, "report: out of memory for %s", field);
  }
  free(sorted);
  return fdl_json_hand_over(s, checks, out);
}

fdl_status fdl_ds_report_to_json(const fdl_ds_report *r, bool with_level, json_t **out,
                                 fdl_err *err) {
  if (r->oom != FDL_OK) return fdl_fail(err, FDL_NOMEM, "report: findings were lost to OOM");
  json_t *checks = NULL, *errors = NULL, *warnings = NULL;
  json_t *doc = json_object();
  fdl_status s = doc ? FDL_OK : fdl_fail(err, FDL_NOMEM, "report: out of memory");
  if (s == FDL_OK) s = checks_json(r, &checks, err);
  if (s == FDL_OK) s = findings_json(&r->errors, "errors", &errors, err);
  if (s == FDL_OK) s = findings_json(&r->warnings, "warnings", &warnings, err);
  if (s == FDL_OK) s = set_str(doc, "schema", FDL_DS_VALIDATION_SCHEMA, "schema", err);
  if (s == FDL_OK) s = set_new(doc, "format_version", json_integer(1), err);
  if (s == FDL_OK) s = set_str(doc, "receipt_sha256", "", "receipt_sha256", err);
  if (s == FDL_OK) s = set_str(doc, "subject", r->subject ? r->subject : "", "subject", err);
  if (s == FDL_OK)
    s = set_str(doc, "structural_status", r->errors.count ? "invalid" : "sealed",
                "structural_status", err);
  /* The three lists are held here until the end, whether or not doc took them. */
  if (s == FDL_OK) s = set_new(doc, "checks_run", json_incref(checks), err);
  if (s == FDL_OK) s = set_new(doc, "errors", json_incref(errors), err);
  if (s == FDL_OK) s = set_new(doc, "warnings", json_incref(warnings), err);
  if (s == FDL_OK) s = set_new(doc, "error_count", json_integer((json_int_t)r->errors.count), err);
  if (s == FDL_OK)
    s = set_new(doc, "warning_count", json_integer((json_int_t)r->warnings.count), err);
  if (s == FDL_OK && with_level)
    s = set_str(doc, "conformance_level", fdl_ds_level_name(r->level), "conformance_level", err);
  if (s == FDL_OK) s = fdl_ds_seal(doc, "receipt_sha256", err);
  json_decref(checks);
  json_decref(errors);
  json_decref(warnings);
  return fdl_json_hand_over(s, doc, out);
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
