/* tensors.c - a GGUF file's tensor-info table and its data section (fidelis/gguf.h).
 *
 * After the metadata: per tensor a name (string), u32 n_dims, u64 ne[n_dims] (ggml order, ne[0]
 * the contiguous row), u32 ggml type, u64 offset relative to the data section; the data section
 * starts at the next multiple of general.alignment (32 by default, a power of two). Everything
 * is proved before it is used: the count against the bytes left, each shape against overflow,
 * each row against the type's block, each range inside the file, aligned and disjoint. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "fidelis/ggml_quant.h"
#include "gguf/cursor.h"

#define MIN_INFO 33 /* 8-byte name length + 1 + 4 (n_dims) + 8 (one ne) + 4 (type) + 8 (offset) */

static fdl_status alignment(fdl_gguf *g, fdl_err *err) {
  g->alignment = 32;
  const fdl_gguf_kv *kv = fdl_gguf_find(g, "general.alignment");
  if (!kv) return FDL_OK;
  int64_t a;
  fdl_status s = fdl_gguf_get_int(g, kv, &a, err);
  if (s != FDL_OK) return s;
  if (a <= 0 || a > (1 << 20) || (a & (a - 1)))
    return fdl_fail(err, FDL_PARSE,
                    "%s: general.alignment = %" PRId64 " (expected a power of two up to 2^20)",
                    g->path, a);
  g->alignment = (uint32_t)a;
  return FDL_OK;
}

static fdl_status read_one(fdl_gguf *g, cursor *c, uint64_t i, fdl_gguf_tensor *t, fdl_err *err) {
  uint64_t start = c->at, noff, nlen;
  fdl_status s = str_at(c, &noff, &nlen, "a tensor name", err);
  if (s != FDL_OK) return s;
  if (nlen == 0 || nlen > 4096 || !fdl_gguf_utf8_ok(c->p + noff, nlen))
    return fdl_fail(err, FDL_PARSE,
                    "%s: tensor %" PRIu64 " at offset %" PRIu64
                    " has an empty, over-long or non-UTF-8 name",
                    g->path, i, start);
  char *name = fdl_strndup((const char *)c->p + noff, nlen);
  if (!name) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", g->path);
  t->name = name;
  if ((s = u32_at(c, &t->n_dims, name, err)) != FDL_OK) return s;
  if (t->n_dims < 1 || t->n_dims > 4)
    return fdl_fail(err, FDL_PARSE, "%s: tensor %s has %u dimensions (ggml holds 1 to 4)", g->path,
                    name, t->n_dims);
  uint64_t n = 1;
  for (uint32_t d = 0; d < 4; d++) {
    t->ne[d] = 1;
    if (d < t->n_dims && (s = u64_at(c, &t->ne[d], name, err)) != FDL_OK) return s;
    if (t->ne[d] == 0 || t->ne[d] > INT64_MAX / n)
      return fdl_fail(err, FDL_PARSE, "%s: tensor %s: dimension %u is %" PRIu64 "%s", g->path, name,
                      d, t->ne[d], t->ne[d] ? ", the shape overflows" : " (empty)");
    n *= t->ne[d];
  }
  uint64_t rel;
  if ((s = u32_at(c, &t->type, name, err)) != FDL_OK || (s = u64_at(c, &rel, name, err)) != FDL_OK)
    return s;
  const fdl_ggml_type_info *ti = fdl_ggml_type(t->type);
  if (!ti)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: tensor %s has ggml type %u, which ggml does not define", g->path, name,
                    t->type);
  uint64_t row;
  if ((s = fdl_ggml_row_bytes(t->type, t->ne[0], &row, err)) != FDL_OK)
    return fdl_err_prefix(err, "%s: tensor %s", g->path, name);
  if (row && n / t->ne[0] > UINT64_MAX / row)
    return fdl_fail(err, FDL_PARSE, "%s: tensor %s: its size overflows", g->path, name);
  t->nbytes = row * (n / t->ne[0]);
  t->offset = rel; /* made absolute once the data section's start is known */
  return FDL_OK;
}

typedef struct {
  uint64_t key; /* offset, or unused when sorting by name */
  const char *name;
  uint32_t index;
} sort_key;

