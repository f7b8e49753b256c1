/* input.c - one vector or matrix of floats from a .npy, safetensors or raw float32 file, widened
 * exactly to float32 and proven finite, for the attribution diffs.
 *
 * The format is chosen by content, except for raw files, which have no header to recognise and
 * so are named by their extension: "\x93NUMPY" is .npy; a name ending in ".f32" is raw float32
 * little-endian; anything else is read as safetensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "fidelis/attr.h"
#include "base/sys.h"
#include "base/fs.h"
#include "base/path.h"
#include "tensor/safetensors_json.h"
#include "json/json.h"
#include "attr/layer_json.h"

/* The safetensors __metadata__ key that names the rows of a boundary matrix. */
#define BOUNDARY_NAMES_KEY "boundary_names"

/* Widens view t into m after checking dtype, rank, size and finiteness. */
static fdl_status take(const fdl_tensor *t, const char *what, fdl_attr_matrix *m, fdl_err *err) {
  if (!fdl_tensor_widenable(t->dtype))
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: dtype %s, expected F32, BF16 or F16", what,
                    fdl_dtype_name(t->dtype));
  if (t->ndim != 1 && t->ndim != 2)
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: rank %d, expected 1 ([n]) or 2 ([rows, n])", what,
                    t->ndim);
  uint64_t n = fdl_tensor_numel(t);
  if (n == 0) return fdl_fail(err, FDL_BOUNDS, "%s: no elements, expected at least 1", what);
  uint64_t cols = (uint64_t)t->shape[t->ndim - 1];
  bool nan = false;
  uint64_t bad = fdl_tensor_first_nonfinite(t->data, t->dtype, n, &nan);
  if (bad != UINT64_MAX)
    return fdl_fail(err, FDL_NONFINITE,
                    "%s: element %llu (row %llu, column %llu) is %s, expected a finite value", what,
                    (unsigned long long)bad, (unsigned long long)(bad / cols),
                    (unsigned long long)(bad % cols), nan ? "NaN" : "infinite");
  size_t bytes;
  if (n > SIZE_MAX || !fdl_size_mul((size_t)n, sizeof(float), &bytes))
    return fdl_fail(err, FDL_TOO_LARGE, "%s: %llu elements do not fit in memory", what,
                    (unsigned long long)n);
  m->data = fdl_huge_alloc(bytes);
  if (!m->data)
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory for %llu floats", what,
                    (unsigned long long)n);
  fdl_tensor_widen_f32(t, 0, (size_t)n, m->data);
  m->rows = n / cols;
  m->cols = cols;
  m->dtype = t->dtype;
  m->ndim = t->ndim;
  return FDL_OK;
}

static fdl_status from_safetensors(const fdl_map *map, const char *tensor, fdl_attr_matrix *m,
                                   fdl_err *err) {
  fdl_safetensors *st = NULL;
  fdl_status s = fdl_safetensors_open_mem(map->data, map->size, &st, err);
  if (s != FDL_OK) return s;
  const fdl_tensor *t = NULL;
  size_t count = fdl_safetensors_count(st);
  if (tensor) {
    t = fdl_safetensors_find(st, tensor);
    if (!t) s = fdl_fail(err, FDL_INVALID, "no tensor named '%s' in the file", tensor);
  } else if (count != 1) {
    char names[256] = "";
    for (size_t i = 0; i < count && strlen(names) < 200; i++) {
      size_t u = strlen(names);
      snprintf(names + u, sizeof names - u, "%s'%s'", i ? ", " : "",
               fdl_safetensors_at(st, i)->name);
    }
    s = fdl_fail(err, FDL_INVALID, "%zu tensors (%s), expected exactly one or a tensor name", count,
                 count ? names : "none");
  } else {
    t = fdl_safetensors_at(st, 0);
  }
  char what[300];
  if (s == FDL_OK) {
    snprintf(what, sizeof what, "tensor '%s'", t->name);
    s = take(t, what, m, err);
  }
  const json_t *meta = fdl_safetensors_metadata(st);
  const char *names = meta ? json_string_value(json_object_get(meta, BOUNDARY_NAMES_KEY)) : NULL;
  if (s == FDL_OK && names && !(m->boundary_names = fdl_strdup(names)))
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_safetensors_close(st);
  return s;
}

static fdl_status from_raw(const fdl_map *map, fdl_attr_matrix *m, fdl_err *err) {
  if (map->size % 4)
    return fdl_fail(err, FDL_BOUNDS, "raw float32 file of %zu bytes, expected a multiple of 4",
                    map->size);
  int64_t shape[1] = {(int64_t)(map->size / 4)};
  fdl_tensor t = {.name = "",
                  .dtype = FDL_DTYPE_F32,
                  .ndim = 1,
                  .offset = 0,
                  .nbytes = map->size,
                  .data = map->data};
  t.shape[0] = shape[0];
  return take(&t, "raw float32", m, err);
}

