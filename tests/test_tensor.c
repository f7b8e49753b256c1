/* test_tensor.c - dtype conversion against independent formulas, and every safetensors / .npy
 * refusal the readers promise, built in memory and read with the _open_mem entry points. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "base/buf.h"
#include "base/fs.h"
#include "tensor/safetensors_json.h"

/* ---- helpers ----------------------------------------------------------------------------- */

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* Expected F32 bits of a 16-bit float with ebits exponent bits, by arithmetic (ldexp) rather
 * than by bit placement, so it checks the library's bit tricks independently. */
static uint32_t widen_ref(uint16_t h, int ebits) {
  int mbits = 15 - ebits;
  int emax = (1 << ebits) - 1;
  int bias = (1 << (ebits - 1)) - 1;
  uint32_t sign = h >> 15;
  int e = (h >> mbits) & emax;
  uint32_t m = h & ((1u << mbits) - 1);
  if (e == emax) {
    if (m == 0) return sign << 31 | 0x7f800000u;
    return sign << 31 | 0x7f800000u | m << (23 - mbits); /* payload kept */
  }
  double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                    : ldexp((double)((1u << mbits) | m), e - bias - mbits);
  return fbits((float)(sign ? -v : v));
}

static void test_bf16_exhaustive(void **state) {
  (void)state;
  static uint16_t in[65536];
  static float out[65536];
  for (uint32_t h = 0; h < 65536; h++) in[h] = (uint16_t)h;
  fdl_bf16_to_f32_n(in, out, 65536);
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t want = widen_ref((uint16_t)h, 8);
    if (fbits(fdl_bf16_to_f32((uint16_t)h)) != want || fbits(out[h]) != want)
      fail_msg("bf16 0x%04x: got 0x%08x, want 0x%08x", h, fbits(out[h]), want);
  }
}

static void test_f16_exhaustive(void **state) {
  (void)state;
  static uint16_t in[65536];
  static float out[65536];
  for (uint32_t h = 0; h < 65536; h++) in[h] = (uint16_t)h;
  fdl_f16_to_f32_n(in, out, 65536);
  for (uint32_t h = 0; h < 65536; h++) {
    uint32_t want = widen_ref((uint16_t)h, 5);
    if (fbits(fdl_f16_to_f32((uint16_t)h)) != want || fbits(out[h]) != want)
      fail_msg("f16 0x%04x: got 0x%08x, want 0x%08x", h, fbits(out[h]), want);
  }
  /* Landmarks: smallest subnormal, largest subnormal, max finite, -0. */
  assert_true(fdl_f16_to_f32(0x0001) == ldexpf(1.0f, -24));
  assert_true(fdl_f16_to_f32(0x03ff) == 1023.0f * ldexpf(1.0f, -24));
  assert_true(fdl_f16_to_f32(0x7bff) == 65504.0f);
  assert_int_equal(fbits(fdl_f16_to_f32(0x8000)), 0x80000000u);
}

/* Reference RNE by comparing distances in double (exact for these values). The step past the
 * largest finite BF16 is treated as 2^128, which is what makes overflow round to infinity. */
static uint16_t narrow_ref(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  uint32_t sign = u & 0x80000000u;
  uint32_t mag = u & 0x7fffffffu;
  uint32_t lo = mag >> 16;
  if (lo == 0x7f80) return (uint16_t)((sign >> 16) | lo); /* infinity */
  double x = (double)bitsf(mag);
  double vlo = (double)bitsf(lo << 16);
  double vhi = lo + 1 == 0x7f80 ? ldexp(1.0, 128) : (double)bitsf((lo + 1) << 16);
  double dlo = x - vlo, dhi = vhi - x;
  uint32_t r = dlo < dhi ? lo : dhi < dlo ? lo + 1 : (lo & 1) ? lo + 1 : lo;
  return (uint16_t)((sign >> 16) | r);
}

