/* gemm.c - the GEMM driver: packing, blocking, the floating-point environment, the pool.
 *
 * A tile is cut into panels of mr rows of A (packed transposed once per tile, zero-padded),
 * blocks of nb rows of B whose accumulators live in the workspace, and blocks of kc along k.
 * For each B block the k-blocks run in ascending order and each micro-kernel call continues
 * the chains it left in the workspace, so every element is still the one chain of the
 * contract; only when the last k-block is done is the block copied into C. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/check.h"
#include "fidelis/pool.h"
#include "fidelis/tensor.h"
#include "num/gemm.h"
#include "num/isa.h"
#include "base/sys.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* MXCSR with every exception masked, round to nearest even, no flush-to-zero, no
 * denormals-are-zero: the IEEE environment the contract is written in. A caller (or a library
 * it loaded) may have set FTZ/DAZ or another rounding mode; threads inherit it. */
#define GEMM_MXCSR 0x1F80u
static unsigned fpenv_enter(void) {
  unsigned old = _mm_getcsr();
  if (old != GEMM_MXCSR) _mm_setcsr(GEMM_MXCSR);
  return old;
}
static void fpenv_leave(unsigned old) {
  if (old != GEMM_MXCSR) _mm_setcsr(old);
}
#else
#include <fenv.h>
static unsigned fpenv_enter(void) {
  int old = fegetround();
  if (old != FE_TONEAREST) fesetround(FE_TONEAREST);
  return (unsigned)old;
}
static void fpenv_leave(unsigned old) {
  if ((int)old != FE_TONEAREST) fesetround((int)old);
}
#endif

/* Depth of a k-block: the packed A slice of one panel (kc x mr floats) should sit in L2 next
 * to the B rows streaming past it. */
#define GEMM_KC_MAX 1024
/* B rows per block: their accumulators (nb x mr floats) stay in L1/L2. */
#define GEMM_NB 96
/* B rows a small-M product asks b_rows for at a time: each row is read once (a few rows of A),
 * so the block only has to stay in L2 between its decoding and its products: 32 rows of a
 * 5632-wide matrix are 704 KiB. */
#define SMALL_BROWS 32
/* Pool task shape: rows x columns of C per task. */
#define GEMM_TASK_ROWS 256
#define GEMM_TASK_COLS 4096

fdl_status fdl_gemm_kernel_pick(fdl_num_isa want, const gemm_kernel **out, fdl_err *err) {
  const void *const by_isa[4] = {
      [FDL_NUM_ISA_SCALAR] = fdl_gemm_kernel_scalar(),
      [FDL_NUM_ISA_AVX2] = fdl_gemm_kernel_avx2(),
      [FDL_NUM_ISA_AVX512] = fdl_gemm_kernel_avx512(),
  };
  const void *k;
  fdl_status s = fdl_num_isa_pick(want, by_isa, "GEMM", &k, err);
  if (s == FDL_OK) *out = k;
  return s;
}

void fdl_gemm_blocking_default(const gemm_kernel *kern, size_t k, fdl_gemm_blocking *b) {
  size_t blocks = k <= GEMM_KC_MAX ? 1 : (k + GEMM_KC_MAX - 1) / GEMM_KC_MAX;
  b->kc = k ? (k + blocks - 1) / blocks : 1;
  b->nb = GEMM_NB / kern->nr * kern->nr;
}

static size_t round_up(size_t x, size_t to) {
  return (x + to - 1) / to * to;
}

size_t fdl_gemm_packed_floats(const gemm_kernel *kern, size_t m, size_t k) {
  return round_up(round_up(m ? m : 1, kern->mr) * (k ? k : 1), 16);
}

size_t fdl_gemm_acc_floats(const gemm_kernel *kern, size_t m, const fdl_gemm_blocking *b) {
  return round_up(m ? m : 1, kern->mr) * round_up(b->nb, kern->nr);
}

size_t fdl_gemm_brows_floats(const gemm_kernel *kern, const fdl_gemm_args *x,
                             const fdl_gemm_blocking *b) {
  return x->b_rows ? round_up(b->nb, kern->nr) * (x->k ? x->k : 1) : 0;
}

