/* checksums.c - checksums.txt (FIDELITY-DATASET.md §5.5): sha256sum text, one
 * "<64 lowercase hex><2 spaces><relative path>" line per file, sorted by path.
 *
 * The listing is the dataset's seal over every other file, so the parser is strict: anything
 * the reference verifier calls seal_failed is an error here, with its line number. */
#include <stdlib.h>
#include <string.h>

#include "fidelis/digest.h"
#include "base/buf.h"
#include "base/path.h"
#include "base/quote.h"
#include "base/lines.h"
#include "base/sys.h"

/* Bounds on untrusted input: PATH_MAX-sized paths and far more files than any dataset holds. */
#define FDL_CHECKSUMS_MAX_PATH 4096u
#define FDL_CHECKSUMS_MAX_ENTRIES ((size_t)1 << 24)

void fdl_checksums_init(fdl_checksums *c) {
  memset(c, 0, sizeof *c);
}

void fdl_checksums_free(fdl_checksums *c) {
  if (!c) return;
  for (size_t i = 0; i < c->count; i++) free(c->items[i].path);
  free(c->items);
  memset(c, 0, sizeof *c);
}

/* PATH-1, plus line breaks: a path holding one could not be written back as one line. */
static bool path_ok(const char *path, size_t len) {
  return len <= FDL_CHECKSUMS_MAX_PATH && !memchr(path, '\n', len) && !memchr(path, '\r', len) &&
         fdl_relpath_ok(path, len, false);
}

static fdl_status push(fdl_checksums *c, const char *hex, const char *path, size_t plen,
                       fdl_err *err) {
  if (c->count >= FDL_CHECKSUMS_MAX_ENTRIES)
    return fdl_fail(err, FDL_TOO_LARGE, "checksums: more than %zu entries",
                    FDL_CHECKSUMS_MAX_ENTRIES);
  if (!FDL_GROW(c->items, c->count, c->cap_, 16))
    return fdl_fail(err, FDL_NOMEM, "checksums: out of memory for %zu entries", c->count + 1);
  char *copy = fdl_strndup(path, plen);
  if (!copy) return fdl_fail(err, FDL_NOMEM, "checksums: out of memory for a path");
  fdl_checksum_entry *e = &c->items[c->count++];
  memcpy(e->hex, hex, FDL_SHA256_HEX_LEN);
  e->hex[FDL_SHA256_HEX_LEN] = '\0';
  e->path = copy;
  return FDL_OK;
}

fdl_status fdl_checksums_add(fdl_checksums *c, const char *hex, const char *path, fdl_err *err) {
  if (!c || !hex || !path) return fdl_fail(err, FDL_INVALID, "checksums: NULL argument to add");
  char q[FDL_QUOTE_CAP];
  if (!fdl_sha256_hex_ok(hex, strlen(hex)))
    return fdl_fail(err, FDL_INVALID, "checksums: digest for %s is not 64 lowercase hex digits",
                    fdl_quote_str(path, q, sizeof q));
  size_t plen = strlen(path);
  if (!path_ok(path, plen))
    return fdl_fail(err, FDL_PATH,
                    "checksums: %s is not a relative path inside the dataset (empty, "
                    "absolute, '..', a scheme, a line break, or over %u bytes)",
                    fdl_quote(path, plen, q, sizeof q), FDL_CHECKSUMS_MAX_PATH);
  return push(c, hex, path, plen, err);
}

static fdl_status parse_line(const char *s, size_t n, size_t lineno, fdl_checksums *c,
                             fdl_err *err) {
  if (n < FDL_SHA256_HEX_LEN + 3)
    return fdl_fail(err, FDL_PARSE,
                    "checksums line %zu: %zu characters, expected <64 hex><2 spaces><path> "
                    "(at least 67)",
                    lineno, n);
  if (s[64] != ' ' || s[65] != ' ')
    return fdl_fail(err, FDL_PARSE,
                    "checksums line %zu: characters 65-66 must be two spaces between digest "
                    "and path",
                    lineno);
  if (!fdl_sha256_hex_ok(s, FDL_SHA256_HEX_LEN))
    return fdl_fail(err, FDL_PARSE, "checksums line %zu: digest is not 64 lowercase hex digits",
                    lineno);
  /* The path is a slice of the caller's text, not NUL-terminated, and may hold a NUL: it is
   * quoted by length, whole, so what follows a NUL is shown rather than silently cut. */
  const char *path = s + 66;
  size_t plen = n - 66;
  if (path[plen - 1] == '\r')
    return fdl_fail(err, FDL_PARSE,
                    "checksums line %zu: ends with a carriage return, expected LF line endings",
                    lineno);
  char q[FDL_QUOTE_CAP];
  if (!path_ok(path, plen))
    return fdl_fail(err, FDL_PATH,
                    "checksums line %zu: %s is not a relative path inside the dataset "
                    "(empty, absolute, '..', a scheme, a NUL, or over %u bytes)",
                    lineno, fdl_quote(path, plen, q, sizeof q), FDL_CHECKSUMS_MAX_PATH);
  return push(c, s, path, plen, err);
}

