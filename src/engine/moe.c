/* moe.c - the mixture-of-experts MLP of Qwen3MoeForCausalLM (docs/MOE.md), as transformers'
 * Qwen3MoeSparseMoeBlock defines it:
 *   router logits l = x W_router^T; p = softmax(l); the experts_per_tok largest p (ties to the
 *   lowest expert index); with norm_topk_prob, their weights divided by their sum;
 *   out = sum over the chosen experts e of weight_e * down_e(silu(gate_e x) * up_e x).
 *
 * Arithmetic contract: the router and every expert's products are fdl_gemm_run products (each
 * element one chain, whatever the rows beside it), so an expert computes a position's output
 * with the same bits whether it serves one position (decode) or many (prefill). The softmax runs
 * in float64 with fidelis' own exp (the maximum over the float32 logits; the sum in expert
 * order), the renormalising sum adds the chosen experts' probabilities in ascending expert order,
 * and each weight is rounded to float32 once. The output of a position accumulates in float32,
 * from +0.0, over its chosen experts in ascending expert index: out += weight * y, a multiply and
 * an add, each rounded (as transformers' index_add over experts in order). Experts run one after
 * another, each on the pool: no thread count or ISA moves a bit. */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

fdl_status fdl_eng_moe_config(const json_t *cfg, const char *path, fdl_model_info *info,
                              fdl_err *err) {
  fdl_status s;
  size_t step = 1;
  if ((s = fdl_eng_cfg_size(cfg, path, "num_experts", true, 0, &info->experts, err)) ||
      (s = fdl_eng_cfg_size(cfg, path, "num_experts_per_tok", true, 0, &info->experts_per_tok,
                            err)) ||
      (s = fdl_eng_cfg_size(cfg, path, "moe_intermediate_size", true, 0, &info->moe_intermediate,
                            err)) ||
      (s = fdl_eng_cfg_size(cfg, path, "decoder_sparse_step", false, 1, &step, err)) ||
      (s = fdl_eng_cfg_bool(cfg, path, "norm_topk_prob", false, &info->norm_topk_prob, err)))
    return s;
  if (info->experts_per_tok > info->experts || info->experts > 4096 ||
      info->moe_intermediate > ((size_t)1 << 22))
    return fdl_fail(err, FDL_PARSE,
                    "%s: num_experts_per_tok %zu must be at most num_experts %zu (at most 4096, "
                    "moe_intermediate_size at most 2^22)",
                    path, info->experts_per_tok, info->experts);
  if (fdl_eng_cfg_set(json_object_get(cfg, "shared_expert_intermediate_size")))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: shared_expert_intermediate_size is set: shared experts are not run", path);
  unsigned char *moe = calloc(info->layers ? info->layers : 1, 1);
  if (!moe) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; i < info->layers; i++) moe[i] = (i + 1) % step == 0;
  const json_t *only = json_object_get(cfg, "mlp_only_layers");
  if (only && !json_is_null(only) && !json_is_array(only)) {
    free(moe);
    return fdl_fail(err, FDL_PARSE, "%s: mlp_only_layers must be an array of layer indices", path);
  }
  for (size_t k = 0; json_is_array(only) && k < json_array_size(only); k++) {
    const json_t *v = json_array_get(only, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (size_t)json_integer_value(v) >= info->layers) {
      free(moe);
      return fdl_fail(err, FDL_PARSE, "%s: mlp_only_layers[%zu] is not a layer index below %zu",
                      path, k, info->layers);
    }
    moe[json_integer_value(v)] = 0; /* a dense MLP of intermediate_size */
  }
  info->moe = moe;
  return FDL_OK;
}

void fdl_eng_moe_free(eng_moe_work *w) {
  void *bufs[] = {w->logits, w->sel, w->weight, w->start, w->rows, w->row_wt,
                  w->x,      w->y,   w->g,      w->u,     w->out};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
  memset(w, 0, sizeof *w);
}

static fdl_status ensure(fdl_model *m, size_t n, fdl_err *err) {
  eng_moe_work *w = &m->w.moe;
  if (w->cap >= n) return FDL_OK;
  const fdl_model_info *in = &m->info;
  fdl_eng_moe_free(w);
  size_t E = in->experts, K = in->experts_per_tok, H = in->hidden, I = in->moe_intermediate;
  w->logits = malloc(n * E * sizeof *w->logits);
  w->sel = malloc(n * K * sizeof *w->sel);
  w->weight = malloc(n * K * sizeof *w->weight);
  w->start = malloc((E + 1) * sizeof *w->start);
  w->rows = malloc(n * K * sizeof *w->rows);
  w->row_wt = malloc(n * K * sizeof *w->row_wt);
  w->x = malloc(n * H * sizeof *w->x);
  w->y = malloc(n * H * sizeof *w->y);
  w->g = malloc(n * I * sizeof *w->g);
  w->u = malloc(n * I * sizeof *w->u);
  w->out = malloc(n * H * sizeof *w->out);
  if (!w->logits || !w->sel || !w->weight || !w->start || !w->rows || !w->row_wt || !w->x ||
      !w->y || !w->g || !w->u || !w->out) {
    fdl_eng_moe_free(w);
    return fdl_fail(err, FDL_NOMEM, "out of memory for the experts' scratch (%zu positions)", n);
  }
  w->cap = n;
  return FDL_OK;
}

