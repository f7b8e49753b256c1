/* gguf.c - a GGUF file's header and metadata, indexed in place (fidelis/gguf.h).
 *
 * Layout (docs/GGUF.md): "GGUF", u32 version, u64 tensor count, u64 metadata count, then each
 * entry as a string key (u64 length + bytes), a u32 type and its value; strings are u64 length
 * + bytes, arrays a u32 element type, a u64 count and the elements. Nothing is trusted: the
 * reader keeps a cursor and every read first proves it fits in what is left of the file. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/quote.h"
#include "base/sys.h"
#include "fidelis/gguf.h"
#include "gguf/cursor.h"

static const char *const TYPE_NAMES[FDL_GGUF_TYPE_COUNT] = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64"};
static const uint8_t TYPE_SIZE[FDL_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

const char *fdl_gguf_type_name(fdl_gguf_type t) {
  return (unsigned)t < FDL_GGUF_TYPE_COUNT ? TYPE_NAMES[t] : "unknown";
}

size_t fdl_gguf_type_size(fdl_gguf_type t) {
  return (unsigned)t < FDL_GGUF_TYPE_COUNT ? TYPE_SIZE[t] : 0;
}

bool fdl_gguf_utf8_ok(const uint8_t *s, uint64_t n) {
  return fdl_utf8_valid((const char *)s, n) && !memchr(s, 0, n);
}

/* Skips one value of type t (not an array), proving it fits. */
static fdl_status skip_value(cursor *c, fdl_gguf_type t, const char *key, fdl_err *err) {
  if (t == FDL_GGUF_STRING) {
    uint64_t off, len;
    return str_at(c, &off, &len, key, err);
  }
  fdl_status s = need(c, TYPE_SIZE[t], key, err);
  if (s == FDL_OK) c->at += TYPE_SIZE[t];
  return s;
}

static fdl_status read_kv(cursor *c, fdl_gguf_kv *kv, uint64_t index, fdl_err *err) {
  uint64_t koff, klen, start = c->at;
  char what[64];
  snprintf(what, sizeof what, "metadata entry %" PRIu64 " key", index);
  fdl_status s = str_at(c, &koff, &klen, what, err);
  if (s != FDL_OK) return s;
  if (klen == 0 || !fdl_gguf_utf8_ok(c->p + koff, klen))
    return fdl_fail(err, FDL_PARSE,
                    "%s: metadata entry %" PRIu64 " at offset %" PRIu64
                    " has an empty key or one that is not UTF-8",
                    c->path, index, start);
  char *key = fdl_strndup((const char *)c->p + koff, klen);
  if (!key) return fdl_fail(err, FDL_NOMEM, "%s: out of memory for a metadata key", c->path);
  kv->key = key;
  uint32_t t;
  if ((s = u32_at(c, &t, key, err)) != FDL_OK) return s;
  if (t >= FDL_GGUF_TYPE_COUNT)
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: %s: value type %u at offset %" PRIu64 " is unknown",
                    c->path, key, t, c->at - 4);
  kv->type = (fdl_gguf_type)t;
  kv->elem = kv->type;
  kv->count = 1;
  if (kv->type != FDL_GGUF_ARRAY) {
    kv->value = c->at;
    return skip_value(c, kv->type, key, err);
  }
  uint32_t et;
  if ((s = u32_at(c, &et, key, err)) != FDL_OK || (s = u64_at(c, &kv->count, key, err)) != FDL_OK)
    return s;
  if (et >= FDL_GGUF_TYPE_COUNT || et == FDL_GGUF_ARRAY)
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: %s: array element type %u is %s", c->path, key, et,
                    et == FDL_GGUF_ARRAY ? "an array (nested arrays are not GGUF metadata)"
                                         : "unknown");
  kv->elem = (fdl_gguf_type)et;
  kv->value = c->at;
  /* The smallest element (a fixed-size number, or an empty string's 8-byte length) bounds the
   * count by the bytes left before anything is walked. */
  uint64_t min = et == FDL_GGUF_STRING ? 8 : TYPE_SIZE[et];
  if (kv->count > (c->size - c->at) / min)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: %s claims %" PRIu64 " %s elements at offset %" PRIu64
                    " but the file has %" PRIu64 " bytes left",
                    c->path, key, kv->count, TYPE_NAMES[et], c->at, c->size - c->at);
  if (et != FDL_GGUF_STRING) {
    c->at += kv->count * min;
    return FDL_OK;
  }
  for (uint64_t i = 0; i < kv->count; i++)
    if ((s = skip_value(c, FDL_GGUF_STRING, key, err)) != FDL_OK) return s;
  return FDL_OK;
}

