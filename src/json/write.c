/* write.c - canonical JSON text, byte for byte what Python's json.dumps writes with
 * sort_keys=True, allow_nan=False and either separators=(",", ":") or indent=2. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "json/json.h"
#include "base/quote.h"
#include "base/sys.h"

/* The writer recurses once per level. jansson's parser stops at 2048 levels, so every parsed
 * document fits; deeper (or cyclic) trees built in code are refused instead of exhausting the
 * stack. */
#define WRITE_MAX_DEPTH 2048

typedef struct {
  fdl_buf *out;
  bool ascii;
  bool pretty;
  fdl_err *err;
} writer;

typedef struct {
  const char *key;
  size_t len;
  json_t *value;
} member;

static const char HEX[] = "0123456789abcdef";

static void put_u16(fdl_buf *out, unsigned u) {
  char e[6] = {'\\', 'u', HEX[(u >> 12) & 15], HEX[(u >> 8) & 15], HEX[(u >> 4) & 15], HEX[u & 15]};
  fdl_buf_append(out, e, sizeof e);
}

static fdl_status put_string(writer *w, const char *str, size_t n, const char *what) {
  const unsigned char *s = (const unsigned char *)str;
  fdl_buf_putc(w->out, '"');
  size_t run = 0; /* bytes copied verbatim, flushed before each escape */
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t len = fdl_utf8_decode(s + i, n - i, &cp);
    if (!len)
      return fdl_fail(w->err, FDL_INVALID,
                      "%s is not valid UTF-8 (byte 0x%02x at offset %zu); JSON text must be "
                      "Unicode",
                      what, s[i], i);
    bool plain = cp >= 0x20 && cp != '"' && cp != '\\' && (!w->ascii || cp < 0x7F);
    if (plain) {
      i += len;
      continue;
    }
    fdl_buf_append(w->out, s + run, i - run);
    /* JSON's two-character escapes (RFC 8259 section 7); any other code point is \uXXXX. */
    static const char SHORT_OF[] = "\"\\\b\f\n\r\t", SHORT[] = "\"\\bfnrt";
    const char *e = cp && cp < 0x80 ? strchr(SHORT_OF, (int)cp) : NULL;
    if (e) {
      char two[2] = {'\\', SHORT[e - SHORT_OF]};
      fdl_buf_append(w->out, two, sizeof two);
    } else if (cp >= 0x10000) {
      put_u16(w->out, 0xD800 + ((cp - 0x10000) >> 10));
      put_u16(w->out, 0xDC00 + ((cp - 0x10000) & 0x3FF));
    } else {
      put_u16(w->out, cp);
    }
    i += len;
    run = i;
  }
  fdl_buf_append(w->out, s + run, n - run);
  fdl_buf_putc(w->out, '"');
  return FDL_OK;
}

static void newline(writer *w, int depth) {
  if (!w->pretty) return;
  fdl_buf_putc(w->out, '\n');
  for (int i = 0; i < depth; i++) fdl_buf_append(w->out, "  ", 2);
}

/* Code point order, which for valid UTF-8 is byte order; keys may hold NUL, so use lengths. */
static int member_cmp(const void *pa, const void *pb) {
  const member *a = pa, *b = pb;
  int c = memcmp(a->key, b->key, a->len < b->len ? a->len : b->len);
  if (c) return c;
  return (a->len > b->len) - (a->len < b->len);
}

static fdl_status put_value(writer *w, const json_t *v, int depth);

static fdl_status put_object(writer *w, const json_t *v, int depth) {
  json_t *obj = (json_t *)v; /* jansson's iterator API is not const-qualified; it only reads */
  size_t n = json_object_size(obj);
  if (!n) {
    fdl_buf_puts(w->out, "{}");
    return FDL_OK;
  }
  member *m = fdl_malloc(n * sizeof *m);
  if (!m) return fdl_fail(w->err, FDL_NOMEM, "out of memory sorting %zu object keys", n);
  size_t k = 0;
  for (void *it = json_object_iter(obj); it && k < n; it = json_object_iter_next(obj, it), k++)
    m[k] = (member){json_object_iter_key(it), json_object_iter_key_len(it),
                    json_object_iter_value(it)};
  qsort(m, k, sizeof *m, member_cmp);

  fdl_status st = FDL_OK;
  fdl_buf_putc(w->out, '{');
  for (size_t i = 0; i < k && st == FDL_OK; i++) {
    if (i) fdl_buf_putc(w->out, ',');
    newline(w, depth + 1);
    st = put_string(w, m[i].key, m[i].len, "object key");
    if (st != FDL_OK) break;
    fdl_buf_puts(w->out, w->pretty ? ": " : ":");
    st = put_value(w, m[i].value, depth + 1);
  }
  free(m);
  if (st != FDL_OK) return st;
  newline(w, depth);
  fdl_buf_putc(w->out, '}');
  return FDL_OK;
}

