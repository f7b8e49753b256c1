/* driver.c - the deterministic parallel driver: one task per row block, results written to
 * slots fixed before the run starts, per-worker scratch bounded by the tile size.
 *
 * A task streams its block chunk by chunk: for each vocabulary chunk it produces the logit
 * tile of every hidden side (one GEMM tile each), then feeds each row's chunk to the fused KL
 * state while the tile is hot. Logit sides are read in place. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "fidelis/pool.h"
#include "num/kl.h"
#include "num/replay.h"
#include "base/sys.h"

typedef struct {
  kl_state *states;  /* [FDL_NUM_TILE_ROWS] */
  fdl_num_row *rows; /* [FDL_NUM_TILE_ROWS] */
  float *tile[2];    /* [FDL_NUM_TILE_ROWS x nc] per side, allocated on first hidden run */
  float *packed[2];  /* the block's hidden rows, packed for the GEMM once per block */
  size_t packed_cap[2];
  float *acc;     /* GEMM accumulators, shared by the sides (their tiles are made in turn) */
  size_t acc_cap; /* floats */
} scratch;

struct fdl_num_ctx {
  fdl_num_opts o;
  const kl_kernels *k;
  const gemm_kernel *gk;
  fdl_pool pool;
  scratch *ws; /* [pool.threads] */
  size_t nc;   /* tile width: min(FDL_NUM_VOCAB_CHUNK, vocab) */
};

typedef struct {
  fdl_num_ctx *ctx;
  const fdl_num_block *blocks;
  const size_t *first; /* first output slot of each block */
  const fdl_num_out *out;
} run_args;

void fdl_num_opts_default(fdl_num_opts *o) {
  memset(o, 0, sizeof *o);
}

static fdl_status check_opts(const fdl_num_opts *o, fdl_err *err) {
  if (o->vocab < 1) return fdl_fail(err, FDL_INVALID, "vocabulary size must be at least 1");
  if (o->vocab > (size_t)INT64_MAX)
    return fdl_fail(err, FDL_INVALID, "vocabulary size %zu is too large", o->vocab);
  return FDL_OK;
}

static void *alloc_aligned(size_t n) {
  size_t sz = (n + 63) / 64 * 64;
  return fdl_aligned_alloc(64, sz ? sz : 64);
}

fdl_status fdl_num_ctx_new(const fdl_num_opts *opts, fdl_num_ctx **out, fdl_err *err) {
  fdl_status s = check_opts(opts, err);
  if (s != FDL_OK) return s;
  const kl_kernels *k;
  if ((s = fdl_kl_kernels_pick(opts->isa, &k, err)) != FDL_OK) return s;
  const gemm_kernel *gk;
  if ((s = fdl_gemm_kernel_pick(opts->isa, &gk, err)) != FDL_OK) return s;
  unsigned threads = opts->threads;
  fdl_num_ctx *c = fdl_calloc(1, sizeof *c);
  if (!c) return fdl_fail(err, FDL_NOMEM, "out of memory for the KL context");
  c->o = *opts;
  c->o.isa = k->isa;
  c->k = k;
  c->gk = gk;
  c->nc = FDL_NUM_VOCAB_CHUNK < opts->vocab ? FDL_NUM_VOCAB_CHUNK : opts->vocab;
  if ((s = fdl_pool_init(&c->pool, opts->threads, err)) != FDL_OK) {
    free(c);
    return s;
  }
  c->o.threads = c->pool.threads;
  size_t pb = FDL_NUM_TILE_ROWS;
  if (!(c->ws = fdl_calloc(c->pool.threads, sizeof *c->ws))) goto nomem;
  for (unsigned w = 0; w < c->pool.threads; w++) {
    c->ws[w].states = alloc_aligned(pb * sizeof(kl_state));
    c->ws[w].rows = fdl_calloc(pb, sizeof(fdl_num_row));
    if (!c->ws[w].states || !c->ws[w].rows) goto nomem;
  }
  *out = c;
  return FDL_OK;
nomem:
  threads = c->o.threads;
  fdl_num_ctx_free(c);
  return fdl_fail(err, FDL_NOMEM, "out of memory for %u worker scratch areas", threads);
}