static void test_f32_to_bf16(void **state) {
  (void)state;
  static const uint16_t lows[] = {0x0000, 0x0001, 0x3fff, 0x7fff, 0x8000, 0x8001, 0xc000, 0xffff};
  enum { NL = sizeof lows / sizeof lows[0] };
  static float in[65536 * NL];
  static uint16_t out[65536 * NL];
  size_t k = 0;
  for (uint32_t hi = 0; hi < 65536; hi++)
    for (size_t j = 0; j < NL; j++) in[k++] = bitsf(hi << 16 | lows[j]);
  fdl_f32_to_bf16_n(in, out, k);
  for (size_t i = 0; i < k; i++) {
    uint32_t u = fbits(in[i]);
    uint16_t want = narrow_ref(u);
    if (out[i] != want || fdl_f32_to_bf16(in[i]) != want)
      fail_msg("f32 0x%08x: got 0x%04x, want 0x%04x", u, out[i], want);
  }
  /* Ties to even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 and goes to 1 (even). */
  assert_int_equal(fdl_f32_to_bf16(1.0f + ldexpf(1.0f, -8)), 0x3f80);
  assert_int_equal(fdl_f32_to_bf16(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
  /* NaN stays a quiet NaN, even one whose payload lives only in the dropped half. */
  assert_int_equal(fdl_f32_to_bf16(bitsf(0x7f800001u)), 0x7fc0);
  assert_int_equal(fdl_f32_to_bf16(bitsf(0xffc00000u)), 0xffc0);
  assert_true(isnan(fdl_bf16_to_f32(fdl_f32_to_bf16(NAN))));
  /* Overflow: FLT_MAX rounds up to infinity; infinity stays. */
  assert_int_equal(fdl_f32_to_bf16(bitsf(0x7f7fffffu)), 0x7f80);
  assert_int_equal(fdl_f32_to_bf16(-INFINITY), 0xff80);
  assert_int_equal(fdl_f32_to_bf16(bitsf(0x7f7f7fffu)), 0x7f7f);
  /* Subnormals round like normals; the smallest rounds to zero, keeping the sign. */
  assert_int_equal(fdl_f32_to_bf16(bitsf(0x00000001u)), 0x0000);
  assert_int_equal(fdl_f32_to_bf16(bitsf(0x80000001u)), 0x8000);
  assert_int_equal(fdl_f32_to_bf16(bitsf(0x00018000u)), 0x0002);
  /* Round trip of every BF16 value. */
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t back = fdl_f32_to_bf16(fdl_bf16_to_f32((uint16_t)h));
    uint16_t want = ((h & 0x7fff) > 0x7f80) ? (uint16_t)(h | 0x40) : (uint16_t)h;
    if (back != want) fail_msg("bf16 round trip 0x%04x -> 0x%04x", h, back);
  }
}

static void test_dtype_table(void **state) {
  (void)state;
  fdl_dtype t;
  assert_true(fdl_dtype_parse("BF16", &t));
  assert_int_equal(t, FDL_DTYPE_BF16);
  assert_int_equal(fdl_dtype_size(FDL_DTYPE_F8_E5M2), 1);
  assert_int_equal(fdl_dtype_size(FDL_DTYPE_U64), 8);
  assert_int_equal(fdl_dtype_size(FDL_DTYPE_COUNT), 0);
  assert_int_equal(fdl_dtype_size((fdl_dtype)-1), 0);
  assert_false(fdl_dtype_parse("bf16", &t));
  assert_false(fdl_dtype_parse("F128", &t));
  for (int i = 0; i < FDL_DTYPE_COUNT; i++) {
    assert_true(fdl_dtype_parse(fdl_dtype_name((fdl_dtype)i), &t));
    assert_int_equal(t, i);
  }
}

/* ---- safetensors ------------------------------------------------------------------------- */

typedef struct {
  uint8_t *bytes;
  size_t size;
} blob;

/* u64le(strlen(header)) || header || data_len bytes (0, 1, 2, ...). */
static blob st_blob(const char *header, size_t data_len) {
  size_t n = strlen(header);
  blob b = {malloc(8 + n + data_len + 1), 8 + n + data_len};
  assert_non_null(b.bytes);
  for (int i = 0; i < 8; i++) b.bytes[i] = (uint8_t)((uint64_t)n >> (8 * i));
  memcpy(b.bytes + 8, header, n);
  for (size_t i = 0; i < data_len; i++) b.bytes[8 + n + i] = (uint8_t)i;
  return b;
}

/* Opens header+data and expects refusal with status s and a message containing want. */
static void st_refused(const char *header, size_t data_len, fdl_status s, const char *want) {
  blob b = st_blob(header, data_len);
  fdl_safetensors *st = NULL;
  fdl_err err = {0};
  fdl_status got = fdl_safetensors_open_mem(b.bytes, b.size, &st, &err);
  if (got != s || !strstr(err.msg, want) || !strstr(err.msg, "<memory>"))
    fail_msg("header %.80s: status %s, message '%s'; expected %s containing '%s'", header,
             fdl_status_name(got), err.msg, fdl_status_name(s), want);
  assert_null(st);
  free(b.bytes);
}

#define T_F32_2 "{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":"

static void test_st_refusals(void **state) {
  (void)state;
  /* Truncation and the length prefix. */
  {
    uint8_t five[5] = {1, 0, 0, 0, 0};
    fdl_safetensors *st = NULL;
    fdl_err err = {0};
    assert_int_equal(fdl_safetensors_open_mem(five, 5, &st, &err), FDL_BOUNDS);
    assert_non_null(strstr(err.msg, "too short"));
    assert_int_equal(fdl_safetensors_open_mem(NULL, 0, &st, &err), FDL_BOUNDS);
    uint8_t huge[16];
    memset(huge, 0xff, 8);
    memset(huge + 8, ' ', 8);
    assert_int_equal(fdl_safetensors_open_mem(huge, sizeof huge, &st, &err), FDL_BOUNDS);
    assert_non_null(strstr(err.msg, "exceeds the"));
    uint8_t past[16] = {100};
    memcpy(past + 8, "{}      ", 8);
    assert_int_equal(fdl_safetensors_open_mem(past, sizeof past, &st, &err), FDL_BOUNDS);
    assert_non_null(strstr(err.msg, "past the end"));
    /* A header cut in the middle: the prefix promises more than the file has. */
    blob b = st_blob("{\"a\":" T_F32_2 "[0,8]}}", 8);
    assert_int_equal(fdl_safetensors_open_mem(b.bytes, 8 + 10, &st, &err), FDL_BOUNDS);
    assert_non_null(strstr(err.msg, "past the end"));
    free(b.bytes);
  }
  /* Ranges. */
  st_refused("{\"a\":" T_F32_2 "[0,8]},\"b\":" T_F32_2 "[4,12]}}", 12, FDL_BOUNDS, "overlap");
  st_refused("{\"a\":" T_F32_2 "[0,8]},\"b\":" T_F32_2 "[0,8]}}", 8, FDL_BOUNDS, "overlap");
  st_refused("{\"a\":" T_F32_2 "[0,8]}}", 7, FDL_BOUNDS, "in [0, 7]");
  st_refused("{\"a\":" T_F32_2 "[8,0]}}", 8, FDL_BOUNDS, "begin 8 > end 0");
  st_refused("{\"a\":" T_F32_2 "[-1,7]}}", 8, FDL_BOUNDS, "data_offsets must be integers");
  st_refused("{\"a\":" T_F32_2 "[0,8,9]}}", 9, FDL_PARSE, "[begin, end]");
  st_refused("{\"a\":" T_F32_2 "[0.0,8]}}", 8, FDL_BOUNDS, "data_offsets must be integers");
  st_refused("{\"a\":" T_F32_2 "[0,4]}}", 8, FDL_BOUNDS, "span 4 bytes but F32 shape holds 2");
  st_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,0]"
             "}}",
             0, FDL_BOUNDS, "overflows");
  st_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[9223372036854775807,3],\"data_offsets\":[0,0]}}",
             0, FDL_BOUNDS, "overflows");
  /* Entry fields. */
  st_refused("{\"a\":{\"dtype\":\"F128\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
             FDL_UNSUPPORTED, "unknown dtype 'F128'");
  st_refused("{\"a\":{\"dtype\":7,\"shape\":[2],\"data_offsets\":[0,8]}}", 8, FDL_UNSUPPORTED,
             "unknown dtype");
  st_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, FDL_PARSE,
             "shape[0]");
  st_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, FDL_PARSE,
             "shape[0]");
  st_refused("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1,
             FDL_PARSE, "at most 8");
  st_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":1}}", 8,
             FDL_PARSE, "exactly the keys");
  st_refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, FDL_PARSE, "exactly the keys");
  st_refused("{\"a\":[1]}", 0, FDL_PARSE, "tensor 'a': entry is not an object");
  st_refused("{\"a\\u0000b\":" T_F32_2 "[0,8]}}", 8, FDL_PARSE, "<memory>");
  /* Header as a whole. */
  st_refused("[]", 0, FDL_PARSE, "not a JSON object");
  st_refused("\"x\"", 0, FDL_PARSE, "not a JSON object");
  st_refused("{\"__metadata__\":{\"k\":1}}", 0, FDL_PARSE, "value for 'k' is not a string");
  st_refused("{\"__metadata__\":[\"k\"]}", 0, FDL_PARSE, "__metadata__ is not an object");
  st_refused("{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", 0, FDL_PARSE, "not a string");
  st_refused("{\"a\":" T_F32_2 "[0,8]},\"a\":" T_F32_2 "[0,8]}}", 8, FDL_PARSE, "header");
  st_refused("{\"\xff\":" T_F32_2 "[0,8]}}", 8, FDL_PARSE, "header");
  st_refused("{\"a\":" T_F32_2 "[0,8]}} x", 8, FDL_PARSE, "header");
  st_refused("", 0, FDL_PARSE, "header");
  /* Deep nesting, far beyond any bound. */
  {
    size_t depth = 100000;
    char *h = malloc(2 * depth + 16);
    assert_non_null(h);
    size_t n = (size_t)sprintf(h, "{\"a\":");
    memset(h + n, '[', depth);
    memset(h + n + depth, ']', depth);
    strcpy(h + n + 2 * depth, "}");
    st_refused(h, 0, FDL_PARSE, "header");
    free(h);
  }
}

