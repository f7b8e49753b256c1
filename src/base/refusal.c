/* refusal.c - filling the shared refusal record. */
#include <stdio.h>

#include "fidelis/refusal.h"

fdl_status fdl_refusev(fdl_refusal *r, fdl_err *err, fdl_status status, const char *code,
                       const char *gate, const char *remedy, const char *fmt, va_list ap) {
  if (r) {
    r->status = status;
    snprintf(r->code, sizeof r->code, "%s", code ? code : "");
    snprintf(r->gate, sizeof r->gate, "%s", gate ? gate : "");
    snprintf(r->remedy, sizeof r->remedy, "%s", remedy ? remedy : "");
  }
  return fdl_failv(err, status, fmt, ap);
}

fdl_status fdl_refuse(fdl_refusal *r, fdl_err *err, fdl_status status, const char *code,
                      const char *gate, const char *remedy, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_status s = fdl_refusev(r, err, status, code, gate, remedy, fmt, ap);
  va_end(ap);
  return s;
}
