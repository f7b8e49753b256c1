/* greedy.c - greedy ids from the head without keeping logits. Each logit is the contract's one
 * chain over k whoever computes it; the argmax is then merged in a fixed order: within a run of
 * columns the first strictly greater value wins (a NaN never does), and runs are merged left to
 * right the same way, which picks what one scan over the whole row picks. */
#include "engine/internal.h"

/* Column blocks of a few-row head, one pool task each: enough for four per worker, so uneven
 * workers still finish together, and few enough that their (best, index) pairs fit the stack. */
#define GR_BLOCKS 64

typedef struct {
  fdl_model *m;
  /* first position (for messages); rows <= ENG_GEMV_M; columns per block; per sub-tile */
  size_t p0, rows, cb, sub;
  float best[GR_BLOCKS][ENG_GEMV_M];
  int64_t arg[GR_BLOCKS][ENG_GEMV_M];
} gr_job;

/* One column block: its GEMM goes through the worker's slice of the tile, sub columns at a time,
 * each sub-tile scanned while still in cache. */
static fdl_status gr_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  gr_job *j = arg;
  fdl_model *m = j->m;
  size_t V = m->info.vocab, H = m->info.hidden;
  size_t c0 = index * j->cb, c1 = c0 + j->cb < V ? c0 + j->cb : V;
  float *tile = m->w.tile + (size_t)worker * j->rows * j->sub;
  for (size_t r = 0; r < j->rows; r++) j->best[index][r] = 0.0f, j->arg[index][r] = -1;
  for (size_t v0 = c0; v0 < c1; v0 += j->sub) {
    size_t nv = c1 - v0 < j->sub ? c1 - v0 : j->sub;
    fdl_gemm_args x = {.m = j->rows, .n = nv, .a = m->w.xn, .lda = H, .c = tile, .ldc = j->sub};
    fdl_eng_mat_args(&m->head, v0, &x);
    fdl_status s = fdl_gemm_run(fdl_eng_ctx(m, worker, j->rows), &x, err);
    for (size_t r = 0; !s && r < j->rows; r++)
      s = fdl_eng_check_finite(tile + r * j->sub, 1, nv, j->p0 + r, v0, "a logit", "token id", err);
    if (s) return s;
    for (size_t r = 0; r < j->rows; r++)
      fdl_eng_argmax_chunk(tile + r * j->sub, nv, v0, &j->best[index][r], &j->arg[index][r]);
  }
  return FDL_OK;
}

/* Decode's head: one pool run instead of one per VOCAB_CHUNK, and no tile leaves the cache. */
static fdl_status greedy_few(fdl_model *m, size_t p0, size_t rows, int32_t *ids, fdl_err *err) {
  size_t V = m->info.vocab, T = m->pool.threads;
  size_t nb = 4 * T < GR_BLOCKS ? 4 * T : GR_BLOCKS;
  gr_job j = {.m = m, .p0 = p0, .rows = rows};
  j.cb = ((V + nb - 1) / nb + 63) / 64 * 64;
  /* w->tile holds TILE_ROWS x VOCAB_CHUNK floats: each worker takes an equal slice. */
  j.sub = (size_t)FDL_NUM_TILE_ROWS * FDL_NUM_VOCAB_CHUNK / T / rows / 64 * 64;
  if (j.sub > j.cb) j.sub = j.cb;
  nb = (V + j.cb - 1) / j.cb;
  fdl_status s = fdl_pool_run(&m->pool, nb, gr_task, &j, err);
  if (s) return s;
  for (size_t r = 0; r < rows; r++) {
    float best = 0.0f;
    int64_t arg = -1;
    for (size_t b = 0; b < nb; b++)
      if (j.arg[b][r] >= 0 && (arg < 0 || j.best[b][r] > best))
        best = j.best[b][r], arg = j.arg[b][r];
    ids[r] = (int32_t)arg;
  }
  return FDL_OK;
}

fdl_status fdl_eng_greedy(fdl_model *m, size_t p0, size_t rows, int32_t *ids, fdl_err *err) {
  if (rows <= ENG_GEMV_M) return greedy_few(m, p0, rows, ids, err);
  const fdl_model_info *in = &m->info;
  eng_work *w = &m->w;
  size_t V = in->vocab, H = in->hidden;
  for (size_t r0 = 0; r0 < rows; r0 += FDL_NUM_TILE_ROWS) {
    size_t rb = rows - r0 < FDL_NUM_TILE_ROWS ? rows - r0 : FDL_NUM_TILE_ROWS;
    float best[FDL_NUM_TILE_ROWS];
    int64_t arg[FDL_NUM_TILE_ROWS];
    for (size_t r = 0; r < rb; r++) best[r] = 0.0f, arg[r] = -1;
    for (size_t v0 = 0; v0 < V; v0 += FDL_NUM_VOCAB_CHUNK) {
      size_t nv = V - v0 < FDL_NUM_VOCAB_CHUNK ? V - v0 : FDL_NUM_VOCAB_CHUNK;
      fdl_gemm_args x = {.m = rb,
                         .n = nv,
                         .a = w->xn + r0 * H,
                         .lda = H,
                         .c = w->tile,
                         .ldc = FDL_NUM_VOCAB_CHUNK};
      fdl_eng_mat_args(&m->head, v0, &x);
      fdl_status s = fdl_eng_gemm_args(m, &x, err);
      for (size_t r = 0; !s && r < rb; r++)
        s = fdl_eng_check_finite(w->tile + r * FDL_NUM_VOCAB_CHUNK, 1, nv, p0 + r0 + r, v0,
                                 "a logit", "token id", err);
      if (s) return s;
      for (size_t r = 0; r < rb; r++)
        fdl_eng_argmax_chunk(w->tile + r * FDL_NUM_VOCAB_CHUNK, nv, v0, &best[r], &arg[r]);
    }
    for (size_t r = 0; r < rb; r++) ids[r0 + r] = (int32_t)arg[r];
  }
  return FDL_OK;
}
