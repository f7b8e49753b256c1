/* fidelis/buf.h - a growable byte buffer with a size bound and a sticky error.
 *
 * Public by decision (issue 25, two API tiers): public calls write their text into one
 * (fdl_report_markdown, fdl_checksums_format, fdl_npy_header, ...), so a caller needs the type
 * and the calls that start it and take or release what it holds. The appending calls that
 * build the text are base utilities of the private tier (src/base/buf.h). The data is always
 * NUL-terminated. */
#ifndef FIDELIS_BUF_H
#define FIDELIS_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  char *data;     /* owned; NUL-terminated when non-NULL */
  size_t len;     /* bytes used, excluding the NUL */
  size_t cap;     /* bytes allocated */
  size_t limit;   /* largest len allowed; 0 means SIZE_MAX/2 */
  fdl_status err; /* sticky: FDL_OK until an append fails */
} fdl_buf;

/* Starts an empty buffer that refuses to grow beyond limit bytes (0: no explicit bound). */
FDL_API void fdl_buf_init(fdl_buf *b, size_t limit);
/* Releases the memory; safe on a zeroed or already-freed buffer. */
FDL_API void fdl_buf_free(fdl_buf *b);
/* Hands the data to the caller (who frees it) and resets the buffer. NULL if in error. */
FDL_API char *fdl_buf_take(fdl_buf *b, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
