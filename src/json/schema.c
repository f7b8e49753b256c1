/* schema.c - the schema interpreter (schema.h): a table of field descriptors walked over a parsed
 * document, in the findings or the first-violation dialect. Divisions: paths and findings;
 * values; objects. */
#include "json/schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/quote.h"
#include "json/py.h"

/* ---- paths and findings ------------------------------------------------------------------ */

static void vbad(fdl_schema_run *r, const char *path, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  r->bad(r->user, path, msg);
  if (r->first) fdl_schema_stop(r, FDL_INVALID);
}

void fdl_schema_bad(fdl_schema_run *r, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vbad(r, path, fmt, ap);
  va_end(ap);
}

void fdl_schema_stop(fdl_schema_run *r, fdl_status s) {
  r->stop = true;
  r->status = s;
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a float";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "a value";
}

/* out = a + sep + b, cut to FDL_SCHEMA_PATH_CAP (a path only labels a finding). */
static void join3(char *out, const char *a, const char *sep, const char *b) {
  size_t n = 0;
  const char *parts[3] = {a, sep, b};
  for (int i = 0; i < 3; i++)
    for (const char *q = parts[i]; *q && n + 1 < FDL_SCHEMA_PATH_CAP; q++) out[n++] = *q;
  out[n] = '\0';
}

/* ---- values ------------------------------------------------------------------------------ */

/* Where a value is: its path, and for KEYMSG its object's path. */
typedef struct {
  const char *path, *parent;
} at;

/* A violation of f: first, f's own words (at the object as "key: msg" with KEYMSG), a format
 * given f's min and max; findings, fmt. */
static void fail(fdl_schema_run *r, const fdl_schema_field *f, at a, const char *fmt, ...)
    FDL_PRINTF(4, 5);
