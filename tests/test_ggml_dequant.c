/* test_ggml_dequant.c - ggml's type table and dequantization (fidelis/ggml_quant.h) against
 * ggml itself: every tensor of every GGUF in shared/vectors/gguf (and gguf/kld) dequantizes,
 * row by row as ggml did, to float32 values whose SHA-256 is the sha256_f32 that ggml's own
 * to_float gave (<name>.tensors.json), under the default kernels and under each instruction set
 * this CPU runs (fdl_ggml_dequant_isa: scalar, avx2, avx512). Unit tests pin the refusals
 * (unknown ids, types not dequantized, partial blocks, overflowing sizes, non-finite scales) and
 * the F16 widening of subnormals, infinities and NaNs. Random blocks of every dequantized type
 * (a fixed-seed splitmix64; raw bytes, or bytes whose f16 scales are forced finite), in runs of
 * 1, 3, 17 and 70 blocks at odd alignments, decode under every instruction set to the very bits
 * (NaNs included), status and message of the scalar kernels, writing nothing past the end; and
 * fdl_ggml_check_finite, which reads only the f16 scales, gives on them (and on the largest
 * finite scales over extreme codes, and on refused requests) exactly the status and message of
 * fdl_ggml_dequant. Each run prints which instruction sets it checked ("test_ggml_dequant: isa
 * avx2 checked"). Needs ../shared/vectors: exits 77 (skipped) without it. */
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

/* The instruction sets whose kernels fdl_ggml_dequant_isa offers; which of them this CPU (and
 * build) runs is asked of the library itself (isa_runs). */
static const fdl_num_isa ISAS[] = {FDL_NUM_ISA_SCALAR, FDL_NUM_ISA_AVX2, FDL_NUM_ISA_AVX512};
#define N_ISAS (sizeof ISAS / sizeof ISAS[0])
static unsigned digests[N_ISAS + 1]; /* vector digests checked: under AUTO, then by ISAS[] */

/* Whether the dequantization kernels of isa run here: fdl_ggml_dequant_isa refuses one this CPU
 * or build lacks with FDL_UNSUPPORTED, naming it. Scalar always runs, and an accepted choice is
 * one the CPU reports having. Asked once (each call of the library reads CPUID, which is slow
 * under a hypervisor). */
static bool isa_runs(fdl_num_isa isa) {
  static int known[N_ISAS + 1]; /* by fdl_num_isa: 0 not asked yet, 1 runs, 2 does not */
  assert_true(isa > FDL_NUM_ISA_AUTO && (size_t)isa <= N_ISAS);
  if (known[isa]) return known[isa] == 1;
  static const uint8_t one[4] = {0x00, 0x00, 0x80, 0x3f}; /* f32 1.0 */
  float f = 0;
  fdl_err err;
  fdl_status s = fdl_ggml_dequant_isa(0, isa, one, 1, &f, &err);
  if (s == FDL_UNSUPPORTED) {
    assert_true(isa != FDL_NUM_ISA_SCALAR);
    assert_non_null(strstr(err.msg, fdl_num_isa_name(isa)));
    known[isa] = 2;
    return false;
  }
  assert_int_equal(s, FDL_OK);
  assert_true(f == 1.0f);
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (isa == FDL_NUM_ISA_AVX2) assert_true(__builtin_cpu_supports("avx2"));
  if (isa == FDL_NUM_ISA_AVX512) assert_true(__builtin_cpu_supports("avx512f"));
#endif
  known[isa] = 1;
  return true;
}