void fdl_num_ctx_free(fdl_num_ctx *c) {
  if (!c) return;
  fdl_pool_free(&c->pool);
  if (c->ws) {
    for (size_t w = 0; w < c->o.threads; w++) {
      free(c->ws[w].states);
      free(c->ws[w].rows);
      for (int i = 0; i < 2; i++) free(c->ws[w].tile[i]), free(c->ws[w].packed[i]);
      free(c->ws[w].acc);
    }
    free(c->ws);
  }
  free(c);
}

const fdl_num_opts *fdl_num_ctx_opts(const fdl_num_ctx *c) {
  return &c->o;
}

static fdl_status check_side(const fdl_num_opts *o, const fdl_num_side *sd, size_t b,
                             const char *who, fdl_err *err) {
  if (!sd->data) return fdl_fail(err, FDL_INVALID, "block %zu: %s data is NULL", b, who);
  if (sd->form == FDL_NUM_LOGITS) {
    if (sd->ld < o->vocab)
      return fdl_fail(err, FDL_INVALID, "block %zu: %s row stride %zu is below the vocabulary %zu",
                      b, who, sd->ld, o->vocab);
    return FDL_OK;
  }
  if (sd->form != FDL_NUM_HIDDEN)
    return fdl_fail(err, FDL_INVALID, "block %zu: %s form %d is unknown", b, who, (int)sd->form);
  if (!sd->head) return fdl_fail(err, FDL_INVALID, "block %zu: %s hidden rows need a head", b, who);
  if ((unsigned)sd->head_type > FDL_GEMM_F16)
    return fdl_fail(err, FDL_INVALID, "block %zu: %s head element type %d is unknown", b, who,
                    (int)sd->head_type);
  if (sd->hidden < 1 || sd->hidden > (size_t)INT_MAX)
    return fdl_fail(err, FDL_INVALID, "block %zu: %s hidden width %zu is outside 1..%d", b, who,
                    sd->hidden, INT_MAX);
  if (sd->ld < sd->hidden)
    return fdl_fail(err, FDL_INVALID, "block %zu: %s row stride %zu is below the hidden width %zu",
                    b, who, sd->ld, sd->hidden);
  return FDL_OK;
}

/* Allocates every worker's tile for side i and grows its GEMM workspace for rows of width
 * hidden. Runs before the workers start. */
static fdl_status ensure_scratch(fdl_num_ctx *c, int i, size_t hidden, fdl_err *err) {
  size_t pb = FDL_NUM_TILE_ROWS;
  size_t bytes;
  if (!fdl_size_mul(hidden, sizeof(float) * pb * 2, &bytes))
    return fdl_fail(err, FDL_TOO_LARGE, "hidden width %zu is too large", hidden);
  size_t packed = fdl_replay_packed_floats(c->gk, hidden);
  size_t acc = fdl_replay_acc_floats(c->gk, hidden);
  for (unsigned w = 0; w < c->o.threads; w++) {
    scratch *ws = &c->ws[w];
    if (!ws->tile[i] && !(ws->tile[i] = alloc_aligned(pb * c->nc * sizeof(float))))
      return fdl_fail(err, FDL_NOMEM, "out of memory for a %zu x %zu logit tile", pb, c->nc);
    if (!fdl_num_grow_floats(&ws->packed[i], &ws->packed_cap[i], packed) ||
        !fdl_num_grow_floats(&ws->acc, &ws->acc_cap, acc))
      return fdl_fail(err, FDL_NOMEM, "out of memory for the replay of %zu-wide hidden rows",
                      hidden);
  }
  return FDL_OK;
}

/* Row r's floats for the chunk starting at c0 (a hidden side reads the current tile). */
static const float *row_at(const fdl_num_side *sd, const float *tile, size_t nc, size_t r,
                           size_t c0) {
  if (sd->form == FDL_NUM_HIDDEN) return tile + r * nc;
  return sd->data + r * sd->ld + c0;
}

static size_t chunk_len(const fdl_num_opts *o, size_t c0) {
  return o->vocab - c0 < FDL_NUM_VOCAB_CHUNK ? o->vocab - c0 : FDL_NUM_VOCAB_CHUNK;
}

