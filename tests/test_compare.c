/* test_compare.c - the receipt helpers against the conformance vectors: the comparability key
 * recomputes from the seed and K6 receipts, the section 10 checks accept every stored receipt
 * and catch tampering, SC-1, BIAS-001/006 and a bad key; and the int4 quantizer. */
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

#include "fidelis/compare.h"
#include "fidelis/fidelis.h"
#include "digest/seal_json.h"
#include "compare/compare_json.h"
#include "json/json.h"

static const char *shared_dir(void) {
  const char *shared = getenv("FDL_SHARED");
  return shared ? shared : "../shared";
}

/* Loads shared/vectors/fidelity/<name>. main() runs the tests that call this only when the
 * vectors directory exists, so a vector that does not load is a failure. */
static json_t *vector(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/vectors/fidelity/%s", shared_dir(), name);
  json_t *doc = NULL;
  fdl_err err;
  if (fdl_json_load_file(path, NULL, &doc, &err) != FDL_OK) {
    print_message("%s\n", err.msg);
    return NULL;
  }
  return doc;
}

static void expect_key(const char *file, const char *want) {
  json_t *doc = vector(file);
  assert_non_null(doc);
  const json_t *cmp = json_object_get(doc, "comparability");
  char key[FDL_COMPARE_KEY_LEN + 1];
  fdl_err err;
  assert_int_equal(fdl_compare_key(json_object_get(cmp, "key_inputs"), key, &err), FDL_OK);
  assert_string_equal(key, want);
  assert_string_equal(json_string_value(json_object_get(cmp, "key")), want);
  json_decref(doc);
}

static void test_key_seed(void **state) {
  (void)state;
  expect_key("seed-receipt-003-measurement.json", "cmp--74d9ace60453b782");
}

static void test_key_k6(void **state) {
  (void)state;
  expect_key("fidelity-comparison-receipt.k6-vs-bf16.json", "cmp--202b717f3219c414");
}

static void test_key_refuses_pipe(void **state) {
  (void)state;
  json_t *ki =
      json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "panel_id", "panel--a|b", "reference_id",
                "r", "metric_name", "m", "direction", "d", "accumulation_dtype", "float64",
                "stack_relation", "same_stack", "head_policy", "native_head");
  char key[FDL_COMPARE_KEY_LEN + 1];
  fdl_err err;
  assert_int_equal(fdl_compare_key(ki, key, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "panel_id"));
  json_object_set_new(ki, "panel_id", json_string("panel--a"));
  json_object_del(ki, "head_policy");
  assert_int_equal(fdl_compare_key(ki, key, &err), FDL_INVALID);
  json_decref(ki);
}

static void check_receipt(json_t *doc, fdl_status want, fdl_compare_check_code code) {
  fdl_compare_check_code got = FDL_RCC_COUNT;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_compare_check_receipt(doc, &got, &err);
  if (s != want)
    fail_msg("check returned %d (%s: %s), expected %d", s, fdl_compare_check_code_name(got),
             err.msg, want);
  assert_int_equal(got, code);
}

static void reseal(json_t *doc) {
  assert_int_equal(fdl_seal_apply(doc, FDL_SEAL_FIDELITY_BLANK, "receipt_sha256", NULL), FDL_OK);
}

static void test_check_vectors(void **state) {
  (void)state;
  assert_string_equal(fdl_compare_check_code_name(FDL_RCC_SELF_COMPARE_INVALID),
                      "self_compare_invalid");
  assert_string_equal(fdl_compare_check_code_name(FDL_RCC_NONE), "");
  assert_string_equal(fdl_compare_check_code_name(FDL_RCC_COUNT), "");
  static const char *const files[] = {
      "seed-receipt-003-measurement.json", "fidelity-comparison-receipt.k6-vs-bf16.json",
      "fidelity-comparison-receipt.self-compare.json", "fixture-qwen3-5-tiny-root/comparison.json"};
  for (size_t i = 0; i < 4; i++) {
    json_t *doc = vector(files[i]);
    assert_non_null(doc);
    check_receipt(doc, FDL_OK, FDL_RCC_NONE);
    json_decref(doc);
  }
}

