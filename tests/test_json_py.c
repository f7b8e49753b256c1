/* test_json_py.c - Python's truthiness, ==, repr(), str() and the dotted get (json/py.h), the
 * one implementation validate and compare share. Expected values are what CPython 3 gives on
 * the json.loads of the same text. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "fidelis/fidelis.h"
#include "json/get.h"
#include "json/py.h"
#include "json/json.h"

static json_t *parse(const char *text) {
  json_t *v = NULL;
  fdl_err err;
  if (fdl_json_parse(text, strlen(text), NULL, &v, &err) != FDL_OK) fail_msg("%s", err.msg);
  return v;
}

/* Python: json.loads(a) == json.loads(b) is `want`, both ways round. */
static void expect_eq(const char *a, const char *b, bool want) {
  json_t *x = parse(a), *y = parse(b);
  if (fdl_py_equal(x, y) != want || fdl_py_equal(y, x) != want)
    fail_msg("%s == %s should be %s", a, b, want ? "True" : "False");
  json_decref(x);
  json_decref(y);
}

static void test_equal(void **state) {
  (void)state;
  expect_eq("63", "63.0", true);
  expect_eq("[63]", "[63.0]", true); /* the case the two old copies disagreed on */
  expect_eq("{\"a\":[1,{\"b\":2}]}", "{\"a\":[1.0,{\"b\":2.0}]}", true);
  expect_eq("{\"a\":1,\"b\":2}", "{\"b\":2,\"a\":1}", true);
  expect_eq("63", "63.5", false);
  expect_eq("[63]", "[64.0]", false);
  expect_eq("true", "1", true);
  expect_eq("true", "1.0", true);
  expect_eq("false", "0", true);
  expect_eq("[true]", "[1]", true);
  expect_eq("true", "2", false);
  expect_eq("false", "null", false);
  expect_eq("0", "null", false);
  expect_eq("null", "null", true);
  expect_eq("\"63\"", "63", false);
  expect_eq("-0.0", "0", true);
  expect_eq("[1,2]", "[1,2,3]", false);
  expect_eq("{\"a\":null}", "{\"b\":null}", false);
  /* Exact int/float comparison: 2**53 + 1 is not the float 2**53, though C would convert. */
  expect_eq("9007199254740993", "9007199254740992.0", false);
  expect_eq("9007199254740992", "9007199254740992.0", true);
  expect_eq("9223372036854775807", "9.223372036854776e18", false);
  /* A missing value reads as None. */
  json_t *n = parse("null");
  assert_true(fdl_py_equal(NULL, NULL));
  assert_true(fdl_py_equal(NULL, n));
  assert_true(fdl_py_equal(n, NULL));
  json_t *z = parse("0");
  assert_false(fdl_py_equal(NULL, z));
  json_decref(n);
  json_decref(z);
}

static void test_truthy(void **state) {
  (void)state;
  static const char *const falsy[] = {"0", "0.0", "-0.0", "\"\"", "[]", "{}", "null", "false"};
  static const char *const truthy[] = {"1", "0.5", "\" \"", "[0]", "{\"a\":0}", "true", "-1"};
  for (size_t i = 0; i < sizeof falsy / sizeof *falsy; i++) {
    json_t *v = parse(falsy[i]);
    if (fdl_py_truthy(v)) fail_msg("bool(%s) should be False", falsy[i]);
    json_decref(v);
  }
  for (size_t i = 0; i < sizeof truthy / sizeof *truthy; i++) {
    json_t *v = parse(truthy[i]);
    if (!fdl_py_truthy(v)) fail_msg("bool(%s) should be True", truthy[i]);
    json_decref(v);
  }
  assert_false(fdl_py_truthy(NULL));
}

static void expect_repr(const char *text, const char *want_repr, const char *want_str) {
  json_t *v = parse(text);
  char out[128];
  fdl_py_repr(v, out, sizeof out);
  assert_string_equal(out, want_repr);
  fdl_py_str(v, out, sizeof out);
  assert_string_equal(out, want_str);
  json_decref(v);
}

