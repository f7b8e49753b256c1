/* bench_engine.c - the engine's prefill and decode against the machine's own bounds, in one
 * process: prefill GFLOP/s against fidelis' GEMM peak (one large product of the model's own
 * widest shape, same threads), and decode tokens/s against the memory-bandwidth bound of
 * reading every weight once per token (bandwidth measured by a streaming read of a buffer
 * larger than the caches); for a mixture of experts, every weight a token uses (its active
 * parameters: the routed experts' bytes, not all experts').
 *
 *   bench_engine MODEL_DIR PREFILL_TOKENS DECODE_TOKENS THREADS
 *
 * Prints one key=value line per figure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_clock.h"
#include "fidelis/engine.h"
#include "num/gemm_run.h"
#include "fidelis/pool.h"

/* Weight elements of layer l's MLP one position multiplies through: the dense MLP, or a routed
 * one's active part (the router, the experts_per_tok chosen experts and a shared expert). */
static double mlp_weights(const fdl_model_info *i, size_t l) {
  double h = (double)i->hidden;
  if (!i->moe || !i->moe[l]) return 3 * h * (double)i->intermediate;
  double s = (double)i->shared_intermediate;
  return h * (double)i->experts + (double)i->experts_per_tok * 3 * h * (double)i->moe_intermediate +
         3 * h * s + (s > 0 ? h : 0);
}

/* Weight elements one position multiplies through in layer l: its projections and its MLP. */
static double layer_weights(const fdl_model_info *i, size_t l) {
  double h = (double)i->hidden, mlp = mlp_weights(i, l);
  if (i->linear && i->linear[l]) {
    double kd = (double)(i->lin_k_heads * i->lin_k_dim),
           vd = (double)(i->lin_v_heads * i->lin_v_dim);
    return h * (2 * kd + vd) + h * vd + 2 * h * (double)i->lin_v_heads + vd * h + mlp;
  }
  double q = (double)(i->heads * i->head_dim), kv = (double)(i->kv_heads * i->head_dim);
  return h * q * (i->attn_gate ? 2 : 1) + 2 * h * kv + q * h + mlp;
}

/* Multiply-adds of one forward over n tokens, as 2 flops each: the projections, the MLP, the
 * head on every row, attention's QK^T and PV over the causal triangle, and a Gated DeltaNet's
 * delta rule as its recurrent form counts it (three dk x dv products per value head). */
static double forward_flops(const fdl_model_info *i, size_t n) {
  double nn = (double)n, madds = nn * (double)i->hidden * (double)i->vocab;
  for (size_t l = 0; l < i->layers; l++) {
    madds += nn * layer_weights(i, l);
    if (i->linear && i->linear[l])
      madds += nn * 3.0 * (double)(i->lin_v_heads * i->lin_k_dim * i->lin_v_dim);
    else
      madds += (double)i->heads * (double)i->head_dim * nn * (nn + 1);
  }
  return 2.0 * madds;
}

/* Bytes of weights read per decoded token: every layer's matrices (a routed MLP's active part
 * only: the bound of a mixture of experts is its active parameters) and the head. */
static double weight_bytes(const fdl_model_info *i) {
  double es = i->weight_dtype == FDL_DTYPE_F32 ? 4.0 : 2.0,
         w = (double)i->hidden * (double)i->vocab;
  for (size_t l = 0; l < i->layers; l++) w += layer_weights(i, l);
  return es * w;
}

/* The bounds are measured on the work's own thread count: a streaming read split over the
 * pool's workers (one slice each), and the GEMM as the engine runs it (column blocks on the
 * pool, a single-thread context per worker), so a ratio compares like with like. */
typedef struct {
  const float *a;
  size_t n, parts;
  float sum[64];
} stream_job;

static fdl_status stream_part(void *arg, size_t i, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  stream_job *j = arg;
  size_t lo = j->n / j->parts * i, hi = i + 1 == j->parts ? j->n : j->n / j->parts * (i + 1);
  float s = 0;
  for (size_t k = lo; k < hi; k += 16) s += j->a[k];
  j->sum[i % 64] = s;
  return FDL_OK;
}

static double stream_gbps(fdl_pool *pool) {
  size_t n = (size_t)1 << 28; /* 1 GiB of floats */
  float *a = malloc(n * sizeof *a);
  if (!a) return 0;
  memset(a, 1, n * sizeof *a);
  stream_job j = {a, n, pool->threads < 64 ? pool->threads : 64, {0}};
  fdl_err err;
  double best = 0;
  for (int r = 0; r < 3; r++) {
    double t0 = bench_now();
    if (fdl_pool_run(pool, j.parts, stream_part, &j, &err) != FDL_OK) break;
    double g = (double)n * sizeof *a / (bench_now() - t0) / 1e9;
    if (g > best) best = g;
  }
  free(a);
  return best;
}

typedef struct {
  fdl_gemm **g;
  const fdl_gemm_args *x;
  size_t cb;
} peak_job;

static fdl_status peak_part(void *arg, size_t i, unsigned worker, fdl_err *err) {
  const peak_job *j = arg;
  fdl_gemm_args y = *j->x;
  size_t c0 = i * j->cb, c1 = c0 + j->cb < y.n ? c0 + j->cb : y.n;
  y.n = c1 - c0;
  y.b = (const uint16_t *)j->x->b + c0 * y.ldb;
  y.c = j->x->c + c0;
  return fdl_gemm_run(j->g[worker], &y, err);
}

