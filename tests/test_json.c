/* test_json.c - the strict reader's refusals, Kiln's float rules, the canonical writer on
 * hand-built values, Python repr edge cases, and write-once files. The byte-exact comparison
 * with Python itself is test_json_oracle.py. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "base/fs.h"
#include "json/json.h"

static const fdl_json_read_opts KILN = {0, true, false};
static const fdl_json_read_opts NUL_OK = {0, false, true};

/* Parses buf[0..len) expecting a refusal whose message contains every given fragment. */
static void refuse_n(const char *buf, size_t len, const fdl_json_read_opts *opts, const char *a,
                     const char *b) {
  json_t *v = NULL;
  fdl_err err;
  fdl_status st = fdl_json_parse(buf, len, opts, &v, &err);
  if (st == FDL_OK) {
    json_decref(v);
    fail_msg("accepted %.*s", (int)len, buf);
  }
  assert_int_equal(st, err.status);
  assert_null(v);
  if (!strstr(err.msg, a)) fail_msg("message '%s' lacks '%s'", err.msg, a);
  if (b && !strstr(err.msg, b)) fail_msg("message '%s' lacks '%s'", err.msg, b);
}

static void refuse(const char *text, const fdl_json_read_opts *opts, const char *what) {
  refuse_n(text, strlen(text), opts, what, NULL);
}

static char *dump(const json_t *v, unsigned flags) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_err err;
  if (fdl_json_dump(v, flags, &b, &err) != FDL_OK) fail_msg("dump failed: %s", err.msg);
  return fdl_buf_take(&b, NULL);
}

/* Parses text and checks the compact canonical form. */
static void canon(const char *text, const fdl_json_read_opts *opts, unsigned flags,
                  const char *want) {
  json_t *v = NULL;
  fdl_err err;
  if (fdl_json_parse(text, strlen(text), opts, &v, &err) != FDL_OK)
    fail_msg("refused %s: %s", text, err.msg);
  char *got = dump(v, flags);
  assert_string_equal(got, want);
  free(got);
  json_decref(v);
}

/* Issue 20, item 10 and 7: U+0000 in a string is refused unless asked for (names and paths are
 * C strings), and a document whose values would take far more memory than its size is refused
 * before jansson builds it, as TOO_LARGE (exit 3), not as malformed or out of memory. */
static void test_nul_and_memory_budget(void **state) {
  (void)state;
  refuse("{\"architectures\": [\"Qwen3ForCausalLM\\u0000x\"]}", NULL, "NUL");
  refuse("{\"a\\u0000\": 1}", NULL, "NUL");
  size_t n = 6u * 1024u * 1024u; /* [{},{},...]: 2M empty objects, ~490 MiB in jansson */
  char *big = malloc(n + 3);
  assert_non_null(big);
  big[0] = '[';
  size_t k = 1;
  while (k + 3 < n) big[k++] = '{', big[k++] = '}', big[k++] = ',';
  big[k++] = '{', big[k++] = '}', big[k++] = ']';
  json_t *v = NULL;
  fdl_err err;
  assert_int_equal(fdl_json_parse(big, k, NULL, &v, &err), FDL_TOO_LARGE);
  assert_null(v);
  if (!strstr(err.msg, "objects") || !strstr(err.msg, "times its size"))
    fail_msg("message '%s' does not name the counts and the limit", err.msg);
  /* Token ids as requests hold them ("1234,"): about a million, well inside the budget. */
  k = 1;
  while (k + 6 < n) memcpy(big + k, "1234,", 5), k += 5;
  big[k++] = '1', big[k++] = ']';
  assert_int_equal(fdl_json_parse(big, k, NULL, &v, &err), FDL_OK);
  json_decref(v);
  free(big);
}

