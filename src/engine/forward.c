/* forward.c - the decoder forward pass. One code path serves prefill (all positions of the
 * context in one step) and decode (one position per step through the KV cache): a step takes
 * rows [p0, p0 + rows) and attends over keys [0, p0 + rows). Every matrix product is an
 * fdl_gemm_run; attention runs as independent (head, row block) tasks, each with its own
 * single-thread GEMM and scratch, so threads decide who computes a task and never how. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/sys.h"
#include "engine/internal.h"

void *fdl_eng_scratch(eng_scratch *s, size_t a, size_t b, size_t c, size_t size) {
  FDL_ASSERT(size > 0);
  size_t n;
  if (!fdl_size_mul(a, b, &n) || !fdl_size_mul(n, c, &n) || !fdl_size_mul(n, size, &n)) {
    s->too_large = true;
    return NULL;
  }
  s->mib += (double)n / (1024.0 * 1024.0);
  void *p = s->too_large || s->nomem ? NULL : fdl_calloc(n ? n / size : 1, size);
  s->nomem |= !p && !s->too_large;
  return p;
}

static void dense_free(eng_work *w) {
  free(w->x), free(w->xn), free(w->q), free(w->att), free(w->kc), free(w->vtmp), free(w->vt);
  free(w->g), free(w->u), free(w->cos_t), free(w->sin_t), free(w->tile), free(w->scores);
  free(w->exps);
}

void fdl_eng_work_free(eng_work *w) {
  dense_free(w);
  fdl_eng_gdn_free(&w->q35);
  fdl_eng_moe_free(&w->moe);
  memset(w, 0, sizeof *w);
}

/* The decoder's scratch for n positions (eng_work), one line per buffer; nothing kept on
 * failure. */
static fdl_status dense_alloc(eng_work *w, const fdl_model_info *in, unsigned threads, size_t n,
                              fdl_err *err) {
  size_t qd = in->heads * in->head_dim, kd = in->kv_heads * in->head_dim;
  size_t half = in->rotary_dim / 2, I = in->intermediate;
  eng_scratch s = {0};
  w->x = fdl_eng_scratch(&s, n, in->hidden, 1, sizeof *w->x);
  w->xn = fdl_eng_scratch(&s, n, in->hidden, 1, sizeof *w->xn);
  w->q = fdl_eng_scratch(&s, n, qd, 1, sizeof *w->q);
  w->att = fdl_eng_scratch(&s, n, qd, 1, sizeof *w->att);
  w->kc = fdl_eng_scratch(&s, n, kd, in->layers, sizeof *w->kc);
  w->vtmp = fdl_eng_scratch(&s, n, kd, 1, sizeof *w->vtmp);
  w->vt = fdl_eng_scratch(&s, n, kd, in->layers, sizeof *w->vt);
  w->g = fdl_eng_scratch(&s, n, I, 1, sizeof *w->g);
  w->u = fdl_eng_scratch(&s, n, I, 1, sizeof *w->u);
  w->cos_t = fdl_eng_scratch(&s, n, half, 1, sizeof *w->cos_t);
  w->sin_t = fdl_eng_scratch(&s, n, half, 1, sizeof *w->sin_t);
  w->tile = fdl_eng_scratch(&s, FDL_NUM_TILE_ROWS, FDL_NUM_VOCAB_CHUNK, 1, sizeof *w->tile);
  w->scores = fdl_eng_scratch(&s, threads, ENG_ATT_ROWS, n, sizeof *w->scores);
  double mib = s.mib; /* what was asked, for a message that says why */
  w->exps = fdl_eng_scratch(&s, threads, n, 1, sizeof *w->exps);
  if (!s.too_large && !s.nomem) return FDL_OK;
  dense_free(w);
  if (s.too_large)
    return fdl_fail(err, FDL_TOO_LARGE, "a context of %zu positions overflows sizes", n);
  return fdl_fail(err, FDL_NOMEM,
                  "out of memory: the forward pass's scratch for a context of %zu positions "
                  "is %.0f MiB (the KV cache of %zu layers included)",
                  n, mib, in->layers);
}

