/* fuzz_gguf.c - the GGUF reader (fidelis/gguf.h) on the input as a file: any file is either
 * refused with a message (and a cleared fdl_gguf) or opens into an index whose every promise
 * holds:
 *   - every key is a non-empty string that fdl_gguf_find finds again (keys are unique);
 *   - every value reads with its typed read (integers, bools, strings), every string array
 *     walks with fdl_gguf_next_str and every numeric array with fdl_gguf_num_at, all inside
 *     the metadata;
 *   - every tensor has a unique name that fdl_gguf_tensor_find finds, 1 to 4 non-zero
 *     dimensions, a known ggml type whose row size gives its nbytes, and its data
 *     [offset, offset + nbytes) inside the file, after the metadata, aligned and overlapping
 *     no other tensor's;
 *   - a dequantizable tensor's first (at most) 4096 values dequantize, from an exact-size copy
 *     of their bytes into an exact-size buffer (so ASan sees any read or write past either),
 *     to FDL_OK or to FDL_INVALID with a message (a non-finite value), and
 *     fdl_ggml_check_finite gives the same status and message from the scales alone.
 * The file lives in a directory made once per process (LLVMFuzzerInitialize, under $TMPDIR)
 * and removed at exit; it is rewritten for every input with O_NOFOLLOW. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/ggml_quant.h"
#include "fidelis/gguf.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATH 1024
#define MAX_VALUES 4096

static char g_dir[MAX_PATH], g_file[MAX_PATH];

static void fail(const char *what) {
  fprintf(stderr, "fuzz_gguf: %s\n", what);
  abort();
}

static void put(const char *path, const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0) abort();
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) abort();
    p += w;
    n -= (size_t)w;
  }
  close(fd);
}

static void remove_dir(void) {
  if (unlink(g_file) != 0 && errno != ENOENT) abort();
  rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/fdl-fuzz-gguf-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) abort();
  snprintf(g_file, sizeof g_file, "%s/input.gguf", g_dir);
  atexit(remove_dir);
  return 0;
}

/* Whether [at, at + n) lies inside [lo, hi). */
static bool inside(uint64_t at, uint64_t n, uint64_t lo, uint64_t hi) {
  return at >= lo && at <= hi && n <= hi - at;
}

static volatile double g_sink; /* keeps the reads of values from being optimised away */

static void walk_kv(const fdl_gguf *g, const fdl_gguf_kv *kv) {
  if (!kv->key || !kv->key[0]) fail("an empty key");
  if (fdl_gguf_find(g, kv->key) != kv) fail("fdl_gguf_find does not find a key (duplicate?)");
  if ((unsigned)kv->type >= FDL_GGUF_TYPE_COUNT) fail("an unknown value type");
  if (kv->value < 24 || kv->value > g->meta_end) fail("a value outside the metadata");
  fdl_err err = {FDL_OK, ""};
  switch (kv->type) {
  case FDL_GGUF_BOOL: {
    bool b;
    if (fdl_gguf_get_bool(g, kv, &b, &err) != FDL_OK && !err.msg[0]) fail("no message (bool)");
    g_sink += b;
    break;
  }
  case FDL_GGUF_STRING: {
    const char *s;
    size_t len;
    if (fdl_gguf_get_str(g, kv, &s, &len, &err) != FDL_OK) fail("a string that does not read");
    uint64_t at = (uint64_t)((const uint8_t *)s - g->map.data);
    if (!inside(at, len, 0, g->meta_end)) fail("a string outside the metadata");
    if (len) g_sink += (unsigned char)s[len - 1];
    break;
  }
  case FDL_GGUF_F32:
  case FDL_GGUF_F64:
    g_sink += fdl_gguf_num_at(g, &(fdl_gguf_kv){.value = kv->value, .elem = kv->type}, 0);
    break;
  case FDL_GGUF_ARRAY: {
    if (kv->elem == FDL_GGUF_ARRAY || (unsigned)kv->elem >= FDL_GGUF_TYPE_COUNT)
      fail("an array of arrays or of an unknown type");
    if (kv->elem == FDL_GGUF_STRING) {
      uint64_t pos = kv->value;
      for (uint64_t i = 0; i < kv->count; i++) {
        const char *s;
        size_t len;
        if (pos > g->meta_end) fail("a string array runs past the metadata");
        fdl_gguf_next_str(g, &pos, &s, &len);
        uint64_t at = (uint64_t)((const uint8_t *)s - g->map.data);
        if (!inside(at, len, 0, g->meta_end)) fail("an array string outside the metadata");
        if (len) g_sink += (unsigned char)s[0] + (unsigned char)s[len - 1];
      }
      if (pos > g->meta_end) fail("a string array ends past the metadata");
    } else {
      size_t es = fdl_gguf_type_size(kv->elem);
      if (!es || kv->count > (g->meta_end - kv->value) / es)
        fail("a numeric array that does not fit the metadata");
      for (uint64_t i = 0; i < kv->count; i++) g_sink += fdl_gguf_num_at(g, kv, i);
    }
    /* A typed read of an array is refused with a message. */
    int64_t v;
    if (fdl_gguf_get_int(g, kv, &v, &err) == FDL_OK || !err.msg[0]) fail("an array read as int");
    break;
  }
  default: { /* the integers */
    int64_t v = 0;
    if (fdl_gguf_get_int(g, kv, &v, &err) != FDL_OK) {
      if (kv->type != FDL_GGUF_U64 || !err.msg[0]) fail("an integer that does not read");
    }
    g_sink += (double)v;
    break;
  }
  }
}

