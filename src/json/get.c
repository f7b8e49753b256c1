/* get.c - the one getter set over parsed JSON: typed lookup by key and by dotted path. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "json/get.h"

const char *fdl_json_str(const json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

json_t *fdl_json_obj(const json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_object(v) ? v : NULL;
}

json_t *fdl_json_arr(const json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_array(v) ? v : NULL;
}

bool fdl_json_int(const json_t *o, const char *key, int64_t *v) {
  const json_t *x = json_object_get(o, key);
  if (json_is_integer(x) && v) *v = (int64_t)json_integer_value(x);
  return json_is_integer(x);
}

bool fdl_json_num(const json_t *o, const char *key, double *v) {
  const json_t *x = json_object_get(o, key);
  if (json_is_number(x) && v) *v = json_number_value(x);
  return json_is_number(x);
}

bool fdl_json_bool(const json_t *o, const char *key, bool *v) {
  const json_t *x = json_object_get(o, key);
  if (json_is_boolean(x) && v) *v = json_is_true(x);
  return json_is_boolean(x);
}

const json_t *fdl_json_path(const json_t *o, const char *path) {
  while (o && path && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (!json_is_object(o)) return NULL;
    o = json_object_getn(o, path, n);
    path += n + (dot ? 1 : 0);
  }
  return o;
}

const char *fdl_json_path_str(const json_t *o, const char *path) {
  return json_string_value(fdl_json_path(o, path));
}

int64_t fdl_json_path_int(const json_t *o, const char *path, int64_t dflt) {
  const json_t *v = fdl_json_path(o, path);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

double fdl_json_path_num(const json_t *o, const char *path, double dflt) {
  const json_t *v = fdl_json_path(o, path);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

json_t *fdl_json_path_copy(const json_t *o, const char *path) {
  const json_t *v = fdl_json_path(o, path);
  return v ? json_deep_copy(v) : json_null();
}

fdl_status fdl_json_int_array(const json_t *j, int64_t lo, int64_t hi, int64_t **out, size_t *n) {
  if (!json_is_array(j)) return FDL_PARSE;
  size_t k = json_array_size(j);
  int64_t *v = fdl_malloc((k ? k : 1) * sizeof *v);
  if (!v) return FDL_NOMEM;
  for (size_t i = 0; i < k; i++) {
    const json_t *x = json_array_get(j, i);
    if (!json_is_integer(x) || json_integer_value(x) < lo || json_integer_value(x) > hi) {
      free(v);
      return FDL_PARSE;
    }
    v[i] = (int64_t)json_integer_value(x);
  }
  *out = v;
  *n = k;
  return FDL_OK;
}