static void test_refusals(void **state) {
  (void)state;
  refuse("{\"a\":1,\"a\":2}", NULL, "duplicate object key");
  refuse("{\"x\":[{\"k\":1,\"b\":2,\"k\":3}]}", NULL, "duplicate object key");
  refuse("NaN", NULL, "NaN");
  refuse("[1, NaN]", NULL, "non-finite constant NaN");
  refuse("[Infinity]", NULL, "non-finite constant Infinity");
  refuse("{\"a\": -Infinity}", NULL, "non-finite constant -Infinity");
  refuse("[1] [2]", NULL, "trailing data");
  refuse("{} x", NULL, "trailing data");
  refuse("[1, 2", NULL, "truncated");
  refuse("{\"a\":", NULL, "truncated");
  refuse("\"abc", NULL, "truncated");
  refuse("", NULL, "empty document (0 bytes)");
  refuse("  ", NULL, "all whitespace");
  refuse("9223372036854775808", NULL, "integer outside int64");
  refuse("[-9223372036854775809]", NULL, "integer outside int64 at line 1 col");
  refuse("[\n1,\n123456789012345678901234567890]", NULL, "integer outside int64 at line 3");
  refuse("[1e400]", NULL, "float_overflow");
  refuse("[01]", NULL, "line 1");
  refuse("[1,]", NULL, "line 1");
  refuse("{'a':1}", NULL, "line 1");
  refuse("[\"a\tb\"]", NULL, "line 1");    /* raw control character inside a string */
  refuse("[\"\\ud800\"]", NULL, "line 1"); /* lone surrogate escape */
  refuse_n("[\"\xC0\x80\"]", 6, NULL, "invalid UTF-8", "line 1");     /* overlong NUL */
  refuse_n("[\"\x80\"]", 5, NULL, "invalid UTF-8", NULL);             /* lone continuation */
  refuse_n("[\"\xED\xA0\x80\"]", 7, NULL, "invalid UTF-8", NULL);     /* encoded surrogate */
  refuse_n("[\"\xF4\x90\x80\x80\"]", 8, NULL, "invalid UTF-8", NULL); /* above U+10FFFF */
  refuse_n("{\"\xFF\":1}", 7, NULL, "invalid UTF-8", NULL);           /* in a key */
  refuse_n("\xEF\xBB\xBF{}", 5, NULL, "BOM", "line 1 col 1");
  refuse_n("[1,\0]", 5, NULL, "NUL byte at offset 3", NULL);

  fdl_err err;
  json_t *v = NULL;
  fdl_json_read_opts neg = {-1, false, false};
  assert_int_equal(fdl_json_parse("1", 1, &neg, &v, &err), FDL_INVALID);
  assert_int_equal(fdl_json_parse(NULL, 3, NULL, &v, &err), FDL_INVALID);
  assert_null(v);
}

/* Strings, including escape-like bytes, must not disturb the pre-scan's token view. */
static void test_strings_hide_tokens(void **state) {
  (void)state;
  canon("[\"NaN\", \"[[[[\", \"\\\"]\", \"1.00000000000000011\", \"\\\\\"]", &KILN, 0,
        "[\"NaN\",\"[[[[\",\"\\\"]\",\"1.00000000000000011\",\"\\\\\"]");
  canon("{\"Infinity\": \"-Infinity\"}", NULL, 0, "{\"Infinity\":\"-Infinity\"}");
  canon("\"\\u0000 nul\"", &NUL_OK, 0, "\"\\u0000 nul\"");
}

static char *nested(int depth, const char *open, const char *close) {
  char *s = malloc((size_t)depth * 2 + 1);
  assert_non_null(s);
  for (int i = 0; i < depth; i++) {
    s[i] = open[i % 2];
    s[2 * depth - 1 - i] = close[i % 2];
  }
  s[2 * depth] = '\0';
  return s;
}

static void test_depth(void **state) {
  (void)state;
  fdl_err err;
  json_t *v = NULL;
  char *ok = nested(64, "[[", "]]");
  assert_int_equal(fdl_json_parse(ok, strlen(ok), NULL, &v, &err), FDL_OK);
  json_decref(v);
  free(ok);

  char *deep = nested(65, "[[", "]]");
  refuse(deep, NULL, "nesting deeper than 64 levels at line 1 col 65");
  fdl_json_read_opts wide = {100, false, false};
  assert_int_equal(fdl_json_parse(deep, strlen(deep), &wide, &v, &err), FDL_OK);
  json_decref(v);
  free(deep);

  /* Objects count as levels too; a 3-level bound refuses the fourth. */
  fdl_json_read_opts three = {3, false, false};
  canon("{\"a\":[{\"b\":1}]}", &three, 0, "{\"a\":[{\"b\":1}]}");
  refuse("{\"a\":[{\"b\":[]}]}", &three, "nesting deeper than 3 levels");

  /* Far beyond any stack: refused by the pre-scan before jansson recurses. */
  size_t n = 1000000;
  char *huge = malloc(n);
  assert_non_null(huge);
  memset(huge, '[', n);
  refuse_n(huge, n, NULL, "nesting deeper", NULL);
  free(huge);
}

