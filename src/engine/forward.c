/* forward.c - the decoder forward pass. One code path serves prefill (all positions of the
 * context in one step) and decode (one position per step through the KV cache): a step takes
 * rows [p0, p0 + rows) and attends over keys [0, p0 + rows). Every matrix product is an
 * fdl_gemm_run; attention runs as independent (head, row block) tasks, each with its own
 * single-thread GEMM and scratch, so threads decide who computes a task and never how. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

static bool mul_ok(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

/* Allocates (or grows) the scratch for a context of n positions; nothing is allocated after. */
static fdl_status ensure_work(fdl_model *m, size_t n, fdl_err *err) {
  eng_work *w = &m->w;
  if (w->cap >= n) return FDL_OK;
  const fdl_model_info *in = &m->info;
  size_t qd = in->heads * in->head_dim, kd = in->kv_heads * in->head_dim;
  size_t sz[13];
  bool ok = mul_ok(n, in->hidden, &sz[0]) && mul_ok(n, qd, &sz[2]) && mul_ok(n, kd, &sz[5]) &&
            mul_ok(sz[5], in->layers, &sz[4]) && mul_ok(n, in->intermediate, &sz[7]) &&
            mul_ok(n, in->rotary_dim / 2, &sz[9]) &&
            mul_ok((size_t)m->pool.threads * ENG_ATT_ROWS, n, &sz[12]);
  if (!ok) return fdl_fail(err, FDL_TOO_LARGE, "a context of %zu positions overflows sizes", n);
  sz[1] = sz[0];
  sz[3] = sz[2];
  sz[6] = sz[4];
  sz[8] = sz[7];
  sz[10] = sz[9];
  sz[11] = (size_t)FDL_NUM_TILE_ROWS * FDL_NUM_VOCAB_CHUNK;
  eng_work nw = {0};
  if (!(nw.exps = calloc(sz[12] / ENG_ATT_ROWS, sizeof(double))))
    return fdl_fail(err, FDL_NOMEM, "out of memory for a context of %zu positions", n);
  float **dst[13] = {&nw.x, &nw.xn, &nw.q,     &nw.att,   &nw.kc,   &nw.vtmp,  &nw.vt,
                     &nw.g, &nw.u,  &nw.cos_t, &nw.sin_t, &nw.tile, &nw.scores};
  double mib = 0; /* what was asked, for a message that says why */
  for (int i = 0; i < 13; i++) mib += (double)sz[i] * sizeof(float) / (1024.0 * 1024.0);
  for (int i = 0; i < 13; i++) {
    if (sz[i] > SIZE_MAX / sizeof(float) || !(*dst[i] = calloc(sz[i] ? sz[i] : 1, sizeof(float)))) {
      for (int j = 0; j <= i; j++) free(*dst[j]);
      free(nw.exps);
      return fdl_fail(err, FDL_NOMEM,
                      "out of memory: the forward pass's scratch for a context of %zu positions "
                      "is %.0f MiB (the KV cache of %zu layers included)",
                      n, mib, in->layers);
    }
  }
  /* The attention GEMMs' workspaces grow with k; sizing them here for the largest products a
   * context of n positions forms keeps decode free of allocations after its first step. */
  size_t mr = n < ENG_ATT_ROWS ? n : ENG_ATT_ROWS, hd = in->head_dim;
  for (unsigned t = 0; t < m->pool.threads; t++) {
    fdl_gemm_args qk = {mr,           n,         hd, nw.q, qd,   nw.kc, kd,
                        FDL_GEMM_F32, nw.scores, n,  NULL, NULL, 0,     NULL};
    fdl_gemm_args pv = {mr,           hd,     n,  nw.scores, n,    nw.vt, n,
                        FDL_GEMM_F32, nw.att, qd, NULL,      NULL, 0,     NULL};
    fdl_status s = fdl_gemm_run(fdl_eng_ctx(m, t, mr), &qk, err);
    if (!s) s = fdl_gemm_run(fdl_eng_ctx(m, t, mr), &pv, err);
    if (s) {
      for (int i = 0; i < 13; i++) free(*dst[i]);
      free(nw.exps);
      return s;
    }
  }
  float *old[13] = {w->x, w->xn, w->q,     w->att,   w->kc,   w->vtmp,  w->vt,
                    w->g, w->u,  w->cos_t, w->sin_t, w->tile, w->scores};
  for (int i = 0; i < 13; i++) free(old[i]);
  free(w->exps);
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
    fdl_eng_softmax_row(sc + r * nk, first, valid, nk, j->scale, w->exps + (size_t)worker * w->cap);
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
  fdl_eng_silu_mul(j->g + i0, j->u + i0, i1 - i0);
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
