/* test_qdot.c - the fused decode-and-multiply kernels (src/gguf/qdot.h) against their
 * definition: every row of B decoded by the scalar reference decoder (fdl_ggml_dequant_isa,
 * scalar), then each element the contract's chain c = fmaf(a[k], w[k], c) from +0.0 over k
 * ascending, a NaN stored as the GEMM's canonical NaN. Bits must be equal (memcmp) for Q4_K and
 * Q6_K, 1 to 4 rows of A, row counts that leave every kind of short last group, several depths,
 * random blocks with random finite scales (the maximum f16 included), and A holding zeros,
 * signed zeros, huge values (overflow to infinity) and a NaN.
 *
 * The kernels exist for AVX2+FMA+F16C; on a CPU without them the engine never takes this path,
 * and the test exits 77 (skipped), which CI allows only when /proc/cpuinfo lacks avx2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/ggml_quant.h"
#include "gguf/qdot.h"
#include "num/gemm.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

/* splitmix64 */
static uint64_t next(void) {
  uint64_t z = (rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* A random finite f16 (any sign, exponent below 31), sometimes the largest one. */
static uint16_t finite_f16(void) {
  uint64_t r = next();
  if (r % 16 == 0) return (uint16_t)(r & 0x8000u) | 0x7bffu;
  return (uint16_t)((r & 0x83ffu) | (((r >> 16) % 31) << 10));
}

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

/* n rows of k values of ggml type id: random bytes, the f16 scales made finite. */
static uint8_t *random_rows(uint32_t id, size_t n, size_t k, size_t *row_bytes) {
  const fdl_ggml_type_info *t = fdl_ggml_type(id);
  size_t blocks = k / t->block_elems;
  *row_bytes = blocks * t->block_bytes;
  uint8_t *b = malloc(n * *row_bytes);
  assert_non_null(b);
  for (size_t i = 0; i < n * *row_bytes; i++) b[i] = (uint8_t)next();
  for (size_t i = 0; i < n * blocks; i++) {
    uint8_t *blk = b + i * t->block_bytes;
    if (id == 12) { /* q4_K: d, dmin first */
      put16(blk, finite_f16());
      put16(blk + 2, finite_f16());
    } else { /* q6_K: d last */
      put16(blk + 208, finite_f16());
    }
  }
  return b;
}

static float rand_a(void) {
  uint64_t r = next();
  switch (r % 64) {
  case 0:
    return 0.0f;
  case 1:
    return -0.0f;
  case 2:
    return 3e38f;
  default:
    return (float)((double)(int64_t)(r >> 11) / (double)(1ull << 52)) * 4.0f;
  }
}

static float canonical(float v) {
  return v != v ? fdl_gemm_bits_f32(FDL_GEMM_NAN_BITS) : v;
}

static void check(uint32_t id, size_t m, size_t n, size_t k, int with_nan) {
  fdl_dq_kernel dec;
  fdl_err e;
  assert_int_equal(fdl_ggml_decoder(id, FDL_NUM_ISA_AVX2, &dec, &e), FDL_OK);
  fdl_qdot_kernel q = fdl_ggml_qdot(dec);
  assert_non_null(q);
  size_t rb;
  uint8_t *b = random_rows(id, n, k, &rb);
  float *a = malloc(m * k * sizeof *a), *w = malloc(k * sizeof *w);
  float *want = malloc(m * n * sizeof *want), *got = malloc(m * n * sizeof *got);
  assert_true(a && w && want && got);
  for (size_t i = 0; i < m * k; i++) a[i] = rand_a();
  if (with_nan) a[(m - 1) * k + k / 2] = NAN;
  for (size_t j = 0; j < n; j++) {
    assert_int_equal(fdl_ggml_dequant_isa(id, FDL_NUM_ISA_SCALAR, b + j * rb, k, w, &e), FDL_OK);
    for (size_t i = 0; i < m; i++) {
      float c = 0.0f;
      for (size_t kk = 0; kk < k; kk++) c = fmaf(a[i * k + kk], w[kk], c);
      want[i * n + j] = canonical(c);
    }
  }
  const float *ap[FDL_QDOT_MAX_M];
  float *cp[FDL_QDOT_MAX_M];
  const uint8_t **rows = malloc(n * sizeof *rows);
  assert_non_null(rows);
  for (size_t j = 0; j < n; j++) rows[j] = b + j * rb;
  for (size_t i = 0; i < m; i++) {
    ap[i] = a + i * k;
    cp[i] = got + i * n;
  }
  memset(got, 0xA5, m * n * sizeof *got);
  q(ap, m, k, rows, n, cp);
  for (size_t i = 0; i < m * n; i++)
    if (memcmp(&want[i], &got[i], sizeof *got))
      fail_msg("type %u m %zu n %zu k %zu: element (%zu, %zu) is %a, expected %a", id, m, n, k,
               i / n, i % n, (double)got[i], (double)want[i]);
  free(rows);
  free(a);
  free(w);
  free(want);
  free(got);
  free(b);
}

static void test_shapes(void **state) {
  (void)state;
  static const uint32_t types[] = {12, 14};
  static const size_t ns[] = {1, 5, 8, 9, 31, 32, 33, 70};
  static const size_t ks[] = {256, 512, 1280};
  for (size_t t = 0; t < 2; t++)
    for (size_t m = 1; m <= FDL_QDOT_MAX_M; m++)
      for (size_t ni = 0; ni < sizeof ns / sizeof *ns; ni++)
        for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++)
          check(types[t], m, ns[ni], ks[ki], 0);
}

static void test_nan_in_a(void **state) {
  (void)state;
  for (size_t m = 1; m <= FDL_QDOT_MAX_M; m++) {
    check(12, m, 40, 512, 1);
    check(14, m, 40, 512, 1);
  }
}

/* Only the AVX2 decoders have fused kernels; the others decode and multiply. */
static void test_which(void **state) {
  (void)state;
  fdl_dq_kernel dec;
  fdl_err e;
  for (uint32_t id = 0; id < 64; id++) {
    const fdl_ggml_type_info *t = fdl_ggml_type(id);
    if (!t || !t->dequant) continue;
    assert_int_equal(fdl_ggml_decoder(id, FDL_NUM_ISA_SCALAR, &dec, &e), FDL_OK);
    assert_null(fdl_ggml_qdot(dec));
    assert_int_equal(fdl_ggml_decoder(id, FDL_NUM_ISA_AVX2, &dec, &e), FDL_OK);
    if (id == 12 || id == 14)
      assert_non_null(fdl_ggml_qdot(dec));
    else
      assert_null(fdl_ggml_qdot(dec));
  }
}

int main(void) {
  fdl_dq_kernel dec;
  fdl_err e = {.msg = "no fused kernel in this build"};
  if (fdl_ggml_decoder(12, FDL_NUM_ISA_AVX2, &dec, &e) != FDL_OK || !fdl_ggml_qdot(dec)) {
    printf("test_qdot: skipped: this CPU or build has no AVX2 kernels (%s)\n", e.msg);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_nan_in_a),
      cmocka_unit_test(test_which),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
