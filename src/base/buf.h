/* base/buf.h - appending to an fdl_buf (fidelis/buf.h), with a sticky error.
 *
 * Appends after an error (out of memory, bound exceeded) are no-ops, so a writer appends freely
 * and checks fdl_buf_status() once at the end. */
#ifndef FIDELIS_BASE_BUF_H
#define FIDELIS_BASE_BUF_H

#include <stddef.h>

#include "fidelis/buf.h"
#include "fidelis/status.h"

void fdl_buf_reset(fdl_buf *b);
void fdl_buf_append(fdl_buf *b, const void *p, size_t n);
void fdl_buf_puts(fdl_buf *b, const char *s);
void fdl_buf_putc(fdl_buf *b, char c);
void fdl_buf_printf(fdl_buf *b, const char *fmt, ...) FDL_PRINTF(2, 3);
/* FDL_OK, FDL_NOMEM or FDL_TOO_LARGE. */
fdl_status fdl_buf_status(const fdl_buf *b);

#endif
