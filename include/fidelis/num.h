/* fidelis/num.h - the numerical core: token-wise KL over the full vocabulary, head replay,
 * the deterministic parallel driver, and the statistics of the comparison receipt.
 *
 * Nothing here knows about datasets, manifests or receipts. A caller describes rows (where the
 * reference and candidate floats live, and whether they are logits or hidden states with a head)
 * and gets per-row numbers back in slots it owns; the statistics take plain double arrays.
 *
 * A first program (logits, one block of 3 rows over a vocabulary of 5):
 *
 *   float ref[3][5] = ..., cand[3][5] = ...;
 *   fdl_num_opts o;
 *   fdl_num_opts_default(&o);
 *   o.vocab = 5;
 *   fdl_num_ctx *ctx;
 *   fdl_err err;
 *   if (fdl_num_ctx_new(&o, &ctx, &err) != FDL_OK) ...;
 *   fdl_num_block b = {.rows = 3,
 *                      .ref = {.form = FDL_NUM_LOGITS, .data = &ref[0][0], .ld = 5},
 *                      .cand = {.form = FDL_NUM_LOGITS, .data = &cand[0][0], .ld = 5}};
 *   double kl[3];
 *   uint8_t top1[3];
 *   fdl_num_out out = {.kl = kl, .top1 = top1};
 *   if (fdl_num_run(ctx, &b, 1, &out, &err) != FDL_OK) fprintf(stderr, "%s\n", err.msg);
 *   fdl_num_ctx_free(ctx);
 *
 * Numerics (docs/NUMERICS.md has the derivations):
 *  - inputs are float32, every operation after loading is float64;
 *  - KL(reference || candidate) per row in one streaming pass over vocabulary chunks;
 *    bitwise-equal rows give exactly +0.0, and no row ever yields -0.0;
 *  - a hidden row is replayed through fidelis' own GEMM (num/gemm_run.h): every logit is one
 *    float32 fma chain over the hidden index, whatever the block, the tile, the thread or the
 *    CPU. A row's result depends only on its own floats (and its head), never on the thread
 *    count, on how many rows share its block, or on the instruction set (scalar, AVX2 and
 *    AVX-512 kernels of both the GEMM and the KL are bit-identical by construction);
 *  - statistics are bit-identical to numpy 1.24 / CPython 3.12 on the same array. */
#ifndef FIDELIS_NUM_H
#define FIDELIS_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- options -------------------------------------------------------------------------- */

/* Rows per block: the unit of work of one task and the M of every replay tile. No bit depends
 * on it; it is a constant so that the receipt's position_block is a fact, not a setting. */
#define FDL_NUM_TILE_ROWS 64
/* Vocabulary entries per chunk: the unit of streaming and of max rescaling (and the N of every
 * replay tile). Part of the numerical identity of a KL, hence a constant. */
#define FDL_NUM_VOCAB_CHUNK 4096

typedef enum {
  FDL_NUM_ISA_AUTO = 0, /* best the CPU supports */
  FDL_NUM_ISA_SCALAR,   /* portable C with fma(); the reference every SIMD path must equal */
  FDL_NUM_ISA_AVX2,     /* AVX2 + FMA */
  FDL_NUM_ISA_AVX512    /* AVX-512F */
} fdl_num_isa;

typedef struct {
  size_t vocab;     /* V >= 1: entries per logit row and rows of every head */
  unsigned threads; /* workers; 0 = every online CPU. Never changes a result. */
  bool js;          /* also compute Jensen-Shannon divergence (a second sweep per row) */
  fdl_num_isa isa;  /* kernel choice; forcing one the CPU lacks is FDL_UNSUPPORTED. Never
                       changes a result. */
} fdl_num_opts;

/* Fills the defaults above (vocab = 0: the caller must set it). */
FDL_API void fdl_num_opts_default(fdl_num_opts *o);

/* ---- rows ----------------------------------------------------------------------------- */

typedef enum {
  FDL_NUM_LOGITS = 0, /* data rows are vocab floats of logits */
  FDL_NUM_HIDDEN = 1  /* data rows are `hidden` floats; logits = row . head^T (num/gemm_run.h) */
} fdl_num_form;

/* How a matrix the GEMM reads (src/num/gemm_run.h) is stored, e.g. a head. */
typedef enum {
  FDL_GEMM_F32 = 0, /* IEEE binary32, little-endian */
  FDL_GEMM_BF16,    /* bfloat16: the high half of a binary32 */
  FDL_GEMM_F16      /* IEEE binary16 (subnormals widened exactly) */
} fdl_gemm_type;