static int by_key(const void *a, const void *b) {
  return strcmp(((const fdl_gguf_kv *)a)->key, ((const fdl_gguf_kv *)b)->key);
}

void fdl_gguf_close(fdl_gguf *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n_kv; i++) free((char *)g->kv[i].key);
  free(g->kv);
  for (uint64_t i = 0; g->tensors && i < g->n_tensors; i++) free((char *)g->tensors[i].name);
  free(g->tensors);
  free(g->by_name);
  free(g->path);
  fdl_unmap(&g->map);
  memset(g, 0, sizeof *g);
}

fdl_status fdl_gguf_open(const char *path, fdl_gguf *g, fdl_err *err) {
  memset(g, 0, sizeof *g);
  fdl_status s = fdl_map_file(path, &g->map, err);
  if (s != FDL_OK) return s;
  g->path = fdl_strdup(path);
  if (!g->path) {
    fdl_gguf_close(g);
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  cursor c = {g->map.data, g->map.size, 0, g->path};
  uint64_t n_kv = 0;
  if (g->map.size < 4 || memcmp(g->map.data, "GGUF", 4)) {
    s = fdl_fail(err, FDL_PARSE, "%s: not a GGUF file (the first 4 bytes are not \"GGUF\")", path);
  } else {
    c.at = 4;
    if ((s = u32_at(&c, &g->version, "the version", err)) == FDL_OK &&
        (g->version < 2 || g->version > 3))
      s = fdl_fail(err, FDL_UNSUPPORTED,
                   "%s: GGUF version %u; fidelis reads versions 2 and 3 (little-endian)%s", path,
                   g->version, g->version > 0xFFFF ? " - this looks like a big-endian file" : "");
  }
  if (s == FDL_OK) s = u64_at(&c, &g->n_tensors, "the tensor count", err);
  if (s == FDL_OK) s = u64_at(&c, &n_kv, "the metadata count", err);
  /* An entry takes at least 8 (key length) + 1 (key) + 4 (type) + 1 (value) bytes. */
  if (s == FDL_OK && n_kv > (c.size - c.at) / 14)
    s = fdl_fail(err, FDL_BOUNDS,
                 "%s: %" PRIu64 " metadata entries claimed, more than the %" PRIu64
                 " bytes left can hold",
                 path, n_kv, c.size - c.at);
  if (s == FDL_OK && !(g->kv = fdl_calloc(n_kv ? n_kv : 1, sizeof *g->kv)))
    s = fdl_fail(err, FDL_NOMEM, "%s: out of memory for %" PRIu64 " metadata entries", path, n_kv);
  for (uint64_t i = 0; s == FDL_OK && i < n_kv; i++) {
    s = read_kv(&c, &g->kv[i], i, err);
    g->n_kv = i + 1;
  }
  if (s == FDL_OK) {
    g->meta_end = c.at;
    qsort(g->kv, g->n_kv, sizeof *g->kv, by_key);
    for (size_t i = 1; i < g->n_kv && s == FDL_OK; i++)
      if (!strcmp(g->kv[i - 1].key, g->kv[i].key))
        s = fdl_fail(err, FDL_PARSE, "%s: metadata key %s appears twice", path, g->kv[i].key);
  }
  if (s == FDL_OK) s = fdl_gguf_read_tensors(g, &c, err);
  if (s != FDL_OK) fdl_gguf_close(g);
  return s;
}

const fdl_gguf_kv *fdl_gguf_find(const fdl_gguf *g, const char *key) {
  fdl_gguf_kv probe = {.key = key};
  return g->n_kv ? bsearch(&probe, g->kv, g->n_kv, sizeof *g->kv, by_key) : NULL;
}

static fdl_status wrong_type(const fdl_gguf *g, const fdl_gguf_kv *kv, const char *want,
                             fdl_err *err) {
  return fdl_fail(err, FDL_PARSE, "%s: %s is %s%s%s, expected %s", g->path, kv->key,
                  fdl_gguf_type_name(kv->type), kv->type == FDL_GGUF_ARRAY ? " of " : "",
                  kv->type == FDL_GGUF_ARRAY ? fdl_gguf_type_name(kv->elem) : "", want);
}

/* The integer element of type t at p (a U64 as its bits); false for a type that is not an
 * integer. */
static bool int_at(const uint8_t *p, fdl_gguf_type t, int64_t *v) {
  switch (t) {
  case FDL_GGUF_U8:
    *v = p[0];
    break;
  case FDL_GGUF_I8:
    *v = (int8_t)p[0];
    break;
  case FDL_GGUF_U16:
    *v = (int64_t)le(p, 2);
    break;
  case FDL_GGUF_I16:
    *v = (int16_t)le(p, 2);
    break;
  case FDL_GGUF_U32:
    *v = (int64_t)le(p, 4);
    break;
  case FDL_GGUF_I32:
    *v = (int32_t)le(p, 4);
    break;
  case FDL_GGUF_I64:
  case FDL_GGUF_U64:
    *v = (int64_t)le(p, 8);
    break;
  default:
    return false;
  }
  return true;
}

fdl_status fdl_gguf_get_int(const fdl_gguf *g, const fdl_gguf_kv *kv, int64_t *out, fdl_err *err) {
  const uint8_t *p = g->map.data + kv->value;
  int64_t v;
  if (!int_at(p, kv->type, &v)) return wrong_type(g, kv, "an integer", err);
  if (kv->type == FDL_GGUF_U64 && v < 0)
    return fdl_fail(err, FDL_BOUNDS, "%s: %s = %" PRIu64 " is out of range", g->path, kv->key,
                    le(p, 8));
  *out = v;
  return FDL_OK;
}

fdl_status fdl_gguf_get_bool(const fdl_gguf *g, const fdl_gguf_kv *kv, bool *out, fdl_err *err) {
  if (kv->type != FDL_GGUF_BOOL) return wrong_type(g, kv, "a bool", err);
  uint8_t b = g->map.data[kv->value];
  if (b > 1)
    return fdl_fail(err, FDL_PARSE, "%s: %s holds %u, not a bool (0 or 1)", g->path, kv->key, b);
  *out = b == 1;
  return FDL_OK;
}

fdl_status fdl_gguf_get_str(const fdl_gguf *g, const fdl_gguf_kv *kv, const char **s, size_t *len,
                            fdl_err *err) {
  if (kv->type != FDL_GGUF_STRING) return wrong_type(g, kv, "a string", err);
  uint64_t pos = kv->value;
  fdl_gguf_next_str(g, &pos, s, len);
  return FDL_OK;
}

void fdl_gguf_next_str(const fdl_gguf *g, uint64_t *pos, const char **s, size_t *len) {
  uint64_t n = le(g->map.data + *pos, 8);
  *s = (const char *)g->map.data + *pos + 8;
  *len = (size_t)n;
  *pos += 8 + n;
}

double fdl_gguf_num_at(const fdl_gguf *g, const fdl_gguf_kv *kv, uint64_t i) {
  const uint8_t *p = g->map.data + kv->value + i * TYPE_SIZE[kv->elem];
  int64_t v;
  if (kv->elem == FDL_GGUF_U64) return (double)le(p, 8);
  if (int_at(p, kv->elem, &v)) return (double)v;
  switch (kv->elem) {
  case FDL_GGUF_BOOL:
    return p[0];
  case FDL_GGUF_F32: {
    uint32_t u = (uint32_t)le(p, 4);
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case FDL_GGUF_F64: {
    uint64_t u = le(p, 8);
    double d;
    memcpy(&d, &u, 8);
    return d;
  }
  default:
    return 0;
  }
}

fdl_status fdl_gguf_has_vocab(const char *path, bool *has, fdl_err *err) {
  *has = false;
  fdl_gguf g;
  fdl_status s = fdl_gguf_open(path, &g, err);
  if (s != FDL_OK) return s;
  const fdl_gguf_kv *kv = fdl_gguf_find(&g, "tokenizer.ggml.model");
  const char *v = "none";
  size_t n = 4;
  if (kv) s = fdl_gguf_get_str(&g, kv, &v, &n, err);
  *has = s == FDL_OK && !(n == 4 && !memcmp(v, "none", 4));
  fdl_gguf_close(&g);
  return s;
}
