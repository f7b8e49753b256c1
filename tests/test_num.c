/* test_num.c - unit tests of the numerical core: the exp kernel, kernel edge cases and
 * instruction-set bit-identity, refusals, the thread pool and the statistics. The numpy and
 * high-precision oracles live in test_num_oracle.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/num.h"
#include "fidelis/pool.h"
#include "num/kl.h"
#include "num/kl_js.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static double urand(void) { /* splitmix64 in [0, 1) */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

static uint64_t bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static double ulp_error(double got, long double want) {
  double w = (double)want;
  double spacing = nextafter(fabs(w), INFINITY) - fabs(w);
  return (double)(fabsl((long double)got - want) / spacing);
}

static fdl_num_opts opts_for(size_t vocab) {
  fdl_num_opts o;
  fdl_num_opts_default(&o);
  o.vocab = vocab;
  return o;
}

static fdl_num_row row_kl(size_t vocab, fdl_num_isa isa, const float *t, const float *s) {
  fdl_num_opts o = opts_for(vocab);
  o.isa = isa;
  o.js = 1;
  fdl_num_row r;
  fdl_err err;
  fdl_status st = fdl_num_row_logits(&o, t, s, &r, &err);
  if (st != FDL_OK) fail_msg("row_logits: %s", err.msg);
  return r;
}

/* KL in long double, straight from the definition. */
static long double kl_ld(const float *t, const float *s, size_t n) {
  long double mt = t[0], ms = s[0], st = 0, ss = 0, acc = 0;
  for (size_t i = 0; i < n; i++) mt = t[i] > mt ? t[i] : mt, ms = s[i] > ms ? s[i] : ms;
  for (size_t i = 0; i < n; i++) st += expl(t[i] - mt), ss += expl(s[i] - ms);
  for (size_t i = 0; i < n; i++)
    acc += expl(t[i] - mt) / st * (((long double)t[i] - mt) - ((long double)s[i] - ms));
  return acc + logl(ss / st);
}

/* ---- exp ------------------------------------------------------------------------------ */

static void test_exp_accuracy(void **state) {
  (void)state;
  double worst = 0, worst_sub = 0;
  for (int i = 0; i < 400000; i++) {
    double d;
    switch (i % 4) {
    case 0:
      d = -urand() * 708.0;
      break;
    case 1:
      d = -urand() * 0.05;
      break;
    case 2:
      d = -urand() * 20.0;
      break;
    default:
      d = -708.4 - urand() * 37.0;
      break;
    }
    double e = ulp_error(kl_exp(d), expl((long double)d));
    if (i % 4 == 3)
      worst_sub = e > worst_sub ? e : worst_sub;
    else
      worst = e > worst ? e : worst;
  }
  print_message("exp: max %.3f ulp (normal), %.3f ulp (subnormal results)\n", worst, worst_sub);
  assert_true(worst < 0.6);
  assert_true(worst_sub <= 1.0);
  assert_true(kl_exp(0.0) == 1.0 && kl_exp(-0.0) == 1.0);
  assert_true(bits(kl_exp(-750.0)) == 0 && bits(kl_exp(-1e300)) == 0);
  assert_true(kl_exp(-745.0) > 0.0); /* the smallest subnormal region is still reached */
  assert_true(kl_exp(-1.0) == exp(-1.0));
}

/* The JS sweep's own expm1 (x <= 0) and log1p (-1/2 <= y <= 0), against long double. */
static void test_expm1_log1p_accuracy(void **state) {
  (void)state;
  static const double scales[] = {1e-300, 1e-12, 1e-4, 0.05, 0.7, 3.0, 45.0, 800.0};
  double worst_e = 0, worst_l = 0;
  for (int i = 0; i < 400000; i++) {
    double x = -urand() * scales[i % 8];
    double e = ulp_error(kl_expm1_neg(x), expm1l((long double)x));
    worst_e = e > worst_e ? e : worst_e;
    double y = -urand() * (i % 3 ? 0.5 : scales[i % 4]);
    double l = ulp_error(kl_log1p_half(y), log1pl((long double)y));
    worst_l = l > worst_l ? l : worst_l;
  }
  print_message("expm1: max %.3f ulp; log1p: max %.3f ulp\n", worst_e, worst_l);
  assert_true(worst_e < 1.5);
  assert_true(worst_l < 2.0);
  assert_true(kl_expm1_neg(0.0) == 0.0 && kl_expm1_neg(-1e9) == -1.0);
  assert_true(kl_log1p_half(0.0) == 0.0 && kl_log1p_half(-0.5) == log1p(-0.5));
}

