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
    char msg[FDL_ERR_MSG_MAX]; /* the arguments may be err->msg itself */
    vsnprintf(msg, sizeof msg, fmt, ap);
    err->status = s;
    memcpy(err->msg, msg, strlen(msg) + 1);
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
  char prefix[FDL_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  return fdl_fail(err, err->status, "%s: %s", prefix, err->msg);
}

const char *fdl_err_msg(const fdl_err *err) {
  return err ? err->msg : "";
}

const char *fdl_version(void) {
  return FDL_VERSION_STRING;
}
