/* buf.c - bounded growable byte buffer with a sticky error. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/sys.h"

void fdl_buf_init(fdl_buf *b, size_t limit) {
  memset(b, 0, sizeof *b);
  b->limit = limit ? limit : SIZE_MAX / 2;
}

void fdl_buf_free(fdl_buf *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void fdl_buf_reset(fdl_buf *b) {
  b->len = 0;
  b->err = FDL_OK;
  if (b->data) b->data[0] = '\0';
}

static int reserve(fdl_buf *b, size_t extra) {
  if (b->err != FDL_OK) return 0;
  size_t limit = b->limit ? b->limit : SIZE_MAX / 2; /* a zeroed buffer is an unbounded one */
  if (extra > limit || b->len > limit - extra) {
    b->err = FDL_TOO_LARGE;
    return 0;
  }
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  char *p = fdl_realloc(b->data, cap);
  if (!p) {
    b->err = FDL_NOMEM;
    return 0;
  }
  b->data = p;
  b->cap = cap;
  return 1;
}

void fdl_buf_append(fdl_buf *b, const void *p, size_t n) {
  if (!reserve(b, n)) return;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void fdl_buf_puts(fdl_buf *b, const char *s) {
  fdl_buf_append(b, s, strlen(s));
}

void fdl_buf_putc(fdl_buf *b, char c) {
  if (!reserve(b, 1)) return;
  b->data[b->len++] = c;
  b->data[b->len] = '\0';
}

void fdl_buf_printf(fdl_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

fdl_status fdl_buf_status(const fdl_buf *b) {
  return b->err;
}

char *fdl_buf_take(fdl_buf *b, size_t *len) {
  if (b->err != FDL_OK) return NULL;
  if (!b->data && !reserve(b, 0)) return NULL;
  char *p = b->data;
  if (len) *len = b->len;
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}