/* One row's chunk: the fused KL pass (sweep 0) or the JS pass (sweep 1). */
static fdl_status visit(fdl_num_ctx *c, kl_scan *ahead, kl_state *st, const float *t,
                        const float *s, size_t n, size_t c0, const kl_next *next, const kl_where *w,
                        int js, fdl_err *err) {
  if (js) {
    c->k->js(st, t, s, n);
    return FDL_OK;
  }
  /* The target's logits are read here, from the very floats (as loaded or as replayed) that
   * the KL reads: one compare per row and chunk, no second pass. */
  if (st->tgt >= 0 && (uint64_t)st->tgt - c0 < n) {
    st->tgt_t = t[st->tgt - (int64_t)c0];
    st->tgt_s = s[st->tgt - (int64_t)c0];
  }
  return fdl_kl_chunk(c->k, st, t, s, n, c0, next, ahead, w, err);
}

/* Logits on both sides: each row streams through its chunks in order, prefetching the next
 * chunk (or the next row's first) while the current one computes. */
static fdl_status sweep_rows(fdl_num_ctx *c, const fdl_num_block *blk, scratch *ws, size_t first,
                             int js, fdl_err *err) {
  const fdl_num_opts *o = &c->o;
  kl_scan ahead = {0}; /* the next chunk's scan, from one chunk to the next */
  for (size_t r = 0; r < blk->rows; r++) {
    kl_where w = {first + r, 0, 0};
    for (size_t c0 = 0; c0 < o->vocab; c0 += FDL_NUM_VOCAB_CHUNK) {
      size_t n = chunk_len(o, c0);
      kl_next nx = {NULL, NULL, 0};
      size_t nr = r, nc0 = c0 + FDL_NUM_VOCAB_CHUNK;
      if (nc0 >= o->vocab) nr++, nc0 = 0;
      if (nr < blk->rows) {
        nx.t = blk->ref.data + nr * blk->ref.ld + nc0;
        nx.s = blk->cand.data + nr * blk->cand.ld + nc0;
        nx.n = chunk_len(o, nc0);
      }
      const float *t = blk->ref.data + r * blk->ref.ld + c0;
      const float *s = blk->cand.data + r * blk->cand.ld + c0;
      fdl_status st = visit(c, &ahead, &ws->states[r], t, s, n, c0, &nx, &w, js, err);
      if (st != FDL_OK) return st;
    }
  }
  return FDL_OK;
}

/* A hidden side: chunk by chunk, one GEMM tile per hidden side, then every row's slice of it
 * while the tile is in cache. */
static fdl_status sweep_tiles(fdl_num_ctx *c, const fdl_num_block *blk, scratch *ws, size_t first,
                              int js, fdl_err *err) {
  const fdl_num_opts *o = &c->o;
  const fdl_num_side *sides[2] = {&blk->ref, &blk->cand};
  kl_where w = {0, blk->ref.form == FDL_NUM_HIDDEN, blk->cand.form == FDL_NUM_HIDDEN};
  kl_scan ahead = {0}; /* the next row's scan, within one tile (the last row scans none) */
  for (size_t c0 = 0; c0 < o->vocab; c0 += FDL_NUM_VOCAB_CHUNK) {
    size_t n = chunk_len(o, c0);
    for (int i = 0; i < 2; i++)
      if (sides[i]->form == FDL_NUM_HIDDEN)
        fdl_replay_tile(c->gk, sides[i], blk->rows, c0, n, ws->packed[i], ws->acc, ws->tile[i],
                        c->nc);
    for (size_t r = 0; r < blk->rows; r++) {
      kl_next nx = {NULL, NULL, 0};
      if (r + 1 < blk->rows) {
        nx.t = row_at(sides[0], ws->tile[0], c->nc, r + 1, c0);
        nx.s = row_at(sides[1], ws->tile[1], c->nc, r + 1, c0);
        nx.n = n;
      }
      const float *t = row_at(sides[0], ws->tile[0], c->nc, r, c0);
      const float *s = row_at(sides[1], ws->tile[1], c->nc, r, c0);
      w.slot = first + r;
      fdl_status st = visit(c, &ahead, &ws->states[r], t, s, n, c0, &nx, &w, js, err);
      if (st != FDL_OK) return st;
    }
  }
  return FDL_OK;
}

/* The loop order differs between the two sweeps but each row still sees its chunks in order,
 * so the results are the same bits either way. */