/* Allocates (or grows) the scratch for a context of n positions; nothing is allocated after. */
static fdl_status ensure_work(fdl_model *m, size_t n, fdl_err *err) {
  eng_work *w = &m->w;
  if (w->cap >= n) return FDL_OK;
  const fdl_model_info *in = &m->info;
  size_t qd = in->heads * in->head_dim, kd = in->kv_heads * in->head_dim;
  eng_work nw = {0};
  fdl_status s = dense_alloc(&nw, in, m->pool.threads, n, err);
  if (s) return s;
  /* The attention GEMMs' workspaces grow with k; sizing them here for the largest products a
   * context of n positions forms keeps decode free of allocations after its first step. */
  size_t mr = n < ENG_ATT_ROWS ? n : ENG_ATT_ROWS, hd = in->head_dim;
  for (unsigned t = 0; t < m->pool.threads; t++) {
    fdl_gemm_args qk = {mr,           n,         hd, nw.q, qd,   nw.kc, kd,
                        FDL_GEMM_F32, nw.scores, n,  NULL, NULL, 0,     NULL};
    fdl_gemm_args pv = {mr,           hd,     n,  nw.scores, n,    nw.vt, n,
                        FDL_GEMM_F32, nw.att, qd, NULL,      NULL, 0,     NULL};
    s = fdl_gemm_run(fdl_eng_ctx(m, t, mr), &qk, err);
    if (!s) s = fdl_gemm_run(fdl_eng_ctx(m, t, mr), &pv, err);
    if (s) {
      dense_free(&nw);
      return s;
    }
  }
  dense_free(w);
  nw.cap = n;
  nw.q35 = w->q35; /* sized on its own (fdl_eng_gdn_work) */
  nw.moe = w->moe; /* and so is this (moe.c) */
  *w = nw;
  return FDL_OK;
}

typedef struct {
  fdl_model *m;
  size_t layer, p0, rows, nblocks;
  double scale;
} att_job;

/* One (head, block of query rows): scores = Q K^T, causal softmax, then P V. */
static fdl_status att_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  const att_job *j = arg;
  fdl_model *m = j->m;
  const fdl_model_info *in = &m->info;
  eng_work *w = &m->w;
  size_t hd = in->head_dim, qd = in->heads * hd, kd = in->kv_heads * hd;
  size_t h = index / j->nblocks, b0 = (index % j->nblocks) * ENG_ATT_ROWS;
  size_t b1 = b0 + ENG_ATT_ROWS < j->rows ? b0 + ENG_ATT_ROWS : j->rows;
  size_t kvh = h / (in->heads / in->kv_heads);
  size_t nk = j->p0 + b1; /* keys the last row of the block sees */
  float *sc = w->scores + (size_t)worker * ENG_ATT_ROWS * w->cap;
  fdl_gemm_args x = {.m = b1 - b0,
                     .n = nk,
                     .k = hd,
                     .a = w->q + b0 * qd + h * hd,
                     .lda = qd,
                     .b = w->kc + j->layer * w->cap * kd + kvh * hd,
                     .ldb = kd,
                     .b_type = FDL_GEMM_F32,
                     .c = sc,
                     .ldc = nk};
  fdl_status s = fdl_gemm_run(fdl_eng_ctx(m, worker, x.m), &x, err);
  if (s) return s;
  /* a sliding layer's query sees itself and the window - 1 keys before it */
  size_t win = in->sliding && in->sliding[j->layer] ? in->sliding_window : 0;
  for (size_t r = 0; r < b1 - b0; r++) {
    size_t valid = j->p0 + b0 + r + 1, first = win && valid > win ? valid - win : 0;
    fdl_num_softmax_row(sc + r * nk, first, valid, nk, j->scale, w->exps + (size_t)worker * w->cap);
  }
  fdl_gemm_args y = {.m = b1 - b0,
                     .n = hd,
                     .k = nk,
                     .a = sc,
                     .lda = nk,
                     .b = w->vt + (j->layer * kd + kvh * hd) * w->cap,
                     .ldb = w->cap,
                     .b_type = FDL_GEMM_F32,
                     .c = w->att + b0 * qd + h * hd,
                     .ldc = qd};
  return fdl_gemm_run(fdl_eng_ctx(m, worker, y.m), &y, err);
}

typedef struct {
  float *g;
  const float *u;
  size_t n, chunk;
} silu_job;

static fdl_status silu_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  const silu_job *j = arg;
  size_t i0 = index * j->chunk, i1 = i0 + j->chunk < j->n ? i0 + j->chunk : j->n;
  fdl_num_silu_mul(j->g + i0, j->u + i0, i1 - i0);
  return FDL_OK;
}

