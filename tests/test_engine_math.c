/* test_engine_math.c - the engine's own elementary functions and scalar kernels
 * (src/engine/mathfn.c, kernels.c) against libm in float64: sin and cos to 1e-15 absolute over
 * the RoPE angle range, log to 2 ulp, the RoPE frequencies; RMSNorm, softmax, SiLU and the
 * argmax rules against direct float64 formulas; and the API's argument checks. libm is a fine
 * judge here: the engine avoids it for bit-identity across CPUs, not for accuracy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

static void test_sincos(void **state) {
  (void)state;
  double worst = 0.0;
  /* Angles pos * inv_freq: from 0 to past 2^17 positions, plus points near multiples of pi/2. */
  for (int i = 0; i < 200000; i++) {
    double x = i < 100000 ? (double)i * 1.3717 : (double)(i - 100000) * 1.5707963267948966;
    double s, c;
    fdl_eng_sincos(x, &s, &c);
    double e = fmax(fabs(s - sin(x)), fabs(c - cos(x)));
    worst = e > worst ? e : worst;
  }
  for (int i = -1000; i <= 1000; i++) {
    double x = (double)i * 0.0123, s, c;
    fdl_eng_sincos(x, &s, &c);
    double e = fmax(fabs(s - sin(x)), fabs(c - cos(x)));
    worst = e > worst ? e : worst;
  }
  printf("sin/cos: worst absolute error %.3g\n", worst);
  assert_true(worst <= 1e-15);
}

static void test_log(void **state) {
  (void)state;
  double worst = 0.0;
  double xs[] = {1.0, 2.0, 10000.0, 500000.0, 1000000.0, 0.5, 1e-300, 1e300, 3.0, 0.70710678};
  for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
    double l = fdl_eng_log(xs[i]), r = log(xs[i]);
    double e = r == 0 ? fabs(l) : fabs(l - r) / fabs(r);
    worst = e > worst ? e : worst;
  }
  for (int i = 1; i < 100000; i++) {
    double x = (double)i * 0.37 + 1e-3;
    double l = fdl_eng_log(x), r = log(x);
    double e = fabs(l - r) / fmax(fabs(r), 1e-300);
    worst = e > worst ? e : worst;
  }
  printf("log: worst relative error %.3g\n", worst);
  assert_true(worst <= 5e-16);
  assert_true(fdl_eng_log(1.0) == 0.0);
}

static void test_rope_freqs(void **state) {
  (void)state;
  const double thetas[] = {10000.0, 1000000.0, 500000.0};
  for (size_t t = 0; t < 3; t++)
    for (size_t i = 0; i < 64; i++) {
      double want = pow(thetas[t], -(double)(2 * i) / 128.0);
      double got = fdl_num_exp_neg(-((double)(2 * i) / 128.0) * fdl_eng_log(thetas[t]));
      assert_true(fabs(got - want) <= 4e-15 * want);
    }
}

static void test_rmsnorm(void **state) {
  (void)state;
  float x[37], w[37], y[37];
  double ss = 0;
  for (int i = 0; i < 37; i++) {
    x[i] = (float)sin(i * 0.7) * 3.0f;
    w[i] = 1.0f + 0.01f * (float)i;
    ss += (double)x[i] * x[i];
  }
  fdl_eng_rmsnorm(x, w, 37, 1e-6, y);
  for (int i = 0; i < 37; i++) {
    double want = x[i] / sqrt(ss / 37 + 1e-6) * w[i];
    assert_true(fabs(y[i] - want) <= 1e-6 * fabs(want) + 1e-30);
  }
  fdl_eng_rmsnorm(x, w, 37, 1e-6, x); /* in place gives the same bits */
  assert_memory_equal(x, y, sizeof y);
}

static void test_softmax(void **state) {
  (void)state;
  float s[10] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 99.0f, 99.0f, 7.0f, 7.0f, 7.0f};
  double scale = 0.25;
  float ref[10];
  memcpy(ref, s, sizeof s);
  double e[10];
  fdl_num_softmax_row(s, 0, 5, 10, scale, e);
  double sum = 0;
  for (int j = 0; j < 5; j++) sum += exp(scale * (ref[j] - 3.0));
  for (int j = 0; j < 5; j++) assert_true(fabs(s[j] - exp(scale * (ref[j] - 3.0)) / sum) <= 1e-7);
  for (int j = 5; j < 10; j++) assert_true(s[j] == 0.0f && !signbit(s[j]));
  /* a sliding window: keys [2, 5) only, the max taken over them (3, not 99 past the query) */
  memcpy(s, ref, sizeof s);
  fdl_num_softmax_row(s, 2, 5, 10, scale, e);
  sum = 0;
  for (int j = 2; j < 5; j++) sum += exp(scale * (ref[j] - 3.0));
  for (int j = 2; j < 5; j++) assert_true(fabs(s[j] - exp(scale * (ref[j] - 3.0)) / sum) <= 1e-7);
  for (int j = 0; j < 10; j++)
    if (j < 2 || j >= 5) assert_true(s[j] == 0.0f && !signbit(s[j]));
}

