/* json_util.c - the few JSON accessors the comparator needs. Python's semantics (truthiness,
 * ==, str()) are json/py.h's and the getters json/get.h's, shared with validate. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/quote.h"
#include "base/refusal.h"
#include "compare/cmp.h"

fdl_status fdl_cmp_refuse(fdl_refusal *r, fdl_err *err, fdl_refusal_code code, fdl_gate gate,
                          const char *remedy, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_status s = fdl_refusev(r, err, FDL_REFUSED, code, gate, remedy, fmt, ap);
  va_end(ap);
  return s;
}

const char *fdl_cmp_str0(const char *s) {
  return s ? s : "";
}

int fdl_cmp_set_real(json_t *o, const char *k, double v) {
  return json_object_set_new(o, k, json_real(v));
}

int fdl_cmp_set_int(json_t *o, const char *k, int64_t v) {
  return json_object_set_new(o, k, json_integer((json_int_t)v));
}

int fdl_cmp_set_str(json_t *o, const char *k, const char *v) {
  return json_object_set_new(o, k, v ? fdl_cmp_json_text(v) : json_null());
}

json_t *fdl_cmp_json_text(const char *s) {
  size_t n = strlen(s);
  if (fdl_utf8_valid(s, n)) return json_string(s);
  /* JSON holds only UTF-8, and a path from the command line can be any bytes: its escaped
   * spelling is recorded, so the only way left for building a receipt to fail is memory. */
  char shown[4 * 4096 + 64];
  return json_string(fdl_quote_text(s, n, shown, sizeof shown));
}

int fdl_cmp_set_bool(json_t *o, const char *k, bool v) {
  return json_object_set_new(o, k, json_boolean(v));
}

json_t *fdl_cmp_copy(const json_t *v) {
  return v ? json_deep_copy(v) : json_null();
}

bool fdl_cmp_empty(const char *s) {
  return !s || !*s;
}

bool fdl_cmp_streq(const char *a, const char *b) {
  return !strcmp(a ? a : "", b ? b : "");
}

void fdl_cmp_short(const char *hex, char out[13]) {
  snprintf(out, 13, "%s", hex ? hex : "");
}
