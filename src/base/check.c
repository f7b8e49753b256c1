/* check.c - FDL_ASSERT's failure: the library's one call that ends the process (base/check.h). */
#include "base/check.h"

#include <stdio.h>
#include <stdlib.h>

void fdl_assert_fail(const char *file, int line, const char *cond) {
  fprintf(stderr, "%s:%d: assertion failed: %s\n", file, line, cond);
  abort();
}