/* ---- kernels -------------------------------------------------------------------------- */

/* The vector ISA that test_isa_bit_identical checks against scalar: its own ctest per ISA
 * (`test_num avx2`, `test_num avx512`), so a CPU without it records a skip (77), never a pass. */
static fdl_num_isa isa_under_test = FDL_NUM_ISA_AVX2;

static int isa_runs(fdl_num_isa isa) {
  fdl_num_opts o = opts_for(1);
  o.isa = isa;
  float z = 0;
  fdl_num_row r;
  return fdl_num_row_logits(&o, &z, &z, &r, NULL) == FDL_OK;
}

static void test_isa_bit_identical(void **state) {
  (void)state;
  /* Sizes around and across the fixed chunk of FDL_NUM_VOCAB_CHUNK entries. */
  size_t sizes[] = {1, 2, 15, 16, 17, 33, 257, 1000, 4095, 4096, 4097, 8200, 12301};
  float *t = malloc(12301 * sizeof *t), *s = malloc(12301 * sizeof *s);
  /* Families: a wide candidate (the clamped exp path), both sides narrow (the fast exp path
   * that skips the clamp), and spreads straddling the fast path's -700 limit. */
  const double spread[3][2] = {{30.0, 2000.0}, {30.0, 0.0}, {1400.0, 1420.0}};
  for (size_t f = 0; f < 3; f++)
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++) {
      size_t v = sizes[a];
      for (size_t i = 0; i < v; i++) {
        t[i] = (float)((urand() - 0.5) * spread[f][0]);
        s[i] = i % 5 || spread[f][1] == 0.0 ? t[i] + (float)((urand() - 0.5) * 0.3)
                                            : (float)((urand() - 0.5) * spread[f][1]);
      }
      /* The ISA under test (this program's argument) against the scalar reference. */
      {
        fdl_num_row ref = row_kl(v, FDL_NUM_ISA_SCALAR, t, s);
        fdl_num_row r = row_kl(v, isa_under_test, t, s);
        assert_int_equal(bits(r.kl), bits(ref.kl));
        assert_int_equal(bits(r.js), bits(ref.js));
        assert_int_equal(bits(r.abs_err_sum), bits(ref.abs_err_sum));
        assert_int_equal(bits(r.abs_err_max), bits(ref.abs_err_max));
        assert_int_equal(r.ref_argmax, ref.ref_argmax);
        assert_int_equal(r.cand_argmax, ref.cand_argmax);
      }
    }
  free(t);
  free(s);
}

static void test_vocab_one(void **state) {
  (void)state;
  float t = 3.5f, s = -1e4f;
  fdl_num_row r = row_kl(1, FDL_NUM_ISA_AUTO, &t, &s);
  assert_int_equal(bits(r.kl), 0);
  assert_int_equal(r.ref_argmax, 0);
  assert_int_equal(r.cand_argmax, 0);
  assert_true(r.abs_err_max == 10003.5);
}

static void test_self_compare_positive_zero(void **state) {
  (void)state;
  float t[999];
  for (size_t v = 1; v <= 999; v += 97) {
    for (size_t i = 0; i < v; i++) t[i] = (float)((urand() - 0.5) * 1e3);
    fdl_num_opts o = opts_for(v);
    o.js = true;
    fdl_num_row r;
    assert_int_equal(fdl_num_row_logits(&o, t, t, &r, NULL), FDL_OK);
    assert_int_equal(bits(r.kl), 0);
    assert_int_equal(bits(r.js), 0);
    assert_int_equal(r.ref_argmax, r.cand_argmax);
  }
  /* Rows that differ only where the reference has no mass: every A term is +-0, KL is +0. */
  float a[2] = {0.0f, -1e4f}, b[2] = {0.0f, -2e4f};
  fdl_num_row r = row_kl(2, FDL_NUM_ISA_AUTO, a, b);
  assert_int_equal(bits(r.kl), 0);
}

static const fdl_num_isa isas[] = {FDL_NUM_ISA_SCALAR, FDL_NUM_ISA_AVX2, FDL_NUM_ISA_AVX512};

/* The maximum rises in every later chunk (ascending rows), on both sides at different places;
 * V spans four chunks, the last one partial. Every kernel this CPU runs. */
