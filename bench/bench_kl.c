/* bench_kl.c - timings of the numerical core, printed as one line of key=value pairs per run.
 *
 *   bench_kl logits --vocab V --rows R --ref F --cand F [--threads T] [--isa NAME]
 *       Raw float32 logit files, read into memory first (the read is not timed); times the
 *       fused KL over all rows, best of 5.
 *   bench_kl hidden --vocab V --hidden H --rows R [--threads T] [--batch N]
 *       Generated BF16 head (read as stored) and BF16 hidden rows widened to float32, hidden <->
 *       hidden, each side with its own head (the candidate's a perturbed copy of the
 *       reference's, as a quantized model's would be). Times fidelis, then the bare GEMM tiles of
 * the same blocks on the same threads, in the same process, alternating the two three times (best
 * of each). bench_kl hidden ... --no-bare   skips the bare GEMM and streams rows, generated and
 * compared `batch` at a time, so the memory held is the head plus one batch whatever the panel size
 *       (the RSS runs).
 *
 * Every run ends with peak_rss_mib (getrusage) and head_mib (the two BF16 heads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_clock.h"
#include "fidelis/num.h"
#include "fidelis/pool.h"
#include "fidelis/tensor.h"
#include "num/gemm.h"

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static size_t num(int argc, char **argv, const char *name, size_t dflt) {
  const char *v = arg(argc, argv, name);
  return v ? strtoull(v, NULL, 10) : dflt;
}

static int has(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

static float *read_floats(const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  float *p = f ? malloc(n * sizeof *p) : NULL;
  if (p && fread(p, sizeof *p, n, f) != n) {
    free(p);
    p = NULL;
  }
  if (f) fclose(f);
  return p;
}

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static float uniform(uint64_t *s) {
  return (float)((double)(mix(s) >> 11) * 0x1p-53 - 0.5);
}

/* A BF16 value widened exactly: the top 16 bits of a float32. */
static float bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  u &= 0xffff0000u;
  memcpy(&x, &u, sizeof x);
  return x;
}

/* Large generated arrays: huge pages where the kernel allows them, because page faults are
 * expensive on virtual machines and the head is the benchmark's setup, not its subject. */
