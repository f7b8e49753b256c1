/* py.c - Python's truthiness, ==, repr() and str() over jansson values.
 *
 * One implementation for validate and compare: the two used to carry a copy each, and the
 * copies disagreed on [63] == [63.0]. Python decides, so where a rule is subtle the comment
 * names the Python behaviour it follows. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "base/quote.h"
#include "json/py.h"

bool fdl_py_truthy(const json_t *v) {
  if (!v) return false;
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return json_object_size(v) > 0;
  case JSON_ARRAY:
    return json_array_size(v) > 0;
  case JSON_STRING:
    return json_string_length(v) > 0;
  case JSON_INTEGER:
    return json_integer_value(v) != 0;
  case JSON_REAL:
    return json_real_value(v) != 0.0;
  case JSON_TRUE:
    return true;
  case JSON_FALSE:
  case JSON_NULL:
    return false;
  }
  return false;
}

/* Python's bool is an int subclass, so True == 1 == 1.0; None is no number. */
static bool as_int(const json_t *v, json_int_t *i) {
  if (json_is_integer(v))
    *i = json_integer_value(v);
  else if (json_is_boolean(v))
    *i = json_is_true(v) ? 1 : 0;
  else
    return false;
  return true;
}

/* int == float in Python is exact: 2**53 + 1 != 2.0**53, though C's conversion would say equal.
 * Only an integral double inside the int64 range can equal an int64, and converting it is
 * exact. */
static bool int_equals_real(json_int_t i, double d) {
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != trunc(d)) return false;
  return (json_int_t)d == i;
}

