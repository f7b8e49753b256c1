/* status.c - status names and the error record. */
#include <stdio.h>
#include <string.h>

#include "fidelis/status.h"

const char *fdl_strerror(fdl_status s) {
  switch (s) {
#define FDL_STATUS_TEXT_(name, num, text)                                                          \
  case FDL_##name:                                                                                 \
    return text;
    FDL_STATUS_MAP(FDL_STATUS_TEXT_)
#undef FDL_STATUS_TEXT_
  }
  return "unknown status";
}

const char *fdl_status_name(fdl_status s) {
  switch (s) {
#define FDL_STATUS_NAME_(name, num, text)                                                          \
  case FDL_##name:                                                                                 \
    return #name;
    FDL_STATUS_MAP(FDL_STATUS_NAME_)
#undef FDL_STATUS_NAME_
  }
  return "UNKNOWN";
}

fdl_status fdl_failv(fdl_err *err, fdl_status s, const char *fmt, va_list ap) {
  if (err) {
    err->status = s;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  return s;
}

fdl_status fdl_fail(fdl_err *err, fdl_status s, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_failv(err, s, fmt, ap);
  va_end(ap);
  return s;
}

fdl_status fdl_err_prefix(fdl_err *err, const char *fmt, ...) {
  if (!err) return FDL_OK;
  char joined[FDL_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(joined, sizeof joined, fmt, ap);
  va_end(ap);
  size_t used = n < 0 ? 0 : (size_t)n;
  if (used > sizeof joined - 1) used = sizeof joined - 1;
  /* Keep as much of the old message as fits after "prefix: "; truncation is silent by design. */
  size_t room = sizeof joined - 1 - used;
  size_t old_len = strlen(err->msg);
  if (room >= 2) {
    memcpy(joined + used, ": ", 2);
    used += 2;
    room -= 2;
    size_t take = old_len < room ? old_len : room;
    memcpy(joined + used, err->msg, take);
    used += take;
  }
  joined[used] = '\0';
  memcpy(err->msg, joined, used + 1);
  return err->status;
}

const char *fdl_version(void) {
  return FDL_VERSION_STRING;
}
