/* safetensors_read.c - opening safetensors files without trusting a byte of them.
 *
 * Order of proof: the 8-byte length prefix; the header length against the limit and the file;
 * the header as strict JSON (fdl_json_parse refuses duplicate names, bad UTF-8 and deep
 * nesting); every entry's fields, dtype and shape product; every data range inside the data
 * section; no two non-empty ranges overlapping. Only then does a view point at tensor bytes.
 *
 * Divisions: the handle; entry checks; range checks; open/close and accessors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "fidelis/tensor.h"
#include "tensor/tensor_internal.h"
#include "base/sys.h"
#include "tensor/safetensors_json.h"

/* ---- the handle -------------------------------------------------------------------------- */

struct fdl_safetensors {
  fdl_map map;                /* the file, when opened by path */
  bool mapped;                /* map must be released on close */
  const uint8_t *base;        /* first byte of the file */
  uint64_t size;              /* file size */
  uint64_t data_start;        /* 8 + header length */
  json_t *header;             /* parsed header; owns the tensor names */
  const json_t *meta;         /* __metadata__ inside header, or NULL */
  fdl_tensor *tensors;        /* sorted by offset */
  const fdl_tensor **by_name; /* the same, sorted by name: lookups in O(log n) */
  size_t count;
};

/* Name shown in messages: the path, or a marker for caller-owned buffers. */
#define MEM_LABEL "<memory>"
#define NAME_SHOWN FDL_QUOTE_CAP

/* ---- entry checks ------------------------------------------------------------------------ */

static fdl_status check_metadata(const json_t *meta, const char *file, fdl_err *err) {
  if (!json_is_object(meta))
    return fdl_fail(err, FDL_PARSE, "%s: __metadata__ is not an object (expected string values)",
                    file);
  const char *key;
  const json_t *value;
  json_object_foreach((json_t *)meta, key, value) {
    if (!json_is_string(value)) {
      char shown[NAME_SHOWN];
      fdl_quote(key, strlen(key), shown, sizeof shown);
      return fdl_fail(err, FDL_PARSE,
                      "%s: __metadata__ value for %s is not a string (safetensors metadata "
                      "maps strings to strings)",
                      file, shown);
    }
  }
  return FDL_OK;
}

/* An integer header field within [0, max]; reals such as 2.0 are refused (not an index). */
static bool get_index(const json_t *v, uint64_t max, uint64_t *out) {
  if (!json_is_integer(v)) return false;
  json_int_t i = json_integer_value(v);
  if (i < 0 || (uint64_t)i > max) return false;
  *out = (uint64_t)i;
  return true;
}

static fdl_status check_entry(const json_t *entry, const char *name, const char *file,
                              uint64_t data_size, fdl_tensor *t, uint64_t *begin_out,
                              fdl_err *err) {
  if (!json_is_object(entry))
    return fdl_fail(err, FDL_PARSE,
                    "%s: tensor %s: entry is not an object (expected dtype, shape, "
                    "data_offsets)",
                    file, name);
  const json_t *jd = json_object_get(entry, "dtype");
  const json_t *js = json_object_get(entry, "shape");
  const json_t *jo = json_object_get(entry, "data_offsets");
  if (!jd || !js || !jo || json_object_size(entry) != 3)
    return fdl_fail(err, FDL_PARSE,
                    "%s: tensor %s: entry must have exactly the keys dtype, shape and "
                    "data_offsets (has %zu key(s)%s)",
                    file, name, json_object_size(entry),
                    (!jd || !js || !jo) ? ", one of them missing" : ", an unknown one among them");
  if (!json_is_string(jd) || !fdl_dtype_parse(json_string_value(jd), &t->dtype)) {
    char shown[FDL_QUOTE_CAP];
    if (json_is_string(jd))
      fdl_quote(json_string_value(jd), json_string_length(jd), shown, sizeof shown);
    else
      snprintf(shown, sizeof shown, "(not a string)");
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: tensor %s: unknown dtype %s (expected one of BOOL U8 I8 I16 U16 "
                    "I32 U32 I64 U64 F16 BF16 F32 F64 F8_E4M3 F8_E5M2)",
                    file, name, shown);
  }
  if (!json_is_array(js) || json_array_size(js) > FDL_MAX_DIMS)
    return fdl_fail(err, FDL_PARSE,
                    "%s: tensor %s: shape must be an array of at most %d non-negative "
                    "integers",
                    file, name, FDL_MAX_DIMS);
  t->ndim = (int)json_array_size(js);
  for (int i = 0; i < t->ndim; i++) {
    uint64_t d;
    if (!get_index(json_array_get(js, (size_t)i), (uint64_t)INT64_MAX, &d))
      return fdl_fail(err, FDL_PARSE, "%s: tensor %s: shape[%d] is not a non-negative integer",
                      file, name, i);
    t->shape[i] = (int64_t)d;
  }
  uint64_t numel, nbytes;
  if (!fdl_shape_nbytes(t->dtype, t->ndim, t->shape, &numel, &nbytes))
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: tensor %s: shape product times the %zu-byte element size overflows "
                    "64 bits",
                    file, name, fdl_dtype_size(t->dtype));
  if (!json_is_array(jo) || json_array_size(jo) != 2)
    return fdl_fail(err, FDL_PARSE,
                    "%s: tensor %s: data_offsets must be an array [begin, end] of two "
                    "integers",
                    file, name);
  uint64_t begin, end;
  if (!get_index(json_array_get(jo, 0), data_size, &begin) ||
      !get_index(json_array_get(jo, 1), data_size, &end))
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: tensor %s: data_offsets must be integers in [0, %llu] (the data "
                    "section size)",
                    file, name, (unsigned long long)data_size);
  if (begin > end)
    return fdl_fail(err, FDL_BOUNDS, "%s: tensor %s: data_offsets begin %llu > end %llu", file,
                    name, (unsigned long long)begin, (unsigned long long)end);
  if (end - begin != nbytes)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: tensor %s: data_offsets span %llu bytes but %s shape holds %llu "
                    "elements = %llu bytes",
                    file, name, (unsigned long long)(end - begin), fdl_dtype_name(t->dtype),
                    (unsigned long long)numel, (unsigned long long)nbytes);
  t->nbytes = nbytes;
  *begin_out = begin;
  return FDL_OK;
}

