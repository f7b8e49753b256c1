/* findings.c - what the gates accumulate: gate verdicts, disclosures in emission order (the
 * order is inside the seal), the bias block and the class/floor flags. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/cmp.h"

void fdl_cmp_findings_init(cmp_findings *f) {
  memset(f, 0, sizeof *f);
  f->gates = json_object();
  f->disclosures = json_array();
  f->same_lane = true;
  f->head_policy = "native_head";
}

void fdl_cmp_findings_free(cmp_findings *f) {
  if (!f) return;
  json_decref(f->gates);
  json_decref(f->disclosures);
  json_decref(f->bias);
  free(f->shared);
  free(f->ref_at);
  free(f->cand_at);
  memset(f, 0, sizeof *f);
}

/* Sets o's "detail" to the formatted text; false when out of memory. */
static bool set_detail(json_t *o, const char *fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return !json_object_set_new(o, "detail", fdl_cmp_json_text(buf));
}

fdl_status fdl_cmp_gate(cmp_findings *f, fdl_gate gate, bool passed, const char *overridden_by,
                        fdl_err *err, const char *fmt, ...) {
  json_t *g = json_object();
  va_list ap;
  va_start(ap, fmt);
  bool ok = f->gates && g && !json_object_set_new(g, "passed", json_boolean(passed)) &&
            set_detail(g, fmt, ap) && !fdl_cmp_set_str(g, "overridden_by", overridden_by);
  va_end(ap);
  /* A *_set_new takes its value even when it fails: g is ours to free only when it was never
   * handed on. */
  if (!ok) json_decref(g);
  if (!ok || json_object_set_new(f->gates, fdl_gate_name(gate), g))
    return fdl_fail(err, FDL_NOMEM, "out of memory recording gate %s", fdl_gate_name(gate));
  return FDL_OK;
}

fdl_status fdl_cmp_disclose(cmp_findings *f, const char *code, const char *severity, int affects,
                            fdl_err *err, const char *fmt, ...) {
  json_t *d = json_object();
  va_list ap;
  va_start(ap, fmt);
  bool ok = f->disclosures && d && !fdl_cmp_set_str(d, "code", code) &&
            !fdl_cmp_set_str(d, "severity", severity) &&
            !json_object_set_new(d, "affects_comparability",
                                 affects < 0 ? json_null() : json_boolean(affects)) &&
            set_detail(d, fmt, ap);
  va_end(ap);
  /* As in fdl_cmp_gate: an *_append_new takes its value even when it fails. */
  if (!ok) json_decref(d);
  if (!ok || json_array_append_new(f->disclosures, d))
    return fdl_fail(err, FDL_NOMEM, "out of memory recording disclosure %s", code);
  return FDL_OK;
}

fdl_status fdl_cmp_set_bias(cmp_findings *f, const char *kind, const char *detail, fdl_err *err) {
  json_t *b = json_object();
  if (!b || fdl_cmp_set_str(b, "kind", kind) || fdl_cmp_set_str(b, "direction", "unknown") ||
      json_object_set_new(b, "estimated_magnitude", json_null()) ||
      json_object_set_new(b, "floor_measurement_ref", json_null()) ||
      fdl_cmp_set_str(b, "detail", detail)) {
    json_decref(b);
    return fdl_fail(err, FDL_NOMEM, "out of memory recording the bias block");
  }
  json_decref(f->bias);
  f->bias = b;
  return FDL_OK;
}
