/* vec.h - num's kernels for the engine's forward pass (src/engine), the one place outside num
 * that may include it: the exp every path shares, softmax and SiLU·mul rows, and the float32
 * multiply-accumulate of the Gated DeltaNet's chunks. Each is a plain C loop in a written order
 * (docs/NUMERICS.md section 8), dispatched to a copy built for AVX2 (+ FMA) where the CPU has it
 * (vec_fma.c); both copies give the same bits, only the speed differs. */
#ifndef FDL_NUM_VEC_H
#define FDL_NUM_VEC_H

#include <stdbool.h>
#include <stddef.h>

double fdl_num_exp_neg(double d); /* d <= 0; kl_exp (num/kl.h) */
/* Softmax of scale * s[first..valid) in place, zeros elsewhere in s[0..len); e: len doubles. */
void fdl_num_softmax_row(float *s, size_t first, size_t valid, size_t len, double scale, double *e);
/* g = silu(g) * u. */
void fdl_num_silu_mul(float *g, const float *u, size_t n);
/* C[m][n] = C[m][n] + A[m][k] B[k][n] for m < M, k < Kn (ascending), n < N. */
void fdl_num_mm_acc(float *restrict C, size_t ldc, const float *restrict A, size_t lda,
                    const float *restrict B, size_t ldb, size_t M, size_t Kn, size_t N);

/* The portable copies the kernels above fall back to, and (vec_fma.c) the same kernels built
 * for AVX2 + FMA, false (nothing done) where the CPU or compiler has no such build: tests
 * compare the two. */
void fdl_num_softmax_plain(float *s, size_t first, size_t valid, size_t len, double scale,
                           double *e);
void fdl_num_silu_plain(float *g, const float *u, size_t n);
void fdl_num_mm_acc_plain(float *restrict C, size_t ldc, const float *restrict A, size_t lda,
                          const float *restrict B, size_t ldb, size_t M, size_t Kn, size_t N);
bool fdl_num_softmax_fma(float *s, size_t first, size_t valid, size_t len, double scale, double *e);
bool fdl_num_silu_fma(float *g, const float *u, size_t n);
bool fdl_num_mm_acc_avx2(float *restrict C, size_t ldc, const float *restrict A, size_t lda,
                         const float *restrict B, size_t ldb, size_t M, size_t Kn, size_t N);

#endif