static void test_st_valid(void **state) {
  (void)state;
  /* Out of order in the header, a gap, a zero-length tensor inside another's range, trailing
   * bytes, space padding: all valid. */
  const char *h = "{\"__metadata__\":{\"format\":\"pt\"},"
                  "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[12,20]},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                  "\"e\":{\"dtype\":\"I64\",\"shape\":[0,3],\"data_offsets\":[4,4]},"
                  "\"s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[20,21]}}       ";
  blob b = st_blob(h, 30);
  fdl_safetensors *st = NULL;
  fdl_err err = {0};
  if (fdl_safetensors_open_mem(b.bytes, b.size, &st, &err) != FDL_OK) fail_msg("%s", err.msg);
  uint64_t ds = 8 + strlen(h);
  assert_int_equal(fdl_safetensors_data_start(st), ds);
  assert_int_equal(fdl_safetensors_file_size(st), b.size);
  assert_int_equal(fdl_safetensors_count(st), 4);
  const char *order[] = {"a", "e", "b", "s"};
  for (size_t i = 0; i < 4; i++) assert_string_equal(fdl_safetensors_at(st, i)->name, order[i]);
  assert_null(fdl_safetensors_at(st, 4));
  const fdl_tensor *t = fdl_safetensors_find(st, "b");
  assert_non_null(t);
  assert_int_equal(t->dtype, FDL_DTYPE_BF16);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->offset, ds + 12);
  assert_int_equal(t->nbytes, 8);
  assert_ptr_equal(t->data, b.bytes + ds + 12);
  assert_int_equal(t->data[0], 12);
  assert_int_equal(fdl_tensor_numel(t), 4);
  const fdl_tensor *s = fdl_safetensors_find(st, "s");
  assert_int_equal(s->ndim, 0);
  assert_int_equal(fdl_tensor_numel(s), 1);
  assert_int_equal(fdl_tensor_numel(fdl_safetensors_find(st, "e")), 0);
  assert_null(fdl_safetensors_find(st, "zz"));
  const json_t *meta = fdl_safetensors_metadata(st);
  assert_non_null(meta);
  assert_string_equal(json_string_value(json_object_get(meta, "format")), "pt");
  fdl_safetensors_close(st);
  free(b.bytes);

  b = st_blob("{}", 0);
  assert_int_equal(fdl_safetensors_open_mem(b.bytes, b.size, &st, &err), FDL_OK);
  assert_int_equal(fdl_safetensors_count(st), 0);
  assert_null(fdl_safetensors_metadata(st));
  fdl_safetensors_close(st);
  free(b.bytes);
  fdl_safetensors_close(NULL);
}

