/* test_gptq.c - fdl_gptq_reconstruct, the decode the engine loads GPTQ-v1 checkpoints with:
 * a round trip through fdl_gptq_quantize_matrix, unaligned views, and every refusal it promises
 * before reading (missing parts, wrong dtypes, wrong shapes, short data, g_idx out of range,
 * non-finite scales, dimensions that cannot be packed); and fdl_gptq_quantize_matrix's own
 * refusals (non-finite weights, a range beyond F16). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"

#define OUT 16
#define IN 64
#define GROUP 32
#define GROUPS (IN / GROUP)

typedef struct {
  float w[OUT * IN];
  uint8_t qw[IN / 8 * OUT * 4], qz[GROUPS * OUT / 8 * 4], sc[GROUPS * OUT * 2], gi[IN * 4];
  fdl_tensor t[4];
  int64_t shapes[4][2];
} fixture;

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static fdl_tensor view(const char *name, fdl_dtype dt, int ndim, int64_t d0, int64_t d1,
                       const uint8_t *data) {
  fdl_tensor t;
  memset(&t, 0, sizeof t);
  t.name = name;
  t.dtype = dt;
  t.ndim = ndim;
  t.shape[0] = d0;
  t.shape[1] = d1;
  t.nbytes = (uint64_t)d0 * (uint64_t)(ndim == 2 ? d1 : 1) * fdl_dtype_size(dt);
  t.data = data;
  return t;
}

/* A deterministic matrix with a spread, quantized and serialized as a checkpoint stores it. */
static void make(fixture *f) {
  memset(f, 0, sizeof *f);
  for (size_t i = 0; i < OUT * IN; i++)
    f->w[i] = (float)((int)((i * 2654435761u) % 1001) - 500) / 256.0f;
  uint32_t qw[IN / 8 * OUT], qz[GROUPS * OUT / 8];
  uint16_t sc[GROUPS * OUT];
  int32_t gi[IN];
  fdl_err err;
  assert_int_equal(fdl_gptq_quantize_matrix(f->w, OUT, IN, GROUP, qw, qz, sc, gi, &err), FDL_OK);
  for (size_t i = 0; i < IN / 8 * OUT; i++) put32(f->qw + 4 * i, qw[i]);
  for (size_t i = 0; i < GROUPS * OUT / 8; i++) put32(f->qz + 4 * i, qz[i]);
  for (size_t i = 0; i < GROUPS * OUT; i++)
    f->sc[2 * i] = (uint8_t)sc[i], f->sc[2 * i + 1] = (uint8_t)(sc[i] >> 8);
  for (size_t i = 0; i < IN; i++) put32(f->gi + 4 * i, (uint32_t)gi[i]);
  f->t[0] = view("x.qweight", FDL_DTYPE_I32, 2, IN / 8, OUT, f->qw);
  f->t[1] = view("x.qzeros", FDL_DTYPE_I32, 2, GROUPS, OUT / 8, f->qz);
  f->t[2] = view("x.scales", FDL_DTYPE_F16, 2, GROUPS, OUT, f->sc);
  f->t[3] = view("x.g_idx", FDL_DTYPE_I32, 1, IN, 0, f->gi);
}

static fdl_status rec(const fixture *f, float *w, fdl_err *err) {
  const fdl_gptq_format fmt = {GROUP, 4, false};
  return fdl_gptq_reconstruct(&f->t[0], &f->t[1], &f->t[2], &f->t[3], IN, OUT, &fmt, w, err);
}