/* ---- range checks ------------------------------------------------------------------------ */

static int by_name_cmp(const void *a, const void *b) {
  return strcmp((*(const fdl_tensor *const *)a)->name, (*(const fdl_tensor *const *)b)->name);
}

static int by_offset(const void *pa, const void *pb) {
  const fdl_tensor *a = pa, *b = pb;
  if (a->offset != b->offset) return a->offset < b->offset ? -1 : 1;
  if (a->nbytes != b->nbytes) return a->nbytes < b->nbytes ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* Empty tensors occupy no bytes, so they overlap nothing wherever they point. */
static fdl_status check_overlap(const fdl_tensor *t, size_t n, const char *file, fdl_err *err) {
  const fdl_tensor *reach = NULL; /* the non-empty range ending furthest so far */
  for (size_t i = 0; i < n; i++) {
    if (t[i].nbytes == 0) continue;
    if (reach && t[i].offset < reach->offset + reach->nbytes) {
      char a[NAME_SHOWN], b[NAME_SHOWN];
      fdl_quote(reach->name, strlen(reach->name), a, sizeof a);
      fdl_quote(t[i].name, strlen(t[i].name), b, sizeof b);
      return fdl_fail(err, FDL_BOUNDS,
                      "%s: tensors %s and %s overlap (data ranges must be disjoint)", file, a, b);
    }
    if (!reach || t[i].offset + t[i].nbytes > reach->offset + reach->nbytes) reach = &t[i];
  }
  return FDL_OK;
}

/* ---- open -------------------------------------------------------------------------------- */

static fdl_status parse_header(fdl_safetensors *st, const char *file, fdl_err *err) {
  const uint8_t *p = st->base;
  if (st->size < 8)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: %llu bytes is too short for a safetensors file (8-byte header length "
                    "expected)",
                    file, (unsigned long long)st->size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | p[i];
  if (n > FDL_SAFETENSORS_MAX_HEADER)
    return fdl_fail(err, FDL_BOUNDS, "%s: header length %llu exceeds the %u-byte limit", file,
                    (unsigned long long)n, FDL_SAFETENSORS_MAX_HEADER);
  /* n is bounded above, so 8 + n cannot wrap. */
  if (8 + n > st->size)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: header length %llu runs past the end of the %llu-byte file (truncated?)",
                    file, (unsigned long long)n, (unsigned long long)st->size);
  st->data_start = 8 + n;
  /* A valid header nests three deep ({name: {shape: [...]}}); a small bound refuses hostile
   * nesting early with the parser's own message. */
  fdl_json_read_opts opts = {.max_depth = 8};
  fdl_status s = fdl_json_parse((const char *)p + 8, (size_t)n, &opts, &st->header, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "%s: header", file);
    return s;
  }
  if (!json_is_object(st->header))
    return fdl_fail(err, FDL_PARSE, "%s: header is not a JSON object", file);
  return FDL_OK;
}