static void fail(fdl_schema_run *r, const fdl_schema_field *f, at a, const char *fmt, ...) {
  if (r->first && f->msg) {
    char m[512];
    snprintf(m, sizeof m, f->msg, (long long)f->min, (long long)f->max);
    if (f->flags & FDL_SCHEMA_KEYMSG)
      fdl_schema_bad(r, a.parent, "%s: %s", f->key, m);
    else
      fdl_schema_bad(r, a.path, "%s", m);
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  vbad(r, a.path, fmt, ap);
  va_end(ap);
}

static void check_value(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a);

/* "is X; expected WANT[ or null]" unless v has the JSON type wanted. */
static bool typed(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a, bool ok,
                  const char *want) {
  if (ok) return true;
  if (r->first)
    fail(r, f, a, "expected %s", want);
  else
    fail(r, f, a, "is %s; expected %s%s", type_name(v), want,
         (f->flags & FDL_SCHEMA_NUL) ? " or null" : "");
  return false;
}

static void check_str(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a) {
  if (!typed(r, f, v, a, json_is_string(v), "a string")) return;
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if ((f->flags & FDL_SCHEMA_MIN1) && n == 0)
    fail(r, f, a, "is empty; expected a non-empty string");
  if (!r->stop && f->pattern && !f->pattern->ok(s, n)) {
    char shown[96];
    fdl_py_shown(v, shown, sizeof shown);
    fail(r, f, a, "%s is not %s", shown, f->pattern->text);
  }
}

static void check_enum(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a) {
  if (json_is_string(v))
    for (size_t i = 0; f->vals[i]; i++)
      if (!strcmp(json_string_value(v), f->vals[i])) return;
  char shown[96] = "", list[512] = "";
  if (v) fdl_py_shown(v, shown, sizeof shown);
  for (size_t i = 0; f->vals[i]; i++) {
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", f->vals[i]);
  }
  fail(r, f, a, "%s is not one of [%s]", shown, list);
}

static void check_num(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a) {
  if (!typed(r, f, v, a, json_is_number(v), "a number") || !r->first) return;
  double x = json_number_value(v);
  if (!isfinite(x) || ((f->flags & FDL_SCHEMA_MIN) && x < (double)f->min) ||
      ((f->flags & FDL_SCHEMA_XMIN) && !(x > (double)f->min)) ||
      ((f->flags & FDL_SCHEMA_MAX) && x > (double)f->max))
    fail(r, f, a, "expected a number in range");
}

static void check_each(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a) {
  for (size_t i = 0; f->items && i < json_array_size(v) && !r->stop; i++) {
    char idx[32], ip[FDL_SCHEMA_PATH_CAP];
    snprintf(idx, sizeof idx, "[%zu]", i);
    join3(ip, a.path, "", idx);
    if (!(f->flags & FDL_SCHEMA_TUPLE))
      check_value(r, f->items, json_array_get(v, i), (at){ip, a.path});
    else if (i < (size_t)f->max)
      check_value(r, &f->items[i], json_array_get(v, i), (at){ip, a.path});
  }
}

static void check_arr(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a) {
  if (!typed(r, f, v, a, json_is_array(v), "an array")) return;
  size_t n = json_array_size(v);
  if (n < (size_t)f->min) fail(r, f, a, "has %zu items; at least %zu required", n, (size_t)f->min);
  if (!r->stop && f->max && n > (size_t)f->max)
    fail(r, f, a, "has %zu items; at most %zu allowed", n, (size_t)f->max);
  if (!r->stop) check_each(r, f, v, a);
}

static void check_value(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, at a) {
  if (json_is_null(v) && (f->flags & FDL_SCHEMA_NUL)) return;
  switch ((fdl_schema_type)f->type) {
  case FDL_SCHEMA_STR:
    check_str(r, f, v, a);
    return;
  case FDL_SCHEMA_INT:
    if (typed(r, f, v, a, json_is_integer(v), "an integer") &&
        ((int64_t)json_integer_value(v) < f->min ||
         ((f->flags & FDL_SCHEMA_MAX) && (int64_t)json_integer_value(v) > f->max)))
      fail(r, f, a, "%lld is less than the minimum of %lld", (long long)json_integer_value(v),
           (long long)f->min);
    return;
  case FDL_SCHEMA_NUM:
    check_num(r, f, v, a);
    return;
  case FDL_SCHEMA_BOOL:
    typed(r, f, v, a, json_is_boolean(v), "a boolean");
    return;
  case FDL_SCHEMA_NULL:
    typed(r, f, v, a, json_is_null(v), "null");
    return;
  case FDL_SCHEMA_ENUM:
    check_enum(r, f, v, a);
    return;
  case FDL_SCHEMA_TRUE:
  case FDL_SCHEMA_FALSE: {
    bool want = f->type == FDL_SCHEMA_TRUE;
    if (!(json_is_boolean(v) && json_is_true(v) == want))
      fail(r, f, a, "must be %s", want ? "true" : "false");
    return;
  }
  case FDL_SCHEMA_OBJ:
    if (r->first && f->obj->keys)
      fdl_schema_check(r, v, a.path, f->obj); /* Kiln's closed object says "expected an object" */
    else if (typed(r, f, v, a, json_is_object(v), "an object"))
      fdl_schema_check(r, v, a.path, f->obj);
    return;
  case FDL_SCHEMA_ARR:
    check_arr(r, f, v, a);
    return;
  case FDL_SCHEMA_EACH:
    check_each(r, f, v, a);
    return;
  case FDL_SCHEMA_RULE:
    f->rule(r, f, v, a.path);
    return;
  }
}

/* ---- objects ----------------------------------------------------------------------------- */

/* Kiln's closed object: an object, every key present (in the keys' order), no other. */
static void kiln_closed(fdl_schema_run *r, const json_t *o, const char *path,
                        const char *const *keys) {
  if (!json_is_object(o)) {
    fdl_schema_bad(r, path, "expected an object");
    return;
  }
  size_t n = 0;
  for (; keys[n]; n++)
    if (!json_object_get(o, keys[n])) {
      fdl_schema_bad(r, path, "missing key \"%s\"", keys[n]);
      return;
    }
  if (json_object_size(o) == n) return;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    bool known = false;
    for (size_t i = 0; i < n && !known; i++) known = strcmp(k, keys[i]) == 0;
    if (!known) {
      fdl_schema_bad(r, path, "unexpected key \"%s\" (the object is closed)", k);
      return;
    }
  }
}

void fdl_schema_check(fdl_schema_run *r, const json_t *o, const char *path,
                      const fdl_schema_obj *t) {
  if (r->stop) return;
  if (r->first && t->keys) kiln_closed(r, o, path, t->keys);
  if (t->closed) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
      bool ok = false;
      for (size_t i = 0; i < t->n && !ok; i++) ok = !strcmp(key, t->fields[i].key);
      char q[FDL_QUOTE_CAP];
      if (!ok)
        fdl_schema_bad(r, path, "additional property %s is not allowed",
                       fdl_quote_str(key, q, sizeof q));
    }
  }
  for (size_t i = 0; i < t->n && !r->stop; i++) {
    const fdl_schema_field *f = &t->fields[i];
    if (!f->key) { /* a rule over the object, or more of its fields in another table */
      if (f->type == FDL_SCHEMA_RULE)
        f->rule(r, f, o, path);
      else
        fdl_schema_check(r, o, path, f->obj);
      continue;
    }
    char full[FDL_SCHEMA_PATH_CAP];
    join3(full, path, path[0] ? "." : "", f->key);
    const json_t *v = json_object_get(o, f->key);
    if (v || r->first)
      check_value(r, f, v, (at){full, path});
    else if (f->flags & FDL_SCHEMA_REQ)
      fdl_schema_bad(r, full, "is required");
  }
  if (t->after && !r->stop) t->after(r, o, path);
}
