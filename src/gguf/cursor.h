/* cursor.h - reading a GGUF file front to back, every read proved to fit first (gguf.c,
 * tensors.c). */
#ifndef FDL_GGUF_CURSOR_H
#define FDL_GGUF_CURSOR_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "fidelis/gguf.h"

typedef struct {
  const uint8_t *p;
  uint64_t size, at;
  const char *path;
} cursor;

static inline uint64_t le(const uint8_t *p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static inline fdl_status need(cursor *c, uint64_t n, const char *what, fdl_err *err) {
  if (n <= c->size - c->at) return FDL_OK;
  return fdl_fail(err, FDL_BOUNDS,
                  "%s: %s at offset %" PRIu64 " needs %" PRIu64 " bytes but the file has %" PRIu64
                  " left",
                  c->path, what, c->at, n, c->size - c->at);
}

static inline fdl_status u32_at(cursor *c, uint32_t *v, const char *what, fdl_err *err) {
  fdl_status s = need(c, 4, what, err);
  if (s == FDL_OK) *v = (uint32_t)le(c->p + c->at, 4), c->at += 4;
  return s;
}

static inline fdl_status u64_at(cursor *c, uint64_t *v, const char *what, fdl_err *err) {
  fdl_status s = need(c, 8, what, err);
  if (s == FDL_OK) *v = le(c->p + c->at, 8), c->at += 8;
  return s;
}

/* A string: its length is proved against the rest of the file before anything else. */
static inline fdl_status str_at(cursor *c, uint64_t *off, uint64_t *len, const char *what,
                                fdl_err *err) {
  fdl_status s = u64_at(c, len, what, err);
  if (s == FDL_OK) s = need(c, *len, what, err);
  if (s == FDL_OK) *off = c->at, c->at += *len;
  return s;
}

/* Whether s[0..n) is UTF-8 without NUL (keys and tensor names). */
bool fdl_gguf_utf8_ok(const uint8_t *s, uint64_t n);
/* tensors.c: the tensor-info table after the metadata, and the data section's bounds. */
fdl_status fdl_gguf_read_tensors(fdl_gguf *g, cursor *c, fdl_err *err);

#endif