/* Element-wise, so any cut gives the same bits; the cut only spreads the exps over workers. */
static fdl_status silu_par(fdl_model *m, float *g, const float *u, size_t n, fdl_err *err) {
  size_t parts = 4 * (size_t)m->pool.threads;
  silu_job j = {g, u, n, (n + parts - 1) / parts};
  if (j.chunk < 4096) j.chunk = 4096;
  return fdl_pool_run(&m->pool, (n + j.chunk - 1) / j.chunk, silu_task, &j, err);
}

/* Attention over rows [p0, p0 + rows): w->xn (normed input) -> w->xn (o_proj's output). A gated
 * q_proj (Qwen3.5) yields query and gate per head; the gate scales the output before o_proj. */
static fdl_status attention(fdl_model *m, size_t li, size_t p0, size_t rows, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  const eng_layer *l = &m->layer[li];
  eng_work *w = &m->w;
  size_t H = in->hidden, hd = in->head_dim, qd = in->heads * hd, kd = in->kv_heads * hd;
  float *kc = w->kc + li * w->cap * kd + p0 * kd;
  att_job job = {m, li, p0, rows, (rows + ENG_ATT_ROWS - 1) / ENG_ATT_ROWS, 1.0 / sqrt((double)hd)};
  fdl_status s;
  if ((s = in->attn_gate ? fdl_eng_gemm(m, w->xn, H, rows, &l->q, w->q35.qg, 2 * qd, err)
                         : fdl_eng_gemm(m, w->xn, H, rows, &l->q, w->q, qd, err)) ||
      (s = fdl_eng_gemm(m, w->xn, H, rows, &l->k, kc, kd, err)) ||
      (s = fdl_eng_gemm(m, w->xn, H, rows, &l->v, w->vtmp, kd, err)) ||
      (s = fdl_eng_rows(m, ENG_ROW_QKV, li, p0, rows, err)) ||
      (s = fdl_pool_run(&m->pool, in->heads * job.nblocks, att_task, &job, err)) ||
      (in->attn_gate && (s = fdl_eng_rows(m, ENG_ROW_GATE, li, p0, rows, err))))
    return s;
  return fdl_eng_gemm(m, w->att, qd, rows, &l->o, w->xn, H, err);
}

/* One layer over rows [p0, p0 + rows), whose residual stream is w->x[0 .. rows). */
static fdl_status layer_step(fdl_model *m, size_t li, size_t p0, size_t rows, bool chunked,
                             fdl_err *err) {
  const fdl_model_info *in = &m->info;
  const eng_layer *l = &m->layer[li];
  eng_work *w = &m->w;
  size_t H = in->hidden, I = in->intermediate;
  fdl_status s;
  if ((s = fdl_eng_rows(m, ENG_ROW_NORM_IN, li, p0, rows, err)) ||
      (s = in->linear && in->linear[li] ? fdl_eng_gdn_layer(m, li, p0, rows, chunked, err)
                                        : attention(m, li, p0, rows, err)) ||
      (s = fdl_eng_rows(m, ENG_ROW_ATTN_OUT, li, p0, rows, err)))
    return s;
  if (in->moe && in->moe[li])
    s = fdl_eng_moe(m, li, rows, err);
  else if (!(s = fdl_eng_gemm(m, w->xn, H, rows, &l->gate, w->g, I, err)) &&
           !(s = fdl_eng_gemm(m, w->xn, H, rows, &l->up, w->u, I, err)) &&
           !(s = silu_par(m, w->g, w->u, rows * I, err)))
    s = fdl_eng_gemm(m, w->g, I, rows, &l->down, w->xn, H, err);
  if (s || (s = fdl_eng_rows(m, ENG_ROW_MLP_OUT, li, p0, rows, err))) return s;
  return FDL_OK;
}

/* Embeds, runs every layer and the final norm over rows [p0, p0 + rows), then writes the
 * requested outputs of those rows; row `last` of the step (if < rows) is the context's last
 * position, whose boundary rows go to out->layers. */
