/* json_util.c - the few JSON accessors the comparator needs, with the reference's Python
 * semantics where they matter (truthiness, ==, str()). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compare/cmp.h"

fdl_status fdl_cmp_refuse(fdl_refusal *r, fdl_err *err, const char *code, const char *gate,
                          const char *remedy, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_status s = fdl_refusev(r, err, FDL_REFUSED, code, gate, remedy, fmt, ap);
  va_end(ap);
  return s;
}

const json_t *fdl_cmp_jget(const json_t *o, const char *path) {
  char key[128];
  while (o && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof key || !json_is_object(o)) return NULL;
    memcpy(key, path, n);
    key[n] = '\0';
    o = json_object_get(o, key);
    path += n + (dot ? 1 : 0);
  }
  return o;
}

const char *fdl_cmp_jstr(const json_t *o, const char *path) {
  return json_string_value(fdl_cmp_jget(o, path));
}

const char *fdl_cmp_jstr0(const json_t *o, const char *path) {
  const char *s = fdl_cmp_jstr(o, path);
  return s ? s : "";
}

static bool truthy(const json_t *v) {
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
  default:
    return false;
  }
}

bool fdl_cmp_jtruthy(const json_t *o, const char *path) {
  return truthy(fdl_cmp_jget(o, path));
}

int64_t fdl_cmp_jint(const json_t *o, const char *path) {
  const json_t *v = fdl_cmp_jget(o, path);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
}

json_t *fdl_cmp_jcopy(const json_t *o, const char *path) {
  const json_t *v = fdl_cmp_jget(o, path);
  return v ? json_deep_copy(v) : json_null();
}

bool fdl_cmp_py_equal(const json_t *a, const json_t *b) {
  if (!a || !b) return a == b;
  if (json_is_number(a) && json_is_number(b)) {
    if (json_is_integer(a) && json_is_integer(b))
      return json_integer_value(a) == json_integer_value(b);
    /* Python compares an int and a float exactly; every int64 we read converts exactly when it
     * fits in 53 bits, and larger ones are never equal to a float with a fraction anyway. */
    return json_number_value(a) == json_number_value(b);
  }
  /* Python: True == 1 and False == 0; JSON booleans never meet numbers in the fields compared,
   * so types must otherwise match. */
  if (json_typeof(a) != json_typeof(b)) return false;
  if (json_is_string(a))
    return json_string_length(a) == json_string_length(b) &&
           !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
  if (json_is_array(a)) {
    if (json_array_size(a) != json_array_size(b)) return false;
    for (size_t i = 0; i < json_array_size(a); i++)
      if (!fdl_cmp_py_equal(json_array_get(a, i), json_array_get(b, i))) return false;
    return true;
  }
  if (json_is_object(a)) {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)a, k, v) {
      if (!fdl_cmp_py_equal(v, json_object_get(b, k))) return false;
    }
    return true;
  }
  return true; /* true/false/null of equal type */
}

void fdl_cmp_py_str(const json_t *v, char *out, size_t cap) {
  if (!v || json_is_null(v))
    snprintf(out, cap, "None");
  else if (json_is_string(v))
    snprintf(out, cap, "%s", json_string_value(v));
  else if (json_is_integer(v))
    snprintf(out, cap, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v)) {
    char tmp[FDL_FLOAT_REPR_MAX];
    double x = json_real_value(v);
    if (isfinite(x))
      fdl_float_repr(x, tmp);
    else
      snprintf(tmp, sizeof tmp, "nan");
    snprintf(out, cap, "%s", tmp);
  } else if (json_is_true(v))
    snprintf(out, cap, "True");
  else if (json_is_false(v))
    snprintf(out, cap, "False");
  else
    snprintf(out, cap, "%s", json_is_array(v) ? "[...]" : "{...}");
}

int fdl_cmp_set_real(json_t *o, const char *k, double v) {
  return json_object_set_new(o, k, json_real(v));
}

int fdl_cmp_set_int(json_t *o, const char *k, int64_t v) {
  return json_object_set_new(o, k, json_integer((json_int_t)v));
}

int fdl_cmp_set_str(json_t *o, const char *k, const char *v) {
  return json_object_set_new(o, k, v ? json_string(v) : json_null());
}

int fdl_cmp_set_bool(json_t *o, const char *k, bool v) {
  return json_object_set_new(o, k, json_boolean(v));
}

bool fdl_cmp_empty(const char *s) {
  return !s || !*s;
}

bool fdl_cmp_streq(const char *a, const char *b) {
  return !strcmp(a ? a : "", b ? b : "");
}

void fdl_cmp_short(const char *hex, char out[13]) {
  snprintf(out, 13, "%s", hex ? hex : "");
}
