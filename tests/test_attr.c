/* test_attr.c - the attribution library (src/attr) on small vectors worked by hand: the
 * compare_logits metrics and tie rules, compare_boundary and its refusals, the first-maximum
 * rule of largest_relative_error_growth, the shortest-f32 value of a candidate logit, and the
 * vector digest. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"

static void expect_digest(const fdl_sha256 *d, const char *want) {
  char hex[FDL_SHA256_HEX_BUF];
  fdl_sha256_hex(d, hex);
  assert_string_equal(hex, want);
}

static void test_logits_small(void **state) {
  (void)state;
  const float a[4] = {1.0f, 3.0f, -2.0f, 3.0f};
  const float r[4] = {1.0f, 2.0f, -2.0f, 4.0f};
  const uint64_t cand[3] = {3, 1, 0};
  fdl_attr_logits o;
  fdl_attr_candidate c[3];
  assert_int_equal(fdl_attr_compare_logits(a, r, 4, cand, 3, &o, c, NULL), FDL_OK);
  assert_int_equal(o.argmax, 1); /* tie 1 and 3: the lowest index */
  assert_int_equal(o.reference_argmax, 3);
  assert_false(o.argmax_equal);
  /* dot = 1 + 6 + 4 + 12 = 23, an = 1 + 9 + 4 + 9 = 23, rn = 1 + 4 + 4 + 16 = 25 */
  assert_true(o.cosine_similarity == 23.0 / (sqrt(23.0) * sqrt(25.0)));
  assert_true(o.max_abs_error == 1.0);
  assert_true(o.mean_abs_error == 0.5);
  assert_int_equal(o.k, 4);
  assert_int_equal(o.top10_overlap, 4);
  assert_int_equal(c[0].token_id, 3);
  assert_int_equal(c[0].rank, 2); /* A[1] == A[3] and 1 < 3 */
  assert_int_equal(c[1].rank, 1);
  assert_int_equal(c[2].rank, 3);
  assert_true(c[2].logit == 1.0f);
  /* sha256 of the 16 LE bytes of a, computed independently with the digest module */
  const uint8_t le[16] = {0, 0, 0x80, 0x3f, 0, 0, 0x40, 0x40, 0, 0, 0, 0xc0, 0, 0, 0x40, 0x40};
  fdl_sha256 want;
  assert_int_equal(fdl_sha256_buf(le, sizeof le, &want, NULL), FDL_OK);
  assert_memory_equal(o.logits_sha256.bytes, want.bytes, 32);
  expect_digest(
      &o.logits_sha256,
      "b951420c0f9ae19345bc89f9e116f8e805b5e9dd6b249d1a337101f58a57ed26"); /* Python hashlib */
}

static void test_total_order(void **state) {
  (void)state;
  const float z[3] = {-0.0f, 0.0f, -1.0f};
  uint64_t idx[10];
  assert_int_equal(fdl_attr_topk(z, 3, 10, idx), 3);
  assert_int_equal(idx[0], 1); /* +0.0 above -0.0 */
  assert_int_equal(idx[1], 0);
  assert_int_equal(idx[2], 2);
  /* 12 equal values: the first ten indices, in order */
  float e[12];
  for (int i = 0; i < 12; i++) e[i] = 7.0f;
  assert_int_equal(fdl_attr_topk(e, 12, 10, idx), 10);
  for (uint64_t i = 0; i < 10; i++) assert_int_equal(idx[i], i);
  /* descending values arriving in ascending order, then a larger one late */
  float d[12] = {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 100};
  assert_int_equal(fdl_attr_topk(d, 12, 10, idx), 10);
  assert_int_equal(idx[0], 11);
  assert_int_equal(idx[9], 8);
}

static void test_logits_refusals(void **state) {
  (void)state;
  float a[2] = {1.0f, NAN}, r[2] = {1.0f, 2.0f};
  fdl_attr_logits o;
  fdl_attr_candidate c[1];
  fdl_err err = {0};
  assert_int_equal(fdl_attr_compare_logits(a, r, 0, NULL, 0, &o, c, &err), FDL_BOUNDS);
  assert_int_equal(fdl_attr_compare_logits(a, r, 2, NULL, 0, &o, c, &err), FDL_NONFINITE);
  assert_non_null(strstr(err.msg, "actual logits: element 1 is NaN"));
  a[1] = 2.0f;
  r[0] = INFINITY;
  assert_int_equal(fdl_attr_compare_logits(a, r, 2, NULL, 0, &o, c, &err), FDL_NONFINITE);
  assert_non_null(strstr(err.msg, "reference logits: element 0 is infinite"));
  r[0] = 1.0f;
  const uint64_t bad = 2;
  assert_int_equal(fdl_attr_compare_logits(a, r, 2, &bad, 1, &o, c, &err), FDL_BOUNDS);
  const float zero[2] = {0.0f, -0.0f};
  assert_int_equal(fdl_attr_compare_logits(zero, r, 2, NULL, 0, &o, c, &err), FDL_REFUSED);
  /* length 1 */
  assert_int_equal(fdl_attr_compare_logits(a, r, 1, NULL, 0, &o, c, &err), FDL_OK);
  assert_int_equal(o.k, 1);
  assert_int_equal(o.top10_overlap, 1);
  assert_true(o.cosine_similarity == 1.0);
}