static void test_rescale_path(void **state) {
  (void)state;
  enum { V = 3 * FDL_NUM_VOCAB_CHUNK + 1000 };
  static float t[V], s[V];
  for (size_t i = 0; i < V; i++) {
    t[i] = (float)i * 0.004f + (float)(urand() * 0.01);
    s[i] = (float)((V - i) % 5000) * 0.006f + (float)(urand() * 0.01);
  }
  long double want = kl_ld(t, s, V);
  for (size_t k = 0; k < 3; k++) {
    if (!isa_runs(isas[k])) continue;
    fdl_num_row r = row_kl(V, isas[k], t, s);
    assert_true(fabsl((long double)r.kl - want) <= 1e-13L * fabsl(want));
    assert_int_equal(r.ref_argmax, V - 1);
  }
  /* Near-equal rows with rising maxima: the rescale must keep A and D precise. */
  for (size_t i = 0; i < V; i++) s[i] = nextafterf(t[i], i % 3 ? INFINITY : -INFINITY);
  want = kl_ld(t, s, V);
  for (size_t k = 0; k < 3; k++) {
    if (!isa_runs(isas[k])) continue;
    fdl_num_row r = row_kl(V, isas[k], t, s);
    assert_true(fabsl((long double)r.kl - want) <= 1e-15L);
  }
}

static void test_argmax_ties(void **state) {
  (void)state;
  enum { V = 2 * FDL_NUM_VOCAB_CHUNK + 100 };
  static float t[V], s[V];
  for (size_t i = 0; i < V; i++) t[i] = s[i] = 1.0f;
  fdl_num_row r = row_kl(V, FDL_NUM_ISA_AUTO, t, s);
  assert_int_equal(r.ref_argmax, 0);
  t[5] = t[FDL_NUM_VOCAB_CHUNK + 900] = 7.0f; /* tie across chunks: the first wins */
  s[700] = s[701] = 7.0f;                     /* tie inside a chunk */
  s[300] = -0.0f;
  r = row_kl(V, FDL_NUM_ISA_AUTO, t, s);
  assert_int_equal(r.ref_argmax, 5);
  assert_int_equal(r.cand_argmax, 700);
  for (size_t i = 0; i < V; i++) t[i] = i == 3 ? 0.0f : -1.0f;
  t[2] = -0.0f; /* -0.0 == +0.0: index 2 is the first maximum */
  r = row_kl(V, FDL_NUM_ISA_AUTO, t, s);
  assert_int_equal(r.ref_argmax, 2);
}

/* ---- driver --------------------------------------------------------------------------- */

typedef struct {
  size_t vocab, rows, hidden;
  float *ref, *cand, *href, *hcand, *head;
} panel;

static void panel_make(panel *p, size_t vocab, size_t rows, size_t hidden) {
  p->vocab = vocab, p->rows = rows, p->hidden = hidden;
  p->ref = malloc(rows * vocab * sizeof(float));
  p->cand = malloc(rows * vocab * sizeof(float));
  p->href = malloc(rows * hidden * sizeof(float));
  p->hcand = malloc(rows * hidden * sizeof(float));
  p->head = malloc(vocab * hidden * sizeof(float));
  for (size_t i = 0; i < rows * vocab; i++) {
    p->ref[i] = (float)((urand() - 0.5) * 10);
    p->cand[i] = p->ref[i] + (float)((urand() - 0.5) * 0.5);
  }
  for (size_t i = 0; i < rows * hidden; i++) {
    p->href[i] = (float)(urand() - 0.5);
    p->hcand[i] = p->href[i] + (float)((urand() - 0.5) * 0.05);
  }
  for (size_t i = 0; i < vocab * hidden; i++) p->head[i] = (float)(urand() - 0.5);
}

static void panel_free(panel *p) {
  free(p->ref), free(p->cand), free(p->href), free(p->hcand), free(p->head);
}

