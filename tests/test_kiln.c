/* test_kiln.c - Kiln canonical hashing edge cases (KILN-ATTRIBUTION.md §2) against values from
 * Python's json.dumps(v, allow_nan=False, ensure_ascii=True, separators=(",", ":"),
 * sort_keys=True): DEL and control escapes, surrogate pairs, code-point key order, float repr,
 * int64 limits; the self-hash rule; Kiln-strict -0.0; the refusals; and the checker's
 * dispatch (unsupported schema, not an object). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "digest/seal_json.h"
#include "attr/kiln_json.h"
#include "json/json.h"

static json_t *parse(const char *text, bool kiln) {
  fdl_json_read_opts o = {0, kiln, false};
  json_t *v = NULL;
  fdl_err err;
  assert_int_equal(fdl_json_parse(text, strlen(text), &o, &v, &err), FDL_OK);
  return v;
}

static void expect_canon(const char *text, bool kiln, const char *bytes, const char *sha) {
  json_t *v = parse(text, kiln);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_err err;
  assert_int_equal(fdl_json_dump(v, FDL_JSON_ASCII, &b, &err), FDL_OK);
  assert_string_equal(b.data, bytes);
  fdl_buf_free(&b);
  char got[FDL_SEAL_BUF];
  assert_int_equal(fdl_kiln_canonical_sha256(v, got, &err), FDL_OK);
  if (sha) assert_string_equal(got, sha);
  json_decref(v);
}

static void test_strings_and_keys(void **state) {
  (void)state;
  /* DEL is escaped, "/" is not; keys by code point: U+FFFF before U+1F600 (not UTF-16 order). */
  expect_canon(
      "{\"\xf0\x9f\x98\x80\":2,\"\xef\xbf\xbf\":1,\"c\":\"\xc3\xa9\\n\\t\\\"\\\\\\u0001\","
      "\"b\":\"/\",\"a\":\"\x7f\"}",
      false,
      "{\"a\":\"\\u007f\",\"b\":\"/\",\"c\":\"\\u00e9\\n\\t\\\"\\\\\\u0001\",\"\\uffff\":1,"
      "\"\\ud83d\\ude00\":2}",
      "sha256:5ef41bd58a55f037cdc3c6660b8dbbed9316b5e29ef6812a3aced373aa2dbe45");
}

static void test_numbers(void **state) {
  (void)state;
  expect_canon("[1e16,1e-05,100.0,-0.0,5e-324,1.2345678901234568e+17,0.0001,9.9e-05,2.5e-07,"
               "300.0,0.1]",
               false,
               "[1e+16,1e-05,100.0,-0.0,5e-324,1.2345678901234568e+17,0.0001,9.9e-05,2.5e-07,300.0,"
               "0.1]",
               "sha256:eecd82c24d11d148b8d410dc30217336afac827658d7c8e2745e20c9c47674ad");
  expect_canon("[9223372036854775807,-9223372036854775808,true,false,null,{},[]]", false,
               "[9223372036854775807,-9223372036854775808,true,false,null,{},[]]",
               "sha256:015fa99764265cc4d7ad410321d2c290e2d55ae0538b69cc2cdb53c2dc8ff8db");
  /* input_token_ids_sha256 is the hash of the ASCII list text. */
  expect_canon("[248045, 846, 198]", true, "[248045,846,198]",
               "sha256:9ce0beca0323a804c454ab10c22b4658d81a889d23f796ffd4a52d94130c6308");
  /* Kiln's loader reads -0.0 as 0.0 before hashing. */
  expect_canon("[-0.0]", true, "[0.0]", NULL);
}

static void test_refusals(void **state) {
  (void)state;
  fdl_err err;
  json_t *v = NULL;
  /* Decisions (docs/JSON.md): lone surrogates and ints beyond int64 are refused on reading. */
  assert_int_not_equal(fdl_json_parse("[\"\\ud800\"]", 10, NULL, &v, &err), FDL_OK);
  assert_int_not_equal(fdl_json_parse("[9223372036854775808]", 21, NULL, &v, &err), FDL_OK);
  /* A string that is not UTF-8 (only buildable in code) cannot be hashed. */
  json_t *r = json_stringn_nocheck("\xff", 1);
  char out[FDL_SEAL_BUF];
  assert_int_equal(fdl_kiln_canonical_sha256(r, out, &err), FDL_INVALID);
  json_decref(r);
}