static uint16_t *alloc_big(size_t n) {
  size_t bytes = (n * sizeof(uint16_t) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  uint16_t *p = aligned_alloc(2u << 20, bytes);
  if (p) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

/* Targets as compare has them (one per row, spread over the vocabulary), so that the timed run
 * includes the target log-probabilities compare asks for. */
static int64_t *targets(size_t rows, size_t vocab) {
  int64_t *t = malloc((rows ? rows : 1) * sizeof *t);
  for (size_t r = 0; t && r < rows; r++) t[r] = (int64_t)((r * 2654435761u) % vocab);
  return t;
}

static fdl_num_block *cut(size_t rows, size_t pb, fdl_num_side ref, fdl_num_side cand,
                          const int64_t *tgt, size_t *nb) {
  *nb = (rows + pb - 1) / pb;
  fdl_num_block *b = calloc(*nb, sizeof *b);
  for (size_t i = 0; b && i < *nb; i++) {
    size_t r0 = i * pb;
    b[i].target = tgt + r0;
    b[i].rows = rows - r0 < pb ? rows - r0 : pb;
    b[i].ref = ref;
    b[i].ref.data = ref.data + r0 * ref.ld;
    b[i].cand = cand;
    b[i].cand.data = cand.data + r0 * cand.ld;
  }
  return b;
}

static int bench_logits(int argc, char **argv) {
  fdl_num_opts o;
  fdl_num_opts_default(&o);
  o.vocab = num(argc, argv, "--vocab", 0);
  o.threads = (unsigned)num(argc, argv, "--threads", 0);
  const char *isa = arg(argc, argv, "--isa");
  if (isa && strcmp(isa, "avx2") == 0) o.isa = FDL_NUM_ISA_AVX2;
  if (isa && strcmp(isa, "scalar") == 0) o.isa = FDL_NUM_ISA_SCALAR;
  o.js = has(argc, argv, "--js");
  size_t rows = num(argc, argv, "--rows", 0);
  float *t = read_floats(arg(argc, argv, "--ref"), rows * o.vocab);
  float *s = read_floats(arg(argc, argv, "--cand"), rows * o.vocab);
  if (!t || !s || !rows) {
    fprintf(stderr, "bench_kl logits: cannot read the inputs\n");
    return 2;
  }
  size_t nb;
  int64_t *tgt = targets(rows, o.vocab);
  fdl_num_block *b = cut(rows, (size_t)FDL_NUM_TILE_ROWS,
                         (fdl_num_side){FDL_NUM_LOGITS, t, o.vocab, 0, 0, FDL_GEMM_F32},
                         (fdl_num_side){FDL_NUM_LOGITS, s, o.vocab, 0, 0, FDL_GEMM_F32}, tgt, &nb);
  double *kl = malloc(rows * sizeof *kl), *js = malloc(rows * sizeof *js);
  double *lp = malloc(2 * rows * sizeof *lp);
  uint8_t *top1 = malloc(rows);
  fdl_num_ctx *ctx;
  fdl_err err;
  if (!tgt || !b || !kl || !js || !lp || !top1 || fdl_num_ctx_new(&o, &ctx, &err) != FDL_OK)
    return 2;
  fdl_num_out out = {
      .kl = kl, .top1 = top1, .js = o.js ? js : NULL, .ref_logprob = lp, .cand_logprob = lp + rows};
  double best = 1e300;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = bench_now();
    if (fdl_num_run(ctx, b, nb, &out, &err) != FDL_OK) {
      fprintf(stderr, "bench_kl: %s\n", err.msg);
      return 3;
    }
    double dt = bench_now() - t0;
    best = dt < best ? dt : best;
  }
  double mean = fdl_num_mean(kl, rows);
  printf("mode=logits isa=%s threads=%u js=%d vocab=%zu rows=%zu seconds=%.4f ms_per_row=%.4f "
         "kl_mean=%.17g peak_rss_mib=%.1f\n",
         fdl_num_isa_name(fdl_num_ctx_opts(ctx)->isa), fdl_num_ctx_opts(ctx)->threads, o.js,
         o.vocab, rows, best, best / (double)rows * 1e3, mean, bench_peak_rss_mib());
  fdl_num_ctx_free(ctx);
  free(b), free(kl), free(js), free(lp), free(top1), free(t), free(s), free(tgt);
  return 0;
}

typedef struct {
  const float *rows_ref, *rows_cand;
  const uint16_t *head[2];
  size_t rows, hidden, vocab, chunk;
  const gemm_kernel *kern;
  float *tiles; /* [threads][2][pb x chunk] */
  float **work; /* [threads] */
} bare_args;

/* The same GEMM tiles fidelis makes for one block, and nothing else. */
static fdl_status bare_block(void *varg, size_t b, unsigned worker, fdl_err *err) {
  (void)err;
  bare_args *a = varg;
  size_t pb = FDL_NUM_TILE_ROWS, r0 = b * pb, nr = a->rows - r0 < pb ? a->rows - r0 : pb;
  float *tile = a->tiles + (size_t)worker * 2 * pb * a->chunk;
  fdl_gemm_blocking blk;
  fdl_gemm_blocking_default(a->kern, a->hidden, &blk);
  for (size_t c0 = 0; c0 < a->vocab; c0 += a->chunk) {
    size_t n = a->vocab - c0 < a->chunk ? a->vocab - c0 : a->chunk;
    const float *rows[2] = {a->rows_ref, a->rows_cand};
    for (int i = 0; i < 2; i++) {
      fdl_gemm_args x = {nr,
                         n,
                         a->hidden,
                         rows[i] + r0 * a->hidden,
                         a->hidden,
                         a->head[i] + c0 * a->hidden,
                         a->hidden,
                         FDL_GEMM_BF16,
                         tile + i * pb * a->chunk,
                         a->chunk,
                         NULL,
                         NULL,
                         0,
                         NULL};
      fdl_gemm_tile(a->kern, &x, 0, nr, 0, n, &blk, a->work[worker]);
    }
  }
  return FDL_OK;
}

static fdl_status run_hidden(fdl_num_ctx *ctx, float *hr, float *hc, uint16_t *const head[2],
                             size_t h, size_t n, double *kl, fdl_err *err) {
  size_t nb;
  int64_t *tgt = targets(n, fdl_num_ctx_opts(ctx)->vocab);
  double *lp = malloc(2 * (n ? n : 1) * sizeof *lp);
  fdl_num_block *b =
      cut(n, (size_t)FDL_NUM_TILE_ROWS,
          (fdl_num_side){FDL_NUM_HIDDEN, hr, h, head[0], h, FDL_GEMM_BF16},
          (fdl_num_side){FDL_NUM_HIDDEN, hc, h, head[1], h, FDL_GEMM_BF16}, tgt, &nb);
  fdl_status s = FDL_NOMEM;
  if (!b || !tgt || !lp) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory for blocks");
  } else {
    fdl_num_out out = {.kl = kl, .ref_logprob = lp, .cand_logprob = lp + n};
    s = fdl_num_run(ctx, b, nb, &out, err);
  }
  free(b), free(tgt), free(lp);
  return s;
}