size_t fdl_gemm_work_floats(const gemm_kernel *kern, size_t m, size_t k,
                            const fdl_gemm_blocking *b) {
  return fdl_gemm_packed_floats(kern, m, k) + fdl_gemm_acc_floats(kern, m, b);
}

void fdl_gemm_pack(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1,
                   float *packed) {
  size_t mr = kern->mr, k = x->k;
  for (size_t i0 = m0; i0 < m1; i0 += mr, packed += mr * k) {
    size_t rows = i0 + mr <= m1 ? mr : m1 - i0;
    for (size_t i = 0; i < rows; i++) {
      const float *src = x->a + (i0 + i) * x->lda;
      for (size_t kk = 0; kk < k; kk++) packed[kk * mr + i] = src[kk];
    }
    for (size_t kk = 0; kk < k; kk++)
      for (size_t i = rows; i < mr; i++) packed[kk * mr + i] = 0.0f;
  }
}

static float canonical(float v) {
  return v != v ? fdl_gemm_bits_f32(FDL_GEMM_NAN_BITS) : v;
}

static const void *b_row(const fdl_gemm_args *x, size_t j) {
  size_t es = x->b_type == FDL_GEMM_F32 ? 4 : 2;
  return (const uint8_t *)x->b + j * x->ldb * es;
}

void fdl_gemm_tile_packed(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1,
                          size_t n0, size_t n1, const fdl_gemm_blocking *b, const float *packed,
                          float *acc) {
  if (m1 <= m0 || n1 <= n0) return;
  size_t mr = kern->mr, nr = kern->nr, k = x->k;
  if (k == 0) {
    for (size_t i = m0; i < m1; i++)
      for (size_t j = n0; j < n1; j++) x->c[i * x->ldc + j] = 0.0f;
    return;
  }
  unsigned env = fpenv_enter();
  size_t panels = (m1 - m0 + mr - 1) / mr;
  size_t nb = round_up(b->nb, nr);
  float *brows = x->b_rows ? acc + fdl_gemm_acc_floats(kern, m1 - m0, b) : NULL;
  gemm_micro micro = kern->micro[brows ? FDL_GEMM_F32 : x->b_type];
  for (size_t j0 = n0; j0 < n1; j0 += nb) {
    size_t j1 = j0 + nb < n1 ? j0 + nb : n1;
    if (brows) x->b_rows(x->b_ctx, x->b_row0 + j0, x->b_row0 + j1, brows);
    /* k-blocks outside the panels: a block of B rows and depths is read by every panel while
     * it is in cache */
    for (size_t k0 = 0; k0 < k; k0 += b->kc) {
      size_t kc = k - k0 < b->kc ? k - k0 : b->kc;
      for (size_t p = 0; p < panels; p++) {
        const float *ap = packed + p * mr * k + k0 * mr;
        float *pacc = acc + p * mr * nb;
        for (size_t j = j0; j < j1; j += nr)
          micro(j1 - j < nr ? j1 - j : nr, k0, kc, ap,
                brows ? (const void *)(brows + (j - j0) * k) : b_row(x, j), brows ? k : x->ldb,
                pacc + (j - j0) * mr, k0 == 0);
      }
    }
    for (size_t p = 0; p < panels; p++) {
      size_t i0 = m0 + p * mr, rows = i0 + mr <= m1 ? mr : m1 - i0;
      const float *pacc = acc + p * mr * nb;
      for (size_t i = 0; i < rows; i++) {
        float *crow = x->c + (i0 + i) * x->ldc;
        for (size_t j = j0; j < j1; j++) crow[j] = canonical(pacc[(j - j0) * mr + i]);
      }
    }
  }
  fpenv_leave(env);
}

/* A few rows go to the kernel's small-M path when it has one: it reads A in place, so the
 * packing and the k-blocks are skipped; the bits are the same chains either way. */
static int small_path(const gemm_kernel *kern, size_t rows) {
  return kern->small && rows <= kern->small_m;
}

/* brows: fdl_gemm_brows_floats of workspace when B comes from b_rows, which then arrives a
 * block of rows at a time and is read as float32 from there. */
