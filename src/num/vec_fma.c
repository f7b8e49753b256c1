/* vec_fma.c - num/vec.h's kernels compiled for AVX2 + FMA (softmax, SiLU·mul) and AVX2 (the
 * multiply-accumulate) from vec_body.h: the same bits as vec.c, without a libm call per fma.
 * Each returns false where the CPU or compiler has no such build, and the caller runs the plain
 * copy. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "num/vec.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#include "num/kl.h"
#include "num/vec_body.h"

/* flatten: kl_exp inlined, so its fmas and floor become instructions too. */
__attribute__((flatten)) static void softmax_fma(float *s, size_t first, size_t valid, size_t len,
                                                 double scale, double *e) {
  SOFTMAX_BODY
}

__attribute__((flatten)) static void silu_fma(float *g, const float *u, size_t n) {
  SILU_BODY
}
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2")
static void mm_acc_avx2(MM_ACC_ARGS) {
  MM_ACC_BODY
}
#pragma GCC pop_options

static bool has_fma(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool fdl_num_softmax_fma(float *s, size_t first, size_t valid, size_t len, double scale,
                         double *e) {
  if (!has_fma()) return false;
  softmax_fma(s, first, valid, len, scale, e);
  return true;
}

bool fdl_num_silu_fma(float *g, const float *u, size_t n) {
  if (!has_fma()) return false;
  silu_fma(g, u, n);
  return true;
}

bool fdl_num_mm_acc_avx2(MM_ACC_ARGS) {
  if (!__builtin_cpu_supports("avx2")) return false;
  mm_acc_avx2(C, ldc, A, lda, B, ldb, M, Kn, N);
  return true;
}
#else
#include "num/vec_body.h"

bool fdl_num_softmax_fma(float *s, size_t first, size_t valid, size_t len, double scale,
                         double *e) {
  (void)s, (void)first, (void)valid, (void)len, (void)scale, (void)e;
  return false;
}

bool fdl_num_silu_fma(float *g, const float *u, size_t n) {
  (void)g, (void)u, (void)n;
  return false;
}

bool fdl_num_mm_acc_avx2(MM_ACC_ARGS) {
  (void)C, (void)ldc, (void)A, (void)lda, (void)B, (void)ldb, (void)M, (void)Kn, (void)N;
  return false;
}
#endif
