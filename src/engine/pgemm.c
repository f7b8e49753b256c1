/* pgemm.c - the engine's matrix products, cut into (row block, column block) tasks on the model's
 * pool (fdl_gemm_run_on), A packed once per row block and shared by its column tasks. Every
 * element of C is still the contract's one chain over k (fdl-gemm-1), so the cut (and the
 * thread count that picks it) changes who computes an element, never its bits. The GEMM's own
 * tasks are too coarse for the engine's shapes (one task for 128 x 2048), hence this layer. */
#include "engine/internal.h"

/* Rows per task: the GEMM's row task (256), which amortises packing A. */
#define PG_ROWS 256
/* Columns per task are a multiple of this (whole vector tiles). */
#define PG_COL_ALIGN 64

fdl_status fdl_eng_gemm_args(fdl_model *m, const fdl_gemm_args *x, fdl_err *err) {
  fdl_gemm *g = fdl_eng_ctx(m, 0, x->m);
  if (!x->m || !x->n || m->pool.threads == 1) return fdl_gemm_run(g, x, err);
  /* About four tasks per worker, so uneven workers still finish together. */
  size_t row_tasks = (x->m + PG_ROWS - 1) / PG_ROWS, want = 4 * (size_t)m->pool.threads;
  size_t col_tasks = row_tasks >= want ? 1 : (want + row_tasks - 1) / row_tasks;
  size_t cb = (x->n + col_tasks - 1) / col_tasks;
  cb = (cb + PG_COL_ALIGN - 1) / PG_COL_ALIGN * PG_COL_ALIGN;
  return fdl_gemm_run_on(g, &m->pool, cb, x, err);
}

fdl_status fdl_eng_gemm(fdl_model *m, const float *a, size_t lda, size_t rows, const eng_mat *b,
                        float *c, size_t ldc, fdl_err *err) {
  fdl_gemm_args x = {
      .m = rows, .n = (size_t)b->t->shape[0], .a = a, .lda = lda, .c = c, .ldc = ldc};
  fdl_eng_mat_args(b, 0, &x);
  fdl_status s = fdl_eng_gemm_args(m, &x, err);
  return s ? fdl_err_prefix(err, "product with %s", b->t->name) : FDL_OK;
}