/* The line a log shows for each instruction set: checked, or not run here. */
static void print_isas(const char *what) {
  for (size_t i = 0; i < N_ISAS; i++)
    printf("test_ggml_dequant: isa %s %s (%s)\n", fdl_num_isa_name(ISAS[i]),
           isa_runs(ISAS[i]) ? "checked" : "not run, this CPU or build lacks it", what);
}

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
  /* The default kernels (FDL_NUM_ISA_AUTO) row by row, as ggml decoded; then those of each
   * instruction set run here over the whole tensor in one call (the rows are whole blocks, one
   * after another), which also crosses the library's chunks. */
  for (size_t k = 0; k <= N_ISAS; k++) {
    const fdl_num_isa isa = k ? ISAS[k - 1] : FDL_NUM_ISA_AUTO;
    if (k && !isa_runs(isa)) continue;
    memset(out, 0xff, nel * sizeof *out); /* NaNs: nothing of an earlier pass survives */
    for (uint64_t r = 0; r < (k ? 1 : rows); r++) {
      const uint64_t n = k ? nel : cols;
      fdl_status s =
          fdl_ggml_dequant_isa(id, isa, data + off + r * row_bytes, n, out + r * cols, &err);
      if (s != FDL_OK && k)
        fail_msg("%s: %s, whole tensor (%s kernels): %s", file, name, fdl_num_isa_name(isa),
                 err.msg);
      if (s != FDL_OK) fail_msg("%s: %s row %" PRIu64 ": %s", file, name, r, err.msg);
    }
    hex_of(out, nel * sizeof *out, hex);
    if (strcmp(hex, jstr(t, "sha256_f32")))
      fail_msg("%s: %s (%s): dequantized values under the %s kernels differ from ggml's", file,
               name, ti->name, fdl_num_isa_name(isa));
    digests[k]++;
  }
  free(out);
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
  char what[64];
  snprintf(what, sizeof what, "vectors: %u tensor digests", digests[0]);
  print_isas(what);
  for (size_t i = 0; i < N_ISAS; i++) /* every instruction set run here saw every tensor */
    assert_int_equal(digests[i + 1], isa_runs(ISAS[i]) ? tensors : 0);
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

/* ---- random blocks under every instruction set; the scale-only finiteness check ---------- */

/* splitmix64: a fixed seed, so every run tests the same blocks. */
static uint64_t next_u64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void random_bytes(uint64_t *state, uint8_t *p, size_t n) {
  uint64_t r = 0;
  for (size_t i = 0; i < n; i++) {
    if (i % 8 == 0) r = next_u64(state);
    p[i] = (uint8_t)(r >> 8 * (i % 8));
  }
}

/* The byte offsets in a block of its f16 scale fields, as ggml lays the block out (d, then the
 * minimum where the format has one); the count, 0 for the plain types (f32, f16, bf16), whose
 * values are themselves what is checked. A dequantized type missing here fails the test. */
static unsigned scale_offsets(uint32_t id, unsigned off[2]) {
  switch (id) {
  case 0:  /* f32 */
  case 1:  /* f16 */
  case 30: /* bf16 */
    return 0;
  case 2:  /* q4_0: d, qs[16] */
  case 6:  /* q5_0: d, qh[4], qs[16] */
  case 8:  /* q8_0: d, qs[32] */
  case 20: /* iq4_nl: d, qs[16] */
  case 21: /* iq3_s: d, qs[64], qh[8], signs[32], scales[4] */
  case 23: /* iq4_xs: d, scales_h, scales_l[4], qs[128] */
    off[0] = 0;
    return 1;
  case 3:  /* q4_1: d, m, qs[16] */
  case 7:  /* q5_1: d, m, qh[4], qs[16] */
  case 12: /* q4_K: d, dmin, scales[12], qs[128] */
  case 13: /* q5_K: d, dmin, scales[12], qh[32], qs[128] */
    off[0] = 0, off[1] = 2;
    return 2;
  case 10: /* q2_K: scales[16], qs[64], d, dmin */
    off[0] = 80, off[1] = 82;
    return 2;
  case 11: /* q3_K: hmask[32], qs[64], scales[12], d */
    off[0] = 108;
    return 1;
  case 14: /* q6_K: ql[128], qh[64], scales[16], d */
    off[0] = 208;
    return 1;
  case 34: /* tq1_0: qs[48], qh[4], d */
    off[0] = 52;
    return 1;
  case 35: /* tq2_0: qs[64], d */
    off[0] = 64;
    return 1;
  }
  fail_msg("no scale layout for ggml type %u: add it to scale_offsets", id);
  return 0;
}

/* The exponent bits of the number stored at p: a plain value of type id (f32, bf16), or an f16
 * (a plain f16 value or any block's scale, id 1). Infinite or NaN when they are all ones. */
