/* pgemm.c - the engine's matrix products, cut into independent (row block, column block) tasks
 * on the model's pool, each task one fdl_gemm_run on its worker's single-thread context. Every
 * element of C is still the contract's one chain over k (fdl-gemm-1), so the cut (and the
 * thread count that picks it) changes who computes an element, never its bits. The GEMM's own
 * tasks are too coarse for the engine's shapes (one task for 128 x 2048), hence this layer. */
#include "engine/internal.h"

/* Rows per task: enough to amortise packing A, as the GEMM's own task shape does. */
#define PG_ROWS 256
/* Columns per task are a multiple of this (whole vector tiles). */
#define PG_COL_ALIGN 64

typedef struct {
  fdl_model *m;
  const fdl_gemm_args *x;
  size_t rb, cb, row_tasks;
} pg_job;

static fdl_status pg_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  const pg_job *j = arg;
  const fdl_gemm_args *x = j->x;
  size_t ti = index % j->row_tasks, tj = index / j->row_tasks;
  size_t r0 = ti * j->rb, c0 = tj * j->cb;
  size_t r1 = r0 + j->rb < x->m ? r0 + j->rb : x->m;
  size_t c1 = c0 + j->cb < x->n ? c0 + j->cb : x->n;
  size_t es = x->b_type == FDL_GEMM_F32 ? 4 : 2;
  fdl_gemm_args y = *x;
  y.m = r1 - r0;
  y.n = c1 - c0;
  y.a = x->a + r0 * x->lda;
  if (x->b_rows)
    y.b_row0 = x->b_row0 + c0;
  else
    y.b = (const unsigned char *)x->b + c0 * x->ldb * es;
  y.c = x->c + r0 * x->ldc + c0;
  return fdl_gemm_run(fdl_eng_ctx(j->m, worker, y.m), &y, err);
}

fdl_status fdl_eng_gemm_args(fdl_model *m, const fdl_gemm_args *x, fdl_err *err) {
  if (!x->m || !x->n) return fdl_gemm_run(m->wgemm[0], x, err);
  pg_job j = {m, x, PG_ROWS, 0, (x->m + PG_ROWS - 1) / PG_ROWS};
  /* About four tasks per worker, so uneven workers still finish together. */
  size_t want = 4 * (size_t)m->pool.threads;
  size_t col_tasks = j.row_tasks >= want ? 1 : (want + j.row_tasks - 1) / j.row_tasks;
  size_t cb = (x->n + col_tasks - 1) / col_tasks;
  j.cb = (cb + PG_COL_ALIGN - 1) / PG_COL_ALIGN * PG_COL_ALIGN;
  size_t ntasks = j.row_tasks * ((x->n + j.cb - 1) / j.cb);
  if (m->pool.threads == 1 || ntasks == 1) return fdl_gemm_run(fdl_eng_ctx(m, 0, x->m), x, err);
  return fdl_pool_run(&m->pool, ntasks, pg_task, &j, err);
}

fdl_status fdl_eng_gemm(fdl_model *m, const float *a, size_t lda, size_t rows, const eng_mat *b,
                        float *c, size_t ldc, fdl_err *err) {
  fdl_gemm_args x = {
      .m = rows, .n = (size_t)b->t->shape[0], .a = a, .lda = lda, .c = c, .ldc = ldc};
  fdl_eng_mat_args(b, 0, &x);
  fdl_status s = fdl_eng_gemm_args(m, &x, err);
  return s ? fdl_err_prefix(err, "product with %s", b->t->name) : FDL_OK;
}
