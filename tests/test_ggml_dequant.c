/* test_ggml_dequant.c - ggml's type table and dequantization (fidelis/ggml_quant.h) against
 * ggml itself: every tensor of every GGUF in shared/vectors/gguf (and gguf/kld) dequantizes,
 * row by row as ggml did, to float32 values whose SHA-256 is the sha256_f32 that ggml's own
 * to_float gave (<name>.tensors.json). Unit tests pin the refusals (unknown ids, types not
 * dequantized, partial blocks, overflowing sizes, non-finite scales) and the F16 widening of
 * subnormals, infinities and NaNs. Needs ../shared/vectors: exits 77 (skipped) without it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fidelis/fidelis.h"
#include "fidelis/ggml_quant.h"

static char gguf_dir[4096];
static unsigned seen[64]; /* tensors checked, by ggml type id */

static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  if (len) *len = (size_t)n;
  return p;
}

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static void hex_of(const void *p, size_t n, char *hex) {
  fdl_sha256 d;
  assert_int_equal(fdl_sha256_buf(p, n, &d, NULL), FDL_OK);
  fdl_sha256_hex(&d, hex);
}

static uint64_t jint(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  if (!json_is_integer(v) || json_integer_value(v) < 0) fail_msg("tensors.json: bad %s", key);
  return (uint64_t)json_integer_value(v);
}

static const char *jstr(const json_t *obj, const char *key) {
  const char *s = json_string_value(json_object_get(obj, key));
  if (!s) fail_msg("tensors.json: no string %s", key);
  return s;
}

/* One tensor of a file: raw digest, row size, then the dequantized digest. */
static void check_tensor(const char *file, const uint8_t *data, size_t size, const json_t *t) {
  const char *name = jstr(t, "name");
  uint32_t id = (uint32_t)jint(t, "type_id");
  uint64_t off = jint(t, "offset"), nbytes = jint(t, "nbytes"), nel = jint(t, "n_elements");
  const json_t *ne = json_object_get(t, "ne");
  assert_true(json_array_size(ne) >= 1);
  uint64_t cols = (uint64_t)json_integer_value(json_array_get(ne, 0));
  assert_true(cols > 0 && nel % cols == 0);
  uint64_t rows = nel / cols;
  if (off > size || nbytes > size - off) fail_msg("%s: %s lies outside the file", file, name);

  const fdl_ggml_type_info *ti = fdl_ggml_type(id);
  if (!ti) fail_msg("%s: %s: type id %u unknown", file, name, id);
  assert_string_equal(ti->name, jstr(t, "type"));
  char hex[FDL_SHA256_HEX_BUF];
  hex_of(data + off, nbytes, hex);
  if (strcmp(hex, jstr(t, "sha256_raw"))) fail_msg("%s: %s: raw bytes differ", file, name);

  uint64_t row_bytes = 0;
  fdl_err err;
  if (fdl_ggml_row_bytes(id, cols, &row_bytes, &err) != FDL_OK) fail_msg("%s", err.msg);
  assert_int_equal(row_bytes * rows, nbytes);

  float *out = malloc(nel * sizeof *out);
  assert_non_null(out);
  for (uint64_t r = 0; r < rows; r++) {
    fdl_status s = fdl_ggml_dequant(id, data + off + r * row_bytes, cols, out + r * cols, &err);
    if (s != FDL_OK) fail_msg("%s: %s row %" PRIu64 ": %s", file, name, r, err.msg);
  }
  hex_of(out, nel * sizeof *out, hex);
  free(out);
  if (strcmp(hex, jstr(t, "sha256_f32")))
    fail_msg("%s: %s (%s): dequantized values differ from ggml's", file, name, ti->name);
  seen[id < 64 ? id : 63]++;
}

