/* utc.c - timestamps checked by shape and by calendar. */
#include <string.h>

#include "base/utc.h"

/* Digits at s[0..n) as a number, or -1 when any is not a digit. Checked character by
 * character: sscanf's %u would also take a sign, spaces and short fields. */
static int digits(const char *s, int n) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

bool fdl_utc_valid(const char *s) {
  if (!s || strlen(s) != FDL_UTC_LEN) return false;
  if (s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != 'Z')
    return false;
  int y = digits(s, 4), mo = digits(s + 5, 2), d = digits(s + 8, 2);
  int h = digits(s + 11, 2), mi = digits(s + 14, 2), se = digits(s + 17, 2);
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
      se > 59)
    return false;
  static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= DAYS[mo - 1] + (mo == 2 && leap);
}