static void test_boundary(void **state) {
  (void)state;
  const float h[4] = {1.0f, -1.0f, 1.0f, -1.0f};
  const float k[4] = {1.0f, -1.0f, 1.0f, 1.0f};
  fdl_attr_boundary b;
  assert_int_equal(fdl_attr_compare_boundary(k, h, 4, &b, NULL), FDL_OK);
  /* d = [0,0,0,2]: sq 4, rmse 1; hh 4, ref_rms 1; dot 2, kk 4 */
  assert_true(b.root_mean_square_error == 1.0);
  assert_true(b.reference_root_mean_square == 1.0);
  assert_true(b.relative_root_mean_square_error == 1.0);
  assert_true(b.cosine_similarity == 0.5);
  assert_true(b.max_abs_error == 2.0);
  assert_true(b.mean_abs_error == 0.5);
  fdl_sha256 want;
  assert_int_equal(fdl_sha256_buf(h, sizeof h, &want, NULL), FDL_OK);
  assert_memory_equal(b.hf_sha256.bytes, want.bytes, 32);
  const float zero[4] = {0};
  fdl_err err = {0};
  assert_int_equal(fdl_attr_compare_boundary(k, zero, 4, &b, &err), FDL_REFUSED);
  assert_non_null(strstr(err.msg, "reference"));
  assert_int_equal(fdl_attr_compare_boundary(zero, h, 4, &b, &err), FDL_REFUSED);
  assert_non_null(strstr(err.msg, "actual"));
  assert_int_equal(fdl_attr_compare_boundary(k, h, 0, &b, &err), FDL_BOUNDS);
  const float nan4[4] = {1.0f, NAN, 1.0f, 1.0f};
  assert_int_equal(fdl_attr_compare_boundary(k, nan4, 4, &b, &err), FDL_NONFINITE);
  assert_non_null(strstr(err.msg, "reference element 1 is NaN"));
}

static void test_growth(void **state) {
  (void)state;
  size_t i;
  double d;
  const double tie[4] = {0.25, 0.5, 0.75, 0.5}; /* deltas 0.25, 0.25, 0.25, -0.25 */
  fdl_attr_largest_growth(tie, 4, &i, &d);
  assert_int_equal(i, 0);
  assert_true(d == 0.25);
  const double later[4] = {0.1, 0.1, 0.5, 1.0}; /* deltas 0.1, 0, 0.4, 0.5 */
  fdl_attr_largest_growth(later, 4, &i, &d);
  assert_int_equal(i, 3);
  assert_true(d == 1.0 - 0.5);
  const double mid_tie[5] = {0.0, 0.5, 0.5, 1.0, 1.0}; /* deltas 0, .5, 0, .5, 0 */
  fdl_attr_largest_growth(mid_tie, 5, &i, &d);
  assert_int_equal(i, 1);
  const double falling[3] = {0.0, -1.0, -3.0}; /* deltas 0, -1, -2: index 0 */
  fdl_attr_largest_growth(falling, 3, &i, &d);
  assert_int_equal(i, 0);
  assert_true(d == 0.0);
}

static void test_f32_shortest(void **state) {
  (void)state;
  char buf[32];
  fdl_attr_f32_shortest(0.1f, buf, sizeof buf);
  assert_string_equal(buf, "0.1");
  assert_true(fdl_attr_f32_json_value(0.1f) == 0.1);
  assert_true(fdl_attr_f32_json_value(18.625f) == 18.625);
  fdl_attr_f32_shortest(16777216.0f, buf, sizeof buf);
  assert_string_equal(buf, "16777216");
  fdl_attr_f32_shortest(3.4028235e38f, buf, sizeof buf);
  assert_string_equal(buf, "3.4028235e+38");
  fdl_attr_f32_shortest(1e-45f, buf, sizeof buf);
  assert_string_equal(buf, "1e-45");
  fdl_attr_f32_shortest(-0.0f, buf, sizeof buf);
  assert_string_equal(buf, "-0");
  assert_true(signbit(fdl_attr_f32_json_value(-0.0f)));
  /* every value round-trips */
  for (uint32_t u = 0x00000001u; u < 0x7f800000u; u += 0x00012345u) {
    float f;
    memcpy(&f, &u, sizeof f);
    fdl_attr_f32_shortest(f, buf, sizeof buf);
    assert_true(strtof(buf, NULL) == f);
    assert_true((float)fdl_attr_f32_json_value(f) == f);
  }
}

static void test_matrix_read_missing(void **state) {
  (void)state;
  fdl_attr_matrix m;
  fdl_err err = {0};
  assert_int_not_equal(fdl_attr_matrix_read("/nonexistent/x.f32", NULL, &m, &err), FDL_OK);
  assert_null(m.data);
  assert_non_null(strstr(err.msg, "/nonexistent/x.f32"));
  fdl_attr_matrix_free(&m);
  fdl_attr_matrix_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_logits_small),
      cmocka_unit_test(test_total_order),
      cmocka_unit_test(test_logits_refusals),
      cmocka_unit_test(test_boundary),
      cmocka_unit_test(test_growth),
      cmocka_unit_test(test_f32_shortest),
      cmocka_unit_test(test_matrix_read_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