static bool stored_nonfinite(uint32_t id, const uint8_t *p) {
  if (id == 0) {
    const uint32_t u =
        (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return (u & 0x7f800000u) == 0x7f800000u;
  }
  const uint16_t h = (uint16_t)(p[0] | p[1] << 8);
  return id == 30 ? (h & 0x7f80u) == 0x7f80u : (h & 0x7c00u) == 0x7c00u;
}

/* Redraws every f16 scale (every value, for a plain type) of blocks[0..blocks) that is
 * infinite or NaN, so that all the values decode finite; the other bytes stay random. */
static void force_finite(uint64_t *state, uint32_t id, uint8_t *blocks, uint64_t count) {
  const fdl_ggml_type_info *t = fdl_ggml_type(id);
  unsigned off[2];
  const unsigned ns = scale_offsets(id, off);
  for (uint64_t b = 0; b < count; b++) {
    uint8_t *blk = blocks + b * t->block_bytes;
    if (!ns)
      while (stored_nonfinite(id, blk)) random_bytes(state, blk, t->block_bytes);
    for (unsigned k = 0; k < ns; k++)
      while (stored_nonfinite(1, blk + off[k])) random_bytes(state, blk + off[k], 2);
  }
}

/* Makes one block non-finite: its scale field k (its value, for a plain type) becomes a random
 * infinity or NaN, sign and payload random. */
static void make_nonfinite(uint64_t *state, uint32_t id, uint8_t *blk, unsigned k) {
  unsigned off[2];
  const unsigned ns = scale_offsets(id, off);
  uint8_t *p = ns ? blk + off[k % ns] : blk;
  random_bytes(state, p, ns || id != 0 ? 2 : 4);
  if (!ns && id == 0)
    p[2] |= 0x80, p[3] |= 0x7f; /* f32 exponent all ones */
  else if (!ns && id == 30)
    p[0] |= 0x80, p[1] |= 0x7f; /* bf16 */
  else
    p[1] |= 0x7c; /* f16 */
  assert_true(stored_nonfinite(ns ? 1 : id, p));
}

/* The run lengths, in blocks, every type is decoded in: one block, short odd runs (loop tails)
 * and a run past the library's chunk of 8192 values for the 256-value formats. The plain types,
 * one value a block, take runs PLAIN_RUNS times as long. */
static const uint64_t RUNS[] = {1, 3, 17, 70};
#define N_RUNS (sizeof RUNS / sizeof RUNS[0])
#define PLAIN_RUNS 129
#define GUARD 8 /* floats past the end of the output that no kernel may write */

static uint64_t run_blocks(const fdl_ggml_type_info *t, size_t r) {
  return RUNS[r] * (t->block_elems == 1 ? PLAIN_RUNS : 1);
}

/* Bytes p[0..n) all equal to b. */
static bool all_bytes(const void *p, size_t n, uint8_t b) {
  const uint8_t *q = p;
  for (size_t i = 0; i < n; i++)
    if (q[i] != b) return false;
  return true;
}

/* Random blocks of every dequantized type, decoded by the scalar kernels and by those of each
 * instruction set run here (and the default): the same status and message and the same bits,
 * NaN payloads and signs included, and not one float written past the end. In the first half of
 * the rounds the scales are forced finite (every value must then be finite); in the second they
 * are random too, so infinite and NaN scales meet every kind of code. The input starts at odd
 * byte offsets (blocks in a file are not aligned) and the output at odd float offsets. */
static void test_isa_random_blocks(void **state) {
  (void)state;
  enum { ROUNDS = 64 };
  fdl_num_isa isas[N_ISAS + 1];
  size_t nisas = 0;
  isas[nisas++] = FDL_NUM_ISA_AUTO;
  for (size_t i = 0; i < N_ISAS; i++)
    if (ISAS[i] != FDL_NUM_ISA_SCALAR && isa_runs(ISAS[i])) isas[nisas++] = ISAS[i];
  uint64_t rng = 0x243f6a8885a308d3u, values = 0, nonfinite_values = 0, refused = 0;
  for (uint32_t id = 0; id < 64; id++) {
    const fdl_ggml_type_info *t = fdl_ggml_type(id);
    if (!t || !t->dequant) continue;
    for (size_t r = 0; r < N_RUNS; r++) {
      const uint64_t blocks = run_blocks(t, r), n = blocks * t->block_elems;
      const size_t bytes = (size_t)(blocks * t->block_bytes), out_bytes = (n + 1 + GUARD) * 4;
      float *ref = malloc(out_bytes), *got = malloc(out_bytes);
      assert_non_null(ref);
      assert_non_null(got);
      for (int round = 0; round < ROUNDS; round++) {
        const bool finite = round < ROUNDS / 2;
        const size_t src_at = (size_t)round % 4, dst_at = (size_t)(round / 4) % 2;
        uint8_t *buf = malloc(src_at + bytes); /* the blocks end where the allocation does */
        assert_non_null(buf);
        uint8_t *src = buf + src_at;
        random_bytes(&rng, buf, src_at + bytes);
        if (finite) force_finite(&rng, id, src, blocks);

        fdl_err want, err;
        memset(ref, 0xa5, out_bytes);
        const fdl_status s_ref = fdl_ggml_dequant_isa(id, FDL_NUM_ISA_SCALAR, src, n, ref, &want);
        if (finite && s_ref != FDL_OK)
          fail_msg("%s, %" PRIu64 " blocks with finite scales: %s", t->name, blocks, want.msg);
        assert_true(s_ref == FDL_OK || s_ref == FDL_INVALID);
        assert_true(all_bytes(ref + n, (1 + GUARD) * 4, 0xa5));
        refused += s_ref != FDL_OK;
        values += n;
        for (uint64_t i = 0; i < n; i++)
          nonfinite_values += (f32_bits(ref[i]) & 0x7f800000u) == 0x7f800000u;

        for (size_t k = 0; k < nisas; k++) {
          memset(got, 0x5a, out_bytes);
          float *dst = got + dst_at;
          const fdl_status s = fdl_ggml_dequant_isa(id, isas[k], src, n, dst, &err);
          const char *isa = fdl_num_isa_name(isas[k]);
          if (s != s_ref)
            fail_msg("%s, %" PRIu64 " blocks, round %d: %s under %s, %s under scalar (%s)", t->name,
                     blocks, round, fdl_status_name(s), isa, fdl_status_name(s_ref),
                     s ? err.msg : want.msg);
          if (s != FDL_OK && strcmp(err.msg, want.msg))
            fail_msg("%s under %s: \"%s\", under scalar: \"%s\"", t->name, isa, err.msg, want.msg);
          if (memcmp(dst, ref, n * sizeof *dst)) {
            uint64_t i = 0;
            while (f32_bits(dst[i]) == f32_bits(ref[i])) i++;
            fail_msg("%s, %" PRIu64 " blocks, round %d: value %" PRIu64 " is %08" PRIx32
                     " under %s, %08" PRIx32 " under scalar",
                     t->name, blocks, round, i, f32_bits(dst[i]), isa, f32_bits(ref[i]));
          }
          if (!all_bytes(got, dst_at * 4, 0x5a) || !all_bytes(dst + n, GUARD * 4, 0x5a))
            fail_msg("%s, %" PRIu64 " blocks: the %s kernels write outside their output", t->name,
                     blocks, isa);
        }
        free(buf);
      }
      free(ref);
      free(got);
    }
  }
  char what[128];
  snprintf(what, sizeof what,
           "random blocks: %" PRIu64 " values, %" PRIu64 " non-finite, %" PRIu64 " runs refused",
           values, nonfinite_values, refused);
  print_isas(what);
  assert_true(nonfinite_values > 0 && refused > 0); /* the hostile half was hostile */
}

/* fdl_ggml_check_finite and fdl_ggml_dequant on one input: the same status and, on a refusal,
 * the same message; returns the status. */
static fdl_status same_check(uint32_t id, const void *src, uint64_t n, float *out, const char *what,
                             fdl_err *err) {
  fdl_err check;
  memset(&check, 0, sizeof check);
  memset(err, 0, sizeof *err);
  const fdl_status s = fdl_ggml_dequant(id, src, n, out, err);
  const fdl_status c = fdl_ggml_check_finite(id, src, n, &check);
  const fdl_ggml_type_info *t = fdl_ggml_type(id);
  const char *name = t ? t->name : "?";
  if (c != s)
    fail_msg("%s, %s: check_finite %s, dequant %s (%s)", name, what, fdl_status_name(c),
             fdl_status_name(s), s ? err->msg : check.msg);
  if (s != FDL_OK && strcmp(check.msg, err->msg))
    fail_msg("%s, %s: check_finite \"%s\", dequant \"%s\"", name, what, check.msg, err->msg);
  return s;
}

/* fdl_ggml_check_finite, which reads only the f16 scales of a block format, against
 * fdl_ggml_dequant, which decodes every value: on random blocks (raw, with finite scales, and
 * with finite scales but for one random block), on five finite blocks before a non-finite one
 * (the index named is that block's first value), on the largest finite scales, +-65504, over
 * extreme codes (finite), and on the requests both refuse. */
static void test_check_finite(void **state) {
  (void)state;
  enum { ROUNDS = 48 };
  uint64_t rng = 0x13198a2e03707344u;
  fdl_err err;
  char what[160];
  unsigned ok = 0, bad = 0;
  for (uint32_t id = 0; id < 64; id++) {
    const fdl_ggml_type_info *t = fdl_ggml_type(id);
    if (!t || !t->dequant) continue;
    unsigned off[2];
    const unsigned ns = scale_offsets(id, off);
    const uint64_t max_blocks = run_blocks(t, N_RUNS - 1) > 8 ? run_blocks(t, N_RUNS - 1) : 8;
    uint8_t *in = malloc((size_t)(max_blocks * t->block_bytes));
    float *out = malloc((size_t)(max_blocks * t->block_elems) * sizeof *out);
    assert_non_null(in);
    assert_non_null(out);

    /* Random blocks: raw bytes (some scales infinite or NaN), finite scales, and finite scales
     * but in one block (the last, the first or a random one; a random field of it). */
    for (size_t r = 0; r < N_RUNS; r++) {
      const uint64_t blocks = run_blocks(t, r), n = blocks * t->block_elems;
      for (int round = 0; round < ROUNDS; round++) {
        const int mode = round % 3;
        random_bytes(&rng, in, (size_t)(blocks * t->block_bytes));
        if (mode) force_finite(&rng, id, in, blocks);
        const int where = round / 3 % 3; /* the non-finite block: the last, the first, any */
        const uint64_t at = where == 0 ? blocks - 1 : where == 1 ? 0 : next_u64(&rng) % blocks;
        if (mode == 2) make_nonfinite(&rng, id, in + at * t->block_bytes, (unsigned)next_u64(&rng));
        snprintf(what, sizeof what, "%" PRIu64 " blocks, round %d", blocks, round);
        const fdl_status s = same_check(id, in, n, out, what, &err);
        assert_int_equal(s, mode == 0 ? s : mode == 1 ? FDL_OK : FDL_INVALID);
        if (mode == 2) { /* every value of a block with a non-finite scale is non-finite */
          char expect[96];
          snprintf(expect, sizeof expect, "value %" PRIu64 " (block %" PRIu64 ") of %" PRIu64 " ",
                   at * t->block_elems, at, n);
          if (!strstr(err.msg, expect)) fail_msg("%s: \"%s\" lacks \"%s\"", what, err.msg, expect);
        }
        s == FDL_OK ? ok++ : bad++;
      }
    }

    /* Five finite blocks, then a non-finite one (and a later one): the first is named. The
     * non-finite scale (plain value) is a quiet NaN, +inf, -inf, a signalling NaN or all ones. */
    static const uint32_t specials[][3] = {
        /* f16, bf16, f32 */
        {0x7e00, 0x7fc0, 0x7fc00000u}, {0x7c00, 0x7f80, 0x7f800000u}, {0xfc00, 0xff80, 0xff800000u},
        {0x7c01, 0x7f81, 0x7f800001u}, {0xffff, 0xffff, 0xffffffffu},
    };
    for (unsigned k = 0; k < (ns ? ns : 1); k++)
      for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) {
        const uint64_t n = 8 * (uint64_t)t->block_elems;
        random_bytes(&rng, in, 8 * t->block_bytes);
        force_finite(&rng, id, in, 8);
        uint8_t *blk = in + 5 * t->block_bytes, *p = ns ? blk + off[k] : blk;
        const uint32_t v = specials[i][ns ? 0 : id == 0 ? 2 : id == 30 ? 1 : 0];
        for (unsigned b = 0; b < (!ns && id == 0 ? 4u : 2u); b++) p[b] = (uint8_t)(v >> 8 * b);
        assert_true(stored_nonfinite(ns ? 1 : id, p));
        make_nonfinite(&rng, id, in + 7 * t->block_bytes, k);
        snprintf(what, sizeof what, "block 5 of 8 with %" PRIx32 " in field %u", v, k);
        assert_int_equal(same_check(id, in, n, out, what, &err), FDL_INVALID);
        char expect[96];
        snprintf(expect, sizeof expect, "ggml type %s: value %" PRIu64 " (block 5) of %" PRIu64 " ",
                 t->name, 5 * (uint64_t)t->block_elems, n);
        if (strncmp(err.msg, expect, strlen(expect)))
          fail_msg("%s: \"%s\" does not begin \"%s\"", what, err.msg, expect);
        /* the blocks before it are decoded */
        for (uint64_t j = 0; j < 5 * (uint64_t)t->block_elems; j++)
          assert_true((f32_bits(out[j]) & 0x7f800000u) != 0x7f800000u);
      }

    /* The largest finite scales, either sign, over extreme codes (all bits clear, all set, the
     * signed byte extremes): finite, under every kernel. The plain types take their largest
     * finite values. */
    static const uint8_t fills[] = {0x00, 0xff, 0x80, 0x7f};
    for (size_t f = 0; f < sizeof fills / sizeof fills[0]; f++)
      for (unsigned signs = 0; signs < 4; signs++) {
        const uint64_t blocks = 3, n = blocks * t->block_elems;
        memset(in, fills[f], blocks * t->block_bytes);
        for (uint64_t b = 0; b < blocks; b++) {
          uint8_t *blk = in + b * t->block_bytes;
          for (unsigned k = 0; k < ns; k++) /* 0x7bff = 65504, 0xfbff = -65504 */
            blk[off[k]] = 0xff, blk[off[k] + 1] = signs >> k & 1 ? 0xfb : 0x7b;
          const uint8_t sign = signs & 1 ? 0x80 : 0;
          if (id == 0) blk[0] = blk[1] = 0xff, blk[2] = 0x7f, blk[3] = 0x7f | sign;
          if (id == 1) blk[0] = 0xff, blk[1] = 0x7b | sign;
          if (id == 30) blk[0] = 0x7f, blk[1] = 0x7f | sign;
        }
        snprintf(what, sizeof what, "largest scales (signs %u) over bytes %02x", signs, fills[f]);
        if (same_check(id, in, n, out, what, &err) != FDL_OK) fail_msg("%s: %s", what, err.msg);
        for (size_t i = 0; i < N_ISAS; i++)
          if (isa_runs(ISAS[i]))
            assert_int_equal(fdl_ggml_dequant_isa(id, ISAS[i], in, n, out, NULL), FDL_OK);
        ok++;
      }

    /* Requests both refuse, alike: no input, a partial block; and none at all. */
    if (same_check(id, NULL, t->block_elems, out, "no input", &err) != FDL_INVALID)
      fail_msg("%s: no input buffer accepted", t->name);
    if (t->block_elems > 1 &&
        same_check(id, in, t->block_elems + 1, out, "a partial block", &err) != FDL_BOUNDS)
      fail_msg("%s: a partial block accepted", t->name);
    assert_int_equal(same_check(id, in, 0, out, "no values", &err), FDL_OK);
    free(in);
    free(out);
  }
  uint8_t zeros[64] = {0};
  float out[32];
  assert_int_equal(same_check(1000, zeros, 32, out, "an unknown id", &err), FDL_UNSUPPORTED);
  assert_int_equal(same_check(16, zeros, 256, out, "iq2_xxs", &err), FDL_UNSUPPORTED);
  printf("test_ggml_dequant: check_finite agrees with dequant on %u finite and %u refused runs\n",
         ok, bad);
  assert_true(ok > 0 && bad > 0);
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
      cmocka_unit_test(test_isa_random_blocks),
      cmocka_unit_test(test_check_finite),
      cmocka_unit_test(test_vectors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
