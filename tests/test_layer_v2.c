/* test_layer_v2.c - the layer-attribution helpers of src/attr/layer_v2.c on values worked by
 * hand: §13's 34 names against their rule, the kernel-policy enum, the names check, and
 * fdl_attr_layer_recompute on a 2 x 2 record (a match, one value one ulp off, a digest off,
 * another record, rows that are not the record's). The writer is exercised end to end by
 * tests/test_layers_kiln_v2.py. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "attr/layer_json.h"

static void test_names(void **state) {
  (void)state;
  assert_string_equal(fdl_attr_layer_boundary_name(0), "embedding");
  assert_string_equal(fdl_attr_layer_boundary_name(33), "final_norm");
  assert_null(fdl_attr_layer_boundary_name(34));
  for (size_t i = 1; i < 33; i++) {
    char want[64];
    snprintf(want, sizeof want, "layer_%02zu_%s", i - 1,
             i % 4 == 0 ? "full_attention" : "linear_attention");
    assert_string_equal(fdl_attr_layer_boundary_name(i), want);
  }
  assert_string_equal(fdl_attr_layer_boundary_name(4), "layer_03_full_attention");
  size_t n = 0;
  const char *const *p = fdl_attr_layer_kernel_policies(&n);
  assert_int_equal(n, 13);
  assert_string_equal(p[0], "qualified");
  assert_string_equal(p[n - 1], "split_q_gate_only");
}

static void test_names_check(void **state) {
  (void)state;
  const char *a[34];
  for (size_t i = 0; i < 34; i++) a[i] = fdl_attr_layer_boundary_name(i);
  fdl_err err = {FDL_OK, ""};
  assert_int_equal(fdl_attr_layer_names_check(a, 34, "names", &err), FDL_OK);
  a[4] = "layer_03_linear_attention";
  assert_int_equal(fdl_attr_layer_names_check(a, 34, "names", &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "boundary name 4"));
  a[4] = NULL;
  assert_int_equal(fdl_attr_layer_names_check(a, 34, "names", &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "boundary name 4 is not a string"));
  assert_int_equal(fdl_attr_layer_names_check(a, 33, "names", &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "33 boundary names"));
}

static void sha_text(const fdl_sha256 *d, char *out, size_t cap) {
  char hex[FDL_SHA256_HEX_BUF];
  fdl_sha256_hex(d, hex);
  snprintf(out, cap, "sha256:%s", hex);
}

/* R = [[1, 0], [0, 2]], C = [[1, 0], [0, 2.5]]: boundary 0 equal; boundary 1 d = [0, 0.5]. */
static const float R[4] = {1.0f, 0.0f, 0.0f, 2.0f};
static const float C[4] = {1.0f, 0.0f, 0.0f, 2.5f};

static json_t *record(void) {
  fdl_attr_boundary b0, b1;
  assert_int_equal(fdl_attr_compare_boundary(C, R, 2, &b0, NULL), FDL_OK);
  assert_int_equal(fdl_attr_compare_boundary(C + 2, R + 2, 2, &b1, NULL), FDL_OK);
  char h0[80], k0[80], h1[80], k1[80], rows[80];
  sha_text(&b0.hf_sha256, h0, sizeof h0);
  sha_text(&b0.kiln_sha256, k0, sizeof k0);
  sha_text(&b1.hf_sha256, h1, sizeof h1);
  sha_text(&b1.kiln_sha256, k1, sizeof k1);
  fdl_sha256 d;
  assert_int_equal(fdl_sha256_buf(R, sizeof R, &d, NULL), FDL_OK); /* little-endian host */
  sha_text(&d, rows, sizeof rows);
  double rmse1 = sqrt(0.25 / 2.0), rms1 = sqrt(4.0 / 2.0);
  json_t *doc = json_pack(
      "{s:s, s:{s:s, s:[{s:f, s:s, s:i, s:s, s:f, s:f, s:s, s:f, s:f, s:f},"
      "{s:f, s:s, s:i, s:s, s:f, s:f, s:s, s:f, s:f, s:f}], s:{s:i, s:s, s:f}}}",
      "schema", "kiln.rocm-hf-layer-attribution-result.v1", "worker", "hf_layer_last_rows_sha256",
      rows, "boundaries", "cosine_similarity", 1.0, "hf_sha256", h0, "index", 0, "kiln_sha256", k0,
      "max_abs_error", 0.0, "mean_abs_error", 0.0, "name", "a", "reference_root_mean_square",
      sqrt(1.0 / 2.0), "relative_root_mean_square_error", 0.0, "root_mean_square_error", 0.0,
      "cosine_similarity", 5.0 / (2.5 * 2.0), "hf_sha256", h1, "index", 1, "kiln_sha256", k1,
      "max_abs_error", 0.5, "mean_abs_error", 0.25, "name", "b", "reference_root_mean_square", rms1,
      "relative_root_mean_square_error", rmse1 / rms1, "root_mean_square_error", rmse1,
      "largest_relative_error_growth", "index", 1, "name", "b",
      "relative_root_mean_square_error_delta", rmse1 / rms1 - 0.0);
  assert_non_null(doc);
  return doc;
}

static json_t *boundary(json_t *doc, size_t i) {
  return json_array_get(json_object_get(json_object_get(doc, "worker"), "boundaries"), i);
}

static void test_recompute(void **state) {
  (void)state;
  fdl_err err = {FDL_OK, ""};
  json_t *doc = record();
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_OK);

  /* one ulp off the recomputed max */
  json_object_set_new(boundary(doc, 1), "max_abs_error", json_real(nextafter(0.5, 1.0)));
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "$.worker.boundaries[1].max_abs_error (b): recorded "
                                  "0.5000000000000001, recomputed from the rows 0.5"));
  json_object_set_new(boundary(doc, 1), "max_abs_error", json_real(0.5));

  /* an integer where Kiln prints a float */
  json_object_set_new(boundary(doc, 0), "mean_abs_error", json_integer(0));
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "recorded 0, recomputed from the rows 0.0"));
  json_object_set_new(boundary(doc, 0), "mean_abs_error", json_real(0.0));

  /* other reference rows: the matrix digest first */
  const float r2[4] = {1.0f, 0.0f, 0.0f, 2.25f};
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", r2, C, 2, 2, NULL, 0, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "$.worker.hf_layer_last_rows_sha256"));

  /* a growth delta one ulp off */
  json_t *g = json_object_get(json_object_get(doc, "worker"), "largest_relative_error_growth");
  double delta = json_real_value(json_object_get(g, "relative_root_mean_square_error_delta"));
  json_object_set_new(g, "relative_root_mean_square_error_delta", json_real(nextafter(delta, 0.0)));
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "relative_root_mean_square_error_delta"));
  json_object_set_new(g, "relative_root_mean_square_error_delta", json_real(delta));
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_OK);

  /* one row: not the record's two boundaries */
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 1, 4, NULL, 0, &err), FDL_REFUSED);
  /* final logits that are not the recorded ones (the record has no digest of them) */
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, R, 4, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "$.worker.final_logits_sha256"));
  /* v2 wants §13's names: "a" is not "embedding" */
  json_object_set_new(doc, "schema", json_string(FDL_ATTR_LAYER_V2_SCHEMA));
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "$.worker.boundaries[0].name"));
  /* another record */
  json_object_set_new(doc, "schema", json_string("kiln.rocm-hf-path-attribution-result.v2"));
  assert_int_equal(fdl_attr_layer_recompute(doc, "r", R, C, 2, 2, NULL, 0, &err), FDL_REFUSED);
  json_decref(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_names_check),
      cmocka_unit_test(test_recompute),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