/* The decode equals the analytic (q - zero) * scale and lies within about half a step. */
static void test_round_trip(void **state) {
  (void)state;
  fixture *f = malloc(sizeof *f);
  make(f);
  float *w = malloc(sizeof(float) * OUT * IN);
  fdl_err err = {FDL_OK, ""};
  assert_int_equal(rec(f, w, &err), FDL_OK);
  for (size_t o = 0; o < OUT; o++)
    for (size_t i = 0; i < IN; i++) {
      size_t g = i / GROUP;
      float s =
          fdl_f16_to_f32((uint16_t)(f->sc[2 * (g * OUT + o)] | f->sc[2 * (g * OUT + o) + 1] << 8));
      uint32_t word = (uint32_t)f->qw[4 * ((i / 8) * OUT + o)] |
                      (uint32_t)f->qw[4 * ((i / 8) * OUT + o) + 1] << 8 |
                      (uint32_t)f->qw[4 * ((i / 8) * OUT + o) + 2] << 16 |
                      (uint32_t)f->qw[4 * ((i / 8) * OUT + o) + 3] << 24;
      int q = (int)((word >> (4 * (i % 8))) & 15);
      uint32_t zw = (uint32_t)f->qz[4 * (g * OUT / 8 + o / 8)] |
                    (uint32_t)f->qz[4 * (g * OUT / 8 + o / 8) + 1] << 8 |
                    (uint32_t)f->qz[4 * (g * OUT / 8 + o / 8) + 2] << 16 |
                    (uint32_t)f->qz[4 * (g * OUT / 8 + o / 8) + 3] << 24;
      int z = (int)((zw >> (4 * (o % 8))) & 15) + 1;
      assert_true(z >= 1 && z <= 15);
      assert_true(w[o * IN + i] == (float)(q - z) * s);
      assert_true(fabsf(w[o * IN + i] - f->w[o * IN + i]) <= s * (0.5f + 16.0f / 2048.0f));
    }
  /* Unaligned views (safetensors data often starts at an odd offset) give the same bits. */
  uint8_t *shifted = malloc(sizeof f->qw + 1);
  memcpy(shifted + 1, f->qw, sizeof f->qw);
  f->t[0].data = shifted + 1;
  float *w2 = malloc(sizeof(float) * OUT * IN);
  assert_int_equal(rec(f, w2, &err), FDL_OK);
  assert_memory_equal(w, w2, sizeof(float) * OUT * IN);
  free(shifted);
  free(w2);
  free(w);
  free(f);
}

/* Each bad case: the status, and a message naming what was wrong. */
static void expect(const fixture *f, size_t in, size_t out, size_t group, fdl_status want,
                   const char *word) {
  float *w = calloc(IN * OUT + 64, sizeof *w);
  fdl_err err = {FDL_OK, ""};
  const fdl_gptq_format fmt = {group, 4, false};
  fdl_status s =
      fdl_gptq_reconstruct(&f->t[0], &f->t[1], &f->t[2], &f->t[3], in, out, &fmt, w, &err);
  if (s != want || !strstr(err.msg, word))
    fail_msg("status %s (want %s), message '%s' (want '%s')", fdl_status_name(s),
             fdl_status_name(want), err.msg, word);
  free(w);
}

static void test_shapes_and_dtypes(void **state) {
  (void)state;
  fixture *f = malloc(sizeof *f);
  make(f);
  fixture g;
  /* dimensions that cannot be packed or grouped */
  expect(f, IN, OUT, 0, FDL_INVALID, "group");
  expect(f, IN - 4, OUT, 4, FDL_UNSUPPORTED, "multiples of 8");
  expect(f, IN, OUT - 4, GROUP, FDL_UNSUPPORTED, "multiples of 8");
  expect(f, IN, OUT, 24, FDL_UNSUPPORTED, "does not divide");
  /* in, out or group that disagree with the views */
  expect(f, IN + 8, OUT, 8, FDL_MISMATCH, "x.qweight has shape [8, 16], expected [9, 16]");
  expect(f, IN, OUT + 8, GROUP, FDL_MISMATCH, "x.qweight");
  expect(f, IN, OUT, 16, FDL_MISMATCH, "x.qzeros has shape [2, 2], expected [4, 2]");
  /* wrong dtypes */
  static const fdl_dtype wrong[4] = {FDL_DTYPE_U32, FDL_DTYPE_F32, FDL_DTYPE_BF16, FDL_DTYPE_I64};
  static const char *const names[4] = {"x.qweight", "x.qzeros", "x.scales", "x.g_idx"};
  for (int k = 0; k < 4; k++) {
    g = *f;
    g.t[k].dtype = wrong[k];
    expect(&g, IN, OUT, GROUP, FDL_MISMATCH, names[k]);
  }
  /* wrong ranks and shapes */
  g = *f;
  g.t[3].ndim = 2;
  g.t[3].shape[1] = 1;
  expect(&g, IN, OUT, GROUP, FDL_MISMATCH, "x.g_idx has shape [64, 1], expected [64]");
  g = *f;
  g.t[2].shape[0] = 1, g.t[2].shape[1] = 2 * OUT;
  expect(&g, IN, OUT, GROUP, FDL_MISMATCH, "x.scales");
  g = *f;
  g.t[1].shape[0] = -2;
  expect(&g, IN, OUT, GROUP, FDL_MISMATCH, "x.qzeros");
  /* a view whose bytes do not match its shape, or that has none */
  g = *f;
  g.t[0].nbytes -= 4;
  expect(&g, IN, OUT, GROUP, FDL_BOUNDS, "x.qweight holds");
  g = *f;
  g.t[2].data = NULL;
  expect(&g, IN, OUT, GROUP, FDL_BOUNDS, "x.scales");
  /* a missing part */
  float w[IN * OUT];
  fdl_err err;
  assert_int_equal(fdl_gptq_reconstruct(&f->t[0], NULL, &f->t[2], &f->t[3], IN, OUT,
                                        &(fdl_gptq_format){GROUP, 4, false}, w, &err),
                   FDL_INVALID);
  assert_non_null(strstr(err.msg, "qzeros is missing"));
  assert_int_equal(rec(f, NULL, &err), FDL_INVALID);
  free(f);
}

