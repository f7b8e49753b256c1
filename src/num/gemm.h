/* gemm.h - internal to src/num: the GEMM kernel table and the single-threaded tile driver that
 * the pooled fdl_gemm_run and the head replay share.
 *
 * Layout of a micro-kernel call: A rows [i0, i0 + mr) are packed transposed, ap[k][mr] (rows
 * past M are zeros and their results are dropped); the kernel walks nr rows of B (nr <= NR of
 * the kernel) from k0 to k0 + kc and accumulates into acc[j][mr], i.e. acc[j * mr + i] is
 * C[i0 + i][j0 + j]. first = 1 starts every chain at +0.0; otherwise the chain continues from
 * acc, which is how k-blocking keeps the contract's single chain per element. */
#ifndef FDL_NUM_GEMM_H
#define FDL_NUM_GEMM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "num/gemm_run.h"

typedef void (*gemm_micro)(size_t nr, size_t k0, size_t kc, const float *ap, const void *b,
                           size_t ldb, float *acc, int first);

/* The small-M path: C rows [m0, m1) x columns [n0, n1) whole, straight from A (no packing,
 * no k-blocking), each element the contract's one chain, NaN results canonical; the caller
 * sets the floating-point environment. */
typedef void (*gemm_small)(const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0, size_t n1);

typedef struct {
  fdl_num_isa isa;
  size_t mr;           /* rows per packed panel (a multiple of the vector width) */
  size_t nr;           /* most B rows one call walks */
  gemm_micro micro[3]; /* by fdl_gemm_type */
  size_t small_m;      /* a product of at most this many rows takes `small` (0: none) */
  gemm_small small;
} gemm_kernel;

void fdl_gemm_small_avx2(const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0, size_t n1);
void fdl_gemm_small_avx512(const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0, size_t n1);

const gemm_kernel *fdl_gemm_kernel_scalar(void);
const gemm_kernel *fdl_gemm_kernel_avx2(void);   /* NULL when not compiled in */
const gemm_kernel *fdl_gemm_kernel_avx512(void); /* NULL when not compiled in */
fdl_status fdl_gemm_kernel_pick(fdl_num_isa want, const gemm_kernel **out, fdl_err *err);

/* How a tile is cut. None of it changes a bit; tests sweep all of it. */
typedef struct {
  size_t kc; /* k per block, >= 1 */
  size_t nb; /* B rows per block whose accumulators stay in the workspace, >= 1 */
} fdl_gemm_blocking;

/* The default cut for a kernel and depth k. */
void fdl_gemm_blocking_default(const gemm_kernel *kern, size_t k, fdl_gemm_blocking *b);

/* Floats of 64-byte aligned workspace for up to m rows: A packed (fdl_gemm_pack), the
 * accumulators of one B block (fdl_gemm_tile_packed), or both (fdl_gemm_tile). */
size_t fdl_gemm_packed_floats(const gemm_kernel *kern, size_t m, size_t k);
size_t fdl_gemm_acc_floats(const gemm_kernel *kern, size_t m, const fdl_gemm_blocking *b);
/* Floats of workspace for the float32 rows of one B block when B comes from b_rows: they follow
 * the accumulators (fdl_gemm_tile_packed), 0 otherwise. */
size_t fdl_gemm_brows_floats(const gemm_kernel *kern, const fdl_gemm_args *x,
                             const fdl_gemm_blocking *b);
size_t fdl_gemm_work_floats(const gemm_kernel *kern, size_t m, size_t k,
                            const fdl_gemm_blocking *b);

/* Packs A rows [m0, m1) into panels of mr rows, transposed and zero-padded. */
void fdl_gemm_pack(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1,
                   float *packed);

/* C rows [m0, m1) x columns [n0, n1) on the calling thread, under the contract's floating-
 * point environment, from those rows packed by fdl_gemm_pack (one packing serves every column
 * range). acc holds fdl_gemm_acc_floats, then fdl_gemm_brows_floats. */
void fdl_gemm_tile_packed(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1,
                          size_t n0, size_t n1, const fdl_gemm_blocking *b, const float *packed,
                          float *acc);

/* Packs and computes in one call; work holds fdl_gemm_work_floats, then fdl_gemm_brows_floats. */
void fdl_gemm_tile(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0,
                   size_t n1, const fdl_gemm_blocking *b, float *work);

/* Grows *buf (64-byte aligned, freed with free) to hold need floats; the old contents are not
 * kept. Returns 0 when out of memory (*buf is then NULL and *cap 0). */
int fdl_num_grow_floats(float **buf, size_t *cap, size_t need);

/* Tests and benchmarks: override the cut and the task shape of a context. */
typedef struct {
  fdl_gemm_blocking blk;
  size_t task_rows; /* rows per pool task (rounded up to the kernel's mr) */
  size_t task_cols; /* columns per pool task */
} fdl_gemm_tuning;
void fdl_gemm_tuning_get(const fdl_gemm *g, size_t k, fdl_gemm_tuning *t);
void fdl_gemm_tuning_set(fdl_gemm *g, const fdl_gemm_tuning *t);

/* The contract's one NaN: a chain that ends in NaN is stored as this quiet NaN, because which
 * operand's payload an fma propagates is left open by C and differs between fmaf and
 * vfmadd231ps (and with the register the compiler picked). */
#define FDL_GEMM_NAN_BITS 0x7FC00000u

/* Widening, as every kernel must do it (exact). */
static inline float fdl_gemm_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

#endif
