/* mat.c - a weight matrix's rows as float32, whatever its storage: widened from BF16, F16 or
 * F32, or dequantized from ggml blocks (a quantized GGUF matrix, held as stored). Both are
 * exact, so a product over these rows has the bits of one over a float32 copy of the matrix. */
#include "engine/internal.h"

void fdl_eng_mat_rows(const void *ctx, size_t j0, size_t j1, float *dst) {
  const eng_mat *b = ctx;
  size_t k = (size_t)b->t->shape[1];
  if (!b->row_bytes) {
    fdl_tensor_widen_f32(b->t, j0 * k, (j1 - j0) * k, dst);
    return;
  }
  /* The load checked every block finite (fdl_ggml_check_finite) and picked the kernel. */
  const uint8_t *data = b->t->data;
  if (!b->rows_from) {
    b->decode(data + j0 * b->row_bytes, (uint64_t)(j1 - j0) * k / b->block_elems, dst);
    return;
  }
  for (size_t j = j0; j < j1; j++)
    b->decode(data + fdl_eng_reorder_src(b->rows_from, j) * b->row_bytes, k / b->block_elems,
              dst + (j - j0) * k);
}

void fdl_eng_mat_row(const eng_mat *b, size_t row, float *dst) {
  fdl_eng_mat_rows(b, row, row + 1, dst);
}

void fdl_eng_mat_args(const eng_mat *b, size_t row0, fdl_gemm_args *x) {
  x->k = (size_t)b->t->shape[1];
  x->ldb = x->k;
  if (b->row_bytes) {
    x->b = NULL;
    x->b_type = FDL_GEMM_F32;
    x->b_rows = fdl_eng_mat_rows;
    x->b_ctx = b;
    x->b_row0 = row0;
    return;
  }
  x->b = (const uint8_t *)b->t->data + row0 * x->k * (b->type == FDL_GEMM_F32 ? 4 : 2);
  x->b_type = b->type;
  x->b_rows = NULL;
}