static void test_silu(void **state) {
  (void)state;
  float g[9] = {-100.0f, -10.0f, -1.0f, -1e-3f, 0.0f, 1e-3f, 1.0f, 10.0f, 100.0f};
  float u[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  float ref[9];
  memcpy(ref, g, sizeof g);
  fdl_num_silu_mul(g, u, 9);
  for (int i = 0; i < 9; i++) {
    double want = ref[i] / (1.0 + exp(-(double)ref[i])) * u[i];
    assert_true(fabs(g[i] - want) <= 1e-7 * fabs(want) + 1e-40);
  }
}

/* The FMA build of softmax, SiLU and the multiply-accumulate gives the plain build's bits (where
 * this CPU has FMA). */
static void test_fma_clone_bits(void **state) {
  (void)state;
  enum { N = 4099 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *u = malloc(N * sizeof *u);
  double *e = malloc(N * sizeof *e);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(u);
  assert_non_null(e);
  uint64_t x = 88172645463325252u;
  for (int rep = 0; rep < 20; rep++) {
    for (int i = 0; i < N; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      a[i] = (float)((double)(x >> 11) * 0x1p-53 - 0.5) * (float)(1 << (rep % 8)) * 8.0f;
      u[i] = (float)((double)(x & 0xffff) / 65536.0 - 0.5);
    }
    memcpy(b, a, N * sizeof *a);
    if (!fdl_num_silu_fma(a, u, N)) {
      printf("no FMA build on this CPU: the plain copy is the only one\n");
      break;
    }
    fdl_num_silu_plain(b, u, N);
    assert_memory_equal(a, b, N * sizeof *a);
    memcpy(b, a, N * sizeof *a);
    assert_true(fdl_num_softmax_fma(a, rep % 3, N - rep, N, 0.125 * (rep + 1), e));
    fdl_num_softmax_plain(b, rep % 3, N - rep, N, 0.125 * (rep + 1), e);
    assert_memory_equal(a, b, N * sizeof *a);
    /* the DeltaNet multiply-accumulate: C[7, 37] += A[7, 61] B[61, 37] (columns past the last
     * 8-wide block included), AVX2 against plain */
    memcpy(b, a, 7 * 37 * sizeof *a);
    assert_true(fdl_num_mm_acc_avx2(a, 37, u, 61, u + 7 * 61, 37, 7, 61, 37));
    fdl_num_mm_acc_plain(b, 37, u, 61, u + 7 * 61, 37, 7, 61, 37);
    assert_memory_equal(a, b, 7 * 37 * sizeof *a);
  }
  free(a), free(b), free(u), free(e);
}

static void test_argmax(void **state) {
  (void)state;
  float a[6] = {NAN, 1.0f, 5.0f, 5.0f, NAN, 2.0f};
  float best = 0;
  int64_t arg = -1;
  fdl_eng_argmax_chunk(a, 6, 100, &best, &arg);
  assert_int_equal(arg, 102); /* first of the tie; NaN never wins */
  float b[2] = {5.0f, 6.0f};
  fdl_eng_argmax_chunk(b, 2, 200, &best, &arg);
  assert_int_equal(arg, 201);
}

static void test_load_errors(void **state) {
  (void)state;
  fdl_model *m = (fdl_model *)1;
  fdl_err err = {0};
  assert_int_equal(fdl_model_load("/nonexistent-fidelis-model", NULL, &m, &err), FDL_IO);
  assert_null(m);
  assert_non_null(strstr(err.msg, "config.json"));
  fdl_model_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sincos),      cmocka_unit_test(test_log),
      cmocka_unit_test(test_rope_freqs),  cmocka_unit_test(test_rmsnorm),
      cmocka_unit_test(test_softmax),     cmocka_unit_test(test_silu),
      cmocka_unit_test(test_argmax),      cmocka_unit_test(test_fma_clone_bits),
      cmocka_unit_test(test_load_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