/* Where one side of a block lives. Pointers are borrowed for the duration of fdl_num_run. */
typedef struct {
  fdl_num_form form;
  const float *data;       /* first row of the block */
  size_t ld;               /* floats from one row to the next (>= vocab or >= hidden) */
  const void *head;        /* hidden form: W, [vocab x hidden] row-major as stored; else NULL */
  size_t hidden;           /* hidden form: width of a hidden row and of a head row; else 0 */
  fdl_gemm_type head_type; /* how W is stored (read as is, widened exactly in registers) */
} fdl_num_side;

/* Up to FDL_NUM_TILE_ROWS consecutive rows of both sides. The results of block b land in the
 * output slots [first, first + rows) where first = sum of rows of blocks 0..b-1. */
typedef struct {
  size_t rows; /* 1 .. FDL_NUM_TILE_ROWS */
  fdl_num_side ref;
  fdl_num_side cand;
  /* NULL, or per row the vocabulary index of the token the row predicts (0 .. vocab-1): its
   * log-probability on each side is taken from the same pass as the KL. Required when the
   * output asks for ref_logprob or cand_logprob. */
  const int64_t *target;
} fdl_num_block;

/* Caller-owned per-row result arrays, indexed by output slot. Only kl is required; a NULL
 * array is not computed or not written. */
typedef struct {
  double *kl;           /* KL(ref || cand) in nats; a tiny negative value is kept as is */
  uint8_t *top1;        /* 1 when the argmaxes agree (first index on ties), else 0 */
  int64_t *ref_argmax;  /* argmax of the reference row (raw logits, first index on ties) */
  int64_t *cand_argmax; /* argmax of the candidate row */
  double *abs_err_sum;  /* sum over the vocabulary of |t - s| (logits, float64) */
  double *abs_err_max;  /* max over the vocabulary of |t - s| */
  double *js;           /* Jensen-Shannon divergence in nats; required when opts.js */
  /* log p(target) of each side, float64, with the KL's own maximum and normaliser:
   * (x[target] - max) - log(sum exp(x - max)). Needs every block's target. */
  double *ref_logprob;
  double *cand_logprob;
} fdl_num_out;

/* ---- driver --------------------------------------------------------------------------- */

/* Holds the options, the thread pool and per-thread scratch (bounded by threads x tile size,
 * independent of how many rows are compared). Reuse one context for many runs; one run at a
 * time per context (use one context per calling thread). */
typedef struct fdl_num_ctx fdl_num_ctx;

FDL_API fdl_status fdl_num_ctx_new(const fdl_num_opts *opts, fdl_num_ctx **out, fdl_err *err);
FDL_API void fdl_num_ctx_free(fdl_num_ctx *ctx);
/* The options in force (defaults filled, isa resolved from AUTO to the kernel chosen). */
FDL_API const fdl_num_opts *fdl_num_ctx_opts(const fdl_num_ctx *ctx);
/* "scalar", "avx2", "avx512" ("auto" for FDL_NUM_ISA_AUTO). */
FDL_API const char *fdl_num_isa_name(fdl_num_isa isa);

/* Computes every row of every block. Each block is one task; threads only pick which task they
 * run, and each task writes only its own slots, so the output is bit-identical for any thread
 * count. On a non-finite input or result the run fails with FDL_NONFINITE naming the output
 * slot, the side and the vocabulary index (the failure of the lowest-numbered block is the one
 * reported); slots of other rows may have been written.
 *
 * Hidden form: for each vocabulary chunk, each hidden side's logits for the block's rows are one
 * single-threaded GEMM tile, read by the KL while in cache; the head is read as stored. */
FDL_API fdl_status fdl_num_run(fdl_num_ctx *ctx, const fdl_num_block *blocks, size_t nblocks,
                               const fdl_num_out *out, fdl_err *err);

/* ---- one logit row, no threads ------------------------------------------------------ */

typedef struct {
  double kl, js; /* js is NaN unless requested */
  int64_t ref_argmax, cand_argmax;
  double abs_err_sum, abs_err_max;
} fdl_num_row;

/* KL (and JS when opts->js) of one logit row pair, with the same kernel and bits as
 * fdl_num_run. opts->vocab gives the length; threads are ignored. */
FDL_API fdl_status fdl_num_row_logits(const fdl_num_opts *opts, const float *ref, const float *cand,
                                      fdl_num_row *res, fdl_err *err);

/* ---- statistics (COMPARISON-RECEIPT.md section 7) ----------------------------------- */

/* numpy's pairwise summation (add.reduce over a contiguous float64 array), bit for bit. */
FDL_API double fdl_num_pairwise_sum(const double *a, size_t n);
/* np.mean(a) for n >= 1 (NaN for n == 0, as numpy would warn and return). */
FDL_API double fdl_num_mean(const double *a, size_t n);
/* The one Neumaier (compensated) running sum: Python's sum() of floats since 3.12, added in
 * the order given. Start from {0}; fdl_num_neumaier_value applies the compensation. */