static fdl_status sweep(fdl_num_ctx *c, const fdl_num_block *blk, scratch *ws, size_t first, int js,
                        fdl_err *err) {
  if (blk->ref.form == FDL_NUM_LOGITS && blk->cand.form == FDL_NUM_LOGITS)
    return sweep_rows(c, blk, ws, first, js, err);
  return sweep_tiles(c, blk, ws, first, js, err);
}

static fdl_status run_block(void *varg, size_t b, unsigned worker, fdl_err *err) {
  run_args *ra = varg;
  fdl_num_ctx *c = ra->ctx;
  const fdl_num_block *blk = &ra->blocks[b];
  scratch *ws = &c->ws[worker];
  size_t first = ra->first[b];
  const fdl_num_side *sides[2] = {&blk->ref, &blk->cand};
  static const char *const who[2] = {"reference", "candidate"};
  fdl_status s;
  for (int i = 0; i < 2; i++) {
    if (sides[i]->form != FDL_NUM_HIDDEN) continue;
    s = fdl_replay_check(sides[i], blk->rows, first, who[i], err);
    if (s != FDL_OK) return s;
    fdl_replay_pack(c->gk, sides[i], blk->rows, ws->packed[i]);
  }
  for (size_t r = 0; r < blk->rows; r++) {
    fdl_kl_state_init(&ws->states[r]);
    if (blk->target) ws->states[r].tgt = blk->target[r];
  }
  if ((s = sweep(c, blk, ws, first, 0, err)) != FDL_OK) return s;
  for (size_t r = 0; r < blk->rows; r++) {
    kl_where w = {first + r, 0, 0};
    if ((s = fdl_kl_finish(&ws->states[r], &ws->rows[r], &w, err)) != FDL_OK) return s;
  }
  if (c->o.js) {
    if ((s = sweep(c, blk, ws, first, 1, err)) != FDL_OK) return s;
    for (size_t r = 0; r < blk->rows; r++) {
      double js = fdl_kl_js_finish(&ws->states[r]);
      if (!isfinite(js))
        return fdl_fail(err, FDL_NONFINITE, "JS divergence of output row %zu is not finite",
                        first + r);
      ws->rows[r].js = js;
    }
  }
  const fdl_num_out *o = ra->out;
  for (size_t r = 0; r < blk->rows; r++) {
    const fdl_num_row *x = &ws->rows[r];
    size_t k = first + r;
    o->kl[k] = x->kl;
    if (o->top1) o->top1[k] = x->ref_argmax == x->cand_argmax;
    if (o->ref_argmax) o->ref_argmax[k] = x->ref_argmax;
    if (o->cand_argmax) o->cand_argmax[k] = x->cand_argmax;
    if (o->abs_err_sum) o->abs_err_sum[k] = x->abs_err_sum;
    if (o->abs_err_max) o->abs_err_max[k] = x->abs_err_max;
    if (o->js) o->js[k] = x->js;
    /* log p = (x - m) - log S with the m and S of the KL (fdl_kl_finish set log S). A logit
     * equal to the maximum gives -log S exactly, on both sides alike. */
    const kl_state *st = &ws->states[r];
    if (o->ref_logprob) o->ref_logprob[k] = ((double)st->tgt_t - st->mt) - st->log_st;
    if (o->cand_logprob) o->cand_logprob[k] = ((double)st->tgt_s - st->ms) - st->log_ss;
  }
  return FDL_OK;
}

