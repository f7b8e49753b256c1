/* order.c - qsort callbacks shared by every layer (base/order.h). */
#include <string.h>

#include "base/order.h"

int fdl_order_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int fdl_order_i64(const void *a, const void *b) {
  return fdl_order_cmp_i64(*(const int64_t *)a, *(const int64_t *)b);
}

int fdl_order_cstr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}
