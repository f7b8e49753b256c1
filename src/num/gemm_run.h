/* num/gemm_run.h - fidelis' own matrix product, with bits fixed by a written contract.
 *
 *   C[i][j] = sum over k of A[i][k] * B[j][k]        (C = A . B^T)
 *
 * A is float32 (activations, hidden states); B is read as stored, BF16, F16 or float32
 * (weights, an lm_head), and widened exactly in registers, so a BF16 matrix is never copied to
 * float32. Both operands keep k contiguous, which is how an lm_head [vocab x hidden] and a
 * batch of hidden rows [positions x hidden] are stored.
 *
 * The arithmetic contract ("fdl-gemm-1", docs/NUMERICS.md section 5): every C[i][j] is the
 * float32 chain
 *
 *   c = +0.0f;  for k = 0, 1, ..., K-1:  c = fmaf(A[i][k], widen(B[j][k]), c);
 *
 * in IEEE round-to-nearest-even with subnormals kept (the kernels set MXCSR to its default for
 * the duration of a call and restore it); a result that is NaN is stored as the quiet NaN
 * 0x7FC00000, whatever payloads met on the way. The scalar kernel is that loop; the AVX2+FMA and
 * AVX-512F kernels reproduce it bit for bit. Blocking over M, N and K, the thread count and
 * where an element falls in a tile change the speed only: no element depends on another row
 * or column, and the chain over k is never split. */
#ifndef FIDELIS_GEMM_H
#define FIDELIS_GEMM_H

#include <stddef.h>

#include "fidelis/num.h"
#include "fidelis/pool.h"
#include "fidelis/status.h"
#include "fidelis/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Name and version of the arithmetic contract; recorded wherever a result depends on it. */
#define FDL_GEMM_CONTRACT "fdl-gemm-1"

/* The element types of B: fdl_gemm_type, in num.h (a replayed head is one). */

/* One product. Pointers are borrowed for the call; C must not overlap A or B. Leading
 * dimensions are in elements: lda >= k, ldb >= k, ldc >= n. m, n or k may be 0 (k = 0 writes
 * +0.0 everywhere). */
typedef struct fdl_gemm_args_ {
  size_t m, n, k;
  const float *a; /* [m x lda] */
  size_t lda;
  const void *b; /* [n x ldb] elements of b_type */
  size_t ldb;
  fdl_gemm_type b_type;
  float *c; /* [m x ldc] */
  size_t ldc;
  /* Or B made on demand, for a matrix stored in a form no kernel reads (ggml's quantized
   * blocks): when b_rows is set, b, b_type and ldb are unused and the GEMM calls
   * b_rows(b_ctx, b_row0 + j0, b_row0 + j1, dst) for the float32 rows [j0, j1) of B (k values
   * each, dst[(j - j0) * k + kk]) just before it reads them, on the thread that reads them. The
   * product is then the F32 one on those values, bit for bit, and B is never whole in float32.
   * b_rows must be thread-safe and cannot fail (check the source before the product). */
  void (*b_rows)(const void *b_ctx, size_t j0, size_t j1, float *dst);
  const void *b_ctx;
  size_t b_row0;
  /* Optional beside b_rows, for a product of few rows of A (the kernel's small-M path): writes
   * C[i][j] for A rows [m0, m1) and columns [n0, n1) (B rows b_row0 + j) from B's stored form
   * directly, each element the same chain over the same float32 values b_rows gives, the
   * canonical NaN included, so the bits are those of the b_rows product. Called under the
   * GEMM's floating-point environment; thread-safe, cannot fail. */
  void (*b_dot)(const void *b_ctx, const struct fdl_gemm_args_ *x, size_t m0, size_t m1, size_t n0,
                size_t n1);
} fdl_gemm_args;

/* A kernel choice, a thread pool and per-thread workspace. One run at a time per context. */
typedef struct fdl_gemm fdl_gemm;

/* isa: FDL_NUM_ISA_AUTO for the best the CPU runs; forcing one it lacks is FDL_UNSUPPORTED.
 * threads: 0 = every online CPU. Neither changes a bit. */
/* The element type the GEMM reads a matrix of this float dtype as (BF16, F16, else F32). */
fdl_gemm_type fdl_gemm_type_of(fdl_dtype d);
fdl_status fdl_gemm_new(fdl_num_isa isa, unsigned threads, fdl_gemm **out, fdl_err *err);
void fdl_gemm_free(fdl_gemm *g);
/* The kernel in use: "scalar", "avx2" or "avx512". */
const char *fdl_gemm_isa_name(const fdl_gemm *g);

/* Computes C, splitting the work over tiles of M and N across the pool (never over k). */
fdl_status fdl_gemm_run(fdl_gemm *g, const fdl_gemm_args *x, fdl_err *err);
/* The same product on another pool's workers (not g's own, which stays idle), in column tasks
 * of task_cols: for a caller whose pool is already running threads, with shapes for which the
 * default tasks are too coarse. A is packed once per row task, whatever the column tasks. One
 * run at a time per context and per pool; the bits are fdl_gemm_run's. */
fdl_status fdl_gemm_run_on(fdl_gemm *g, fdl_pool *pool, size_t task_cols, const fdl_gemm_args *x,
                           fdl_err *err);

/* The contract itself, one element: the reference every kernel is tested against. */
float fdl_gemm_dot_ref(const float *a, const void *b, fdl_gemm_type b_type, size_t k);

#ifdef __cplusplus
}
#endif
#endif