/* Every tensor of one GGUF against its <name>.tensors.json; returns the tensor count. */
static size_t check_file(const char *gguf) {
  char json_path[4200];
  snprintf(json_path, sizeof json_path, "%.*s.tensors.json", (int)(strlen(gguf) - 5), gguf);
  json_error_t jerr;
  json_t *doc = json_load_file(json_path, 0, &jerr);
  if (!doc) fail_msg("%s: %s", json_path, jerr.text);
  size_t size = 0;
  uint8_t *data = slurp(gguf, &size);
  assert_non_null(data);
  assert_int_equal(size, jint(doc, "file_size"));
  const json_t *tensors = json_object_get(doc, "tensors");
  assert_int_equal(json_array_size(tensors), jint(doc, "n_tensors"));
  size_t i;
  const json_t *t;
  json_array_foreach(tensors, i, t) check_tensor(gguf, data, size, t);
  size_t count = json_array_size(tensors);
  free(data);
  json_decref(doc);
  return count;
}

static size_t check_glob(const char *pattern, size_t *files) {
  glob_t g;
  size_t tensors = 0;
  assert_int_equal(glob(pattern, 0, NULL, &g), 0);
  for (size_t i = 0; i < g.gl_pathc; i++) tensors += check_file(g.gl_pathv[i]);
  *files += g.gl_pathc;
  globfree(&g);
  return tensors;
}

static void test_vectors(void **state) {
  (void)state;
  const uint32_t one = 1;
  uint8_t first;
  memcpy(&first, &one, 1);
  if (first != 1) skip(); /* the digests are of little-endian float32 */
  char pattern[4200];
  size_t files = 0, tensors = 0;
  snprintf(pattern, sizeof pattern, "%s/llama-*.gguf", gguf_dir);
  tensors += check_glob(pattern, &files);
  snprintf(pattern, sizeof pattern, "%s/kld/*.gguf", gguf_dir);
  tensors += check_glob(pattern, &files);
  printf("ggml dequant vectors: %zu tensors of %zu files match ggml's to_float\n", tensors, files);
  assert_true(files >= 21);
  assert_true(tensors >= 21 * 20);
  for (uint32_t id = 0; id < 64; id++) /* the vectors hold every type fidelis dequantizes */
    if (fdl_ggml_type(id) && fdl_ggml_type(id)->dequant && !seen[id])
      fail_msg("no vector tensor of type %s", fdl_ggml_type(id)->name);
}

/* The table: ids index themselves, sizes are sane, and exactly the listed types dequantize. */
static void test_table(void **state) {
  (void)state;
  static const uint32_t dequantized[] = {0,  1,  30, 8,  2,  3,  6,  7,  10,
                                         11, 12, 13, 14, 20, 23, 21, 34, 35};
  int known = 0, dq = 0;
  for (uint32_t id = 0; id < 64; id++) {
    const fdl_ggml_type_info *t = fdl_ggml_type(id);
    if (!t) continue;
    known++;
    assert_int_equal(t->id, id);
    assert_non_null(t->name);
    assert_true(t->block_elems >= 1 && t->block_bytes >= 1);
    bool listed = false;
    for (size_t i = 0; i < sizeof dequantized / sizeof dequantized[0]; i++)
      listed |= dequantized[i] == id;
    assert_int_equal(t->dequant, listed);
    dq += t->dequant;
  }
  assert_int_equal(dq, 18);
  assert_true(known >= 32);
  assert_string_equal(fdl_ggml_type(12)->name, "q4_K");
  assert_int_equal(fdl_ggml_type(12)->block_bytes, 144);
  assert_int_equal(fdl_ggml_type(34)->block_bytes, 54);
  assert_int_equal(fdl_ggml_type(21)->block_bytes, 110);
  assert_string_equal(fdl_ggml_type(39)->name, "mxfp4");
}

