/* schema.c - the schema interpreter (schema.h): a table of field descriptors walked over a parsed
 * document, one finding per violation. Divisions: paths and findings; values; objects. */
#include "json/schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fidelis/quote.h"
#include "json/py.h"

/* ---- paths and findings ------------------------------------------------------------------ */

void fdl_schema_bad(fdl_schema_run *r, const char *path, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  r->bad(r->user, path, msg);
}

const char *fdl_schema_type_name(const json_t *v) {
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

void fdl_schema_path(char *out, const char *path, const char *key) {
  join3(out, path, path[0] ? "." : "", key);
}

/* ---- values ------------------------------------------------------------------------------ */

static void check_value(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                        const char *path);

/* "is X; expected WANT[ or null]" unless v has the JSON type wanted. */
static bool typed(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v, const char *path,
                  bool ok, const char *want) {
  if (!ok)
    fdl_schema_bad(r, path, "is %s; expected %s%s", fdl_schema_type_name(v), want,
                   (f->flags & FDL_SCHEMA_NUL) ? " or null" : "");
  return ok;
}

static void check_str(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                      const char *path) {
  if (!typed(r, f, v, path, json_is_string(v), "a string")) return;
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if ((f->flags & FDL_SCHEMA_MIN1) && n == 0)
    fdl_schema_bad(r, path, "is empty; expected a non-empty string");
  if (f->pattern && !f->pattern->ok(s, n)) {
    char shown[96];
    fdl_py_shown(v, shown, sizeof shown);
    fdl_schema_bad(r, path, "%s is not %s", shown, f->pattern->text);
  }
}

static void check_enum(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                       const char *path) {
  if (json_is_string(v))
    for (size_t i = 0; f->vals[i]; i++)
      if (!strcmp(json_string_value(v), f->vals[i])) return;
  char shown[96], list[512] = "";
  fdl_py_shown(v, shown, sizeof shown);
  for (size_t i = 0; f->vals[i]; i++) {
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", f->vals[i]);
  }
  fdl_schema_bad(r, path, "%s is not one of [%s]", shown, list);
}

static void check_each(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                       const char *path) {
  for (size_t i = 0; f->items && i < json_array_size(v); i++) {
    char idx[32], ip[FDL_SCHEMA_PATH_CAP];
    snprintf(idx, sizeof idx, "[%zu]", i);
    join3(ip, path, "", idx);
    check_value(r, f->items, json_array_get(v, i), ip);
  }
}

static void check_arr(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                      const char *path) {
  if (!typed(r, f, v, path, json_is_array(v), "an array")) return;
  size_t n = json_array_size(v);
  if (n < (size_t)f->min)
    fdl_schema_bad(r, path, "has %zu items; at least %zu required", n, (size_t)f->min);
  if (f->max && n > (size_t)f->max)
    fdl_schema_bad(r, path, "has %zu items; at most %zu allowed", n, (size_t)f->max);
  check_each(r, f, v, path);
}

static void check_value(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                        const char *path) {
  if (json_is_null(v) && (f->flags & FDL_SCHEMA_NUL)) return;
  switch ((fdl_schema_type)f->type) {
  case FDL_SCHEMA_STR:
    check_str(r, f, v, path);
    return;
  case FDL_SCHEMA_INT:
    if (typed(r, f, v, path, json_is_integer(v), "an integer") &&
        (int64_t)json_integer_value(v) < f->min)
      fdl_schema_bad(r, path, "%lld is less than the minimum of %lld",
                     (long long)json_integer_value(v), (long long)f->min);
    return;
  case FDL_SCHEMA_NUM:
    typed(r, f, v, path, json_is_number(v), "a number");
    return;
  case FDL_SCHEMA_BOOL:
    typed(r, f, v, path, json_is_boolean(v), "a boolean");
    return;
  case FDL_SCHEMA_NULL:
    typed(r, f, v, path, json_is_null(v), "null");
    return;
  case FDL_SCHEMA_ENUM:
    check_enum(r, f, v, path);
    return;
  case FDL_SCHEMA_TRUE:
  case FDL_SCHEMA_FALSE: {
    bool want = f->type == FDL_SCHEMA_TRUE;
    if (!(json_is_boolean(v) && json_is_true(v) == want))
      fdl_schema_bad(r, path, "must be %s", want ? "true" : "false");
    return;
  }
  case FDL_SCHEMA_OBJ:
    if (typed(r, f, v, path, json_is_object(v), "an object")) fdl_schema_check(r, v, path, f->obj);
    return;
  case FDL_SCHEMA_ARR:
    check_arr(r, f, v, path);
    return;
  case FDL_SCHEMA_EACH:
    check_each(r, f, v, path);
    return;
  case FDL_SCHEMA_RULE:
    f->rule(r, v, path);
    return;
  }
}

/* ---- objects ----------------------------------------------------------------------------- */

void fdl_schema_check(fdl_schema_run *r, const json_t *o, const char *path,
                      const fdl_schema_obj *t) {
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
  for (size_t i = 0; i < t->n; i++) {
    const fdl_schema_field *f = &t->fields[i];
    char full[FDL_SCHEMA_PATH_CAP];
    fdl_schema_path(full, path, f->key);
    const json_t *v = json_object_get(o, f->key);
    if (v)
      check_value(r, f, v, full);
    else if (f->flags & FDL_SCHEMA_REQ)
      fdl_schema_bad(r, full, "is required");
  }
  if (t->after) t->after(r, o, path);
}
