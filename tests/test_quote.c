/* test_quote.c - the shared quoting helper: escapes, UTF-8 boundaries, truncation with length,
 * and that every result is valid UTF-8 with no byte a terminal acts on. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "base/quote.h"
#include "dataset/dataset_json.h"

/* jansson's UTF-8 check is the one a report has to pass, so it is the oracle here. */
static void assert_safe(const char *q) {
  json_t *v = json_string(q);
  assert_non_null(v);
  json_decref(v);
  for (const unsigned char *p = (const unsigned char *)q; *p; p++) {
    assert_true(*p >= 0x20 && *p != 0x7f);
    if (p[0] == 0xc2) assert_false(p[1] >= 0x80 && p[1] <= 0x9f);
  }
  assert_false(fdl_quote_has_control(q, strlen(q)));
}

static const char *q(const char *s, size_t n, char *out, size_t cap) {
  fdl_quote(s, n, out, cap);
  assert_true(strlen(out) < cap);
  assert_safe(out);
  return out;
}

static void test_plain(void **state) {
  (void)state;
  char out[FDL_QUOTE_CAP];
  assert_string_equal(q("abc", 3, out, sizeof out), "'abc'");
  assert_string_equal(q("", 0, out, sizeof out), "''");
  assert_string_equal(fdl_quote_str(NULL, out, sizeof out), "(none)");
  assert_string_equal(fdl_quote_str("caf\xc3\xa9 \xf0\x9f\x98\x80", out, sizeof out),
                      "'caf\xc3\xa9 \xf0\x9f\x98\x80'");
}

static void test_escapes(void **state) {
  (void)state;
  char out[FDL_QUOTE_CAP];
  assert_string_equal(q("a\x1b[2Jb", 6, out, sizeof out), "'a\\x1b[2Jb'");
  assert_string_equal(q("t\tn\nr\r", 6, out, sizeof out), "'t\\tn\\nr\\r'");
  assert_string_equal(q("del\x7f", 4, out, sizeof out), "'del\\x7f'");
  assert_string_equal(q("it's a\\b", 8, out, sizeof out), "'it\\'s a\\\\b'");
  /* C1 controls are valid UTF-8 yet act on some terminals (U+009B is a CSI). */
  assert_string_equal(q("x\xc2\x9b"
                        "2J",
                        5, out, sizeof out),
                      "'x\\u009b2J'");
  /* Invisible and bidi characters would hide or reorder what is shown. */
  assert_string_equal(q("\xef\xbb\xbf"
                        "a\xe2\x80\xae"
                        "b",
                        8, out, sizeof out),
                      "'\\ufeffa\\u202eb'");
}

static void test_invalid_utf8(void **state) {
  (void)state;
  char out[FDL_QUOTE_CAP];
  assert_string_equal(q("a\xff"
                        "b",
                        3, out, sizeof out),
                      "'a\\xffb'");
  /* A lone lead byte, an overlong '/', a surrogate and a code point past U+10FFFF. */
  assert_string_equal(q("\xe2\x82", 2, out, sizeof out), "'\\xe2\\x82'");
  assert_string_equal(q("\xc0\xaf", 2, out, sizeof out), "'\\xc0\\xaf'");
  assert_string_equal(q("\xed\xa0\x80", 3, out, sizeof out), "'\\xed\\xa0\\x80'");
  assert_string_equal(q("\xf4\x90\x80\x80", 4, out, sizeof out), "'\\xf4\\x90\\x80\\x80'");
  assert_true(fdl_quote_has_control("a\xff", 2));
  assert_false(fdl_quote_has_control("caf\xc3\xa9", 5));
}

static void test_nul_inside(void **state) {
  (void)state;
  char out[FDL_QUOTE_CAP];
  /* The whole input is shown: nothing after a NUL is silently dropped. */
  assert_string_equal(q("a\0b/c", 5, out, sizeof out), "'a\\x00b/c'");
  assert_true(fdl_quote_has_control("a\0b", 3));
}

static void test_truncation_bound(void **state) {
  (void)state;
  char big[1000];
  memset(big, 'x', sizeof big);
  char out[FDL_QUOTE_CAP];
  q(big, sizeof big, out, sizeof out);
  const char *tail = "\xe2\x80\xa6' (1000 bytes)";
  size_t len = strlen(out);
  assert_true(len > strlen(tail));
  assert_string_equal(out + len - strlen(tail), tail);
  assert_true(len >= sizeof out - 8); /* the room is used, not wasted */
  /* An input that fits exactly gets no ellipsis. */
  char exact[FDL_QUOTE_CAP];
  memset(exact, 'y', sizeof exact);
  q(exact, sizeof exact - 3, out, sizeof out);
  assert_int_equal(strlen(out), sizeof out - 1);
  assert_null(strstr(out, "\xe2\x80\xa6"));
  /* One byte more must be cut. */
  q(exact, sizeof exact - 2, out, sizeof out);
  assert_non_null(strstr(out, "(254 bytes)"));
}