typedef struct {
  const char *path;
  size_t line;
} path_line;

static int cmp_path_line(const void *a, const void *b) {
  const path_line *x = a, *y = b;
  int r = strcmp(x->path, y->path);
  if (r) return r;
  return x->line < y->line ? -1 : x->line > y->line;
}

/* Finds a path listed twice; lines[i] is the line number of c->items[i]. */
static fdl_status check_duplicates(const fdl_checksums *c, const size_t *lines, fdl_err *err) {
  if (c->count < 2) return FDL_OK;
  path_line *v = fdl_malloc(c->count * sizeof *v);
  if (!v) return fdl_fail(err, FDL_NOMEM, "checksums: out of memory checking duplicates");
  for (size_t i = 0; i < c->count; i++) v[i] = (path_line){c->items[i].path, lines[i]};
  qsort(v, c->count, sizeof *v, cmp_path_line);
  fdl_status s = FDL_OK;
  for (size_t i = 1; i < c->count && s == FDL_OK; i++)
    if (!strcmp(v[i - 1].path, v[i].path)) {
      char q[FDL_QUOTE_CAP];
      s = fdl_fail(err, FDL_PARSE, "checksums line %zu: %s is already listed on line %zu",
                   v[i].line, fdl_quote_str(v[i].path, q, sizeof q), v[i - 1].line);
    }
  free(v);
  return s;
}

fdl_status fdl_checksums_parse(const char *text, size_t len, fdl_checksums *c, fdl_err *err) {
  if (!c || (len && !text)) return fdl_fail(err, FDL_INVALID, "checksums: NULL argument to parse");
  fdl_checksums tmp;
  fdl_checksums_init(&tmp);
  size_t *lines = NULL, lines_cap = 0;
  fdl_status s = FDL_OK;
  fdl_lines it = fdl_lines_of(text, len);
  while (s == FDL_OK && fdl_lines_next(&it)) {
    if (it.n > FDL_SHA256_HEX_LEN + 2 + FDL_CHECKSUMS_MAX_PATH) {
      s = fdl_fail(err, FDL_TOO_LARGE,
                   "checksums line %zu: %zu characters, longer than the %u "
                   "allowed",
                   it.lineno, it.n, FDL_SHA256_HEX_LEN + 2 + FDL_CHECKSUMS_MAX_PATH);
      break;
    }
    s = parse_line(it.line, it.n, it.lineno, &tmp, err);
    if (s != FDL_OK) break;
    if (!FDL_GROW(lines, tmp.count - 1, lines_cap, 16)) {
      s = fdl_fail(err, FDL_NOMEM, "checksums: out of memory for line numbers");
      break;
    }
    lines[tmp.count - 1] = it.lineno;
  }
  if (s == FDL_OK) s = check_duplicates(&tmp, lines, err);
  free(lines);
  if (s != FDL_OK) {
    fdl_checksums_free(&tmp);
    return s;
  }
  /* The parsed listing replaces whatever c held. */
  fdl_checksums_free(c);
  *c = tmp;
  return FDL_OK;
}

static int cmp_entry(const void *a, const void *b) {
  const fdl_checksum_entry *x = a, *y = b;
  /* strcmp orders by unsigned byte, which for UTF-8 is code point order. */
  return strcmp(x->path, y->path);
}

fdl_status fdl_checksums_format(fdl_checksums *c, fdl_buf *out, fdl_err *err) {
  if (!c || !out) return fdl_fail(err, FDL_INVALID, "checksums: NULL argument to format");
  char q[FDL_QUOTE_CAP];
  for (size_t i = 0; i < c->count; i++) {
    const fdl_checksum_entry *e = &c->items[i];
    if (!e->path || !fdl_sha256_hex_ok(e->hex, strlen(e->hex)) ||
        !path_ok(e->path, strlen(e->path)))
      return fdl_fail(err, FDL_INVALID, "checksums: entry %zu (%s) is malformed", i,
                      fdl_quote_str(e->path, q, sizeof q));
  }
  if (c->count) qsort(c->items, c->count, sizeof *c->items, cmp_entry);
  for (size_t i = 1; i < c->count; i++)
    if (!strcmp(c->items[i - 1].path, c->items[i].path))
      return fdl_fail(err, FDL_INVALID, "checksums: %s is listed twice",
                      fdl_quote_str(c->items[i].path, q, sizeof q));
  for (size_t i = 0; i < c->count; i++) {
    fdl_buf_append(out, c->items[i].hex, FDL_SHA256_HEX_LEN);
    fdl_buf_append(out, "  ", 2);
    fdl_buf_puts(out, c->items[i].path);
    fdl_buf_putc(out, '\n');
  }
  fdl_status s = fdl_buf_status(out);
  if (s != FDL_OK)
    return fdl_fail(err, s, "checksums: output buffer cannot hold the %zu-line listing", c->count);
  return FDL_OK;
}

const fdl_checksum_entry *fdl_checksums_find(const fdl_checksums *c, const char *path) {
  if (!c || !path) return NULL;
  for (size_t i = 0; i < c->count; i++)
    if (!strcmp(c->items[i].path, path)) return &c->items[i];
  return NULL;
}