static void test_repr_str(void **state) {
  (void)state;
  expect_repr("null", "None", "None");
  expect_repr("true", "True", "True");
  expect_repr("false", "False", "False");
  expect_repr("63", "63", "63");
  expect_repr("63.0", "63.0", "63.0");
  expect_repr("1e-05", "1e-05", "1e-05");
  expect_repr("\"abc\"", "'abc'", "abc");
  expect_repr("\"it's\"", "\"it's\"", "it's");
  expect_repr("\"it's \\\"x\\\"\"", "'it\\'s \"x\"'", "it's \"x\"");
  expect_repr("\"a\\nb\\u0001\\\\\"", "'a\\nb\\x01\\\\'", "a\nb\x01\\");
  expect_repr("\"caf\\u00e9 \\u00a0\"", "'caf\xc3\xa9 \\xa0'", "caf\xc3\xa9 \xc2\xa0");
  expect_repr("[1,\"a\",null,[]]", "[1, 'a', None, []]", "[1, 'a', None, []]");
  expect_repr("{\"k\":1,\"j\":{\"x\":true}}", "{'k': 1, 'j': {'x': True}}",
              "{'k': 1, 'j': {'x': True}}");
  char out[16];
  fdl_py_repr(NULL, out, sizeof out);
  assert_string_equal(out, "None");
  /* Too long: cut, ends in "...", never past the buffer, never inside a UTF-8 character. */
  json_t *v = parse("\"\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\"");
  memset(out, 'Z', sizeof out);
  fdl_py_repr(v, out, 12);
  assert_int_equal(out[12], 'Z');
  assert_true(strlen(out) <= 11);
  assert_string_equal(out + strlen(out) - 3, "...");
  assert_string_equal(out, "'\xc3\xa9\xc3\xa9\xc3\xa9...");
  json_decref(v);
}

static void test_get_path(void **state) {
  (void)state;
  json_t *d = parse("{\"a\":{\"b\":{\"c\":7}},\"x\":[1],\"a.b\":1}");
  assert_int_equal(json_integer_value(fdl_json_path(d, "a.b.c")), 7);
  assert_true(json_is_object(fdl_json_path(d, "a.b")));
  assert_ptr_equal(fdl_json_path(d, ""), d);
  assert_null(fdl_json_path(d, "a.c"));
  assert_null(fdl_json_path(d, "x.0"));
  assert_null(fdl_json_path(d, "a.b.c.d"));
  assert_null(fdl_json_path(NULL, "a"));
  json_decref(d);
}

/* The typed getters: a value of another type reads as absent; 63 is not 63.0, true not 1. */
static void test_typed_get(void **state) {
  (void)state;
  json_t *d = parse("{\"i\":63,\"r\":63.0,\"t\":true,\"s\":\"x\",\"o\":{\"k\":1},"
                    "\"a\":[],\"n\":null,\"a.b\":2}");
  int64_t i = -1;
  double r = -1;
  bool b = false;
  assert_true(fdl_json_int(d, "i", &i) && i == 63);
  assert_false(fdl_json_int(d, "r", &i) || fdl_json_int(d, "t", &i) || fdl_json_int(d, "n", &i));
  assert_true(fdl_json_int(d, "a.b", NULL));
  assert_true(fdl_json_num(d, "r", &r) && r == 63.0);
  assert_true(fdl_json_num(d, "i", &r) && r == 63.0);
  assert_false(fdl_json_num(d, "t", &r) || fdl_json_num(d, "s", &r));
  assert_true(fdl_json_bool(d, "t", &b) && b);
  assert_false(fdl_json_bool(d, "i", &b) || fdl_json_bool(d, "x", &b));
  assert_string_equal(fdl_json_str(d, "s"), "x");
  assert_null(fdl_json_str(d, "n"));
  assert_non_null(fdl_json_obj(d, "o"));
  assert_null(fdl_json_obj(d, "a"));
  assert_non_null(fdl_json_arr(d, "a"));
  assert_null(fdl_json_arr(json_array_get(d, 0), "a"));
  assert_null(fdl_json_str(NULL, "s"));
  assert_int_equal(fdl_json_path_int(d, "o.k", -1), 1);
  assert_int_equal(fdl_json_path_int(d, "r", -1), -1);
  assert_true(fdl_json_path_num(d, "t", 5.0) == 5.0);
  assert_string_equal(fdl_json_path_str(d, "s"), "x");
  json_t *c = fdl_json_path_copy(d, "o.z");
  assert_true(json_is_null(c));
  json_decref(c);
  c = fdl_json_path_copy(d, "o");
  assert_true(fdl_py_equal(c, fdl_json_path(d, "o")) && c != fdl_json_path(d, "o"));
  json_decref(c);
  json_decref(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_equal),     cmocka_unit_test(test_truthy),
      cmocka_unit_test(test_repr_str),  cmocka_unit_test(test_get_path),
      cmocka_unit_test(test_typed_get),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