/* ---- writers ----------------------------------------------------------------------------- */

static char tmpdir[64];

static int make_tmp(void **state) {
  (void)state;
  strcpy(tmpdir, "/tmp/fdl-test-tensor-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmp(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static json_t *capture_metadata(void) {
  return json_pack("{s:s, s:s, s:s, s:s, s:s}", "capture_role", "hidden_states_pre_lm_head",
                   "cut_point", "after_final_rmsnorm_before_lm_head", "window_id", "final-0000",
                   "cold_run", "fidelity--qwen3-5.community-root-first", "dtype", "bfloat16");
}

static void test_st_write(void **state) {
  (void)state;
  static uint16_t hidden[63 * 64];
  for (size_t i = 0; i < 63 * 64; i++) hidden[i] = fdl_f32_to_bf16((float)i / 7.0f);
  int64_t shape[2] = {63, 64};
  fdl_tensor_in in = {"hidden_states", FDL_DTYPE_BF16, 2, shape, hidden};
  json_t *meta = capture_metadata();
  fdl_buf head;
  fdl_buf_init(&head, 0);
  fdl_err err = {0};
  if (fdl_safetensors_header(&in, 1, meta, &head, &err) != FDL_OK) fail_msg("%s", err.msg);
  assert_int_equal(head.len, 8 + 279);
  assert_int_equal((uint8_t)head.data[0], 279 & 0xff);
  assert_int_equal((uint8_t)head.data[1], 279 >> 8);
  const char *want = "{\"__metadata__\":{\"capture_role\":\"hidden_states_pre_lm_head\","
                     "\"cold_run\":\"fidelity--qwen3-5.community-root-first\","
                     "\"cut_point\":\"after_final_rmsnorm_before_lm_head\",\"dtype\":\"bfloat16\","
                     "\"window_id\":\"final-0000\"},\"hidden_states\":{\"data_offsets\":[0,8064],"
                     "\"dtype\":\"BF16\",\"shape\":[63,64]}}";
  assert_memory_equal(head.data + 8, want, 279);
  fdl_buf_free(&head);

  char path[128];
  snprintf(path, sizeof path, "%s/hidden.safetensors", tmpdir);
  if (fdl_safetensors_write(path, &in, 1, meta, &err) != FDL_OK) fail_msg("%s", err.msg);
  fdl_safetensors *st = NULL;
  if (fdl_safetensors_open(path, &st, &err) != FDL_OK) fail_msg("%s", err.msg);
  assert_int_equal(fdl_safetensors_file_size(st), 8351);
  const fdl_tensor *t = fdl_safetensors_find(st, "hidden_states");
  assert_non_null(t);
  assert_int_equal(t->nbytes, sizeof hidden);
  assert_memory_equal(t->data, hidden, sizeof hidden);
  assert_true(json_equal((json_t *)fdl_safetensors_metadata(st), meta));
  fdl_safetensors_close(st);

  /* Never overwrite. */
  assert_int_equal(fdl_safetensors_write(path, &in, 1, meta, &err), FDL_EXISTS);

  /* Several tensors: data in the given order, keys sorted; NULL and {} metadata omitted. */
  static const float a[3] = {1, 2, 3};
  static const uint8_t z[1] = {0};
  int64_t s3[1] = {3}, s0[1] = {0};
  fdl_tensor_in two[3] = {{"zeta", FDL_DTYPE_F32, 1, s3, a},
                          {"alpha", FDL_DTYPE_U8, 0, NULL, z},
                          {"empty", FDL_DTYPE_I64, 1, s0, NULL}};
  fdl_buf_init(&head, 0);
  json_t *none = json_object();
  assert_int_equal(fdl_safetensors_header(two, 3, none, &head, &err), FDL_OK);
  const char *want2 = "{\"alpha\":{\"data_offsets\":[12,13],\"dtype\":\"U8\",\"shape\":[]},"
                      "\"empty\":{\"data_offsets\":[13,13],\"dtype\":\"I64\",\"shape\":[0]},"
                      "\"zeta\":{\"data_offsets\":[0,12],\"dtype\":\"F32\",\"shape\":[3]}}";
  assert_int_equal(head.len, 8 + strlen(want2));
  assert_memory_equal(head.data + 8, want2, strlen(want2));
  fdl_buf_free(&head);

  /* Refusals. */
  fdl_tensor_in dup[2] = {two[0], two[0]};
  fdl_buf_init(&head, 0);
  assert_int_equal(fdl_safetensors_header(dup, 2, NULL, &head, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "twice"));
  fdl_tensor_in reserved = {"__metadata__", FDL_DTYPE_U8, 0, NULL, z};
  assert_int_equal(fdl_safetensors_header(&reserved, 1, NULL, &head, &err), FDL_INVALID);
  json_t *badmeta = json_pack("{s:i}", "k", 1);
  assert_int_equal(fdl_safetensors_header(two, 1, badmeta, &head, &err), FDL_INVALID);
  int64_t neg[1] = {-1};
  fdl_tensor_in bad = {"x", FDL_DTYPE_F32, 1, neg, a};
  assert_int_equal(fdl_safetensors_header(&bad, 1, NULL, &head, &err), FDL_INVALID);
  fdl_tensor_in nodata = {"x", FDL_DTYPE_F32, 1, s3, NULL};
  assert_int_equal(fdl_safetensors_header(&nodata, 1, NULL, &head, &err), FDL_INVALID);
  assert_int_equal(head.len, 0);
  fdl_buf_free(&head);
  json_decref(badmeta);
  json_decref(none);
  json_decref(meta);
}

/* ---- .npy -------------------------------------------------------------------------------- */

static void npy_refused(const void *bytes, size_t n, fdl_status s, const char *want) {
  fdl_npy *np = NULL;
  fdl_err err = {0};
  fdl_status got = fdl_npy_open_mem(bytes, n, &np, &err);
  if (got != s || !strstr(err.msg, want))
    fail_msg("npy: status %s, message '%s'; expected %s containing '%s'", fdl_status_name(got),
             err.msg, fdl_status_name(s), want);
  assert_null(np);
}

/* A version 1.0 file around dict (padded to 64 with a final '\n') and data_len data bytes. */
static blob npy_blob(const char *dict, size_t data_len) {
  size_t d = strlen(dict);
  size_t total = (10 + d + 1 + 63) / 64 * 64;
  size_t hlen = total - 10;
  blob b = {calloc(1, total + data_len + 1), total + data_len};
  assert_non_null(b.bytes);
  memcpy(b.bytes, "\x93NUMPY\x01\x00", 8);
  b.bytes[8] = (uint8_t)(hlen & 0xff);
  b.bytes[9] = (uint8_t)(hlen >> 8);
  memcpy(b.bytes + 10, dict, d);
  memset(b.bytes + 10 + d, ' ', hlen - d - 1);
  b.bytes[total - 1] = '\n';
  return b;
}

static void npy_dict_refused(const char *dict, size_t data_len, fdl_status s, const char *want) {
  blob b = npy_blob(dict, data_len);
  npy_refused(b.bytes, b.size, s, want);
  free(b.bytes);
}

static void test_npy_refusals(void **state) {
  (void)state;
  npy_refused("\x93NUMPZ\x01\x00\x10\x00", 10, FDL_PARSE, "magic");
  npy_refused("\x93NUMPY\x01", 7, FDL_BOUNDS, "too short");
  npy_refused("\x93NUMPY\x01\x00\x40\x00{'descr'", 17, FDL_BOUNDS, "does not fit");
  npy_refused("\x93NUMPY\x03\x00\x40\x00\x00\x00", 12, FDL_UNSUPPORTED, "version 3.0");
  npy_refused("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12, FDL_BOUNDS, "exceeds");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", 16, FDL_UNSUPPORTED,
                   "fortran_order is True");
  npy_dict_refused("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", 16, FDL_UNSUPPORTED,
                   "big-endian");
  npy_dict_refused("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, FDL_UNSUPPORTED,
                   "unsupported descr '<c8'");
  npy_dict_refused("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", 8, FDL_UNSUPPORTED,
                   "unsupported descr");
  npy_dict_refused("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", 16,
                   FDL_UNSUPPORTED, "structured");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 15, FDL_BOUNDS,
                   "data is 15 bytes");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 17, FDL_BOUNDS,
                   "data is 17 bytes");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (2), }", 16, FDL_PARSE,
                   "1-tuple");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", 16, FDL_PARSE,
                   "shape entries");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (02,), }", 16, FDL_PARSE,
                   "shape entries");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, }", 8, FDL_PARSE, "missing");
  npy_dict_refused("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8,
                   FDL_PARSE, "twice");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (), 'x': 1}", 8, FDL_PARSE,
                   "unknown key 'x'");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': 0, 'shape': (), }", 8, FDL_PARSE,
                   "True or False");
  npy_dict_refused("{'descr': '<f8', 'fortran_order': False, 'shape': (), } x", 8, FDL_PARSE,
                   "after '}'");
  npy_dict_refused("'descr': '<f8'", 8, FDL_PARSE, "start with '{'");
  npy_dict_refused("{'descr': '<u1', 'fortran_order': False, 'shape': (4294967296, 4294967296, "
                   "4294967296), }",
                   0, FDL_BOUNDS, "overflows");
  npy_dict_refused("{'descr': '<u1', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 1,
                   FDL_UNSUPPORTED, "more than 8");
  /* No final newline. */
  blob b = npy_blob("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8);
  b.bytes[b.size - 8 - 1] = ' ';
  npy_refused(b.bytes, b.size, FDL_PARSE, "newline");
  free(b.bytes);
}