static void test_int_real_distinct(void **state) {
  (void)state;
  json_t *v = NULL;
  fdl_err err;
  const char *text = "[16, 4.0, -0, 1E2, 9223372036854775807, -9223372036854775808]";
  assert_int_equal(fdl_json_parse(text, strlen(text), NULL, &v, &err), FDL_OK);
  assert_true(json_is_integer(json_array_get(v, 0)));
  assert_true(json_is_real(json_array_get(v, 1)));
  assert_true(json_is_integer(json_array_get(v, 2)));
  assert_true(json_is_real(json_array_get(v, 3)));
  assert_true(json_integer_value(json_array_get(v, 4)) == INT64_MAX);
  assert_true(json_integer_value(json_array_get(v, 5)) == INT64_MIN);
  char *got = dump(v, 0);
  assert_string_equal(got, "[16,4.0,0,100.0,9223372036854775807,-9223372036854775808]");
  free(got);
  json_decref(v);
}

static void test_kiln_strict(void **state) {
  (void)state;
  canon("[2.50, 1E2, 1.0, 0.1, 5e-324, 1.7976931348623157e308, 0e0, 0.000, 1e-5, 100e-2]", &KILN, 0,
        "[2.5,100.0,1.0,0.1,5e-324,1.7976931348623157e+308,0.0,0.0,1e-05,1.0]");
  /* Kiln reads -0.0 as +0.0; without Kiln it stays -0.0, as in Python. */
  canon("[-0.0, {\"z\": -0.0e5}, -0]", &KILN, 0, "[0.0,{\"z\":0.0},0]");
  canon("[-0.0, {\"z\": -0.0e5}, -0]", NULL, 0, "[-0.0,{\"z\":-0.0},0]");

  refuse("[0.30000000000000001]", &KILN, "inexact_float");
  refuse("[4.9e-324]", &KILN, "inexact_float");
  refuse("[1.00000000000000011]", &KILN, "inexact_float");
  refuse("[0.10000000000000001]", &KILN, "inexact_float");
  refuse("{\"a\":\n  [1, 0.1000000000000000055511151231257827]}", &KILN,
         "inexact_float: float literal is not exactly its double's shortest form 0.1 at line 2 "
         "col 7");
  refuse("[1e-400]", &KILN, "float_underflow");
  refuse("[-1.5e-999999999999999999999]", &KILN, "float_underflow");
  refuse("[1e400]", &KILN, "float_overflow");
  refuse("[1e999999999999999999999999]", &KILN, "float_overflow");
  /* The same literals pass the plain reader, which rounds like Python. */
  canon("[0.30000000000000001, 4.9e-324, 1e-400]", NULL, 0, "[0.3,5e-324,0.0]");
}