static void test_unknown_ids(void **state) {
  (void)state;
  static const uint32_t gone[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 1000, UINT32_MAX};
  fdl_err err;
  uint64_t bytes = 7;
  float out[32];
  uint8_t in[64] = {0};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++) {
    assert_null(fdl_ggml_type(gone[i]));
    assert_int_equal(fdl_ggml_row_bytes(gone[i], 32, &bytes, &err), FDL_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "not a ggml type"));
    assert_int_equal(fdl_ggml_dequant(gone[i], in, 32, out, &err), FDL_UNSUPPORTED);
  }
  assert_int_equal(bytes, 7);
}

static void test_not_dequantized(void **state) {
  (void)state;
  fdl_err err;
  uint8_t in[512] = {0};
  float out[256];
  assert_int_equal(fdl_ggml_dequant(16, in, 256, out, &err), FDL_UNSUPPORTED);
  assert_string_equal(err.msg, "ggml type iq2_xxs (16) is not dequantized by fidelis");
  assert_int_equal(fdl_ggml_dequant(39, in, 32, out, &err), FDL_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "mxfp4 (39)"));
  assert_int_equal(fdl_ggml_dequant(15, in, 256, out, &err), FDL_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "q8_K (15)"));
  /* Known types size fine even when not dequantized. */
  uint64_t bytes = 0;
  assert_int_equal(fdl_ggml_row_bytes(16, 512, &bytes, &err), FDL_OK);
  assert_int_equal(bytes, 132);
}

static void test_bounds(void **state) {
  (void)state;
  fdl_err err;
  uint64_t bytes = 0;
  assert_int_equal(fdl_ggml_row_bytes(12, 100, &bytes, &err), FDL_BOUNDS);
  assert_non_null(strstr(err.msg, "q4_K (12)"));
  assert_non_null(strstr(err.msg, "256-value"));
  uint8_t in[288] = {0};
  float out[512];
  assert_int_equal(fdl_ggml_dequant(12, in, 300, out, &err), FDL_BOUNDS);
  assert_int_equal(fdl_ggml_dequant(8, in, 33, out, &err), FDL_BOUNDS);
  assert_int_equal(fdl_ggml_row_bytes(28, UINT64_MAX, &bytes, &err), FDL_BOUNDS); /* f64 */
  assert_non_null(strstr(err.msg, "2^64"));
  assert_int_equal(fdl_ggml_row_bytes(8, UINT64_MAX / 32 * 32, &bytes, &err), FDL_BOUNDS);
  assert_int_equal(fdl_ggml_row_bytes(0, UINT64_MAX / 4, &bytes, &err), FDL_OK);
  assert_int_equal(bytes, UINT64_MAX / 4 * 4);
  assert_int_equal(fdl_ggml_row_bytes(12, 512, &bytes, &err), FDL_OK);
  assert_int_equal(bytes, 288);
  assert_int_equal(fdl_ggml_row_bytes(34, 0, &bytes, &err), FDL_OK);
  assert_int_equal(bytes, 0);
  assert_int_equal(fdl_ggml_dequant(12, in, 512, out, &err), FDL_OK);
  for (int i = 0; i < 512; i++) assert_int_equal(f32_bits(out[i]), 0);
}

/* A Q8_0 block whose f16 scale is NaN (or infinite over a zero) is refused, naming the value. */
static void test_nonfinite_scale(void **state) {
  (void)state;
  uint8_t in[68] = {0};
  float out[64];
  fdl_err err;
  in[0] = 0x00, in[1] = 0x3c; /* block 0: d = 1.0 */
  for (int j = 0; j < 32; j++) in[2 + j] = (uint8_t)(j - 16);
  in[34] = 0x00, in[35] = 0x7e; /* block 1: d = NaN */
  assert_int_equal(fdl_ggml_dequant(8, in, 64, out, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "q8_0"));
  assert_non_null(strstr(err.msg, "value 32 (block 1)"));
  assert_non_null(strstr(err.msg, "NaN"));
  for (int j = 0; j < 32; j++) assert_true(out[j] == (float)(j - 16));
  in[35] = 0x7c; /* d = +inf over all-zero codes: 0 * inf is NaN */
  assert_int_equal(fdl_ggml_dequant(8, in, 64, out, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "value 32"));
  in[37] = 1; /* now value 33 is 1 * inf: value 32 (0 * inf) stays the first */
  assert_int_equal(fdl_ggml_dequant(8, in, 64, out, &err), FDL_INVALID);
  assert_int_equal(f32_bits(out[33]), 0x7f800000u);
  in[35] = 0x3c;
  assert_int_equal(fdl_ggml_dequant(8, in, 64, out, &err), FDL_OK);
  assert_true(out[33] == 1.0f);
}

