/* kernels_fma.c - softmax and SiLU·mul compiled for AVX2 + FMA (see kernels_body.h): the same bits
 * as kernels.c, without a libm call per fma. Returns false where the CPU or compiler has no such
 * build, and the caller runs the plain copy. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "engine/kernels_body.h"
#include "num/kl.h"

/* flatten: kl_exp inlined, so its fmas and floor become instructions too. */
__attribute__((flatten)) static void softmax_fma(float *s, size_t first, size_t valid, size_t len,
                                                 double scale, double *e) {
  SOFTMAX_BODY
}

__attribute__((flatten)) static void silu_fma(float *g, const float *u, size_t n) {
  SILU_BODY
}
#pragma GCC pop_options

bool fdl_eng_softmax_fma(float *s, size_t first, size_t valid, size_t len, double scale,
                         double *e) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  softmax_fma(s, first, valid, len, scale, e);
  return true;
}

bool fdl_eng_silu_fma(float *g, const float *u, size_t n) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return false;
  silu_fma(g, u, n);
  return true;
}
#else
bool fdl_eng_softmax_fma(float *s, size_t first, size_t valid, size_t len, double scale,
                         double *e) {
  (void)s, (void)first, (void)valid, (void)len, (void)scale, (void)e;
  return false;
}

bool fdl_eng_silu_fma(float *g, const float *u, size_t n) {
  (void)g, (void)u, (void)n;
  return false;
}
#endif