/* Cuts the panel into blocks of pb rows; hidden selects hidden form on both sides. */
static fdl_status panel_run(const panel *p, unsigned threads, size_t pb, int hidden, double *kl,
                            uint8_t *top1, fdl_err *err) {
  fdl_num_opts o = opts_for(p->vocab);
  o.threads = threads;
  fdl_num_ctx *ctx;
  fdl_status s = fdl_num_ctx_new(&o, &ctx, err);
  if (s != FDL_OK) return s;
  size_t nb = (p->rows + pb - 1) / pb;
  fdl_num_block *b = calloc(nb, sizeof *b);
  for (size_t i = 0; i < nb; i++) {
    size_t r0 = i * pb;
    b[i].rows = p->rows - r0 < pb ? p->rows - r0 : pb;
    if (hidden) {
      b[i].ref = (fdl_num_side){
          FDL_NUM_HIDDEN, p->href + r0 * p->hidden, p->hidden, p->head, p->hidden, FDL_GEMM_F32};
      b[i].cand = (fdl_num_side){
          FDL_NUM_HIDDEN, p->hcand + r0 * p->hidden, p->hidden, p->head, p->hidden, FDL_GEMM_F32};
    } else {
      b[i].ref =
          (fdl_num_side){FDL_NUM_LOGITS, p->ref + r0 * p->vocab, p->vocab, NULL, 0, FDL_GEMM_F32};
      b[i].cand =
          (fdl_num_side){FDL_NUM_LOGITS, p->cand + r0 * p->vocab, p->vocab, NULL, 0, FDL_GEMM_F32};
    }
  }
  fdl_num_out out = {.kl = kl, .top1 = top1};
  s = fdl_num_run(ctx, b, nb, &out, err);
  free(b);
  fdl_num_ctx_free(ctx);
  return s;
}

static void test_threads_bit_identical(void **state) {
  (void)state;
  panel p;
  panel_make(&p, 301, 45, 24);
  double k1[45], kt[45];
  uint8_t t1[45], tt[45];
  for (int hidden = 0; hidden < 2; hidden++) {
    fdl_err err;
    assert_int_equal(panel_run(&p, 1, 8, hidden, k1, t1, &err), FDL_OK);
    for (unsigned th = 2; th <= 3; th++) {
      assert_int_equal(panel_run(&p, th, 8, hidden, kt, tt, &err), FDL_OK);
      assert_memory_equal(k1, kt, sizeof k1);
      assert_memory_equal(t1, tt, sizeof t1);
    }
  }
  panel_free(&p);
}

static void test_nonfinite_names_row(void **state) {
  (void)state;
  panel p;
  panel_make(&p, 100, 20, 8);
  double kl[20];
  uint8_t top1[20];
  fdl_err err;
  p.cand[13 * 100 + 7] = NAN;
  p.ref[17 * 100 + 99] = INFINITY;
  for (unsigned th = 1; th <= 3; th++) {
    /* Blocks of 4: rows 13 and 17 are in blocks 3 and 4; the lower block is reported. */
    assert_int_equal(panel_run(&p, th, 4, 0, kl, top1, &err), FDL_NONFINITE);
    assert_non_null(strstr(err.msg, "candidate"));
    assert_non_null(strstr(err.msg, "output row 13"));
    assert_non_null(strstr(err.msg, "vocabulary index 7"));
  }
  p.href[5 * 8 + 2] = -INFINITY;
  assert_int_equal(panel_run(&p, 2, 4, 1, kl, top1, &err), FDL_NONFINITE);
  assert_non_null(strstr(err.msg, "output row 5"));
  assert_non_null(strstr(err.msg, "hidden index 2"));
  panel_free(&p);
}

static void test_run_validation(void **state) {
  (void)state;
  fdl_num_opts o = opts_for(0);
  fdl_num_ctx *ctx = NULL;
  fdl_err err;
  assert_int_equal(fdl_num_ctx_new(&o, &ctx, &err), FDL_INVALID);
  o = opts_for(10);
  assert_int_equal(fdl_num_ctx_new(&o, &ctx, &err), FDL_OK);
  static float x[(FDL_NUM_TILE_ROWS + 1) * 10];
  double kl[FDL_NUM_TILE_ROWS + 1];
  fdl_num_block b = {FDL_NUM_TILE_ROWS + 1,
                     {FDL_NUM_LOGITS, x, 10, NULL, 0, FDL_GEMM_F32},
                     {FDL_NUM_LOGITS, x, 10, NULL, 0, FDL_GEMM_F32},
                     NULL};
  fdl_num_out out = {.kl = kl};
  assert_int_equal(fdl_num_run(ctx, &b, 1, &out, &err), FDL_INVALID); /* more rows than a tile */
  b.rows = 2;
  b.cand.ld = 9;
  assert_int_equal(fdl_num_run(ctx, &b, 1, &out, &err), FDL_INVALID);
  b.cand = (fdl_num_side){FDL_NUM_HIDDEN, x, 3, NULL, 3, FDL_GEMM_F32};
  assert_int_equal(fdl_num_run(ctx, &b, 1, &out, &err), FDL_INVALID); /* no head */
  fdl_num_ctx_free(ctx);
  fdl_num_ctx_free(NULL);
}

