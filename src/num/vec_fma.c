/* vec_fma.c - num/vec.h's kernels compiled for AVX2 + FMA (softmax, SiLU·mul) and AVX2 (the
 * multiply-accumulate) from vec_body.h: the same bits as vec.c, without a libm call per fma.
 * Each returns false where the CPU or compiler has no such build, and the caller runs the plain
 * copy. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>

#include "num/vec.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES 1
#define HAS(isa) __builtin_cpu_supports(isa)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#else
#define HAS(isa) false
#endif
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

#ifdef CLONES
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2")
#endif
static void mm_acc_avx2(MM_ACC_ARGS) {
  MM_ACC_BODY
}
#ifdef CLONES
#pragma GCC pop_options
#endif

bool fdl_num_softmax_fma(float *s, size_t first, size_t valid, size_t len, double scale,
                         double *e) {
  if (!HAS("avx2") || !HAS("fma")) return false;
  softmax_fma(s, first, valid, len, scale, e);
  return true;
}

bool fdl_num_silu_fma(float *g, const float *u, size_t n) {
  if (!HAS("avx2") || !HAS("fma")) return false;
  silu_fma(g, u, n);
  return true;
}

bool fdl_num_mm_acc_avx2(MM_ACC_ARGS) {
  if (!HAS("avx2")) return false;
  mm_acc_avx2(C, ldc, A, lda, B, ldb, M, Kn, N);
  return true;
}
