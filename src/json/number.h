/* number.h - exact comparison of decimal number literals (internal to the JSON layer). */
#ifndef FIDELIS_JSON_NUMBER_H
#define FIDELIS_JSON_NUMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Enough significant digits for any double's shortest form. */
#define FDL_DECIMAL_MAX_DIGITS 17

/* A decimal normalised to d.ddd * 10^exp with no leading or trailing zero digits;
 * ndig == 0 means zero (of either sign). */
typedef struct {
  bool neg;
  int ndig;
  char dig[FDL_DECIMAL_MAX_DIGITS + 1];
  int64_t exp;
} fdl_decimal;

/* True if s[0..n) is exactly one JSON number token. */
bool fdl_decimal_is_json_number(const char *s, size_t n);
/* Normalises a JSON number token. Returns false (d unusable for comparison, but d->ndig > 0)
 * when it has more than FDL_DECIMAL_MAX_DIGITS significant digits. */
bool fdl_decimal_parse(const char *s, size_t n, fdl_decimal *d);
/* Numeric equality, so 2.50 == 2.5 == 25e-1 and -0.0 == 0. */
bool fdl_decimal_equal(const fdl_decimal *a, const fdl_decimal *b);

#endif