static void run_small(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1,
                      size_t n0, size_t n1, const fdl_gemm_blocking *b, float *brows) {
  unsigned env = fpenv_enter();
  if (x->b_dot) {
    x->b_dot(x->b_ctx, x, m0, m1, n0, n1);
  } else if (!x->b_rows) {
    kern->small(x, m0, m1, n0, n1);
  } else {
    size_t nb = round_up(b->nb < SMALL_BROWS ? b->nb : SMALL_BROWS, kern->nr);
    for (size_t j0 = n0; j0 < n1; j0 += nb) {
      size_t j1 = j0 + nb < n1 ? j0 + nb : n1;
      x->b_rows(x->b_ctx, x->b_row0 + j0, x->b_row0 + j1, brows);
      fdl_gemm_args y = *x;
      y.b = brows, y.b_type = FDL_GEMM_F32, y.ldb = x->k, y.b_rows = NULL;
      y.c = x->c + j0, y.n = j1 - j0;
      kern->small(&y, m0, m1, 0, j1 - j0);
    }
  }
  fpenv_leave(env);
}

void fdl_gemm_tile(const gemm_kernel *kern, const fdl_gemm_args *x, size_t m0, size_t m1, size_t n0,
                   size_t n1, const fdl_gemm_blocking *b, float *work) {
  if (m1 <= m0 || n1 <= n0) return;
  if (small_path(kern, m1 - m0)) {
    run_small(kern, x, m0, m1, n0, n1, b, work);
    return;
  }
  fdl_gemm_pack(kern, x, m0, m1, work);
  fdl_gemm_tile_packed(kern, x, m0, m1, n0, n1, b, work,
                       work + fdl_gemm_packed_floats(kern, m1 - m0, x->k));
}

float fdl_gemm_dot_ref(const float *a, const void *b, fdl_gemm_type t, size_t k) {
  unsigned env = fpenv_enter();
  float c = 0.0f;
  for (size_t i = 0; i < k; i++) {
    float w = t == FDL_GEMM_F32    ? ((const float *)b)[i]
              : t == FDL_GEMM_BF16 ? fdl_bf16_to_f32(((const uint16_t *)b)[i])
                                   : fdl_f16_to_f32(((const uint16_t *)b)[i]);
    c = fmaf(a[i], w, c);
  }
  fpenv_leave(env);
  return canonical(c);
}

/* ---- the pooled product -------------------------------------------------------------- */

struct fdl_gemm {
  const gemm_kernel *kern;
  fdl_pool pool;
  fdl_gemm_tuning tune;
  int tuned;   /* tune was set by fdl_gemm_tuning_set */
  float **acc; /* [nacc] accumulator blocks, one per worker of the pool a run uses */
  unsigned nacc;
  size_t acc_cap;    /* floats per worker */
  float *packed;     /* A packed once per run, shared by the tasks */
  size_t packed_cap; /* floats */
};

typedef struct {
  fdl_gemm *g;
  const fdl_gemm_args *x;
  fdl_gemm_tuning t;
  size_t row_tasks, per_rows; /* packed floats per row task */
} run_args;

fdl_status fdl_gemm_new(fdl_num_isa isa, unsigned threads, fdl_gemm **out, fdl_err *err) {
  const gemm_kernel *kern;
  fdl_status s = fdl_gemm_kernel_pick(isa, &kern, err);
  if (s != FDL_OK) return s;
  fdl_gemm *g = fdl_calloc(1, sizeof *g);
  if (!g) return fdl_fail(err, FDL_NOMEM, "out of memory for a GEMM context");
  g->kern = kern;
  if ((s = fdl_pool_init(&g->pool, threads, err)) != FDL_OK) {
    free(g);
    return s;
  }
  *out = g;
  return FDL_OK;
}

void fdl_gemm_free(fdl_gemm *g) {
  if (!g) return;
  /* The workspaces before the pool: fdl_pool_free sets pool.threads to 0. */
  for (unsigned w = 0; w < g->nacc; w++) free(g->acc[w]);
  fdl_pool_free(&g->pool);
  free(g->acc);
  free(g->packed);
  free(g);
}

fdl_gemm_type fdl_gemm_type_of(fdl_dtype d) {
  return d == FDL_DTYPE_BF16 ? FDL_GEMM_BF16 : d == FDL_DTYPE_F16 ? FDL_GEMM_F16 : FDL_GEMM_F32;
}