static fdl_status step(fdl_model *m, const int32_t *ids, size_t p0, size_t rows, size_t last,
                       bool chunked, const fdl_engine_out *out, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  eng_work *w = &m->w;
  size_t H = in->hidden;
  float *bound = out->layers && last < rows ? out->layers : NULL;
  for (size_t r = 0; r < rows; r++) fdl_eng_mat_row(&m->embed, (size_t)ids[p0 + r], w->x + r * H);
  if (bound) memcpy(bound, w->x + last * H, H * sizeof *bound);
  fdl_status s;
  for (size_t li = 0; li < in->layers; li++) {
    if ((s = layer_step(m, li, p0, rows, chunked, err)))
      return fdl_err_prefix(err, "layer %zu", li);
    char what[48];
    snprintf(what, sizeof what, "the output of layer %zu", li);
    if ((s = fdl_eng_check_finite(w->x, rows, H, p0, 0, what, "element", err))) return s;
    if (bound) memcpy(bound + (li + 1) * H, w->x + last * H, H * sizeof *bound);
  }
  if ((s = fdl_eng_rows(m, ENG_ROW_FINAL, 0, p0, rows, err)) ||
      (s = fdl_eng_check_finite(w->xn, rows, H, p0, 0, "the final norm's output", "element", err)))
    return s;
  if (bound) memcpy(bound + (in->layers + 1) * H, w->xn + last * H, H * sizeof *bound);
  if (out->hidden) memcpy(out->hidden + p0 * H, w->xn, rows * H * sizeof(float));
  if (out->logits && ((s = fdl_eng_gemm(m, w->xn, H, rows, &m->head, out->logits + p0 * in->vocab,
                                        in->vocab, err)) ||
                      (s = fdl_eng_check_finite(out->logits + p0 * in->vocab, rows, in->vocab, p0,
                                                0, "a logit", "token id", err))))
    return s;
  if (out->greedy && (s = fdl_eng_greedy(m, p0, rows, out->greedy + p0, err))) return s;
  return FDL_OK;
}

fdl_status fdl_eng_check_ids(const fdl_model *m, const int32_t *ids, size_t n, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  if (n == 0) return fdl_fail(err, FDL_INVALID, "engine run: empty context (n = 0)");
  if (n > in->max_positions || n > ((size_t)1 << 20))
    return fdl_fail(err, FDL_INVALID,
                    "engine run: %zu positions exceed max_position_embeddings %zu", n,
                    in->max_positions);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (size_t)ids[i] >= in->vocab)
      return fdl_fail(err, FDL_INVALID, "engine run: token id %d at position %zu outside [0, %zu)",
                      (int)ids[i], i, in->vocab);
  return FDL_OK;
}

fdl_status fdl_eng_begin(fdl_model *m, size_t n, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  fdl_status s = ensure_work(m, n, err);
  if (!s && in->linear) s = fdl_eng_gdn_work(m, n, err);
  if (s) return s;
  eng_work *w = &m->w;
  size_t half = in->rotary_dim / 2;
  const double af = in->rope.attention_factor; /* 1 (exact) but for yarn */
  fdl_eng_rope_freqs(in, n, m->inv_freq);
  for (size_t p = 0; p < n; p++)
    for (size_t i = 0; i < half; i++) {
      double sn, cs;
      fdl_eng_sincos((double)p * m->inv_freq[i], &sn, &cs);
      w->cos_t[p * half + i] = (float)(cs * af);
      w->sin_t[p * half + i] = (float)(sn * af);
    }
  return FDL_OK;
}

fdl_status fdl_eng_span(fdl_model *m, const int32_t *ids, size_t p0, size_t n, fdl_engine_path path,
                        const fdl_engine_out *out, fdl_err *err) {
  /* On Qwen3.5 the path also picks the DeltaNet form: prefill chunked, decode recurrent. */
  if (path == FDL_ENGINE_PREFILL) return step(m, ids, p0, n - p0, n - 1 - p0, true, out, err);
  for (size_t t = p0; t < n; t++) {
    fdl_status s = step(m, ids, t, 1, t + 1 == n ? 0 : 1, false, out, err);
    if (s) return fdl_err_prefix(err, "decode position %zu", t);
  }
  return FDL_OK;
}

fdl_status fdl_engine_run(fdl_model *m, const int32_t *ids, size_t n, fdl_engine_path path,
                          const fdl_engine_out *out, fdl_err *err) {
  fdl_status s = fdl_eng_check_ids(m, ids, n, err);
  if (s) return s;
  if (path != FDL_ENGINE_PREFILL && path != FDL_ENGINE_DECODE)
    return fdl_fail(err, FDL_INVALID, "engine run: unknown path %d", (int)path);
  if ((s = fdl_eng_begin(m, n, err))) return s;
  return fdl_eng_span(m, ids, 0, n, path, out, err);
}