static fdl_status build_views(fdl_safetensors *st, const char *file, fdl_err *err) {
  uint64_t data_size = st->size - st->data_start;
  size_t total = json_object_size(st->header);
  st->tensors = fdl_calloc(total ? total : 1, sizeof *st->tensors);
  if (!st->tensors)
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory for %zu tensors", file, total);
  const char *key;
  size_t key_len;
  json_t *value;
  json_object_keylen_foreach(st->header, key, key_len, value) {
    char shown[NAME_SHOWN];
    fdl_quote(key, key_len, shown, sizeof shown);
    if (strlen(key) != key_len)
      return fdl_fail(err, FDL_PARSE, "%s: tensor name %s contains a NUL character", file, shown);
    if (!strcmp(key, "__metadata__")) {
      fdl_status s = check_metadata(value, file, err);
      if (s != FDL_OK) return s;
      st->meta = value;
      continue;
    }
    fdl_tensor *t = &st->tensors[st->count];
    uint64_t begin = 0;
    fdl_status s = check_entry(value, shown, file, data_size, t, &begin, err);
    if (s != FDL_OK) return s;
    t->name = key;
    t->offset = st->data_start + begin; /* begin <= data_size, so this stays <= file size */
    t->data = st->base + t->offset;
    st->count++;
  }
  if (st->count > 1) qsort(st->tensors, st->count, sizeof *st->tensors, by_offset);
  st->by_name = fdl_calloc(st->count ? st->count : 1, sizeof *st->by_name);
  if (!st->by_name)
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory for %zu tensors", file, st->count);
  for (size_t i = 0; i < st->count; i++) st->by_name[i] = &st->tensors[i];
  if (st->count > 1) qsort(st->by_name, st->count, sizeof *st->by_name, by_name_cmp);
  return check_overlap(st->tensors, st->count, file, err);
}

static fdl_status open_common(fdl_safetensors *st, const char *file, fdl_safetensors **out,
                              fdl_err *err) {
  fdl_status s = parse_header(st, file, err);
  if (s == FDL_OK) s = build_views(st, file, err);
  if (s != FDL_OK) {
    fdl_safetensors_close(st);
    return s;
  }
  *out = st;
  return FDL_OK;
}

fdl_status fdl_safetensors_open_mem(const void *data, size_t size, fdl_safetensors **out,
                                    fdl_err *err) {
  static const uint8_t empty[1] = {0};
  fdl_safetensors *st = fdl_calloc(1, sizeof *st);
  if (!st) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", MEM_LABEL);
  st->base = data ? data : empty;
  st->size = data ? size : 0;
  return open_common(st, MEM_LABEL, out, err);
}

static fdl_status open_file(const char *path, bool resident, fdl_pool *pool, fdl_safetensors **out,
                            fdl_err *err) {
  fdl_safetensors *st = fdl_calloc(1, sizeof *st);
  if (!st) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  fdl_status s = resident ? fdl_map_file_resident(path, pool, &st->map, err)
                          : fdl_map_file(path, &st->map, err);
  if (s != FDL_OK) {
    free(st);
    return s;
  }
  st->mapped = true;
  st->base = st->map.data;
  st->size = st->map.size;
  return open_common(st, path, out, err);
}

fdl_status fdl_safetensors_open(const char *path, fdl_safetensors **out, fdl_err *err) {
  return open_file(path, false, NULL, out, err);
}

fdl_status fdl_safetensors_open_resident(const char *path, fdl_pool *pool, fdl_safetensors **out,
                                         fdl_err *err) {
  return open_file(path, true, pool, out, err);
}

void fdl_safetensors_close(fdl_safetensors *st) {
  if (!st) return;
  free(st->tensors);
  free(st->by_name);
  json_decref(st->header);
  if (st->mapped) fdl_unmap(&st->map);
  free(st);
}

/* ---- accessors --------------------------------------------------------------------------- */

size_t fdl_safetensors_count(const fdl_safetensors *st) {
  return st ? st->count : 0;
}

const fdl_tensor *fdl_safetensors_at(const fdl_safetensors *st, size_t i) {
  return st && i < st->count ? &st->tensors[i] : NULL;
}

const fdl_tensor *fdl_safetensors_find(const fdl_safetensors *st, const char *name) {
  if (!st || !name || !st->by_name) return NULL;
  const fdl_tensor key = {.name = name}, *k = &key;
  const fdl_tensor **hit = bsearch(&k, st->by_name, st->count, sizeof *st->by_name, by_name_cmp);
  return hit ? *hit : NULL;
}

const json_t *fdl_safetensors_metadata(const fdl_safetensors *st) {
  return st ? st->meta : NULL;
}

uint64_t fdl_safetensors_data_start(const fdl_safetensors *st) {
  return st ? st->data_start : 0;
}

uint64_t fdl_safetensors_file_size(const fdl_safetensors *st) {
  return st ? st->size : 0;
}

const uint8_t *fdl_safetensors_bytes(const fdl_safetensors *st) {
  return st ? st->base : NULL;
}

void fdl_safetensors_release(const fdl_safetensors *st, uint64_t off, uint64_t n) {
  if (st && st->mapped && off <= SIZE_MAX && n <= SIZE_MAX)
    fdl_map_release(&st->map, (size_t)off, (size_t)n);
}