static double gemm_peak(const fdl_model_info *i, fdl_pool *pool, size_t m) {
  /* the MLP's shape; an expert's for a mixture of experts (a routed layer's products) */
  size_t k = i->hidden, nn = i->experts ? i->moe_intermediate : i->intermediate;
  float *a = malloc(m * k * sizeof *a), *c = malloc(m * nn * sizeof *c);
  uint16_t *b = malloc(nn * k * sizeof *b);
  fdl_gemm *g[64] = {0};
  unsigned nt = pool->threads < 64 ? pool->threads : 64;
  fdl_err err;
  bool ok = a && b && c;
  for (unsigned t = 0; ok && t < nt; t++)
    ok = fdl_gemm_new(FDL_NUM_ISA_AUTO, 1, &g[t], &err) == FDL_OK;
  double best = 0;
  if (ok) {
    for (size_t x = 0; x < m * k; x++) a[x] = (float)(x % 13) * 0.01f;
    for (size_t x = 0; x < nn * k; x++) b[x] = 0x3f80;
    fdl_gemm_args ar = {.m = m,
                        .n = nn,
                        .k = k,
                        .a = a,
                        .lda = k,
                        .b = b,
                        .ldb = k,
                        .b_type = FDL_GEMM_BF16,
                        .c = c,
                        .ldc = nn};
    /* four column blocks per worker, whole 64-column tiles, as the engine cuts a product */
    size_t cb = (nn + 4 * nt - 1) / (4 * nt);
    cb = (cb + 63) / 64 * 64;
    peak_job j = {g, &ar, cb};
    for (int r = 0; r < 3; r++) {
      double t0 = bench_now();
      if (fdl_pool_run(pool, (nn + cb - 1) / cb, peak_part, &j, &err) != FDL_OK) break;
      double t = bench_now() - t0, gf = 2.0 * (double)m * (double)nn * (double)k / t / 1e9;
      if (gf > best) best = gf;
    }
  }
  for (unsigned t = 0; t < nt; t++) fdl_gemm_free(g[t]);
  free(a);
  free(b);
  free(c);
  return best;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: bench_engine MODEL_DIR PREFILL_TOKENS DECODE_TOKENS THREADS\n");
    return 4;
  }
  size_t np = (size_t)atol(argv[2]), nd = (size_t)atol(argv[3]);
  unsigned threads = (unsigned)atoi(argv[4]);
  fdl_err err;
  fdl_model *m = NULL;
  fdl_model_opts o = {.threads = threads};
  double t0 = bench_now();
  if (fdl_model_load(argv[1], &o, &m, &err) != FDL_OK) {
    fprintf(stderr, "bench_engine: %s\n", err.msg);
    return 3;
  }
  double load = bench_now() - t0;
  const fdl_model_info *i = fdl_model_get_info(m);
  size_t n = np > nd ? np : nd;
  int32_t *ids = malloc(n * sizeof *ids);
  int32_t *greedy = malloc(n * sizeof *greedy);
  for (size_t k = 0; k < n; k++) ids[k] = (int32_t)((k * 7919u + 13u) % i->vocab);
  fdl_engine_out out = {.greedy = greedy};
  double best_p = 1e30, best_d = 1e30;
  for (int r = 0; r < 2; r++) {
    t0 = bench_now();
    if (fdl_engine_run(m, ids, np, FDL_ENGINE_PREFILL, &out, &err) != FDL_OK) break;
    double t = bench_now() - t0;
    if (t < best_p) best_p = t;
  }
  t0 = bench_now();
  if (fdl_engine_run(m, ids, nd, FDL_ENGINE_DECODE, &out, &err) == FDL_OK)
    best_d = bench_now() - t0;
  double gf = forward_flops(i, np) / best_p / 1e9;
  fdl_pool pool;
  if (fdl_pool_init(&pool, threads, &err) != FDL_OK) {
    fprintf(stderr, "bench_engine: %s\n", err.msg);
    return 3;
  }
  double peak = gemm_peak(i, &pool, np);
  double bw = stream_gbps(&pool), bound = bw * 1e9 / weight_bytes(i);
  fdl_pool_free(&pool);
  double tps = (double)nd / best_d;
  printf("model=%s params_weights_gb=%.3f load_s=%.3f threads=%u\n", i->arch, weight_bytes(i) / 1e9,
         load, threads);
  printf("prefill tokens=%zu seconds=%.4f gflops=%.2f gemm_peak_gflops=%.2f ratio=%.3f\n", np,
         best_p, gf, peak, gf / peak);
  printf("decode tokens=%zu seconds=%.4f tokens_per_s=%.2f bandwidth_gbps=%.2f "
         "bound_tokens_per_s=%.2f "
         "ratio=%.3f\n",
         nd, best_d, tps, bw, bound, tps / bound);
  printf("peak_rss_mib=%.1f\n", bench_peak_rss_mib());
  fdl_model_free(m);
  free(ids);
  free(greedy);
  return 0;
}