static fdl_status put_array(writer *w, const json_t *v, int depth) {
  size_t n = json_array_size(v);
  if (!n) {
    fdl_buf_puts(w->out, "[]");
    return FDL_OK;
  }
  fdl_buf_putc(w->out, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) fdl_buf_putc(w->out, ',');
    newline(w, depth + 1);
    fdl_status st = put_value(w, json_array_get(v, i), depth + 1);
    if (st != FDL_OK) return st;
  }
  newline(w, depth);
  fdl_buf_putc(w->out, ']');
  return FDL_OK;
}

static fdl_status put_value(writer *w, const json_t *v, int depth) {
  if (depth >= WRITE_MAX_DEPTH)
    return fdl_fail(w->err, FDL_BOUNDS,
                    "JSON value nested deeper than %d levels (or cyclic); cannot write it",
                    WRITE_MAX_DEPTH);
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return put_object(w, v, depth);
  case JSON_ARRAY:
    return put_array(w, v, depth);
  case JSON_STRING:
    return put_string(w, json_string_value(v), json_string_length(v), "string value");
  case JSON_INTEGER:
    fdl_buf_printf(w->out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    return FDL_OK;
  case JSON_REAL: {
    double d = json_real_value(v);
    if (!isfinite(d))
      return fdl_fail(w->err, FDL_NONFINITE,
                      "float value %s cannot be written; JSON (allow_nan=False) has no NaN or "
                      "Infinity",
                      isnan(d) ? "NaN"
                      : d > 0  ? "Infinity"
                               : "-Infinity");
    char r[FDL_FLOAT_REPR_MAX];
    fdl_buf_append(w->out, r, fdl_float_repr(d, r));
    return FDL_OK;
  }
  case JSON_TRUE:
    fdl_buf_puts(w->out, "true");
    return FDL_OK;
  case JSON_FALSE:
    fdl_buf_puts(w->out, "false");
    return FDL_OK;
  case JSON_NULL:
    fdl_buf_puts(w->out, "null");
    return FDL_OK;
  }
  return fdl_fail(w->err, FDL_INVALID, "unknown jansson value type %d", (int)json_typeof(v));
}

fdl_status fdl_json_dump(const json_t *v, unsigned flags, fdl_buf *out, fdl_err *err) {
  if (!v) return fdl_fail(err, FDL_INVALID, "JSON value to write is NULL");
  if (out->err != FDL_OK)
    return fdl_fail(err, out->err, "output buffer is already in error (%s)",
                    fdl_strerror(out->err));
  size_t start = out->len;
  writer w = {out, (flags & FDL_JSON_ASCII) != 0, (flags & FDL_JSON_PRETTY) != 0, err};
  fdl_status st = put_value(&w, v, 0);
  if (st == FDL_OK && w.pretty) fdl_buf_putc(out, '\n');
  if (st == FDL_OK && out->err != FDL_OK)
    st = fdl_fail(err, out->err, "writing JSON text: %s (buffer limit %zu bytes)",
                  fdl_strerror(out->err), out->limit);
  if (st != FDL_OK && out->data) {
    out->len = start;
    out->data[start] = '\0';
  }
  return st;
}

fdl_status fdl_json_write_file(const char *path, const json_t *v, unsigned flags, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status st = fdl_json_dump(v, flags, &b, err);
  if (st == FDL_OK)
    st = fdl_write_file(path, b.data ? b.data : "", b.len, err);
  else
    fdl_err_prefix(err, "%s", path);
  fdl_buf_free(&b);
  return st;
}

json_t *fdl_json_append_ints(json_t *list, const void *v, size_t n, size_t elem) {
  for (size_t i = 0; list && i < n; i++) {
    json_int_t x = elem == 4 ? ((const int32_t *)v)[i] : ((const int64_t *)v)[i];
    if (json_array_append_new(list, json_integer(x)) != 0) {
      json_decref(list);
      list = NULL;
    }
  }
  return list;
}
