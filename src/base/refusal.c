/* refusal.c - filling the shared refusal record. */
#include <stdio.h>

#include "base/refusal.h"

#define NAME_(id, name, meaning) name,
#define MEANING_(id, name, meaning) meaning,
static const char *const NAMES[] = {FDL_REFUSAL_MAP(NAME_)};
static const char *const MEANINGS[] = {FDL_REFUSAL_MAP(MEANING_)};

#define GATE_NAME_(id, name) name,
static const char *const GATE_NAMES[] = {FDL_GATES(GATE_NAME_)};

const char *fdl_gate_name(fdl_gate g) {
  return (unsigned)g < FDL_GATE_COUNT ? GATE_NAMES[g] : "";
}

const char *fdl_refusal_name(fdl_refusal_code c) {
  return (unsigned)c < FDL_REF_COUNT ? NAMES[c] : "";
}

const char *fdl_refusal_meaning(fdl_refusal_code c) {
  return (unsigned)c < FDL_REF_COUNT ? MEANINGS[c] : "";
}

fdl_refusal_code fdl_refusal_code_for(fdl_status s, fdl_refusal_code otherwise) {
  return s == FDL_EXISTS  ? FDL_REF_DESTINATION_EXISTS
         : s == FDL_NOMEM ? FDL_REF_OUT_OF_MEMORY
                          : otherwise;
}

fdl_status fdl_refusev(fdl_refusal *r, fdl_err *err, fdl_status status, fdl_refusal_code code,
                       fdl_gate gate, const char *remedy, const char *fmt, va_list ap) {
  if (r) {
    r->status = status;
    r->code = code;
    r->gate = gate;
    snprintf(r->remedy, sizeof r->remedy, "%s", remedy ? remedy : "");
  }
  return fdl_failv(err, status, fmt, ap);
}

fdl_status fdl_refuse(fdl_refusal *r, fdl_err *err, fdl_status status, fdl_refusal_code code,
                      fdl_gate gate, const char *remedy, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_status s = fdl_refusev(r, err, status, code, gate, remedy, fmt, ap);
  va_end(ap);
  return s;
}