static void test_check_catches(void **state) {
  (void)state;
  json_t *doc = vector("seed-receipt-003-measurement.json");
  assert_non_null(doc);
  /* a changed number breaks the seal */
  json_t *kl = json_object_get(doc, "kl");
  json_object_set_new(kl, "max", json_real(1.0));
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SEAL_FAILED);
  /* BIAS-001: cross_stack without a bias block */
  json_object_set_new(json_object_get(doc, "comparability"), "bias", json_null());
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_BIAS_INVALID);
  json_decref(doc);

  doc = vector("seed-receipt-003-measurement.json");
  /* a key that does not recompute */
  json_object_set_new(json_object_get(doc, "comparability"), "key",
                      json_string("cmp--0000000000000000"));
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  json_decref(doc);

  doc = vector("seed-receipt-003-measurement.json");
  /* BIAS-006: cross-lane yet a floor */
  json_t *c = json_object_get(doc, "comparability");
  json_object_set_new(c, "same_lane", json_false());
  json_object_set_new(c, "usable_as_floor", json_true());
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_BIAS_INVALID);
  json_decref(doc);

  doc = vector("seed-receipt-003-measurement.json");
  /* an unknown gate */
  json_object_set_new(json_object_get(doc, "gates"), "extra",
                      json_pack("{s:b, s:s, s:n}", "passed", 1, "detail", "x", "overridden_by"));
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  json_object_set_new(doc, "schema", json_string("malaiwah.something-else.v1"));
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_BAD_SCHEMA);
  json_decref(doc);

  /* SC-1: a reproduction must say exactly +0.0 (not -0.0, not the int 0) and 1.0 */
  doc = vector("fidelity-comparison-receipt.self-compare.json");
  assert_non_null(doc);
  json_object_set_new(json_object_get(doc, "kl"), "p95", json_real(-0.0));
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SELF_COMPARE_INVALID);
  json_object_set_new(json_object_get(doc, "kl"), "p95", json_real(0.0));
  json_object_set_new(doc, "top1_agreement", json_integer(1));
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SELF_COMPARE_INVALID);
  json_object_set_new(doc, "top1_agreement", json_real(1.0));
  reseal(doc);
  check_receipt(doc, FDL_OK, FDL_RCC_NONE);
  json_decref(doc);
}

/* A llama.cpp block as compare writes it, for a receipt of n scored positions. */
static json_t *llama_block(json_int_t n, double kl_mean, double ln_ratio, double same_top) {
  const char *h = "0000000000000000000000000000000000000000000000000000000000000000";
  json_t *ve = json_pack("{s:f, s:f}", "value", 1.0, "stderr", 0.0);
  json_t *b = json_pack(
      "{s:s, s:I, s:O, s:O, s:{s:f, s:f}, s:O, s:f, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:{}}, "
      "s:{s:f, s:f}, s:{s:f, s:f, s:f, s:f, s:{}}, s:{s:s, s:s, s:s}, s:s}",
      "schema", FDL_COMPARE_LLAMACPP_SCHEMA, "n", n, "ppl_reference", ve, "ppl_candidate", ve,
      "ln_ppl_ratio", "value", ln_ratio, "stderr", 0.0, "ppl_ratio", ve, "logprob_correlation", 1.0,
      "delta_p", "mean", 0.0, "mean_stderr", 0.0, "rms", 0.0, "rms_stderr", 0.0, "max", 0.0, "min",
      0.0, "percentiles", "same_top", "value", same_top, "stderr", 0.0, "kld", "mean", kl_mean,
      "stderr", 0.0, "max", kl_mean, "min", 0.0, "percentiles", "arrays",
      FDL_COMPARE_LOGPROB_REF_NAME, h, FDL_COMPARE_LOGPROB_CAND_NAME, h, FDL_COMPARE_TOP1_NAME, h,
      "definitions", "docs/COMPARE.md#llamacpp-compatible-statistics");
  json_decref(ve); /* O took references of its own */
  return b;
}

static void with_block(json_t *doc, json_t *blk) {
  json_object_set_new(doc, "fidelis_extensions", json_pack("{s:o}", "llamacpp_compatible", blk));
  reseal(doc);
}