static fdl_status widen(const uint16_t *h, size_t n, float *out, fdl_err *err) {
  uint8_t bytes[64];
  assert_true(n * 2 <= sizeof bytes);
  for (size_t i = 0; i < n; i++)
    bytes[2 * i] = (uint8_t)h[i], bytes[2 * i + 1] = (uint8_t)(h[i] >> 8);
  return fdl_ggml_dequant(1, bytes, n, out, err);
}

/* F16 widening against hand-computed float32 bit patterns. */
static void test_f16(void **state) {
  (void)state;
  static const struct {
    uint16_t h;
    uint32_t f;
  } finite[] = {
      {0x0000, 0x00000000}, /* +0 */
      {0x8000, 0x80000000}, /* -0 */
      {0x0001, 0x33800000}, /* smallest subnormal 2^-24 */
      {0x8001, 0xb3800000}, /* -2^-24 */
      {0x0002, 0x34000000}, /* 2^-23 */
      {0x0003, 0x34400000}, /* 3 * 2^-24 */
      {0x0200, 0x38000000}, /* 2^-15 */
      {0x03ff, 0x387fc000}, /* largest subnormal 1023 * 2^-24 */
      {0x0400, 0x38800000}, /* smallest normal 2^-14 */
      {0x3c00, 0x3f800000}, /* 1 */
      {0x3c01, 0x3f802000}, /* 1 + 2^-10 */
      {0xc000, 0xc0000000}, /* -2 */
      {0x3555, 0x3eaaa000}, /* 0.333251953125 */
      {0x7bff, 0x477fe000}, /* 65504, the largest finite */
  };
  const size_t n = sizeof finite / sizeof finite[0];
  uint16_t h[32];
  float out[32];
  fdl_err err;
  for (size_t i = 0; i < n; i++) h[i] = finite[i].h;
  assert_int_equal(widen(h, n, out, &err), FDL_OK);
  for (size_t i = 0; i < n; i++)
    if (f32_bits(out[i]) != finite[i].f)
      fail_msg("f16 %04x -> %08x, expected %08x", finite[i].h, f32_bits(out[i]), finite[i].f);

  static const struct {
    uint16_t h;
    uint32_t f;
    const char *what;
  } special[] = {
      {0x7c00, 0x7f800000, "infinite"}, {0xfc00, 0xff800000, "infinite"},
      {0x7e00, 0x7fc00000, "NaN"},      {0xfe00, 0xffc00000, "NaN"},
      {0x7c01, 0x7fc02000, "NaN"}, /* signalling NaN comes out quiet, payload kept */
      {0x7fff, 0x7fffe000, "NaN"},
  };
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
    h[0] = 0x3c00, h[1] = 0x0001, h[2] = special[i].h, h[3] = 0x3c00;
    assert_int_equal(widen(h, 4, out, &err), FDL_INVALID);
    assert_non_null(strstr(err.msg, "f16: value 2 (block 2) of 4"));
    assert_non_null(strstr(err.msg, special[i].what));
    if (f32_bits(out[2]) != special[i].f)
      fail_msg("f16 %04x -> %08x, expected %08x", special[i].h, f32_bits(out[2]), special[i].f);
    assert_int_equal(f32_bits(out[3]), 0x3f800000u); /* written before the check */
  }
}