static int by_offset(const void *a, const void *b) {
  uint64_t x = ((const sort_key *)a)->key, y = ((const sort_key *)b)->key;
  return x < y ? -1 : x > y;
}

static int by_name(const void *a, const void *b) {
  return strcmp(((const sort_key *)a)->name, ((const sort_key *)b)->name);
}

/* Data inside the file, aligned, disjoint; names unique. */
static fdl_status check_layout(fdl_gguf *g, fdl_err *err) {
  fdl_gguf_tensor *t = g->tensors;
  for (uint64_t i = 0; i < g->n_tensors; i++) {
    if (t[i].offset % g->alignment)
      return fdl_fail(err, FDL_PARSE,
                      "%s: tensor %s: data offset %" PRIu64
                      " is not a multiple of the alignment %u",
                      g->path, t[i].name, t[i].offset, g->alignment);
    if (t[i].offset > g->map.size - g->data_offset ||
        t[i].nbytes > g->map.size - g->data_offset - t[i].offset)
      return fdl_fail(err, FDL_BOUNDS,
                      "%s: tensor %s: %" PRIu64 " bytes at data offset %" PRIu64
                      " run past the end of the file (%" PRIu64 " bytes)",
                      g->path, t[i].name, t[i].nbytes, t[i].offset, (uint64_t)g->map.size);
    t[i].offset += g->data_offset;
  }
  size_t n = (size_t)g->n_tensors;
  sort_key *k = fdl_malloc((n ? n : 1) * sizeof *k);
  if (!k) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", g->path);
  for (size_t i = 0; i < n; i++) k[i] = (sort_key){t[i].offset, t[i].name, (uint32_t)i};
  qsort(k, n, sizeof *k, by_offset);
  fdl_status s = FDL_OK;
  for (size_t i = 1; i < n && s == FDL_OK; i++)
    if (t[k[i - 1].index].offset + t[k[i - 1].index].nbytes > k[i].key)
      s = fdl_fail(err, FDL_PARSE, "%s: tensors %s and %s overlap in the file", g->path,
                   k[i - 1].name, k[i].name);
  if (s == FDL_OK) qsort(k, n, sizeof *k, by_name);
  for (size_t i = 1; i < n && s == FDL_OK; i++)
    if (!strcmp(k[i - 1].name, k[i].name))
      s = fdl_fail(err, FDL_PARSE, "%s: tensor name %s appears twice", g->path, k[i].name);
  for (size_t i = 0; i < n && s == FDL_OK; i++) g->by_name[i] = k[i].index;
  free(k);
  return s;
}

fdl_status fdl_gguf_read_tensors(fdl_gguf *g, cursor *c, fdl_err *err) {
  fdl_status s = alignment(g, err);
  if (s != FDL_OK) return s;
  if (g->n_tensors > (c->size - c->at) / MIN_INFO || g->n_tensors > UINT32_MAX)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: %" PRIu64 " tensors claimed, more than the %" PRIu64
                    " bytes left can describe",
                    g->path, g->n_tensors, c->size - c->at);
  size_t n = g->n_tensors ? (size_t)g->n_tensors : 1;
  g->tensors = fdl_calloc(n, sizeof *g->tensors);
  g->by_name = fdl_calloc(n, sizeof *g->by_name);
  if (!g->tensors || !g->by_name) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", g->path);
  for (uint64_t i = 0; i < g->n_tensors; i++)
    if ((s = read_one(g, c, i, &g->tensors[i], err)) != FDL_OK) return s;
  uint64_t pad = (g->alignment - c->at % g->alignment) % g->alignment;
  if (g->n_tensors && pad > c->size - c->at)
    return fdl_fail(err, FDL_BOUNDS, "%s: the file ends before its tensor data", g->path);
  g->data_offset = c->at + pad;
  return check_layout(g, err);
}

const fdl_gguf_tensor *fdl_gguf_tensor_find(const fdl_gguf *g, const char *name) {
  size_t lo = 0, hi = (size_t)g->n_tensors;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(g->tensors[g->by_name[mid]].name, name);
    if (!c) return &g->tensors[g->by_name[mid]];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

const uint8_t *fdl_gguf_tensor_data(const fdl_gguf *g, const fdl_gguf_tensor *t) {
  return g->map.data + t->offset;
}
