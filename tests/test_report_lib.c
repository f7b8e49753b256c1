/* test_report_lib.c - unit tests of the report library's pieces that the browser test cannot
 * isolate: HTML escaping of hostile bytes (markup, quotes, controls, invalid UTF-8), number text,
 * the SVG frame's mapping (linear and log, clamped to the plot area), and the public calls'
 * refusals (no receipts, too many, an existing output, a directory without a receipt). */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fidelis/report.h"
#include "report/rpt.h"

static char *esc(const char *s) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_rpt_esc(&b, s);
  fdl_buf_putc(&b, '\0');
  return fdl_buf_take(&b, NULL);
}

static void test_escape(void **state) {
  (void)state;
  char *t = esc("<script>alert('x')</script> & \"q\"");
  assert_string_equal(t, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;");
  free(t);
  t = esc("a\x01"
          "b\x7f"
          "c");
  assert_string_equal(t, "a\xEF\xBF\xBD"
                         "b\xEF\xBF\xBD"
                         "c");
  free(t);
  t = esc("\xC3\xA9\xFF\xCE\x94"); /* é, an invalid byte, Δ */
  assert_string_equal(t, "\xC3\xA9\xEF\xBF\xBD\xCE\x94");
  free(t);
  t = esc("\xC2\x85"); /* a C1 control, NEL */
  assert_string_equal(t, "\xEF\xBF\xBD");
  free(t);
}

static void test_fmt(void **state) {
  (void)state;
  char buf[32];
  assert_string_equal(fdl_rpt_fmt(NAN, 6, buf), "\xE2\x80\x94");
  assert_string_equal(fdl_rpt_fmt(0.0482622168, 6, buf), "0.0482622");
  assert_string_equal(fdl_rpt_fmt(1016, 6, buf), "1016");
}

static void test_frame(void **state) {
  (void)state;
  fdl_rpt_frame f = {1e-4, 1, 0, 1, true, false, 100, 10, 400, 200};
  assert_true(fabs(fdl_rpt_sx(&f, 1e-4) - 100) < 1e-9);
  assert_true(fabs(fdl_rpt_sx(&f, 1e-2) - 300) < 1e-9);
  assert_true(fabs(fdl_rpt_sx(&f, 1) - 500) < 1e-9);
  assert_true(fabs(fdl_rpt_sx(&f, 1e3) - 500) < 1e-9); /* clamped, never outside the area */
  assert_true(fabs(fdl_rpt_sy(&f, 0) - 210) < 1e-9);
  assert_true(fabs(fdl_rpt_sy(&f, 1) - 10) < 1e-9);
}

static void test_refusals(void **state) {
  (void)state;
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/fdl-rpt-XXXXXX");
  assert_non_null(mkdtemp(dir));
  char out[128], page[128];
  snprintf(out, sizeof out, "%s/exists.html", dir);
  snprintf(page, sizeof page, "%s/p.html", dir);
  FILE *f = fopen(out, "w");
  assert_non_null(f);
  fclose(f);
  fdl_err err = {FDL_OK, ""};
  const char *dirs[1] = {dir};
  assert_int_equal(fdl_report_write(dirs, 0, page, NULL, &err), FDL_INVALID);
  assert_int_equal(fdl_report_write(dirs, FDL_REPORT_MAX_RECEIPTS + 1, page, NULL, &err),
                   FDL_INVALID);
  assert_int_equal(fdl_report_write(dirs, 1, out, NULL, &err), FDL_EXISTS);
  assert_non_null(strstr(err.msg, "never overwrites"));
  /* No receipt in the directory: the machine could not read it, nothing is written. */
  fdl_status s = fdl_report_write(dirs, 1, page, NULL, &err);
  assert_int_not_equal(s, FDL_OK);
  assert_int_equal(access(page, F_OK), -1);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  assert_int_not_equal(fdl_report_markdown(dirs, 1, &b, NULL, &err), FDL_OK);
  assert_int_equal(b.len, 0);
  fdl_buf_free(&b);
  unlink(out);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escape),
      cmocka_unit_test(test_fmt),
      cmocka_unit_test(test_frame),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