const char *fdl_gemm_isa_name(const fdl_gemm *g) {
  return fdl_num_isa_name(g->kern->isa);
}

void fdl_gemm_tuning_get(const fdl_gemm *g, size_t k, fdl_gemm_tuning *t) {
  if (g->tuned) {
    *t = g->tune;
    return;
  }
  fdl_gemm_blocking_default(g->kern, k, &t->blk);
  t->task_rows = GEMM_TASK_ROWS;
  t->task_cols = GEMM_TASK_COLS;
}

void fdl_gemm_tuning_set(fdl_gemm *g, const fdl_gemm_tuning *t) {
  g->tune = *t;
  if (!g->tune.blk.kc) g->tune.blk.kc = 1;
  if (!g->tune.blk.nb) g->tune.blk.nb = 1;
  if (!g->tune.task_cols) g->tune.task_cols = 1;
  g->tune.task_rows = round_up(g->tune.task_rows ? g->tune.task_rows : 1, g->kern->mr);
  g->tuned = 1;
}

static void task_rows(const run_args *ra, size_t ti, size_t *m0, size_t *m1) {
  *m0 = ti * ra->t.task_rows;
  *m1 = *m0 + ra->t.task_rows < ra->x->m ? *m0 + ra->t.task_rows : ra->x->m;
}

static fdl_status pack_task(void *varg, size_t ti, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  run_args *ra = varg;
  size_t m0, m1;
  task_rows(ra, ti, &m0, &m1);
  fdl_gemm_pack(ra->g->kern, ra->x, m0, m1, ra->g->packed + ti * ra->per_rows);
  return FDL_OK;
}

static fdl_status tile_task(void *varg, size_t task, unsigned worker, fdl_err *err) {
  (void)err;
  run_args *ra = varg;
  const fdl_gemm_args *x = ra->x;
  size_t ti = task % ra->row_tasks, tj = task / ra->row_tasks, m0, m1;
  task_rows(ra, ti, &m0, &m1);
  size_t n0 = tj * ra->t.task_cols;
  size_t n1 = n0 + ra->t.task_cols < x->n ? n0 + ra->t.task_cols : x->n;
  fdl_gemm_tile_packed(ra->g->kern, x, m0, m1, n0, n1, &ra->t.blk,
                       ra->g->packed + ti * ra->per_rows, ra->g->acc[worker]);
  return FDL_OK;
}

static fdl_status check_args(const fdl_gemm_args *x, fdl_err *err) {
  if (!x->b_rows && (unsigned)x->b_type > FDL_GEMM_F16)
    return fdl_fail(err, FDL_INVALID, "GEMM: unknown B element type %d", (int)x->b_type);
  if (x->b_dot && !x->b_rows)
    return fdl_fail(err, FDL_INVALID, "GEMM: b_dot is set without b_rows");
  if (x->lda < x->k || (!x->b_rows && x->ldb < x->k) || x->ldc < x->n)
    return fdl_fail(err, FDL_INVALID,
                    "GEMM: leading dimensions lda %zu, ldb %zu, ldc %zu are below k %zu, k, n %zu",
                    x->lda, x->ldb, x->ldc, x->k, x->n);
  if (x->m && x->n && (!x->c || (x->k && (!x->a || !(x->b || x->b_rows)))))
    return fdl_fail(err, FDL_INVALID, "GEMM: A, B and C are required");
  size_t t;
  if (!fdl_size_mul(x->k, 64 * sizeof(float), &t) || !fdl_size_mul(x->m, x->ldc ? x->ldc : 1, &t))
    return fdl_fail(err, FDL_TOO_LARGE, "GEMM: %zu x %zu x %zu is too large", x->m, x->n, x->k);
  return FDL_OK;
}

int fdl_num_grow_floats(float **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 1;
  free(*buf);
  *cap = 0;
  /* aligned_alloc wants a size that is a multiple of the alignment */
  if (!(*buf = fdl_aligned_alloc(64, round_up(need * sizeof(float), 64)))) return 0;
  *cap = need;
  return 1;
}

