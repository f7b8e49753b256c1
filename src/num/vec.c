/* vec.c - the plain copies of num/vec.h's kernels and their dispatch to vec_fma.c. */
#include "num/vec.h"

#include <math.h>

#include "num/kl.h"
#include "num/vec_body.h"

double fdl_num_exp_neg(double d) {
  return kl_exp(d);
}

void fdl_num_softmax_plain(float *s, size_t first, size_t valid, size_t len, double scale,
                           double *e) {
  SOFTMAX_BODY
}

void fdl_num_silu_plain(float *g, const float *u, size_t n) {
  SILU_BODY
}

void fdl_num_mm_acc_plain(MM_ACC_ARGS) {
  MM_ACC_BODY
}

void fdl_num_softmax_row(float *s, size_t first, size_t valid, size_t len, double scale,
                         double *e) {
  if (fdl_num_softmax_fma(s, first, valid, len, scale, e)) return;
  fdl_num_softmax_plain(s, first, valid, len, scale, e);
}

void fdl_num_silu_mul(float *g, const float *u, size_t n) {
  if (fdl_num_silu_fma(g, u, n)) return;
  fdl_num_silu_plain(g, u, n);
}

void fdl_num_mm_acc(MM_ACC_ARGS) {
  if (fdl_num_mm_acc_avx2(C, ldc, A, lda, B, ldb, M, Kn, N)) return;
  fdl_num_mm_acc_plain(C, ldc, A, lda, B, ldb, M, Kn, N);
}