static void test_g_idx_and_scales(void **state) {
  (void)state;
  fixture *f = malloc(sizeof *f);
  make(f);
  fixture *g = malloc(sizeof *g);
  *g = *f;
  put32(g->gi + 4 * 5, GROUPS); /* one past the last group */
  g->t[3].data = g->gi;
  expect(g, IN, OUT, GROUP, FDL_BOUNDS, "x.g_idx[5] = 2, expected a group in [0, 2)");
  *g = *f;
  put32(g->gi + 4 * 63, 0xffffffffu); /* -1 */
  g->t[3].data = g->gi;
  expect(g, IN, OUT, GROUP, FDL_BOUNDS, "x.g_idx[63] = -1");
  /* an act-order g_idx (any group per column) is decoded, not refused */
  *g = *f;
  for (size_t i = 0; i < IN; i++) put32(g->gi + 4 * i, (uint32_t)(i % GROUPS));
  g->t[3].data = g->gi;
  g->t[0].data = g->qw, g->t[1].data = g->qz, g->t[2].data = g->sc;
  float *w = malloc(sizeof(float) * IN * OUT);
  fdl_err err;
  assert_int_equal(rec(g, w, &err), FDL_OK);
  free(w);
  /* a non-finite scale (0x7c00 is +inf, 0x7e00 NaN) */
  *g = *f;
  g->sc[2 * (1 * OUT + 3)] = 0x00, g->sc[2 * (1 * OUT + 3) + 1] = 0x7e;
  g->t[2].data = g->sc;
  expect(g, IN, OUT, GROUP, FDL_NONFINITE, "x.scales[1, 3]");
  free(g);
  free(f);
}

static void test_quantize_refusals(void **state) {
  (void)state;
  float w[8 * 8];
  uint32_t qw[8], qz[1];
  uint16_t sc[8];
  int32_t gi[8];
  fdl_err err;
  for (int i = 0; i < 64; i++) w[i] = (float)i / 64.0f;
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 8, qw, qz, sc, gi, &err), FDL_OK);
  w[19] = NAN;
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 8, qw, qz, sc, gi, &err), FDL_NONFINITE);
  assert_non_null(strstr(err.msg, "[2, 3] is NaN"));
  w[19] = -INFINITY;
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 8, qw, qz, sc, gi, &err), FDL_NONFINITE);
  assert_non_null(strstr(err.msg, "infinite"));
  w[19] = 1e6f; /* (1e6 - 0) / 15 is above 65504 */
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 8, qw, qz, sc, gi, &err), FDL_TOO_LARGE);
  assert_non_null(strstr(err.msg, "row 2"));
  w[19] = 9e5f; /* 9e5 / 15 = 60000 fits, and the zero point is 0: hi / 14 = 64286 still fits */
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 8, qw, qz, sc, gi, &err), FDL_OK);
  w[19] = 9.5e5f; /* 63333 fits, but the zero-0 fallback's hi / 14 = 67857 does not */
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 8, qw, qz, sc, gi, &err), FDL_TOO_LARGE);
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 12, 4, qw, qz, sc, gi, &err), FDL_UNSUPPORTED);
  assert_int_equal(fdl_gptq_quantize_matrix(w, 8, 8, 3, qw, qz, sc, gi, &err), FDL_UNSUPPORTED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_shapes_and_dtypes),
      cmocka_unit_test(test_g_idx_and_scales),
      cmocka_unit_test(test_quantize_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