static void test_npy_read(void **state) {
  (void)state;
  /* Key order, double quotes, 'L' suffixes, '<u1' and format 2.0 are all read. */
  blob b = npy_blob("{\"shape\": (2L, 3L), 'fortran_order': False, 'descr': '<u1'}", 6);
  fdl_npy *np = NULL;
  fdl_err err = {0};
  if (fdl_npy_open_mem(b.bytes, b.size, &np, &err) != FDL_OK) fail_msg("%s", err.msg);
  const fdl_tensor *t = fdl_npy_tensor(np);
  assert_int_equal(t->dtype, FDL_DTYPE_U8);
  assert_int_equal(t->ndim, 2);
  assert_int_equal(t->shape[1], 3);
  assert_int_equal(t->offset, b.size - 6);
  assert_int_equal(t->offset % 64, 0);
  assert_string_equal(t->name, "");
  fdl_npy_close(np);
  free(b.bytes);

  static const char dict2[] = "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }\n";
  uint8_t v2[12 + sizeof dict2 - 1 + 2];
  memcpy(v2, "\x93NUMPY\x02\x00", 8);
  uint32_t hl = sizeof dict2 - 1;
  for (int i = 0; i < 4; i++) v2[8 + i] = (uint8_t)(hl >> (8 * i));
  memcpy(v2 + 12, dict2, hl);
  v2[12 + hl] = 0x00;
  v2[13 + hl] = 0x3c;
  if (fdl_npy_open_mem(v2, sizeof v2, &np, &err) != FDL_OK) fail_msg("%s", err.msg);
  t = fdl_npy_tensor(np);
  assert_int_equal(t->dtype, FDL_DTYPE_F16);
  assert_true(fdl_f16_to_f32((uint16_t)(t->data[0] | t->data[1] << 8)) == 1.0f);
  fdl_npy_close(np);
}

