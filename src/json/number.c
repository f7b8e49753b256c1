/* number.c - exact decimal normalisation of JSON number tokens, for Kiln's float rule. */
#include <string.h>

#include "json/number.h"

/* Exponents beyond this are saturated: no token short enough to hold in memory can bring such
 * a value back into the double range, and the clamp keeps the arithmetic in int64. */
#define EXP_CLAMP INT64_C(1000000000000000)

static bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool fdl_decimal_is_json_number(const char *s, size_t n) {
  size_t i = 0;
  if (i < n && s[i] == '-') i++;
  if (i >= n || !is_digit(s[i])) return false;
  if (s[i] == '0') {
    i++;
  } else {
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= n || !is_digit(s[i])) return false;
    while (i < n && is_digit(s[i])) i++;
  }
  return i == n;
}

bool fdl_decimal_parse(const char *s, size_t n, fdl_decimal *d) {
  memset(d, 0, sizeof *d);
  size_t i = 0;
  if (i < n && s[i] == '-') {
    d->neg = true;
    i++;
  }
  size_t mstart = i;
  while (i < n && s[i] != 'e' && s[i] != 'E') i++;
  size_t mend = i;

  int64_t e = 0;
  if (i < n) {
    i++;
    bool eneg = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
    for (; i < n && is_digit(s[i]); i++)
      if (e < EXP_CLAMP) e = e * 10 + (s[i] - '0');
    if (eneg) e = -e;
  }

  /* k counts digits; intlen is how many precede the point; first/last are nonzero digits. */
  int64_t k = 0, intlen = -1, first = -1, last = -1;
  for (size_t j = mstart; j < mend; j++) {
    if (s[j] == '.') {
      intlen = k;
      continue;
    }
    if (s[j] != '0') {
      if (first < 0) first = k;
      last = k;
    }
    k++;
  }
  if (intlen < 0) intlen = k;
  if (first < 0) return true; /* zero */

  int64_t ndig = last - first + 1;
  d->ndig = ndig > FDL_DECIMAL_MAX_DIGITS ? FDL_DECIMAL_MAX_DIGITS + 1 : (int)ndig;
  if (ndig > FDL_DECIMAL_MAX_DIGITS) return false;
  int64_t m = 0;
  for (size_t j = mstart; j < mend; j++) {
    if (s[j] == '.') continue;
    if (m >= first && m <= last) d->dig[m - first] = s[j];
    m++;
  }
  d->exp = e + intlen - 1 - first;
  return true;
}

bool fdl_decimal_equal(const fdl_decimal *a, const fdl_decimal *b) {
  if (a->ndig == 0 || b->ndig == 0) return a->ndig == b->ndig;
  return a->neg == b->neg && a->ndig == b->ndig && a->exp == b->exp &&
         !memcmp(a->dig, b->dig, (size_t)a->ndig);
}
