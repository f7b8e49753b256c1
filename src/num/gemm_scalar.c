/* gemm_scalar.c - the portable GEMM kernel: the contract's chain written out, per element,
 * with fmaf. It is the fallback where no vector kernel runs and the second reference the
 * vector kernels are tested against (fdl_gemm_dot_ref is the first). */
#include <math.h>

#include "fidelis/tensor.h"
#include "num/gemm.h"

#define MR 8
#define NR 4

static float widen(fdl_gemm_type t, const void *row, size_t k) {
  if (t == FDL_GEMM_F32) return ((const float *)row)[k];
  uint16_t h = ((const uint16_t *)row)[k];
  return t == FDL_GEMM_BF16 ? fdl_bf16_to_f32(h) : fdl_f16_to_f32(h);
}

static void micro(fdl_gemm_type t, size_t nr, size_t k0, size_t kc, const float *ap, const void *b,
                  size_t ldb, float *acc, int first) {
  size_t es = t == FDL_GEMM_F32 ? 4 : 2;
  for (size_t j = 0; j < nr; j++) {
    const void *row = (const uint8_t *)b + j * ldb * es;
    for (size_t i = 0; i < MR; i++) {
      float c = first ? 0.0f : acc[j * MR + i];
      for (size_t k = 0; k < kc; k++) c = fmaf(ap[k * MR + i], widen(t, row, k0 + k), c);
      acc[j * MR + i] = c;
    }
  }
}

static void micro_f32(size_t nr, size_t k0, size_t kc, const float *ap, const void *b, size_t ldb,
                      float *acc, int first) {
  micro(FDL_GEMM_F32, nr, k0, kc, ap, b, ldb, acc, first);
}
static void micro_bf16(size_t nr, size_t k0, size_t kc, const float *ap, const void *b, size_t ldb,
                       float *acc, int first) {
  micro(FDL_GEMM_BF16, nr, k0, kc, ap, b, ldb, acc, first);
}
static void micro_f16(size_t nr, size_t k0, size_t kc, const float *ap, const void *b, size_t ldb,
                      float *acc, int first) {
  micro(FDL_GEMM_F16, nr, k0, kc, ap, b, ldb, acc, first);
}

static const gemm_kernel scalar_kernel = {
    FDL_NUM_ISA_SCALAR, MR, NR, {micro_f32, micro_bf16, micro_f16}, 0, NULL};

const gemm_kernel *fdl_gemm_kernel_scalar(void) {
  return &scalar_kernel;
}