static int by_offset(const void *a, const void *b) {
  const fdl_gguf_tensor *x = *(const fdl_gguf_tensor *const *)a;
  const fdl_gguf_tensor *y = *(const fdl_gguf_tensor *const *)b;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static void walk_tensor(const fdl_gguf *g, const fdl_gguf_tensor *t) {
  if (!t->name || !t->name[0] || strlen(t->name) > 4096) fail("an empty or over-long name");
  if (fdl_gguf_tensor_find(g, t->name) != t) fail("fdl_gguf_tensor_find misses a tensor");
  if (t->n_dims < 1 || t->n_dims > 4) fail("a tensor with 0 or more than 4 dimensions");
  uint64_t n = 1;
  for (unsigned d = 0; d < 4; d++) {
    if (!t->ne[d] || (d >= t->n_dims && t->ne[d] != 1)) fail("a bad dimension");
    if (t->ne[d] > INT64_MAX / n) fail("a shape that overflows");
    n *= t->ne[d];
  }
  const fdl_ggml_type_info *ti = fdl_ggml_type(t->type);
  if (!ti) fail("a tensor of an unknown ggml type");
  fdl_err err = {FDL_OK, ""};
  uint64_t row;
  if (fdl_ggml_row_bytes(t->type, t->ne[0], &row, &err) != FDL_OK) fail("a row that is not whole");
  if (row * (n / t->ne[0]) != t->nbytes) fail("nbytes is not rows x the row size");
  if (!inside(t->offset, t->nbytes, g->data_offset, g->map.size))
    fail("tensor data outside the file's data section");
  if (t->offset % g->alignment) fail("misaligned tensor data");
  if (g->data_offset < g->meta_end) fail("the data section starts inside the metadata");
  if (fdl_gguf_tensor_data(g, t) != g->map.data + t->offset) fail("tensor data elsewhere");
  if (!ti->dequant) return;
  uint64_t k = n < MAX_VALUES ? n : MAX_VALUES;
  k -= k % ti->block_elems; /* whole blocks: ne[0] is, so every prefix of whole blocks is */
  if (!k) return;
  uint64_t bytes;
  if (fdl_ggml_row_bytes(t->type, k, &bytes, &err) != FDL_OK || bytes > t->nbytes)
    fail("a prefix of whole blocks larger than the tensor");
  uint8_t *src = malloc((size_t)bytes);
  float *dst = malloc((size_t)k * sizeof *dst);
  if (!src || !dst) abort();
  memcpy(src, fdl_gguf_tensor_data(g, t), (size_t)bytes);
  fdl_status s = fdl_ggml_dequant(t->type, src, k, dst, &err);
  if (s != FDL_OK && (s != FDL_INVALID || !err.msg[0])) fail("a dequantizable type that fails");
  if (s == FDL_OK)
    for (uint64_t i = 0; i < k; i++)
      if (dst[i] - dst[i] != 0) fail("FDL_OK with a value that is not finite");
  /* the check from the scales alone says what the decode said, in the same words */
  fdl_err err2 = {FDL_OK, ""};
  if (fdl_ggml_check_finite(t->type, src, k, &err2) != s || strcmp(err.msg, err2.msg) != 0)
    fail("fdl_ggml_check_finite disagrees with fdl_ggml_dequant");
  g_sink += dst[0] + dst[k - 1];
  free(src);
  free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  put(g_file, data, size);
  fdl_gguf g;
  fdl_err err = {FDL_OK, ""};
  if (fdl_gguf_open(g_file, &g, &err) != FDL_OK) {
    if (!err.msg[0]) fail("a refusal without a message");
    if (g.kv || g.tensors || g.by_name || g.path || g.n_kv || g.n_tensors)
      fail("a refusal that leaves an index");
    return 0;
  }
  if (g.map.size != size) fail("the mapping is not the file");
  if (g.version < 2 || g.version > 3) fail("a version other than 2 or 3");
  if (!g.alignment || (g.alignment & (g.alignment - 1))) fail("an alignment not a power of two");
  if (g.meta_end > g.map.size) fail("metadata past the end");
  for (size_t i = 0; i < g.n_kv; i++) walk_kv(&g, &g.kv[i]);
  if (g.n_tensors) {
    if (g.data_offset % g.alignment || g.data_offset > g.map.size) fail("a bad data offset");
    const fdl_gguf_tensor **order = malloc((size_t)g.n_tensors * sizeof *order);
    if (!order) abort();
    for (uint64_t i = 0; i < g.n_tensors; i++) {
      walk_tensor(&g, &g.tensors[i]);
      order[i] = &g.tensors[i];
    }
    qsort(order, (size_t)g.n_tensors, sizeof *order, by_offset);
    for (uint64_t i = 1; i < g.n_tensors; i++)
      if (order[i - 1]->offset + order[i - 1]->nbytes > order[i]->offset)
        fail("overlapping tensors");
    free(order);
  }
  fdl_gguf_close(&g);
  return 0;
}
