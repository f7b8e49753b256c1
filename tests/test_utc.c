/* test_utc.c - fdl_utc_valid: the shape and the calendar of every sealed timestamp. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fidelis/fidelis.h"
#include "base/utc.h"

static void test_real_times(void **state) {
  (void)state;
  const char *ok[] = {"2026-12-01T12:05:16Z", "2024-02-29T00:00:00Z", "2000-02-29T23:59:59Z",
                      "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "2026-04-30T08:30:00Z"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    if (!fdl_utc_valid(ok[i])) fail_msg("refused %s", ok[i]);
}

static void test_impossible_or_misshapen(void **state) {
  (void)state;
  const char *bad[] = {"2026-02-30T25:61:61Z",  "2026-02-29T00:00:00Z", "1900-02-29T00:00:00Z",
                       "2026-04-31T00:00:00Z",  "2026-13-01T00:00:00Z", "2026-00-10T00:00:00Z",
                       "2026-01-00T00:00:00Z",  "0000-01-01T00:00:00Z", "2026-01-01T24:00:00Z",
                       "2026-01-01T23:60:00Z",  "2026-01-01T23:59:60Z", "2026-1-02T03:04:05Z",
                       "2026-01-02T03:04:05Zx", "2026-01-02 03:04:05Z", "2026-01-02T03:04:05",
                       "+026-01-02T03:04:05Z",  " 2026-01-02T03:04:5Z", ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (fdl_utc_valid(bad[i])) fail_msg("accepted %s", bad[i]);
  assert_false(fdl_utc_valid(NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_real_times),
      cmocka_unit_test(test_impossible_or_misshapen),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