fdl_status fdl_attr_matrix_read(const char *path, const char *tensor, fdl_attr_matrix *m,
                                fdl_err *err) {
  memset(m, 0, sizeof *m);
  char *real = NULL;
  fdl_map map;
  fdl_status s = fdl_resolve_named(path, &real, err);
  if (s == FDL_OK) s = fdl_map_file(real, &map, err);
  free(real);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "%s", path);
    return s;
  }
  bool npy = map.size >= 6 && !memcmp(map.data, "\x93NUMPY", 6);
  bool raw = !npy && fdl_ends_with(path, ".f32");
  if (tensor && (npy || raw)) {
    s = fdl_fail(err, FDL_INVALID, "a tensor name was given, but the file is %s, which has one",
                 npy ? ".npy" : "raw float32");
  } else if (npy) {
    fdl_npy *np = NULL;
    s = fdl_npy_open_mem(map.data, map.size, &np, err);
    if (s == FDL_OK) {
      s = take(fdl_npy_tensor(np), "array", m, err);
      fdl_npy_close(np);
    }
  } else if (raw) {
    s = from_raw(&map, m, err);
  } else {
    s = from_safetensors(&map, tensor, m, err);
  }
  fdl_unmap(&map);
  if (s != FDL_OK) {
    fdl_attr_matrix_free(m);
    fdl_err_prefix(err, "%s (%s)", path, npy ? ".npy" : raw ? "raw float32" : "safetensors");
  }
  return s;
}

fdl_status fdl_attr_matrix_reshape(fdl_attr_matrix *m, uint64_t cols, const char *path,
                                   fdl_err *err) {
  uint64_t n = m->rows * m->cols;
  if (m->rows != 1 || cols == 0 || n % cols)
    return fdl_fail(err, FDL_BOUNDS, "%s: %llu x %llu values cannot be cut into rows of %llu", path,
                    (unsigned long long)m->rows, (unsigned long long)m->cols,
                    (unsigned long long)cols);
  m->rows = n / cols;
  m->cols = cols;
  return FDL_OK;
}

void fdl_attr_matrix_free(fdl_attr_matrix *m) {
  if (!m) return;
  free(m->data);
  free(m->boundary_names);
  memset(m, 0, sizeof *m);
}

/* The longest generated name: "boundary_" and 20 digits. */
#define GENERATED_NAME_CAP 32u

fdl_status fdl_attr_row_names(const char *list, const char *meta, size_t n, const char *what,
                              char ***names, fdl_err *err) {
  *names = NULL;
  json_t *a = NULL;
  fdl_err perr = {FDL_OK, ""};
  bool ok = list || !meta ||
            (fdl_json_parse(meta, strlen(meta), NULL, &a, &perr) == FDL_OK && json_is_array(a));
  size_t k = list ? 1 : meta ? json_array_size(a) : n, bytes, t;
  for (const char *p = list; p && *p; p++) k += *p == ',';
  for (size_t i = 0; a && ok && i < k; i++) ok = json_is_string(json_array_get(a, i));
  fdl_status s =
      !ok      ? fdl_fail(err, FDL_PARSE,
                          "REF __metadata__ \"boundary_names\": expected a JSON list of strings")
      : k != n ? fdl_fail(err, FDL_MISMATCH, "%zu boundary names (%s) for %zu rows", k, what, n)
               : FDL_OK;
  /* One block: the pointers, then the strings, each (with its NUL) no longer than its text in
   * list or in meta (where quotes surround it), or a generated name. */
  bytes = list ? strlen(list) + 1 : meta ? strlen(meta) : 0;
  char **v = s == FDL_OK && (list || meta || fdl_size_mul(n, GENERATED_NAME_CAP, &bytes)) &&
                     fdl_size_mul(n, sizeof *v, &t) && fdl_size_add(t, bytes, &t)
                 ? fdl_malloc(t ? t : 1)
                 : NULL;
  for (size_t i = 0, used = 0; v && i < n; i++) {
    char *p = v[i] = (char *)(v + n) + used;
    size_t len;
    if (list) {
      len = strcspn(list, ",");
      memcpy(p, list, len);
      list += len + 1;
    } else if (meta) {
      len = json_string_length(json_array_get(a, i));
      memcpy(p, json_string_value(json_array_get(a, i)), len);
    } else {
      len = (size_t)snprintf(p, GENERATED_NAME_CAP, "boundary_%zu", i);
    }
    p[len] = '\0';
    used += len + 1;
  }
  json_decref(a);
  if (s == FDL_OK && !v) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  *names = v;
  return s;
}
