/* float_repr.c - Python's repr() of a double, computed exactly without tables.
 *
 * repr picks the shortest decimal that reads back as the same double and, among equally short
 * ones, the one nearest the double. glibc's printf and strtod are both correctly rounded, so:
 * for a precision p, "%.*e" gives the p-digit decimal nearest x; if it does not read back as x,
 * the p-digit decimal on the other side of x still might (the rounding interval is lopsided at
 * powers of two). Whether some p-digit decimal reads back is monotone in p (append a zero), so
 * a binary search over p in [1, 17] finds the shortest length. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json.h"

enum { MAX_DIGITS = 17 };

/* A positive decimal dig[0..p) * 10^(exp - p + 1), i.e. d.ddd * 10^exp. */
typedef struct {
  char dig[MAX_DIGITS + 1];
  int p;
  int exp;
} decimal;

static void nearest_decimal(double ax, int p, decimal *d) {
  char tmp[48];
  snprintf(tmp, sizeof tmp, "%.*e", p - 1, ax);
  const char *s = tmp;
  int n = 0;
  for (; *s && *s != 'e'; s++)
    if (*s >= '0' && *s <= '9') d->dig[n++] = *s;
  d->dig[n] = '\0';
  d->p = n;
  d->exp = *s == 'e' ? atoi(s + 1) : 0;
}

static double decimal_value(const decimal *d) {
  char tmp[48];
  snprintf(tmp, sizeof tmp, "%c.%se%d", d->dig[0], d->dig + 1, d->exp);
  return strtod(tmp, NULL);
}

/* The adjacent p-digit decimal above (up) or below d; the grid changes at powers of ten. */
static void neighbour(const decimal *d, bool up, decimal *o) {
  *o = *d;
  int i = o->p - 1;
  if (up) {
    while (i >= 0 && o->dig[i] == '9') o->dig[i--] = '0';
    if (i >= 0) {
      o->dig[i]++;
    } else {
      o->dig[0] = '1';
      o->exp++;
    }
  } else {
    while (i >= 0 && o->dig[i] == '0') o->dig[i--] = '9';
    o->dig[i]--; /* the leading digit is never 0, so i >= 0 here */
    if (o->dig[0] == '0') {
      memset(o->dig, '9', (size_t)o->p);
      o->exp--;
    }
  }
}

/* True if some p-digit decimal reads back as ax; *best is the nearest such one. */
static bool shortest_at(double ax, int p, decimal *best) {
  nearest_decimal(ax, p, best);
  double v = decimal_value(best);
  if (v == ax) return true;
  decimal other;
  neighbour(best, v < ax, &other);
  if (decimal_value(&other) != ax) return false;
  *best = other;
  return true;
}

static size_t put_exponent(char *out, int e) {
  return (size_t)sprintf(out, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
}

size_t fdl_float_repr(double x, char *out) {
  char *o = out;
  if (isnan(x)) return (size_t)sprintf(out, "nan");
  if (signbit(x)) *o++ = '-';
  double ax = fabs(x);
  if (isinf(ax)) return (size_t)(o - out) + (size_t)sprintf(o, "inf");
  if (ax == 0) return (size_t)(o - out) + (size_t)sprintf(o, "0.0");

  /* Most doubles need 16 or 17 digits, so probe 15 first rather than the middle. */
  decimal best, probe;
  bool have_best = false;
  int lo = 1, hi = MAX_DIGITS, mid = 15;
  while (lo < hi) {
    if (shortest_at(ax, mid, &probe)) {
      hi = mid;
      best = probe;
      have_best = true;
    } else {
      lo = mid + 1;
    }
    mid = (lo + hi) / 2;
  }
  if (!have_best) shortest_at(ax, hi, &best);
  int n = best.p;
  while (n > 1 && best.dig[n - 1] == '0') n--;
  int e = best.exp;

  if (e < -4 || e >= 16) {
    *o++ = best.dig[0];
    if (n > 1) {
      *o++ = '.';
      memcpy(o, best.dig + 1, (size_t)n - 1);
      o += n - 1;
    }
    o += put_exponent(o, e);
  } else if (e < 0) {
    *o++ = '0';
    *o++ = '.';
    for (int i = -1; i > e; i--) *o++ = '0';
    memcpy(o, best.dig, (size_t)n);
    o += n;
  } else {
    for (int i = 0; i <= e; i++) *o++ = i < n ? best.dig[i] : '0';
    *o++ = '.';
    if (n > e + 1) {
      memcpy(o, best.dig + e + 1, (size_t)(n - e - 1));
      o += n - e - 1;
    } else {
      *o++ = '0';
    }
  }
  *o = '\0';
  return (size_t)(o - out);
}