static void test_check_extensions(void **state) {
  (void)state;
  json_t *doc = vector("fidelity-comparison-receipt.self-compare.json");
  assert_non_null(doc);
  json_int_t n = json_integer_value(
      json_object_get(json_object_get(doc, "measurement_scope"), "scored_positions"));
  with_block(doc, llama_block(n, 0.0, 0.0, 1.0));
  check_receipt(doc, FDL_OK, FDL_RCC_NONE);
  /* a reproduction's block says what SC-1 says */
  with_block(doc, llama_block(n, 1e-9, 0.0, 1.0));
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SELF_COMPARE_INVALID);
  with_block(doc, llama_block(n, 0.0, -0.0, 1.0));
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SELF_COMPARE_INVALID);
  with_block(doc, llama_block(n, 0.0, 0.0, 0.5));
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SELF_COMPARE_INVALID);
  /* the shape readers code against */
  with_block(doc, llama_block(n + 1, 0.0, 0.0, 1.0));
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  json_t *b = llama_block(n, 0.0, 0.0, 1.0);
  json_object_set_new(b, "schema", json_string("fidelis.llamacpp-compatible.v0"));
  with_block(doc, b);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  b = llama_block(n, 0.0, 0.0, 1.0);
  json_object_del(json_object_get(b, "arrays"), FDL_COMPARE_TOP1_NAME);
  with_block(doc, b);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  b = llama_block(n, 0.0, 0.0, 1.0);
  json_object_set_new(b, "logprob_correlation", json_integer(1));
  with_block(doc, b);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  json_object_set_new(doc, "fidelis_extensions", json_array());
  reseal(doc);
  check_receipt(doc, FDL_MISMATCH, FDL_RCC_SCHEMA_INVALID);
  json_decref(doc);
}

static void test_quant_int4(void **state) {
  (void)state;
  /* one row, two groups of 4: the first group's max |w| is 3.5, so scale 0.5 */
  const float w[8] = {3.5f, -1.26f, 0.25f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  float q[8];
  fdl_quant_int4_rtn(w, 1, 8, 4, q);
  assert_true(q[0] == 3.5f);
  assert_true(q[1] == -1.5f);                            /* -2.52 -> -3 */
  assert_true(q[2] == 0.0f);                             /* 0.5 ties to even: 0 */
  for (int i = 3; i < 8; i++) assert_true(q[i] == 0.0f); /* a zero group stays zero */
  /* every output is k * scale with |k| <= 7, and the group max is reproduced exactly */
  float big[2 * 37], out[2 * 37];
  for (int i = 0; i < 74; i++) big[i] = (float)sin(i * 0.7) * (i % 5 + 1);
  fdl_quant_int4_rtn(big, 2, 37, 32, out);
  for (int r = 0; r < 2; r++)
    for (int g0 = 0; g0 < 37; g0 += 32) {
      int n = 37 - g0 < 32 ? 37 - g0 : 32;
      float amax = 0.0f;
      for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(big[r * 37 + g0 + i]));
      float scale = amax / 7.0f;
      for (int i = 0; i < n; i++) {
        float k = out[r * 37 + g0 + i] / scale;
        assert_true(k == rintf(k) && fabsf(k) <= 7.0f);
        assert_true(fabsf(out[r * 37 + g0 + i] - big[r * 37 + g0 + i]) <= scale * 0.5f * 1.0001f);
      }
    }
  /* in place gives the same */
  fdl_quant_int4_rtn(big, 2, 37, 32, big);
  assert_memory_equal(big, out, sizeof out);
}

static void test_options(void **state) {
  (void)state;
  fdl_compare_opts o;
  fdl_compare_opts_default(&o);
  assert_true(o.bootstrap && o.js == -1);
  fdl_compare_result r;
  fdl_err err;
  assert_int_equal(fdl_compare(&o, &r, &err), FDL_INVALID); /* no inputs: usage */
  assert_int_equal(fdl_compare_outcome_of(&r), FDL_COMPARE_BAD_OPTS);
  fdl_compare_result_free(&r);
  o.reference = "a";
  o.candidate = "b";
  o.out_dir = "c";
  o.seed = (uint64_t)INT64_MAX + 1;
  assert_int_equal(fdl_compare(&o, &r, &err), FDL_INVALID);
  fdl_compare_result_free(&r);
  o.seed = 0;
  /* unreadable inputs are a refusal with a code, never a crash */
  assert_int_equal(fdl_compare(&o, &r, &err), FDL_REFUSED);
  assert_int_equal(fdl_compare_outcome_of(&r), FDL_COMPARE_REFUSED);
  assert_true(r.refusal.code != FDL_REF_NONE);
  assert_null(r.receipt);
  fdl_compare_result_free(&r);
}

