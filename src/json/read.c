/* read.c - the strict JSON reader: a lexical pre-scan, then jansson.
 *
 * jansson already refuses duplicate keys, NaN/Infinity, invalid UTF-8 and trailing data. The
 * pre-scan adds what it cannot express: a leading BOM, a nesting bound checked before jansson
 * recurses, and Kiln's float-literal rules. It only looks at tokens; grammar errors it skips
 * over are jansson's to report. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "json/json.h"
#include "json/number.h"
#include "base/sys.h"

typedef struct {
  const char *buf;
  size_t len;
  int max_depth;
  bool kiln;
  fdl_err *err;
  uint64_t objects, arrays, scalars; /* counted by the prescan, for the memory estimate */
} scan;

/* What jansson spends per value, measured on x86-64 glibc and rounded up: an empty object
 * (struct, hashtable and its first buckets), an empty array (struct and first slots), a scalar
 * (a string's bytes are counted on top, from the input). */
#define JSON_COST_OBJECT 256u
#define JSON_COST_ARRAY 128u
#define JSON_COST_SCALAR 48u

/* 1-based line and column (in code points, as jansson counts) of byte offset pos. */
static void position(const char *buf, size_t pos, int *line, int *col) {
  int l = 1, c = 1;
  for (size_t i = 0; i < pos; i++) {
    unsigned char b = (unsigned char)buf[i];
    if (b == '\n') {
      l++;
      c = 1;
    } else if ((b & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *col = c;
}

static fdl_status fail_at(const scan *s, size_t pos, const char *what) {
  int line, col;
  position(s->buf, pos, &line, &col);
  return fdl_fail(s->err, FDL_PARSE, "%s at line %d col %d", what, line, col);
}

static bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Kiln's rules for one float literal tok[0..n) (already known to be valid JSON grammar). */
static fdl_status check_kiln_float(const scan *s, size_t pos, const char *tok, size_t n) {
  char small[64];
  char *copy = n < sizeof small ? small : fdl_malloc(n + 1);
  if (!copy) return fdl_fail(s->err, FDL_NOMEM, "out of memory reading a float literal");
  memcpy(copy, tok, n);
  copy[n] = '\0';
  double d = strtod(copy, NULL);
  if (copy != small) free(copy);

  if (isinf(d)) return fail_at(s, pos, "float_overflow: float literal is beyond the double range");
  fdl_decimal lit;
  bool lit_short = fdl_decimal_parse(tok, n, &lit);
  if (d == 0) {
    if (!lit_short || lit.ndig != 0)
      return fail_at(s, pos, "float_underflow: nonzero float literal rounds to 0.0");
    return FDL_OK;
  }
  char repr[FDL_FLOAT_REPR_MAX];
  size_t rn = fdl_float_repr(d, repr);
  fdl_decimal shortest;
  fdl_decimal_parse(repr, rn, &shortest);
  if (!lit_short || !fdl_decimal_equal(&lit, &shortest)) {
    char what[160];
    snprintf(what, sizeof what,
             "inexact_float: float literal is not exactly its double's shortest form %s", repr);
    return fail_at(s, pos, what);
  }
  return FDL_OK;
}

static fdl_status scan_number(const scan *s, size_t *i) {
  size_t start = *i, j = *i;
  bool is_float = false;
  while (j < s->len && is_number_char(s->buf[j])) {
    if (s->buf[j] == '.' || s->buf[j] == 'e' || s->buf[j] == 'E') is_float = true;
    j++;
  }
  *i = j;
  /* "-Infinity" reaches here as "-" followed by a word; the word scan names it. */
  if (!s->kiln || !is_float || !fdl_decimal_is_json_number(s->buf + start, j - start))
    return FDL_OK;
  return check_kiln_float(s, start, s->buf + start, j - start);
}

static fdl_status scan_word(const scan *s, size_t *i) {
  size_t start = *i, j = *i;
  while (j < s->len && is_word_char(s->buf[j])) j++;
  *i = j;
  size_t n = j - start;
  const char *w = s->buf + start;
  bool neg = start > 0 && s->buf[start - 1] == '-';
  if ((n == 3 && !memcmp(w, "NaN", 3)) || (n == 8 && !memcmp(w, "Infinity", 8))) {
    char what[96];
    snprintf(what, sizeof what, "non-finite constant %s%.*s is not JSON", neg ? "-" : "", (int)n,
             w);
    return fail_at(s, neg ? start - 1 : start, what);
  }
  return FDL_OK;
}

static fdl_status prescan(scan *s) {
  const char *b = s->buf;
  if (s->len >= 3 && !memcmp(b, "\xEF\xBB\xBF", 3))
    return fail_at(s, 0, "leading UTF-8 byte order mark (BOM) is not allowed");
  int depth = 0;
  size_t i = 0;
  while (i < s->len) {
    char c = b[i];
    if (c == '"') {
      s->scalars++; /* a key costs about what a string value does */
      for (i++; i < s->len && b[i] != '"'; i++)
        if (b[i] == '\\') i++;
      i++;
    } else if (c == '[' || c == '{') {
      if (c == '[')
        s->arrays++;
      else
        s->objects++;
      if (++depth > s->max_depth) {
        char what[96];
        snprintf(what, sizeof what, "nesting deeper than %d levels", s->max_depth);
        return fail_at(s, i, what);
      }
      i++;
    } else if (c == ']' || c == '}') {
      if (depth > 0) depth--;
      i++;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      s->scalars++;
      fdl_status st = scan_number(s, &i);
      if (st != FDL_OK) return st;
    } else if (is_word_char(c)) {
      s->scalars++;
      fdl_status st = scan_word(s, &i);
      if (st != FDL_OK) return st;
    } else {
      i++;
    }
  }
  return FDL_OK;
}

static const char *describe(const json_error_t *je) {
  enum json_error_code code = json_error_code(je);
  /* jansson reports both integer and real overflow as numeric_overflow; its text tells them
   * apart ("too big integer" / "real number overflow"). */
  if (code == json_error_numeric_overflow && strstr(je->text, "integer"))
    return "integer outside int64";
  switch (code) {
  case json_error_invalid_utf8:
    return "invalid UTF-8";
  case json_error_duplicate_key:
    return "duplicate object key";
  case json_error_numeric_overflow:
    return "float_overflow: number outside the double range";
  case json_error_end_of_input_expected:
    return "trailing data after the JSON value";
  case json_error_premature_end_of_input:
    return "truncated document (unexpected end of input)";
  case json_error_null_byte_in_key:
    return "NUL character in object key";
  case json_error_null_character:
    return "NUL character";
  case json_error_invalid_syntax:
    return "invalid JSON syntax";
  case json_error_wrong_type:
    return "invalid JSON value";
  case json_error_out_of_memory:
    return "out of memory";
  case json_error_stack_overflow:
    return "nesting too deep";
  default:
    return "malformed JSON";
  }
}

/* Kiln's loader reads -0.0 as +0.0; hashes are taken after that normalisation. */
static void positive_zeros(json_t *v) {
  if (json_is_real(v)) {
    if (json_real_value(v) == 0) json_real_set(v, 0.0);
  } else if (json_is_array(v)) {
    for (size_t i = 0; i < json_array_size(v); i++) positive_zeros(json_array_get(v, i));
  } else if (json_is_object(v)) {
    for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
      positive_zeros(json_object_iter_value(it));
  }
}

fdl_status fdl_json_parse(const char *buf, size_t len, const fdl_json_read_opts *opts, json_t **out,
                          fdl_err *err) {
  int max_depth = opts && opts->max_depth ? opts->max_depth : FDL_JSON_DEFAULT_MAX_DEPTH;
  if (max_depth < 0)
    return fdl_fail(err, FDL_INVALID, "JSON max_depth is %d; expected 0 (default) or more",
                    max_depth);
  if (!buf && len) return fdl_fail(err, FDL_INVALID, "JSON input is NULL with length %zu", len);
  /* Named before jansson sees them, which would call both "unexpected end of input". */
  const char *nul = len ? memchr(buf, '\0', len) : NULL;
  if (nul)
    return fdl_fail(err, FDL_PARSE,
                    "a NUL byte at offset %zu: JSON text never holds one (a binary file?)",
                    (size_t)(nul - buf));
  size_t lead = 0;
  while (lead < len && strchr(" \t\r\n", buf[lead])) lead++;
  if (lead == len)
    return fdl_fail(err, FDL_PARSE, "empty document (%zu bytes%s): expected a JSON value", len,
                    len ? ", all whitespace" : "");
  scan s = {buf ? buf : "", len, max_depth, opts && opts->kiln_strict, err, 0, 0, 0};
  fdl_status st = prescan(&s);
  if (st != FDL_OK) return st;
  uint64_t cost = s.objects * JSON_COST_OBJECT + s.arrays * JSON_COST_ARRAY +
                  s.scalars * JSON_COST_SCALAR + (uint64_t)len;
  uint64_t budget = (uint64_t)FDL_JSON_MEM_FACTOR * len + FDL_JSON_MEM_BASE;
  if (cost > budget)
    return fdl_fail(err, FDL_TOO_LARGE,
                    "a JSON document of %zu bytes with %llu objects, %llu arrays and %llu other "
                    "values would take about %llu MiB in memory, over the reader's limit of %u "
                    "times its size plus %u MiB",
                    len, (unsigned long long)s.objects, (unsigned long long)s.arrays,
                    (unsigned long long)s.scalars, (unsigned long long)(cost >> 20),
                    FDL_JSON_MEM_FACTOR, FDL_JSON_MEM_BASE >> 20);

  json_error_t je;
  fdl_sys_json_parsing(true);
  json_t *v = json_loadb(s.buf, len,
                         JSON_REJECT_DUPLICATES | JSON_DECODE_ANY |
                             (opts && opts->allow_nul ? JSON_ALLOW_NUL : 0),
                         &je);
  fdl_sys_json_parsing(false);
  if (!v) {
    enum json_error_code code = json_error_code(&je);
    return fdl_fail(err, code == json_error_out_of_memory ? FDL_NOMEM : FDL_PARSE,
                    "%s at line %d col %d (%s)", describe(&je), je.line, je.column, je.text);
  }
  if (s.kiln) positive_zeros(v);
  *out = v;
  return FDL_OK;
}

fdl_status fdl_json_load_file(const char *path, const fdl_json_read_opts *opts, json_t **out,
                              fdl_err *err) {
  char *data;
  size_t len;
  fdl_status st = fdl_read_file(path, FDL_JSON_MAX_FILE_BYTES, &data, &len, err);
  if (st != FDL_OK) return st;
  st = fdl_json_parse(data, len, opts, out, err);
  free(data);
  if (st != FDL_OK) fdl_err_prefix(err, "%s", path);
  return st;
}
