/* check.h - internal to libfidelis: the one overflow check for sizes and the one assertion.
 *
 * fdl_size_mul / fdl_size_add store a * b (a + b) in *out and return true, or return false
 * (leaving *out alone) where the result does not fit a size_t. Every size computed from an input
 * (a shape, a context length, a count read from a file) goes through them before it reaches an
 * allocator.
 *
 * FDL_ASSERT(cond) is for programmer errors only, never for input: an input the library cannot
 * handle is refused with an fdl_status. A false cond prints "file:line: assertion failed: cond"
 * to stderr and aborts; it is the library's one way to end the process (docs/ARCHITECTURE.md). */
#ifndef FDL_BASE_CHECK_H
#define FDL_BASE_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool fdl_size_mul(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

static inline bool fdl_size_add(size_t a, size_t b, size_t *out) {
  if (b > SIZE_MAX - a) return false;
  *out = a + b;
  return true;
}

_Noreturn void fdl_assert_fail(const char *file, int line, const char *cond);

#define FDL_ASSERT(cond) ((cond) ? (void)0 : fdl_assert_fail(__FILE__, __LINE__, #cond))

#endif