/* Every cut position inside multibyte text: the result stays valid and never splits a character
 * or an escape. */
static void test_truncation_multibyte(void **state) {
  (void)state;
  /* The issue-14 shape: a long path of ASCII, U+FEFF (escaped, 6 bytes shown) and a 2-byte
   * letter (shown as is). Each 9-byte group renders as "/\\ufeff\xc3\xa9". */
  char in[402];
  size_t n = 0;
  for (; n + 6 <= sizeof in; n += 6) memcpy(in + n, "/\xef\xbb\xbf\xc3\xa9", 6);
  char want[32];
  snprintf(want, sizeof want, "\xe2\x80\xa6' (%zu bytes)", n);
  for (size_t cap = FDL_QUOTE_MIN; cap < 200; cap++) {
    char out[200];
    q(in, n, out, cap);
    size_t len = strlen(out);
    assert_true(len > strlen(want));
    assert_string_equal(out + len - strlen(want), want);
    size_t body = len - strlen(want) - 1;
    assert_true(body % 9 == 0 || body % 9 == 1 || body % 9 == 7);
    for (size_t i = 0; i + 9 <= body; i += 9)
      assert_memory_equal(out + 1 + i, "/\\ufeff\xc3\xa9", 9);
  }
  /* A 4-byte character straddling the cut is dropped whole. */
  char emoji[300];
  for (size_t i = 0; i < sizeof emoji; i += 4) memcpy(emoji + i, "\xf0\x9f\x98\x80", 4);
  for (size_t cap = FDL_QUOTE_MIN; cap < 120; cap++) {
    char out[120];
    q(emoji, sizeof emoji, out, cap);
    size_t body = strlen(out) - strlen("\xe2\x80\xa6' (300 bytes)") - 1;
    assert_int_equal(body % 4, 0);
  }
}

static void test_small_buffers(void **state) {
  (void)state;
  char out[64];
  char big[200];
  memset(big, 'z', sizeof big);
  for (size_t cap = 1; cap < FDL_QUOTE_MIN; cap++) {
    memset(out, 'Q', sizeof out);
    fdl_quote(big, sizeof big, out, cap);
    assert_true(strlen(out) < cap);
    assert_safe(out);
  }
  assert_string_equal(fdl_quote("ab", 2, out, 5), "'ab'");
}

static void test_text_mode(void **state) {
  (void)state;
  char out[FDL_QUOTE_CAP];
  const char msg[] = "'a\\x1b' is bad\x1b]0;pwn\x07 \xff";
  fdl_quote_text(msg, sizeof msg - 1, out, sizeof out);
  assert_string_equal(out, "'a\\x1b' is bad\\x1b]0;pwn\\x07 \\xff");
  assert_safe(out);
  char big[600];
  memset(big, 'm', sizeof big);
  fdl_quote_text(big, sizeof big, out, sizeof out);
  assert_non_null(strstr(out, "m\xe2\x80\xa6 (600 bytes)"));
  assert_safe(out);
}

/* A finding made from hostile bytes still serialises (issue 14: a message cut inside a UTF-8
 * sequence lost the whole report, blamed on memory). */
static void test_report_serialises(void **state) {
  (void)state;
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_ds_report_set_subject(&rep, "dataset:\xff\x1b[2J");
  char long_path[3000];
  for (size_t i = 0; i + 3 < sizeof long_path; i += 3) memcpy(long_path + i, "\xef\xbb\xbf", 3);
  long_path[sizeof long_path - 3] = '\xe2'; /* ends inside a sequence */
  long_path[sizeof long_path - 2] = '\x82';
  long_path[sizeof long_path - 1] = '\0';
  fdl_ds_report_error(&rep, FDL_DSC_PATH_ESCAPE, "PATH-1", long_path, "raw %.601s and \x07",
                      long_path);
  fdl_ds_report_warn(&rep, FDL_DSC_REDUCED_RUN_COUNT, "R", "a\xc3", "%s", "\xc3");
  json_t *doc = NULL;
  fdl_err err;
  assert_int_equal(fdl_ds_report_to_json(&rep, true, &doc, &err), FDL_OK);
  const json_t *e = json_array_get(json_object_get(doc, "errors"), 0);
  const char *msg = json_string_value(json_object_get(e, "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "\\x07"));
  assert_non_null(strstr(msg, "\\ufeff\\xef and"));
  assert_safe(msg);
  assert_safe(json_string_value(json_object_get(e, "where")));
  assert_safe(json_string_value(json_object_get(doc, "subject")));
  json_decref(doc);
  fdl_ds_report_free(&rep);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain),
      cmocka_unit_test(test_escapes),
      cmocka_unit_test(test_invalid_utf8),
      cmocka_unit_test(test_nul_inside),
      cmocka_unit_test(test_truncation_bound),
      cmocka_unit_test(test_truncation_multibyte),
      cmocka_unit_test(test_small_buffers),
      cmocka_unit_test(test_text_mode),
      cmocka_unit_test(test_report_serialises),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