fdl_status fdl_num_run(fdl_num_ctx *c, const fdl_num_block *blocks, size_t nblocks,
                       const fdl_num_out *out, fdl_err *err) {
  if (!c || !out || !out->kl || (nblocks && !blocks))
    return fdl_fail(err, FDL_INVALID, "fdl_num_run: context, blocks and out->kl are required");
  if (c->o.js && !out->js)
    return fdl_fail(err, FDL_INVALID, "fdl_num_run: JS was requested but out->js is NULL");
  if (nblocks == 0) return FDL_OK;
  bool want_lp = out->ref_logprob || out->cand_logprob;
  for (size_t b = 0; want_lp && b < nblocks; b++) {
    if (!blocks[b].target)
      return fdl_fail(err, FDL_INVALID,
                      "fdl_num_run: block %zu has no targets but log-probabilities were asked for",
                      b);
    for (size_t r = 0; r < blocks[b].rows && r < FDL_NUM_TILE_ROWS; r++)
      if (blocks[b].target[r] < 0 || (uint64_t)blocks[b].target[r] >= c->o.vocab)
        return fdl_fail(err, FDL_INVALID,
                        "fdl_num_run: block %zu row %zu: target %lld is outside the vocabulary "
                        "0..%zu",
                        b, r, (long long)blocks[b].target[r], c->o.vocab - 1);
  }
  size_t *first = fdl_malloc(nblocks * sizeof *first);
  if (!first) return fdl_fail(err, FDL_NOMEM, "out of memory for %zu block offsets", nblocks);
  size_t total = 0, hidden[2] = {0, 0};
  fdl_status s = FDL_OK;
  for (size_t b = 0; b < nblocks && s == FDL_OK; b++) {
    const fdl_num_block *blk = &blocks[b];
    if (blk->rows < 1 || blk->rows > FDL_NUM_TILE_ROWS) {
      s = fdl_fail(err, FDL_INVALID, "block %zu has %zu rows; a block holds 1..%d", b, blk->rows,
                   FDL_NUM_TILE_ROWS);
      break;
    }
    if ((s = check_side(&c->o, &blk->ref, b, "reference", err)) != FDL_OK) break;
    if ((s = check_side(&c->o, &blk->cand, b, "candidate", err)) != FDL_OK) break;
    const fdl_num_side *sd[2] = {&blk->ref, &blk->cand};
    for (int i = 0; i < 2; i++)
      if (sd[i]->form == FDL_NUM_HIDDEN && sd[i]->hidden > hidden[i]) hidden[i] = sd[i]->hidden;
    first[b] = total;
    total += blk->rows; /* cannot overflow: rows <= 64 and nblocks < SIZE_MAX / 4096 */
  }
  for (int i = 0; i < 2 && s == FDL_OK; i++)
    if (hidden[i]) s = ensure_scratch(c, i, hidden[i], err);
  if (s == FDL_OK) {
    run_args ra = {c, blocks, first, out};
    s = fdl_pool_run(&c->pool, nblocks, run_block, &ra, err);
  }
  free(first);
  return s;
}

fdl_status fdl_num_row_logits(const fdl_num_opts *opts, const float *ref, const float *cand,
                              fdl_num_row *res, fdl_err *err) {
  fdl_status s = check_opts(opts, err);
  if (s != FDL_OK) return s;
  if (!ref || !cand || !res)
    return fdl_fail(err, FDL_INVALID, "fdl_num_row_logits: rows and result are required");
  const kl_kernels *k;
  if ((s = fdl_kl_kernels_pick(opts->isa, &k, err)) != FDL_OK) return s;
  kl_state *st = alloc_aligned(sizeof *st);
  if (!st) return fdl_fail(err, FDL_NOMEM, "out of memory for a row state");
  fdl_kl_state_init(st);
  kl_where w = {0, 0, 0};
  fdl_num_row r = {0};
  kl_scan ahead = {0};
  size_t vc = FDL_NUM_VOCAB_CHUNK;
  for (size_t c0 = 0; c0 < opts->vocab && s == FDL_OK; c0 += vc) {
    kl_next nx = {NULL, NULL, 0};
    if (c0 + vc < opts->vocab)
      nx = (kl_next){ref + c0 + vc, cand + c0 + vc, chunk_len(opts, c0 + vc)};
    s = fdl_kl_chunk(k, st, ref + c0, cand + c0, chunk_len(opts, c0), c0, &nx, &ahead, &w, err);
  }
  if (s == FDL_OK) s = fdl_kl_finish(st, &r, &w, err);
  r.js = NAN;
  if (s == FDL_OK && opts->js) {
    for (size_t c0 = 0; c0 < opts->vocab; c0 += vc)
      k->js(st, ref + c0, cand + c0, chunk_len(opts, c0));
    r.js = fdl_kl_js_finish(st);
    if (!isfinite(r.js)) s = fdl_fail(err, FDL_NONFINITE, "JS divergence is not finite");
  }
  free(st);
  if (s == FDL_OK) *res = r;
  return s;
}
