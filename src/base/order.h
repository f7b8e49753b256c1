/* order.h - the library's comparators (internal), so every sort orders the same way.
 *
 * Three-way comparison without subtraction (x - y overflows for int64 and is wrong for
 * doubles), and qsort callbacks for the element types sorted directly. Struct sorts by an int64
 * key compare with fdl_order_cmp_i64. Strings compare with strcmp, which orders by unsigned
 * byte: for UTF-8 that is code point order, Python's order of str. */
#ifndef FIDELIS_BASE_ORDER_H
#define FIDELIS_BASE_ORDER_H

#include <stdint.h>

/* -1, 0 or 1 as x is below, equal to or above y. */
static inline int fdl_order_cmp_i64(int64_t x, int64_t y) {
  return (x > y) - (x < y);
}

/* qsort callbacks, ascending: double (no NaN may be present), int64_t, and char * by strcmp. */
int fdl_order_double(const void *a, const void *b);
int fdl_order_i64(const void *a, const void *b);
int fdl_order_cstr(const void *a, const void *b);

#endif