static void test_self_hash(void **state) {
  (void)state;
  /* The seal is the canonical hash of the record without result_sha256. */
  json_t *doc = parse(
      "{\"schema\":\"kiln.rocm-hf-layer-attribution-result.v1\",\"x\":[1.5,\"\xc3\xa9\"]}", true);
  json_t *body = parse(
      "{\"schema\":\"kiln.rocm-hf-layer-attribution-result.v1\",\"x\":[1.5,\"\xc3\xa9\"]}", true);
  fdl_err err;
  char want[FDL_SEAL_BUF], got[FDL_SEAL_BUF];
  assert_int_equal(fdl_kiln_canonical_sha256(body, want, &err), FDL_OK);
  json_object_set_new(doc, "result_sha256", json_string("sha256:00"));
  assert_int_equal(fdl_seal_compute(doc, FDL_SEAL_KILN_REMOVE, "result_sha256", got, &err), FDL_OK);
  assert_string_equal(got, want);
  /* The checker names the field when the stored seal is wrong. */
  json_object_set_new(
      doc, "result_sha256",
      json_string("sha256:0000000000000000000000000000000000000000000000000000000000000000"));
  fdl_kiln_checked res;
  assert_int_equal(fdl_kiln_check_doc(doc, "doc.json", &res, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "doc.json: $.result_sha256"));
  json_decref(doc);
  json_decref(body);
}

static void test_dispatch(void **state) {
  (void)state;
  fdl_err err;
  fdl_kiln_checked res;
  json_t *v = parse("{\"schema\":\"kiln.rocm-hf-next-token-oracle.v3\"}", true);
  assert_int_equal(fdl_kiln_check_doc(v, "f.json", &res, &err), FDL_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "unsupported schema kiln.rocm-hf-next-token-oracle.v3"));
  json_decref(v);
  /* The v2 results are checked: a bare one fails its missing self-hash. */
  static const char *const v2[] = {"kiln.rocm-hf-next-token-oracle.v2",
                                   "kiln.rocm-hf-path-attribution-result.v2",
                                   "kiln.rocm-hf-layer-attribution-result.v2"};
  for (size_t i = 0; i < 3; i++) {
    char text[96];
    snprintf(text, sizeof text, "{\"schema\":\"%s\"}", v2[i]);
    v = parse(text, true);
    assert_int_equal(fdl_kiln_check_doc(v, "f.json", &res, &err), FDL_INVALID);
    assert_non_null(strstr(err.msg, "f.json: $.result_sha256"));
    json_decref(v);
  }
  v = parse("[1]", true);
  assert_int_equal(fdl_kiln_check_doc(v, "f.json", &res, &err), FDL_INVALID);
  json_decref(v);
  v = parse("{\"schema\":\"kiln.hf-next-token-request.v1\"}", true);
  assert_int_equal(fdl_kiln_check_doc(v, "f.json", &res, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "f.json: $: missing key \"id\""));
  json_decref(v);
}

/* With a root, a request's receipts are loaded from it: an empty root names the first missing
 * one; without a root the rules are reported as not checked rather than passed. */
static void test_refs(void **state) {
  (void)state;
  const char *shared = getenv("FDL_SHARED");
  char req[4096], root[] = "/tmp/fdl-kiln-refs-XXXXXX";
  snprintf(req, sizeof req, "%s/vectors/kiln/rocm-strix-halo-greedy-c1-first-divergence-v1.json",
           shared ? shared : "../shared");
  fdl_err err;
  fdl_kiln_checked res;
  assert_int_equal(fdl_kiln_check_file_opts(req, NULL, &res, NULL, &err), FDL_OK);
  assert_true(res.has_refs);
  assert_false(res.refs_checked);
  assert_non_null(mkdtemp(root));
  fdl_kiln_check_opts opts = {root};
  assert_int_equal(fdl_kiln_check_file_opts(req, &opts, &res, NULL, &err), FDL_INVALID);
  assert_non_null(strstr(err.msg, "$.source.kiln_receipt.path: receipt missing: "
                                  "benchmarks/receipts/rocm/strix-halo/"));
  assert_false(res.refs_checked);
  assert_int_equal(rmdir(root), 0);
  opts.root = root; /* gone now */
  assert_int_equal(fdl_kiln_check_file_opts(req, &opts, &res, NULL, &err), FDL_IO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_strings_and_keys), cmocka_unit_test(test_numbers),
      cmocka_unit_test(test_refusals),         cmocka_unit_test(test_self_hash),
      cmocka_unit_test(test_dispatch),         cmocka_unit_test(test_refs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
