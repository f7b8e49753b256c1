/* fidelis/buf.h - a growable byte buffer with a size bound and a sticky error.
 *
 * Appends after an error (out of memory, bound exceeded) are no-ops, so a writer appends freely
 * and checks fdl_buf_status() once at the end. The data is always NUL-terminated. */
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
FDL_API void fdl_buf_reset(fdl_buf *b);
FDL_API void fdl_buf_append(fdl_buf *b, const void *p, size_t n);
FDL_API void fdl_buf_puts(fdl_buf *b, const char *s);
FDL_API void fdl_buf_putc(fdl_buf *b, char c);
FDL_API void fdl_buf_printf(fdl_buf *b, const char *fmt, ...) FDL_PRINTF(2, 3);
/* FDL_OK, FDL_NOMEM or FDL_TOO_LARGE. */
FDL_API fdl_status fdl_buf_status(const fdl_buf *b);
/* Hands the data to the caller (who frees it) and resets the buffer. NULL if in error. */
FDL_API char *fdl_buf_take(fdl_buf *b, size_t *len);

#ifdef __cplusplus
}
#endif
#endif