/* Without ../shared/vectors the tests that need no vector still run, and a pass then exits 77:
 * CTest records the run as skipped, never as passed. */
/* The receipt decoder: each field by its key; an absent or mistyped value reads as NULL, NaN,
 * FDL_COMPARE_NO_INT or -1 so a page tells it from 0; the key inputs in the enum's order; the
 * arrays; the llama.cpp block's percentile keys, which hold dots. */
static void test_decode(void **state) {
  (void)state;
  static const char text[] =
      "{\"schema\":\"s\",\"comparability\":{\"class\":\"strict\",\"key\":null,\"key_inputs\":"
      "{\"head_policy\":\"native_head\",\"panel_id\":7},\"same_lane\":true},\"kl\":{\"p99\":0.5,"
      "\"max\":\"x\"},\"panel\":{\"scored_positions\":12,\"contexts\":1.5},\"disclosures\":"
      "[{\"code\":\"c\",\"affects_comparability\":false}],\"per_context\":[{\"index\":3,"
      "\"scored_rows\":12,\"ci95_low\":0.1},{}],\"fidelis_extensions\":{\"llamacpp_compatible\":"
      "{\"n\":12,\"kld\":{\"percentiles\":{\"99.9\":2}},\"arrays\":{\"tokenwise-top1.npy\":\"h\"}}}"
      "}";
  json_t *doc = NULL;
  fdl_err err;
  assert_int_equal(fdl_json_parse(text, sizeof text - 1, NULL, &doc, &err), FDL_OK);
  fdl_compare_receipt d;
  assert_int_equal(fdl_cmp_receipt_decode(doc, &d, &err), FDL_OK);
  assert_string_equal(d.schema, "s");
  assert_string_equal(d.comparability_class, "strict");
  assert_null(d.comparability.key);
  assert_null(d.comparability.key_inputs[FDL_COMPARE_KI_PANEL_ID]);
  assert_string_equal(d.comparability.key_inputs[FDL_COMPARE_KI_HEAD_POLICY], "native_head");
  assert_int_equal(d.comparability.same_lane, 1);
  assert_int_equal(d.comparability.usable_as_floor, -1);
  assert_true(d.kl.p99 == 0.5 && isnan(d.kl.max) && isnan(d.metric_value));
  assert_true(d.panel.scored_positions == 12 && d.panel.contexts == FDL_COMPARE_NO_INT);
  assert_int_equal(d.n_disclosures, 1);
  assert_string_equal(d.disclosures[0].code, "c");
  assert_int_equal(d.disclosures[0].affects_comparability, 0);
  assert_int_equal(d.n_per_context, 2);
  assert_true(d.per_context[0].index == 3 && d.per_context[0].ci95_low == 0.1);
  assert_true(d.per_context[1].index == FDL_COMPARE_NO_INT && isnan(d.per_context[1].mean));
  assert_int_equal(d.n_high_kld_contexts, 0);
  assert_true(d.llamacpp.present && d.llamacpp.n == 12 && !d.llamacpp.schema);
  assert_true(d.llamacpp.kld.percentiles[0] == 2 && isnan(d.llamacpp.kld.percentiles[1]));
  assert_true(!d.llamacpp.arrays[0] && !strcmp(d.llamacpp.arrays[2], "h"));
  assert_null(d.js_doc);
  assert_ptr_equal(d.kl_doc, json_object_get(doc, "kl"));
  fdl_cmp_receipt_free(&d);
  json_decref(doc);
}

int main(void) {
  const struct CMUnitTest own[] = {
      cmocka_unit_test(test_key_refuses_pipe),
      cmocka_unit_test(test_quant_int4),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_decode),
  };
  const struct CMUnitTest with_vectors[] = {
      cmocka_unit_test(test_key_seed),         cmocka_unit_test(test_key_k6),
      cmocka_unit_test(test_check_vectors),    cmocka_unit_test(test_check_catches),
      cmocka_unit_test(test_check_extensions),
  };
  int failed = cmocka_run_group_tests(own, NULL, NULL);
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/vectors/fidelity", shared_dir());
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    printf("skipped: %s not present (../shared)\n", dir);
    return failed ? failed : 77;
  }
  return failed + cmocka_run_group_tests(with_vectors, NULL, NULL);
}