static void gen_rows(uint64_t *seed, float *hr, float *hc, size_t n) {
  for (size_t i = 0; i < n; i++) {
    hr[i] = bf16(uniform(seed) * 4.0f);
    hc[i] = bf16(hr[i] + uniform(seed) * 0.1f);
  }
}

static int bench_hidden(int argc, char **argv) {
  fdl_num_opts o;
  fdl_num_opts_default(&o);
  o.vocab = num(argc, argv, "--vocab", 248320);
  o.threads = (unsigned)num(argc, argv, "--threads", 0);
  size_t h = num(argc, argv, "--hidden", 2560), rows = num(argc, argv, "--rows", 256);
  int bare_too = !has(argc, argv, "--no-bare");
  fdl_num_ctx *ctx;
  fdl_err err;
  if (fdl_num_ctx_new(&o, &ctx, &err) != FDL_OK) return 2;
  unsigned threads = fdl_num_ctx_opts(ctx)->threads;
  /* The RSS runs stream rows in batches; the ratio run keeps its few rows in memory and
   * alternates fidelis and bare GEMM three times (best of each), so that load from other
   * processes hits both sides alike. */
  size_t batch =
      bare_too ? rows : num(argc, argv, "--batch", (size_t)threads * (size_t)FDL_NUM_TILE_ROWS * 2);
  uint16_t *head[2] = {alloc_big(o.vocab * h), alloc_big(o.vocab * h)};
  float *hr = malloc(batch * h * sizeof *hr), *hc = malloc(batch * h * sizeof *hc);
  double *kl = malloc(batch * sizeof *kl);
  if (!head[0] || !head[1] || !hr || !hc || !kl) return 2;
  uint64_t seed = 1;
  for (size_t i = 0; i < o.vocab * h; i++) {
    float w = uniform(&seed) * 0.2f;
    head[0][i] = fdl_f32_to_bf16(w);
    head[1][i] = fdl_f32_to_bf16(w + uniform(&seed) * 0.002f);
  }
  double fid = 1e300, bare = 1e300, fid_cpu = 1e300, bare_cpu = 1e300, sum_kl = 0;
  if (!bare_too) {
    fid = 0;
    for (size_t r0 = 0; r0 < rows; r0 += batch) {
      size_t n = rows - r0 < batch ? rows - r0 : batch;
      gen_rows(&seed, hr, hc, n * h);
      double t0 = bench_now();
      if (run_hidden(ctx, hr, hc, head, h, n, kl, &err) != FDL_OK) goto fail;
      fid += bench_now() - t0;
      for (size_t i = 0; i < n; i++) sum_kl += kl[i];
    }
  } else {
    gen_rows(&seed, hr, hc, rows * h);
    size_t nc = (size_t)FDL_NUM_VOCAB_CHUNK < o.vocab ? (size_t)FDL_NUM_VOCAB_CHUNK : o.vocab;
    bare_args a = {hr,
                   hc,
                   {head[0], head[1]},
                   rows,
                   h,
                   o.vocab,
                   nc,
                   NULL,
                   malloc((size_t)threads * 2 * (size_t)FDL_NUM_TILE_ROWS * nc * sizeof(float)),
                   calloc(threads, sizeof(float *))};
    if (fdl_gemm_kernel_pick(FDL_NUM_ISA_AUTO, &a.kern, &err) != FDL_OK || !a.work) return 2;
    fdl_gemm_blocking blk;
    fdl_gemm_blocking_default(a.kern, h, &blk);
    size_t wf = fdl_gemm_work_floats(a.kern, FDL_NUM_TILE_ROWS, h, &blk);
    for (unsigned w = 0; w < threads; w++)
      if (!(a.work[w] = aligned_alloc(64, (wf * sizeof(float) + 63) / 64 * 64))) return 2;
    fdl_pool pool;
    if (!a.tiles || fdl_pool_init(&pool, threads, &err) != FDL_OK) return 2;
    size_t nblocks = (rows + (size_t)FDL_NUM_TILE_ROWS - 1) / (size_t)FDL_NUM_TILE_ROWS;
    for (int rep = 0; rep < 3; rep++) {
      double t0 = bench_now(), c0 = bench_cpu_now();
      if (run_hidden(ctx, hr, hc, head, h, rows, kl, &err) != FDL_OK) goto fail;
      double t1 = bench_now(), c1 = bench_cpu_now();
      fdl_pool_run(&pool, nblocks, bare_block, &a, &err);
      double t2 = bench_now(), c2 = bench_cpu_now();
      fid = t1 - t0 < fid ? t1 - t0 : fid;
      bare = t2 - t1 < bare ? t2 - t1 : bare;
      fid_cpu = c1 - c0 < fid_cpu ? c1 - c0 : fid_cpu;
      bare_cpu = c2 - c1 < bare_cpu ? c2 - c1 : bare_cpu;
    }
    for (size_t i = 0; i < rows; i++) sum_kl += kl[i];
    fdl_pool_free(&pool);
    for (unsigned w = 0; w < threads; w++) free(a.work[w]);
    free(a.work);
    free(a.tiles);
  }
  printf("mode=hidden threads=%u vocab=%zu hidden=%zu rows=%zu pb=%zu chunk=%zu "
         "fidelis_s=%.3f bare_gemm_s=%.3f ratio=%.3f cpu_ratio=%.3f kl_mean=%.6g "
         "head_mib=%.1f peak_rss_mib=%.1f\n",
         threads, o.vocab, h, rows, (size_t)FDL_NUM_TILE_ROWS, (size_t)FDL_NUM_VOCAB_CHUNK, fid,
         bare_too ? bare : 0.0, bare_too ? fid / bare : 0.0, bare_too ? fid_cpu / bare_cpu : 0.0,
         sum_kl / (double)rows, (double)(2 * o.vocab * h * sizeof(uint16_t)) / 1048576.0,
         bench_peak_rss_mib());
  fdl_num_ctx_free(ctx);
  free(head[0]), free(head[1]), free(hr), free(hc), free(kl);
  return 0;
fail:
  fprintf(stderr, "bench_kl hidden: %s\n", err.msg);
  return 3;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "logits") == 0) return bench_logits(argc, argv);
  if (argc > 1 && strcmp(argv[1], "hidden") == 0) return bench_hidden(argc, argv);
  fprintf(stderr, "usage: bench_kl logits|hidden ...\n");
  return 2;
}
