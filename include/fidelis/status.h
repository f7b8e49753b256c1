/* fidelis/status.h - one status enum for the whole library, plus the error record.
 *
 * Every fallible call returns an fdl_status and, when given a non-NULL fdl_err, fills it with a
 * message a user can act on: what failed, on which file or field, and what was expected.
 * Numbers are append-only: never reuse or renumber a code. */
#ifndef FIDELIS_STATUS_H
#define FIDELIS_STATUS_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FDL_API __attribute__((visibility("default")))
#define FDL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FDL_API
#define FDL_PRINTF(f, a)
#endif

#define FDL_STATUS_MAP(XX)                                                                         \
  XX(OK, 0, "success")                                                                             \
  XX(NOMEM, 1, "out of memory")                                                                    \
  XX(IO, 2, "I/O error")                                                                           \
  XX(PARSE, 3, "malformed input")                                                                  \
  XX(BOUNDS, 4, "length, offset or size out of bounds")                                            \
  XX(UNSUPPORTED, 5, "unsupported feature or type")                                                \
  XX(INVALID, 6, "invalid argument")                                                               \
  XX(EXISTS, 7, "output already exists")                                                           \
  XX(MISMATCH, 8, "digest or content mismatch")                                                    \
  XX(NONFINITE, 9, "non-finite value")                                                             \
  XX(PATH, 10, "path rule violated")                                                               \
  XX(REFUSED, 11, "refused by a gate or rule")                                                     \
  XX(TOO_LARGE, 12, "output or value too large")

typedef enum {
#define FDL_STATUS_ENUM_(name, num, text) FDL_##name = num,
  FDL_STATUS_MAP(FDL_STATUS_ENUM_)
#undef FDL_STATUS_ENUM_
} fdl_status;

/* Human text for a status ("digest or content mismatch"). Never NULL. */
FDL_API const char *fdl_strerror(fdl_status s);
/* Stable identifier for a status ("MISMATCH"). Never NULL. */
FDL_API const char *fdl_status_name(fdl_status s);

#define FDL_ERR_MSG_MAX 1024

/* Caller-owned error record. Functions that fail write status and msg; on success they leave it
 * untouched. Passing NULL means "I only want the status". */
typedef struct {
  fdl_status status;
  char msg[FDL_ERR_MSG_MAX];
} fdl_err;

/* Fills *err (if non-NULL) with a printf-style message and returns s. The arguments may hold
 * err's own message: a callee's failure is re-wrapped in place, never through a second record,
 * as fdl_fail(err, FDL_IO, "meta %s: %s", path, fdl_err_msg(err)). These three are public,
 * unlike making a refusal, because a caller's own callbacks fail through an fdl_err too
 * (fdl_pool_task, fdl_tok_sink). */
FDL_API fdl_status fdl_fail(fdl_err *err, fdl_status s, const char *fmt, ...) FDL_PRINTF(3, 4);
FDL_API fdl_status fdl_failv(fdl_err *err, fdl_status s, const char *fmt, va_list ap);
/* Prefixes an existing message with context and ": " ("capture/hidden_0001.safetensors: ...")
 * and returns its status. */
FDL_API fdl_status fdl_err_prefix(fdl_err *err, const char *fmt, ...) FDL_PRINTF(2, 3);
/* err's message; "" for a NULL err. */
FDL_API const char *fdl_err_msg(const fdl_err *err);

/* Something the library did that the user should hear about but that is not an error (e.g. it
 * removed a stale staging directory). The library never prints; a front end that wants these
 * passes a callback (the notice field of an options struct). message is valid only during the
 * call. */
typedef void (*fdl_notice_fn)(void *arg, const char *message);

/* Library version string, e.g. "0.1.0". */
FDL_API const char *fdl_version(void);

#ifdef __cplusplus
}
#endif
#endif
