/* mat.c - a weight matrix's rows as float32, whatever its storage: widened from BF16, F16 or
 * F32, or dequantized from ggml blocks (a quantized GGUF matrix, held as stored). Both are
 * exact, so a product over these rows has the bits of one over a float32 copy of the matrix. */
#include "engine/internal.h"
#include "gguf/qdot.h"

/* The stored block row of Hugging Face row r. */
static const uint8_t *block_row(const eng_mat *b, size_t r) {
  size_t at = b->rows_from ? fdl_eng_reorder_src(b->rows_from, r) : r;
  return (const uint8_t *)b->t->data + at * b->row_bytes;
}

void fdl_eng_mat_rows(const void *ctx, size_t j0, size_t j1, float *dst) {
  const eng_mat *b = ctx;
  size_t k = (size_t)b->t->shape[1];
  if (!b->row_bytes) {
    fdl_tensor_widen_f32(b->t, j0 * k, (j1 - j0) * k, dst);
    return;
  }
  /* The load checked every block finite (fdl_ggml_check_finite) and picked the kernel. */
  if (!b->rows_from) {
    b->decode(block_row(b, j0), (uint64_t)(j1 - j0) * k / b->block_elems, dst);
    return;
  }
  for (size_t j = j0; j < j1; j++)
    b->decode(block_row(b, j), k / b->block_elems, dst + (j - j0) * k);
}

/* Rows of B per fused-kernel call: the row pointers live on the stack. */
#define DOT_ROWS 256

/* The GEMM's b_dot: A rows [m0, m1) times B rows b_row0 + [n0, n1), decoded in registers. */
static void mat_dot(const void *ctx, const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0,
                    size_t n1) {
  const eng_mat *b = ctx;
  const float *a[FDL_QDOT_MAX_M];
  float *c[FDL_QDOT_MAX_M];
  const uint8_t *rows[DOT_ROWS];
  for (size_t i0 = m0; i0 < m1; i0 += FDL_QDOT_MAX_M) {
    size_t m = m1 - i0 < FDL_QDOT_MAX_M ? m1 - i0 : FDL_QDOT_MAX_M;
    for (size_t j0 = n0; j0 < n1; j0 += DOT_ROWS) {
      size_t n = n1 - j0 < DOT_ROWS ? n1 - j0 : DOT_ROWS;
      for (size_t j = 0; j < n; j++) rows[j] = block_row(b, x->b_row0 + j0 + j);
      for (size_t i = 0; i < m; i++) {
        a[i] = x->a + (i0 + i) * x->lda;
        c[i] = x->c + (i0 + i) * x->ldc + j0;
      }
      b->qdot(a, m, x->k, rows, n, c);
    }
  }
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
    x->b_dot = b->qdot ? mat_dot : NULL;
    x->b_ctx = b;
    x->b_row0 = row0;
    return;
  }
  x->b = (const uint8_t *)b->t->data + row0 * x->k * (b->type == FDL_GEMM_F32 ? 4 : 2);
  x->b_type = b->type;
  x->b_rows = NULL;
}