/* Position r's chosen experts (ascending) and weights, from its router logits. */
static void route(const fdl_model_info *in, const float *l, size_t *sel, float *weight) {
  const size_t E = in->experts, K = in->experts_per_tok;
  float mx = l[0];
  for (size_t e = 1; e < E; e++) mx = l[e] > mx ? l[e] : mx;
  double sum = 0.0, chosen = 0.0;
  for (size_t e = 0; e < E; e++) sum += fdl_eng_exp_neg((double)l[e] - (double)mx);
  /* the K largest logits, the lowest index first among equals: a strict > never displaces an
   * earlier expert (softmax is monotonic, so these are the K largest probabilities) */
  unsigned char taken[4096] = {0};
  for (size_t k = 0; k < K; k++) {
    size_t best = E;
    for (size_t e = 0; e < E; e++)
      if (!taken[e] && (best == E || l[e] > l[best])) best = e;
    taken[best] = 1;
  }
  size_t k = 0;
  double p[4096];
  for (size_t e = 0; e < E && k < K; e++)
    if (taken[e]) {
      sel[k] = e;
      p[k] = fdl_eng_exp_neg((double)l[e] - (double)mx) / sum;
      chosen += p[k];
      k++;
    }
  for (k = 0; k < K; k++) weight[k] = (float)(in->norm_topk_prob ? p[k] / chosen : p[k]);
}

fdl_status fdl_eng_moe(fdl_model *m, size_t li, size_t rows, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  const eng_layer *l = &m->layer[li];
  const size_t E = in->experts, K = in->experts_per_tok, H = in->hidden, I = in->moe_intermediate;
  fdl_status s = ensure(m, rows, err);
  if (s) return s;
  eng_moe_work *w = &m->w.moe;
  float *xn = m->w.xn;
  if ((s = fdl_eng_gemm(m, xn, H, rows, &l->router, w->logits, E, err))) return s;
  for (size_t r = 0; r < rows; r++) route(in, w->logits + r * E, w->sel + r * K, w->weight + r * K);
  /* positions grouped by expert in one counting pass, ascending within each expert */
  memset(w->start, 0, (E + 1) * sizeof *w->start);
  for (size_t i = 0; i < rows * K; i++) w->start[w->sel[i] + 1]++;
  for (size_t e = 0; e < E; e++) w->start[e + 1] += w->start[e];
  for (size_t r = 0; r < rows; r++)
    for (size_t k = 0; k < K; k++) {
      size_t at = w->start[w->sel[r * K + k]]++;
      w->rows[at] = r;
      w->row_wt[at] = w->weight[r * K + k];
    }
  for (size_t e = E; e > 0; e--) w->start[e] = w->start[e - 1]; /* back to each group's start */
  w->start[0] = 0;
  memset(w->out, 0, rows * H * sizeof *w->out);
  for (size_t e = 0; e < E; e++) {
    const size_t *pos = w->rows + w->start[e];
    const float *wts = w->row_wt + w->start[e];
    const size_t n = w->start[e + 1] - w->start[e];
    if (!n) continue;
    for (size_t j = 0; j < n; j++) memcpy(w->x + j * H, xn + pos[j] * H, H * sizeof *xn);
    const eng_mat *ex = l->ex + 3 * e;
    if ((s = fdl_eng_gemm(m, w->x, H, n, &ex[0], w->g, I, err)) ||
        (s = fdl_eng_gemm(m, w->x, H, n, &ex[1], w->u, I, err)))
      return s;
    fdl_eng_silu_mul(w->g, w->u, n * I);
    if ((s = fdl_eng_gemm(m, w->g, I, n, &ex[2], w->y, H, err))) return s;
    for (size_t j = 0; j < n; j++) {
      float *o = w->out + pos[j] * H;
      const float *y = w->y + j * H;
      for (size_t h = 0; h < H; h++) o[h] += wts[j] * y[h];
    }
  }
  memcpy(xn, w->out, rows * H * sizeof *xn);
  return FDL_OK;
}