/* A non-finite value early in a long row: it is named, and the whole row is still written
 * (the dequantization runs in chunks). */
static void test_whole_row_written(void **state) {
  (void)state;
  const size_t n = 20000;
  uint8_t *in = calloc(n, 2);
  float *out = malloc(n * sizeof *out);
  assert_non_null(in);
  assert_non_null(out);
  for (size_t i = 0; i < n; i++) in[2 * i + 1] = 0x3c; /* 1.0 */
  in[2 * 5 + 1] = 0x7c;                                /* value 5: +inf */
  in[2 * 9000 + 1] = 0xfc;                             /* value 9000: -inf, not the first */
  memset(out, 0, n * sizeof *out);
  fdl_err err;
  assert_int_equal(fdl_ggml_dequant(1, in, n, out, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "value 5 "));
  assert_non_null(strstr(err.msg, "infinite"));
  assert_int_equal(f32_bits(out[9000]), 0xff800000u);
  assert_true(out[n - 1] == 1.0f);
  free(in);
  free(out);
}

/* Hostile bytes: random blocks of every dequantized type decode or are refused as non-finite,
 * never read or write out of bounds (the sanitizer build checks that). */
static void test_random_blocks(void **state) {
  (void)state;
  uint32_t x = 12345;
  for (uint32_t id = 0; id < 64; id++) {
    const fdl_ggml_type_info *t = fdl_ggml_type(id);
    if (!t || !t->dequant) continue;
    const uint64_t n = 4 * (uint64_t)(t->block_elems < 256 ? 256 : t->block_elems);
    uint64_t bytes = 0;
    assert_int_equal(fdl_ggml_row_bytes(id, n, &bytes, NULL), FDL_OK);
    uint8_t *in = malloc(bytes);
    float *out = malloc(n * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);
    for (int round = 0; round < 50; round++) {
      for (uint64_t i = 0; i < bytes; i++) in[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 24);
      fdl_status s = fdl_ggml_dequant(id, in, n, out, NULL);
      assert_true(s == FDL_OK || s == FDL_INVALID);
    }
    free(in);
    free(out);
  }
}

/* Every finite F16 against the project's other (branch-free) widening; every BF16 is a shift. */
static void test_f16_all_bf16(void **state) {
  (void)state;
  uint8_t bytes[2];
  float f;
  fdl_err err;
  for (uint32_t h = 0; h < 65536; h++) {
    bytes[0] = (uint8_t)h, bytes[1] = (uint8_t)(h >> 8);
    bool special = (h & 0x7c00u) == 0x7c00u;
    assert_int_equal(fdl_ggml_dequant(1, bytes, 1, &f, &err), special ? FDL_INVALID : FDL_OK);
    if (!special && f32_bits(f) != f32_bits(fdl_f16_to_f32((uint16_t)h))) fail_msg("f16 %04x", h);
    special = (h & 0x7f80u) == 0x7f80u;
    assert_int_equal(fdl_ggml_dequant(30, bytes, 1, &f, &err), special ? FDL_INVALID : FDL_OK);
    assert_int_equal(f32_bits(f), h << 16);
  }
}

int main(void) {
  const char *shared = getenv("FDL_SHARED");
  snprintf(gguf_dir, sizeof gguf_dir, "%s/vectors/gguf", shared ? shared : "../shared");
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/llama-F32.tensors.json", gguf_dir);
  if (access(probe, R_OK) != 0) {
    printf("skipped: %s not present\n", probe);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_unknown_ids),
      cmocka_unit_test(test_not_dequantized),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_nonfinite_scale),
      cmocka_unit_test(test_f16),
      cmocka_unit_test(test_whole_row_written),
      cmocka_unit_test(test_random_blocks),
      cmocka_unit_test(test_f16_all_bf16),
      cmocka_unit_test(test_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