/* A workspace of at least need floats for each of workers workers (the pool the run uses). */
static fdl_status grow_acc(fdl_gemm *g, size_t need, unsigned workers, fdl_err *err) {
  if (need <= g->acc_cap && workers <= g->nacc) return FDL_OK;
  size_t cap = need > g->acc_cap ? need : g->acc_cap;
  unsigned n = workers > g->nacc ? workers : g->nacc;
  for (unsigned w = 0; w < g->nacc; w++) free(g->acc[w]);
  free(g->acc);
  g->nacc = 0, g->acc_cap = 0;
  if (!(g->acc = fdl_calloc(n, sizeof *g->acc)))
    return fdl_fail(err, FDL_NOMEM, "out of memory for a GEMM context");
  g->nacc = n;
  for (unsigned w = 0; w < n; w++) {
    size_t got = 0;
    if (!fdl_num_grow_floats(&g->acc[w], &got, cap))
      return fdl_fail(err, FDL_NOMEM, "out of memory for %u GEMM workspaces of %zu bytes", n,
                      cap * sizeof(float));
  }
  g->acc_cap = cap;
  return FDL_OK;
}

static fdl_status small_task(void *varg, size_t tj, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  const run_args *ra = varg;
  const fdl_gemm_args *x = ra->x;
  size_t n0 = tj * ra->t.task_cols;
  size_t n1 = n0 + ra->t.task_cols < x->n ? n0 + ra->t.task_cols : x->n;
  run_small(ra->g->kern, x, 0, x->m, n0, n1, &ra->t.blk, ra->g->acc[worker]);
  return FDL_OK;
}

/* The product on pool's workers, cut as t says; A is packed once per row task and shared by
 * that row's column tasks. */
static fdl_status run_on(fdl_gemm *g, fdl_pool *pool, const fdl_gemm_tuning *t,
                         const fdl_gemm_args *x, fdl_err *err) {
  fdl_status s = check_args(x, err);
  if (s != FDL_OK || !x->m || !x->n) return s;
  run_args ra = {g, x, *t, 0, 0};
  bool small = small_path(g->kern, x->m);
  size_t brows = fdl_gemm_brows_floats(g->kern, x, &ra.t.blk);
  size_t acc = small ? 0 : fdl_gemm_acc_floats(g->kern, ra.t.task_rows, &ra.t.blk);
  if ((s = grow_acc(g, acc + brows, pool->threads, err))) return s;
  if (small)
    return fdl_pool_run(pool, (x->n + ra.t.task_cols - 1) / ra.t.task_cols, small_task, &ra, err);
  ra.row_tasks = (x->m + ra.t.task_rows - 1) / ra.t.task_rows;
  ra.per_rows =
      fdl_gemm_packed_floats(g->kern, x->m < ra.t.task_rows ? x->m : ra.t.task_rows, x->k);
  size_t need, bytes;
  if (!fdl_size_mul(ra.per_rows, ra.row_tasks, &need) || !fdl_size_mul(need, sizeof(float), &bytes))
    return fdl_fail(err, FDL_TOO_LARGE, "GEMM: %zu x %zu is too large to pack", x->m, x->k);
  if (!fdl_num_grow_floats(&g->packed, &g->packed_cap, need))
    return fdl_fail(err, FDL_NOMEM, "out of memory for the packed %zu x %zu A", x->m, x->k);
  if ((s = fdl_pool_run(pool, ra.row_tasks, pack_task, &ra, err)) != FDL_OK) return s;
  size_t col_tasks = (x->n + ra.t.task_cols - 1) / ra.t.task_cols;
  return fdl_pool_run(pool, ra.row_tasks * col_tasks, tile_task, &ra, err);
}

fdl_status fdl_gemm_run(fdl_gemm *g, const fdl_gemm_args *x, fdl_err *err) {
  fdl_gemm_tuning t;
  fdl_gemm_tuning_get(g, x->k, &t);
  return run_on(g, &g->pool, &t, x, err);
}

fdl_status fdl_gemm_run_on(fdl_gemm *g, fdl_pool *pool, size_t task_cols, const fdl_gemm_args *x,
                           fdl_err *err) {
  fdl_gemm_tuning t;
  fdl_gemm_tuning_get(g, x->k, &t);
  t.task_cols = task_cols ? task_cols : 1;
  return run_on(g, pool, &t, x, err);
}