/* ---- pool ----------------------------------------------------------------------------- */

typedef struct {
  atomic_int *hits;
  size_t fail_a, fail_b;
} pool_job;

static fdl_status pool_task(void *arg, size_t i, unsigned worker, fdl_err *err) {
  pool_job *j = arg;
  (void)worker;
  atomic_fetch_add(&j->hits[i], 1);
  if (i == j->fail_a || i == j->fail_b) return fdl_fail(err, FDL_IO, "task %zu failed", i);
  return FDL_OK;
}

static void test_pool_runs_every_task_once(void **state) {
  (void)state;
  enum { N = 1000 };
  atomic_int hits[N];
  for (unsigned th = 0; th <= 4; th++) {
    fdl_pool pool;
    assert_int_equal(fdl_pool_init(&pool, th, NULL), FDL_OK);
    assert_true(pool.threads >= 1);
    for (int rep = 0; rep < 3; rep++) {
      for (size_t i = 0; i < N; i++) atomic_init(&hits[i], 0);
      pool_job job = {hits, SIZE_MAX, SIZE_MAX};
      assert_int_equal(fdl_pool_run(&pool, N, pool_task, &job, NULL), FDL_OK);
      for (size_t i = 0; i < N; i++) assert_int_equal(atomic_load(&hits[i]), 1);
    }
    for (size_t i = 0; i < N; i++) atomic_init(&hits[i], 0);
    pool_job job = {hits, 500, 37};
    fdl_err err;
    assert_int_equal(fdl_pool_run(&pool, N, pool_task, &job, &err), FDL_IO);
    assert_string_equal(err.msg, "task 37 failed");
    for (size_t i = 0; i <= 37; i++) assert_int_equal(atomic_load(&hits[i]), 1);
    assert_int_equal(fdl_pool_run(&pool, 0, pool_task, &job, NULL), FDL_OK);
    fdl_pool_free(&pool);
    fdl_pool_free(&pool);
  }
}

/* ---- statistics ----------------------------------------------------------------------- */

static void test_neumaier_seed_receipt(void **state) {
  (void)state;
  /* per_context means of shared/vectors/fidelity/seed-receipt-003-measurement.json */
  const double m[4] = {2.432216459860744e-05, 2.4606443260586413e-05, 2.2266356467662446e-05,
                       2.4672142211821336e-05};
  assert_true(fdl_num_neumaier_mean(m, 4) == 2.396677663466941e-05);
  double naive = 0.0;
  for (int i = 0; i < 4; i++) naive += m[i];
  assert_true(naive / 4 != 2.396677663466941e-05);
  /* The streaming accumulator the estimator uses gives the same bits. sum([1e16, 1.0, -1e16])
   * is 1.0 in Python 3.12, where a plain sum gives 0.0. */
  fdl_num_neumaier acc = {0.0, 0.0};
  for (int i = 0; i < 4; i++) fdl_num_neumaier_add(&acc, m[i]);
  assert_true(fdl_num_neumaier_value(&acc) / 4 == 2.396677663466941e-05);
  fdl_num_neumaier big = {0.0, 0.0};
  fdl_num_neumaier_add(&big, 1e16);
  fdl_num_neumaier_add(&big, 1.0);
  fdl_num_neumaier_add(&big, -1e16);
  assert_true(fdl_num_neumaier_value(&big) == 1.0);
  fdl_num_context ctx[4];
  double rows[4][1];
  for (int i = 0; i < 4; i++) rows[i][0] = m[i], ctx[i] = (fdl_num_context){rows[i], 1};
  double v[FDL_NUM_DEPTH_BUCKETS];
  bool present[FDL_NUM_DEPTH_BUCKETS];
  assert_int_equal(
      fdl_num_bucket_means(ctx, 4, fdl_num_depth_edges, FDL_NUM_DEPTH_BUCKETS, v, present, NULL),
      FDL_OK);
  assert_true(present[0] && !present[1] && !present[4]);
  assert_true(v[0] == 2.396677663466941e-05);
}