static void test_repr(void **state) {
  (void)state;
  static const struct {
    double x;
    const char *want;
  } cases[] = {
      {0.0, "0.0"},
      {-0.0, "-0.0"},
      {1.0, "1.0"},
      {-1.5, "-1.5"},
      {0.1, "0.1"},
      {0.3, "0.3"},
      {0.1 + 0.2, "0.30000000000000004"},
      {1e-5, "1e-05"},
      {1e-4, "0.0001"},
      {0.00011, "0.00011"},
      {9.9e-5, "9.9e-05"},
      {2.5e-7, "2.5e-07"},
      {1e16, "1e+16"},
      {1e15, "1000000000000000.0"},
      {9999999999999998.0, "9999999999999998.0"},
      {123456789012345678.0, "1.2345678901234568e+17"},
      {5e-324, "5e-324"},
      {-5e-324, "-5e-324"},
      {2.2250738585072014e-308, "2.2250738585072014e-308"},
      {1.7976931348623157e308, "1.7976931348623157e+308"},
      {1e22, "1e+22"},
      {1e23, "1e+23"},
      {100.0, "100.0"},
      {300.0, "300.0"},
      {0.5, "0.5"},
      {1.0 / 3.0, "0.3333333333333333"},
      {2.0 / 3.0, "0.6666666666666666"},
      {9007199254740993.0, "9007199254740992.0"},
      {1e100, "1e+100"},
      {1.5e300, "1.5e+300"},
      {8.98846567431158e307, "8.98846567431158e+307"}, /* 2^1023: lopsided interval */
      {4.450147717014403e-308, "4.450147717014403e-308"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[FDL_FLOAT_REPR_MAX];
    size_t n = fdl_float_repr(cases[i].x, out);
    assert_string_equal(out, cases[i].want);
    assert_int_equal(n, strlen(cases[i].want));
  }
  char out[FDL_FLOAT_REPR_MAX];
  fdl_float_repr(-1.7976931348623157e308, out);
  assert_string_equal(out, "-1.7976931348623157e+308");
  assert_true(strlen(out) < FDL_FLOAT_REPR_MAX);
}

static void test_writer_escapes(void **state) {
  (void)state;
  json_t *o = json_object();
  json_object_set_new(o, "s", json_stringn("\"\\/\b\f\n\r\t\x01\x1f\x7f", 11));
  json_object_set_new(o, "u",
                      json_string("\xC2\x80\xE2\x80\xA8\xEF\xBF\xBD\xEF\xBF\xBF"
                                  "\xF0\x9F\x98\x80"));
  json_object_setn_new(o, "\0nul", 4, json_stringn("a\0b", 3));
  char *plain = dump(o, 0);
  assert_string_equal(plain, "{\"\\u0000nul\":\"a\\u0000b\",\"s\":\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0001"
                             "\\u001f\x7f\",\"u\":\"\xC2\x80\xE2\x80\xA8\xEF\xBF\xBD\xEF\xBF\xBF"
                             "\xF0\x9F\x98\x80\"}");
  char *ascii = dump(o, FDL_JSON_ASCII);
  assert_string_equal(ascii, "{\"\\u0000nul\":\"a\\u0000b\",\"s\":\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0001"
                             "\\u001f\\u007f\",\"u\":\"\\u0080\\u2028\\ufffd\\uffff"
                             "\\ud83d\\ude00\"}");
  free(plain);
  free(ascii);
  json_decref(o);
}

static void test_writer_key_order(void **state) {
  (void)state;
  /* Code point order: U+FFFF before U+1F600 (UTF-16 order would say the opposite). */
  json_t *o = json_object();
  json_object_set_new(o, "\xF0\x9F\x98\x80", json_integer(2));
  json_object_set_new(o, "\xEF\xBF\xBF", json_integer(1));
  json_object_set_new(o, "b", json_integer(0));
  json_object_set_new(o, "a", json_integer(0));
  json_object_set_new(o, "", json_integer(0));
  json_object_setn_new(o, "a\0", 2, json_integer(0));
  json_object_set_new(o, "ab", json_integer(0));
  json_object_set_new(o, "B", json_integer(0));
  char *got = dump(o, FDL_JSON_ASCII);
  assert_string_equal(got, "{\"\":0,\"B\":0,\"a\":0,\"a\\u0000\":0,\"ab\":0,\"b\":0,\"\\uffff\":1,"
                           "\"\\ud83d\\ude00\":2}");
  free(got);
  json_decref(o);
}

static void test_writer_pretty(void **state) {
  (void)state;
  json_t *v = json_pack("{s:[i,f,{},[]],s:{s:{}},s:n,s:[]}", "b", 1, 4.0, "a", "c", "e", "d");
  assert_non_null(v);
  char *got = dump(v, FDL_JSON_PRETTY);
  assert_string_equal(got, "{\n"
                           "  \"a\": {\n"
                           "    \"c\": {}\n"
                           "  },\n"
                           "  \"b\": [\n"
                           "    1,\n"
                           "    4.0,\n"
                           "    {},\n"
                           "    []\n"
                           "  ],\n"
                           "  \"d\": [],\n"
                           "  \"e\": null\n"
                           "}\n");
  free(got);
  char *compact = dump(v, 0);
  assert_string_equal(compact, "{\"a\":{\"c\":{}},\"b\":[1,4.0,{},[]],\"d\":[],\"e\":null}");
  free(compact);
  json_decref(v);
  json_t *s = json_string("x");
  got = dump(s, FDL_JSON_PRETTY | FDL_JSON_ASCII);
  assert_string_equal(got, "\"x\"\n");
  free(got);
  json_decref(s);
}

static void test_writer_refusals(void **state) {
  (void)state;
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_buf_puts(&b, "keep");
  fdl_err err;
  static const char *bad[] = {"\xC0\x80",         "\x80",       "\xED\xA0\x80",
                              "\xF4\x90\x80\x80", "ab\xE2\x82", "\xFF"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json_t *a = json_pack("[i,{s:o}]", 1, "k", json_stringn_nocheck(bad[i], strlen(bad[i])));
    assert_int_equal(fdl_json_dump(a, 0, &b, &err), FDL_INVALID);
    assert_non_null(strstr(err.msg, "string value is not valid UTF-8"));
    assert_string_equal(b.data, "keep"); /* outputs unchanged on error */
    json_decref(a);
    json_t *o = json_object();
    json_object_set_new_nocheck(o, bad[i], json_true());
    assert_int_equal(fdl_json_dump(o, FDL_JSON_ASCII, &b, &err), FDL_INVALID);
    assert_non_null(strstr(err.msg, "object key is not valid UTF-8"));
    json_decref(o);
  }
  assert_int_equal(fdl_json_dump(NULL, 0, &b, &err), FDL_INVALID);

  /* A tree deeper than the writer's bound is refused, not a stack overflow. */
  json_t *root = json_array(), *cur = root;
  for (int i = 0; i < 5000; i++) {
    json_t *next = json_array();
    json_array_append_new(cur, next);
    cur = next;
  }
  assert_int_equal(fdl_json_dump(root, 0, &b, &err), FDL_BOUNDS);
  assert_string_equal(b.data, "keep");
  json_decref(root);

  /* A bounded buffer reports the overflow instead of truncating silently. */
  fdl_buf small;
  fdl_buf_init(&small, 8);
  json_t *s = json_string("0123456789");
  assert_int_equal(fdl_json_dump(s, 0, &small, &err), FDL_TOO_LARGE);
  json_decref(s);
  fdl_buf_free(&small);
  fdl_buf_free(&b);
}

static void test_files(void **state) {
  (void)state;
  char dir[] = "/tmp/fdl-test-json-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[256];
  snprintf(path, sizeof path, "%s/out.json", dir);
  json_t *v = json_pack("{s:f,s:s}", "x", 0.1, "u", "\xC3\xA9");
  fdl_err err;
  assert_int_equal(fdl_json_write_file(path, v, FDL_JSON_PRETTY | FDL_JSON_ASCII, &err), FDL_OK);
  assert_int_equal(fdl_json_write_file(path, v, 0, &err), FDL_EXISTS);
  assert_non_null(strstr(err.msg, "out.json"));

  char *data;
  size_t len;
  assert_int_equal(fdl_read_file(path, 1 << 20, &data, &len, &err), FDL_OK);
  assert_string_equal(data, "{\n  \"u\": \"\\u00e9\",\n  \"x\": 0.1\n}\n");
  free(data);

  json_t *back = NULL;
  assert_int_equal(fdl_json_load_file(path, &KILN, &back, &err), FDL_OK);
  assert_true(json_equal(v, back));
  json_decref(back);
  json_decref(v);
  unlink(path);

  snprintf(path, sizeof path, "%s/bad.json", dir);
  assert_int_equal(fdl_write_file(path, "{\"a\":1,\n\"a\":2}", 14, &err), FDL_OK);
  assert_int_equal(fdl_json_load_file(path, NULL, &back, &err), FDL_PARSE);
  assert_non_null(strstr(err.msg, "bad.json"));
  assert_non_null(strstr(err.msg, "duplicate object key at line 2"));
  unlink(path);
  assert_int_not_equal(fdl_json_load_file(path, NULL, &back, &err), FDL_OK);
  assert_non_null(strstr(err.msg, "bad.json"));
  rmdir(dir);
}

/* Every canonical text must read back to a value that writes the same bytes. */
static void test_round_trip(void **state) {
  (void)state;
  const char *text = "{\"z\":[1,-2,3.25,1e-07,1e+300,true,false,null,\"\\u001f\xC3\xA9\"],"
                     "\"\xF0\x9F\x98\x80\":{\"k\":[]},\"a\":-0.0}";
  for (unsigned flags = 0; flags < 4; flags++) {
    json_t *v = NULL;
    fdl_err err;
    assert_int_equal(fdl_json_parse(text, strlen(text), NULL, &v, &err), FDL_OK);
    char *once = dump(v, flags);
    json_t *w = NULL;
    assert_int_equal(fdl_json_parse(once, strlen(once), NULL, &w, &err), FDL_OK);
    char *twice = dump(w, flags);
    assert_string_equal(once, twice);
    free(once);
    free(twice);
    json_decref(v);
    json_decref(w);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nul_and_memory_budget),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_strings_hide_tokens),
      cmocka_unit_test(test_depth),
      cmocka_unit_test(test_int_real_distinct),
      cmocka_unit_test(test_kiln_strict),
      cmocka_unit_test(test_repr),
      cmocka_unit_test(test_writer_escapes),
      cmocka_unit_test(test_writer_key_order),
      cmocka_unit_test(test_writer_pretty),
      cmocka_unit_test(test_writer_refusals),
      cmocka_unit_test(test_files),
      cmocka_unit_test(test_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
