/* f32repr.c - the value Kiln's JSON holds for a float32 (spec §11, candidate `logit`): serde
 * writes an f32 as its shortest round-tripping decimal, Python reads that decimal as a double.
 * The shortest decimal is found by trying precisions 1..9 with %.*g until strtof gives the same
 * float back (9 significant digits always round-trip a binary32). */
#include <stdio.h>
#include <stdlib.h>

#include "fidelis/attr.h"

size_t fdl_attr_f32_shortest(float f, char *buf, size_t cap) {
  int len = 0;
  for (int p = 1; p <= 9; p++) {
    len = snprintf(buf, cap, "%.*g", p, (double)f);
    if (strtof(buf, NULL) == f) break; /* -0.0 == 0.0, and "-0" keeps the sign either way */
  }
  return len < 0 ? 0 : (size_t)len;
}

double fdl_attr_f32_json_value(float f) {
  char buf[32];
  fdl_attr_f32_shortest(f, buf, sizeof buf);
  return strtod(buf, NULL);
}