bool fdl_py_equal(const json_t *a, const json_t *b) {
  /* dict.get() reads a missing key as None, and None == None. */
  if (!a || json_is_null(a)) return !b || json_is_null(b);
  if (!b || json_is_null(b)) return false;
  json_int_t ia, ib;
  bool na = as_int(a, &ia), nb = as_int(b, &ib);
  if (na && nb) return ia == ib;
  if (na && json_is_real(b)) return int_equals_real(ia, json_real_value(b));
  if (nb && json_is_real(a)) return int_equals_real(ib, json_real_value(a));
  if (json_typeof(a) != json_typeof(b)) return false;
  switch (json_typeof(a)) {
  case JSON_REAL:
    return json_real_value(a) == json_real_value(b); /* -0.0 == 0.0, as in Python */
  case JSON_STRING:
    return json_string_length(a) == json_string_length(b) &&
           !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
  case JSON_ARRAY:
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!fdl_py_equal(json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  case JSON_OBJECT: {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    size_t klen;
    json_t *v;
    json_object_keylen_foreach((json_t *)a, k, klen, v) {
      const json_t *w = json_object_getn(b, k, klen);
      /* A key b lacks is not a key whose value is None. */
      if (!w || !fdl_py_equal(v, w)) return false;
    }
    return true;
  }
  default:
    return false; /* every other type was decided above */
  }
}

/* ---- repr / str -------------------------------------------------------------------------- */

/* A fixed output that never fails: what does not fit is dropped and remembered, so the caller
 * ends the text with "..." instead. */
typedef struct {
  char *out;
  size_t cap, len;
  bool cut;
} sink;

static void put(sink *k, const char *s, size_t n) {
  if (k->cut) return;
  if (n > k->cap - 1 - k->len) {
    n = k->cap - 1 - k->len;
    k->cut = true;
  }
  memcpy(k->out + k->len, s, n);
  k->len += n;
}

static void puts_(sink *k, const char *s) {
  put(k, s, strlen(s));
}

/* Python's str.__repr__: single quotes unless the text holds ' and no ", escapes for the quote,
 * backslash, \t \n \r and the other non-printable code points below U+00A1 (C0, DEL, C1, NBSP
 * and the soft hyphen, as \xNN). Other text is printable to Python and stays as it is. */
static void repr_string(sink *k, const char *s, size_t n) {
  char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
  put(k, &q, 1);
  for (size_t i = 0; i < n && !k->cut; i++) {
    unsigned char c = (unsigned char)s[i];
    char esc[8];
    /* U+0080..U+00BF are 0xc2 and the code point itself as the second byte. */
    unsigned cp = c == 0xc2 && i + 1 < n ? (unsigned char)s[i + 1] : 0;
    if (c == '\\' || c == (unsigned char)q) {
      esc[0] = '\\';
      esc[1] = (char)c;
      put(k, esc, 2);
    } else if (c == '\t') {
      puts_(k, "\\t");
    } else if (c == '\n') {
      puts_(k, "\\n");
    } else if (c == '\r') {
      puts_(k, "\\r");
    } else if (c < 0x20 || c == 0x7f) {
      snprintf(esc, sizeof esc, "\\x%02x", c);
      puts_(k, esc);
    } else if (cp && (cp <= 0xa0 || cp == 0xad)) {
      snprintf(esc, sizeof esc, "\\x%02x", cp);
      puts_(k, esc);
      i++;
    } else {
      put(k, (const char *)&s[i], 1);
    }
  }
  put(k, &q, 1);
}

static void repr_value(sink *k, const json_t *v) {
  char tmp[FDL_FLOAT_REPR_MAX];
  if (!v) {
    puts_(k, "None");
    return;
  }
  switch (json_typeof(v)) {
  case JSON_NULL:
    puts_(k, "None");
    return;
  case JSON_TRUE:
    puts_(k, "True");
    return;
  case JSON_FALSE:
    puts_(k, "False");
    return;
  case JSON_INTEGER:
    snprintf(tmp, sizeof tmp, "%lld", (long long)json_integer_value(v));
    puts_(k, tmp);
    return;
  case JSON_REAL:
    /* jansson holds no NaN or infinity, so this is always repr(float). */
    fdl_float_repr(json_real_value(v), tmp);
    puts_(k, tmp);
    return;
  case JSON_STRING:
    repr_string(k, json_string_value(v), json_string_length(v));
    return;
  case JSON_ARRAY:
    puts_(k, "[");
    for (size_t i = 0; i < json_array_size(v) && !k->cut; i++) {
      if (i) puts_(k, ", ");
      repr_value(k, json_array_get(v, i));
    }
    puts_(k, "]");
    return;
  case JSON_OBJECT: {
    puts_(k, "{");
    const char *key;
    size_t klen;
    json_t *x;
    bool first = true;
    json_object_keylen_foreach((json_t *)v, key, klen, x) {
      if (k->cut) break;
      if (!first) puts_(k, ", ");
      first = false;
      repr_string(k, key, klen);
      puts_(k, ": ");
      repr_value(k, x);
    }
    puts_(k, "}");
    return;
  }
  }
}

/* Ends the text; a cut one ends in "..." after the last whole UTF-8 character that fits. */
static void finish(sink *k) {
  if (k->cut) {
    size_t room = k->cap > 4 ? k->cap - 4 : 0;
    if (k->len > room) k->len = room;
    while (k->len && ((unsigned char)k->out[k->len] & 0xc0u) == 0x80u) k->len--;
    size_t dots = k->cap - 1 - k->len < 3 ? k->cap - 1 - k->len : 3;
    memcpy(k->out + k->len, "...", dots);
    k->len += dots;
  }
  k->out[k->len] = '\0';
}

void fdl_py_repr(const json_t *v, char *out, size_t cap) {
  if (!out || !cap) return;
  sink k = {out, cap, 0, false};
  repr_value(&k, v);
  finish(&k);
}

void fdl_py_shown(const json_t *v, char *out, size_t cap) {
  if (!out || !cap) return;
  if (json_is_string(v))
    fdl_quote(json_string_value(v), json_string_length(v), out, cap);
  else
    fdl_py_repr(v, out, cap);
}

void fdl_py_str(const json_t *v, char *out, size_t cap) {
  if (!out || !cap) return;
  sink k = {out, cap, 0, false};
  if (json_is_string(v))
    put(&k, json_string_value(v), json_string_length(v));
  else
    repr_value(&k, v);
  finish(&k);
}