typedef struct {
  double sum, c;
} fdl_num_neumaier;
FDL_API void fdl_num_neumaier_add(fdl_num_neumaier *acc, double x);
FDL_API double fdl_num_neumaier_value(const fdl_num_neumaier *acc);
/* CPython 3.12 sum(list) (Neumaier compensated) divided by n; NaN for n == 0. */
FDL_API double fdl_num_neumaier_mean(const double *a, size_t n);
/* np.quantile(a, q) with method="linear", given a sorted ascending (n >= 1, 0 <= q <= 1). */
FDL_API double fdl_num_quantile_sorted(const double *sorted, size_t n, double q);

/* The receipt's `kl` block. */
typedef struct {
  double mean, median, p95, p99, p99_9, max;
} fdl_num_summary;

/* Mean, quantiles (0.5, 0.95, 0.99, 0.999) and max of a; all 0.0 for n == 0. Refuses NaN
 * (FDL_NONFINITE naming the index). Sorts a private copy. */
FDL_API fdl_status fdl_num_summarize(const double *a, size_t n, fdl_num_summary *out, fdl_err *err);

/* One context's rows, in order. */
typedef struct {
  const double *kl;
  size_t rows;
} fdl_num_context;

/* Per-context mean (np.mean of its rows) and max; both 0.0 for an empty context. */
FDL_API void fdl_num_context_stats(const fdl_num_context *c, double *mean, double *max);

/* The depth-bucket edges of the receipt: [0,256) [256,512) [512,1024) [1024,1536) [1536,2047). */
#define FDL_NUM_DEPTH_BUCKETS 5
FDL_API extern const size_t fdl_num_depth_edges[FDL_NUM_DEPTH_BUCKETS + 1];

/* For bucket k = [edges[k], edges[k+1]) of the stored row index: for each context (in order)
 * with rows in the bucket, the np.mean of those rows; the bucket value is the Neumaier mean of
 * those per-context means. present[k] is false (and value[k] 0.0) when no context has rows
 * there. nbuckets <= 64. */
FDL_API fdl_status fdl_num_bucket_means(const fdl_num_context *ctxs, size_t nctx,
                                        const size_t *edges, size_t nbuckets, double *value,
                                        bool *present, fdl_err *err);

/* Indices of the k largest values, descending, ties in ascending index order (a stable sort
 * by value descending, first k). Writes min(k, n) indices and returns that count. */
FDL_API fdl_status fdl_num_top_desc(const double *v, size_t n, size_t k, size_t *idx, size_t *count,
                                    fdl_err *err);

/* ---- context-cluster bootstrap (beyond the reference tools) -------------------------- */

#define FDL_NUM_BOOTSTRAP_DEFAULT_B 10000

/* A percentile CI95 of the token-weighted mean KL (sum of row KLs / number of rows), resampling
 * whole contexts with replacement. Inputs per context: the sum of its row KLs (use
 * fdl_num_pairwise_sum) and its row count. The PRNG is xoshiro256** seeded through splitmix64
 * from `seed`; the run is single-threaded and depends only on (sums, rows, B, seed). */
typedef struct {
  double low, high; /* np.quantile(stats, 0.025) and np.quantile(stats, 0.975), linear */
  double point;     /* the full-sample statistic: sum(sums) / sum(rows), in order */
  size_t clusters;  /* contexts */
  size_t samples;   /* B */
  uint64_t seed;
} fdl_num_ci;

/* Refuses (FDL_REFUSED) fewer than 2 contexts, zero total rows, B < 2; FDL_NONFINITE on a
 * non-finite sum. */
FDL_API fdl_status fdl_num_bootstrap_ci95(const double *ctx_sums, const size_t *ctx_rows,
                                          size_t nctx, size_t B, uint64_t seed, fdl_num_ci *out,
                                          fdl_err *err);

/* ---- replay identity ------------------------------------------------------------------ */

/* What a receipt records about the replay of hidden states: the GEMM's contract decides every
 * bit, so it is named; which of its kernels ran is not, since none can change a bit. */
typedef struct {
  const char *library;  /* "fidelis_gemm" */
  const char *contract; /* FDL_GEMM_CONTRACT */
  const char *chain;    /* the contract in one sentence */
  const char *kernels;  /* the kernels that realise it, all bit-identical */
  char cpu_model[256];  /* /proc/cpuinfo "model name" ("unknown" when unreadable) */
} fdl_num_replay_identity;

/* Fills id; never fails (what cannot be found reads "unknown"). */
FDL_API void fdl_num_replay_identity_get(fdl_num_replay_identity *id);

#ifdef __cplusplus
}
#endif
#endif