static void expect_sha(const void *p, size_t n, const char *want) {
  fdl_sha256 d;
  char hex[FDL_SHA256_HEX_LEN + 1];
  assert_int_equal(fdl_sha256_buf(p, n, &d, NULL), FDL_OK);
  fdl_sha256_hex(&d, hex);
  assert_string_equal(hex, want);
}

/* COMPARISON-RECEIPT §8.2: all-zero float64 vectors, header 128 bytes, known digests. */
static void test_npy_write_receipt_constants(void **state) {
  (void)state;
  static const struct {
    int64_t n;
    const char *sha;
  } cases[] = {
      {252, "896ad5b6b732dce1588636c3af3a8a93af8eb1250df72809f6e26fc29914f65d"},
      {51175, "3ffddc61af8350782afd24c7a69de1f37c260bf5489c4e0f6e3ad89b0ab9be17"},
      {1048064, "8be5dccaf885d7dadca697c4d54cff60d1c8c8333b57761c31d882c9f9ec9e5d"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    int64_t n = cases[i].n;
    double *zeros = calloc((size_t)n, sizeof *zeros);
    assert_non_null(zeros);
    fdl_buf head;
    fdl_buf_init(&head, 0);
    assert_int_equal(fdl_npy_header(FDL_DTYPE_F64, 1, &n, &head, NULL), FDL_OK);
    assert_int_equal(head.len, 128);
    assert_int_equal((uint8_t)head.data[8], 118);
    char path[128];
    snprintf(path, sizeof path, "%s/kld-%zu.npy", tmpdir, i);
    fdl_err err = {0};
    if (fdl_npy_write(path, FDL_DTYPE_F64, 1, &n, zeros, &err) != FDL_OK) fail_msg("%s", err.msg);
    fdl_npy *np = NULL;
    if (fdl_npy_open(path, &np, &err) != FDL_OK) fail_msg("%s", err.msg);
    const fdl_tensor *t = fdl_npy_tensor(np);
    assert_int_equal(t->offset, 128);
    expect_sha(t->data - 128, 128 + (size_t)t->nbytes, cases[i].sha);
    fdl_npy_close(np);
    assert_int_equal(fdl_npy_write(path, FDL_DTYPE_F64, 1, &n, zeros, &err), FDL_EXISTS);
    fdl_buf_free(&head);
    free(zeros);
  }
  /* Scalar and 3-D headers, and dtypes the writer refuses. */
  fdl_buf head;
  fdl_buf_init(&head, 0);
  assert_int_equal(fdl_npy_header(FDL_DTYPE_BOOL, 0, NULL, &head, NULL), FDL_OK);
  assert_non_null(
      strstr(head.data + 10, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
  assert_int_equal(head.len % 64, 0);
  fdl_buf_reset(&head);
  int64_t s3[3] = {2, 3, 4};
  assert_int_equal(fdl_npy_header(FDL_DTYPE_I32, 3, s3, &head, NULL), FDL_OK);
  assert_non_null(strstr(head.data + 10, "'shape': (2, 3, 4), }                    "));
  assert_int_equal(head.len % 64, 0);
  assert_int_equal(head.data[head.len - 1], '\n');
  fdl_buf_reset(&head);
  assert_int_equal(fdl_npy_header(FDL_DTYPE_BF16, 1, s3, &head, NULL), FDL_UNSUPPORTED);
  int64_t neg = -1;
  assert_int_equal(fdl_npy_header(FDL_DTYPE_F32, 1, &neg, &head, NULL), FDL_INVALID);
  fdl_buf_free(&head);
}

/* A FIFO where a tensor file should be is refused at once: opening it for reading must not block
 * waiting for a writer (the alarm turns a hang into a failure). */
static void test_fifo_refused(void **state) {
  (void)state;
  char path[128];
  snprintf(path, sizeof path, "%s/fifo.safetensors", tmpdir);
  assert_int_equal(mkfifo(path, 0600), 0);
  alarm(10);
  fdl_err err;
  fdl_safetensors *st = NULL;
  assert_int_equal(fdl_safetensors_open(path, &st, &err), FDL_IO);
  assert_non_null(strstr(err.msg, "not a regular file"));
  fdl_npy *npy = NULL;
  assert_int_equal(fdl_npy_open(path, &npy, &err), FDL_IO);
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(fdl_read_file(path, 1024, &text, &len, &err), FDL_IO);
  alarm(0);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bf16_exhaustive), cmocka_unit_test(test_f16_exhaustive),
      cmocka_unit_test(test_f32_to_bf16),     cmocka_unit_test(test_dtype_table),
      cmocka_unit_test(test_st_refusals),     cmocka_unit_test(test_st_valid),
      cmocka_unit_test(test_st_write),        cmocka_unit_test(test_npy_refusals),
      cmocka_unit_test(test_npy_read),        cmocka_unit_test(test_npy_write_receipt_constants),
      cmocka_unit_test(test_fifo_refused),
  };
  return cmocka_run_group_tests(tests, make_tmp, remove_tmp);
}