static void test_stats_small(void **state) {
  (void)state;
  const double a[5] = {3, 1, 4, 1, 5};
  assert_true(fdl_num_mean(a, 5) == 2.8);
  const double sorted[5] = {1, 1, 3, 4, 5};
  assert_true(fdl_num_quantile_sorted(sorted, 5, 0.5) == 3.0);
  assert_true(fdl_num_quantile_sorted(sorted, 5, 0.95) == 4.8);
  assert_true(fdl_num_quantile_sorted(sorted, 5, 1.0) == 5.0);
  assert_true(fdl_num_quantile_sorted(sorted, 1, 0.999) == 1.0);
  fdl_num_summary s;
  assert_int_equal(fdl_num_summarize(a, 0, &s, NULL), FDL_OK);
  assert_true(s.mean == 0.0 && s.max == 0.0 && s.p99_9 == 0.0);
  assert_int_equal(fdl_num_summarize(a, 5, &s, NULL), FDL_OK);
  assert_true(s.median == 3.0 && s.max == 5.0);
  const double bad[2] = {1, NAN};
  fdl_err err;
  assert_int_equal(fdl_num_summarize(bad, 2, &s, &err), FDL_NONFINITE);
  const double v[6] = {0.5, 0.7, 0.5, 0.9, 0.7, 0.1};
  size_t idx[5], n;
  assert_int_equal(fdl_num_top_desc(v, 6, 5, idx, &n, NULL), FDL_OK);
  assert_int_equal(n, 5);
  const size_t want[5] = {3, 1, 4, 0, 2};
  assert_memory_equal(idx, want, sizeof want);
}

static void test_bootstrap(void **state) {
  (void)state;
  double sums[50];
  size_t rows[50];
  for (int i = 0; i < 50; i++)
    rows[i] = 10 + (size_t)(urand() * 50), sums[i] = 1e-3 * rows[i] * (1 + urand());
  fdl_num_ci a, b;
  fdl_err err;
  assert_int_equal(fdl_num_bootstrap_ci95(sums, rows, 50, 2000, 42, &a, &err), FDL_OK);
  assert_int_equal(fdl_num_bootstrap_ci95(sums, rows, 50, 2000, 42, &b, &err), FDL_OK);
  assert_memory_equal(&a, &b, sizeof a);
  assert_true(a.low < a.point && a.point < a.high);
  assert_true(a.clusters == 50 && a.samples == 2000 && a.seed == 42);
  assert_int_equal(fdl_num_bootstrap_ci95(sums, rows, 50, 2000, 43, &b, &err), FDL_OK);
  assert_true(a.low != b.low || a.high != b.high);
  assert_int_equal(fdl_num_bootstrap_ci95(sums, rows, 1, 2000, 42, &b, &err), FDL_REFUSED);
  assert_non_null(strstr(err.msg, "at least 2 contexts"));
}

/* `test_num`: everything but the vector kernels. `test_num avx2|avx512`: that ISA's kernels
 * against scalar only, exiting 77 (a CTest skip) when this CPU cannot run them. */
int main(int argc, char **argv) {
  if (argc == 2) {
    if (!strcmp(argv[1], "avx512"))
      isa_under_test = FDL_NUM_ISA_AVX512;
    else if (strcmp(argv[1], "avx2")) {
      fprintf(stderr, "usage: test_num [avx2|avx512]\n");
      return 2;
    }
    if (!isa_runs(isa_under_test)) {
      printf("skipped: %s kernels cannot run on this CPU\n", argv[1]);
      return 77;
    }
    const struct CMUnitTest isa_tests[] = {cmocka_unit_test(test_isa_bit_identical)};
    return cmocka_run_group_tests(isa_tests, NULL, NULL);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exp_accuracy),
      cmocka_unit_test(test_expm1_log1p_accuracy),
      cmocka_unit_test(test_vocab_one),
      cmocka_unit_test(test_self_compare_positive_zero),
      cmocka_unit_test(test_rescale_path),
      cmocka_unit_test(test_argmax_ties),
      cmocka_unit_test(test_threads_bit_identical),
      cmocka_unit_test(test_nonfinite_names_row),
      cmocka_unit_test(test_run_validation),
      cmocka_unit_test(test_pool_runs_every_task_once),
      cmocka_unit_test(test_neumaier_seed_receipt),
      cmocka_unit_test(test_stats_small),
      cmocka_unit_test(test_bootstrap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
