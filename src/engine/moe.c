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

#include "base/sys.h"
#include "engine/internal.h"

/* Qwen3.5 MoE's block (transformers' Qwen3_5MoeSparseMoeBlock) routes every layer, always
 * renormalises the chosen weights, and adds a shared expert; a config that says otherwise
 * describes another model and is refused by name. */
static fdl_status qwen35_moe(const json_t *cfg, const char *path, size_t step, fdl_model_info *info,
                             fdl_err *err) {
  const json_t *only = json_object_get(cfg, "mlp_only_layers");
  const json_t *norm = json_object_get(cfg, "norm_topk_prob");
  const char *what = step != 1                                      ? "decoder_sparse_step is not 1"
                     : json_is_array(only) && json_array_size(only) ? "mlp_only_layers is not empty"
                     : json_is_false(norm)                          ? "norm_topk_prob is false"
                                                                    : NULL;
  if (what)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: %s: Qwen3.5 MoE routes every layer and renormalises the chosen experts' "
                    "weights",
                    path, what);
  info->norm_topk_prob = true;
  return fdl_eng_cfg_size(cfg, path, "shared_expert_intermediate_size", true, 0,
                          &info->shared_intermediate, err);
}

fdl_status fdl_eng_moe_config(const json_t *cfg, const char *path, bool qwen35,
                              fdl_model_info *info, fdl_err *err) {
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
  if (qwen35) {
    if ((s = qwen35_moe(cfg, path, step, info, err))) return s;
    if (info->shared_intermediate > ((size_t)1 << 22))
      return fdl_fail(err, FDL_PARSE, "%s: shared_expert_intermediate_size beyond 2^22", path);
  } else if (fdl_eng_cfg_set(json_object_get(cfg, "shared_expert_intermediate_size"))) {
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: shared_expert_intermediate_size is set: Qwen3MoeForCausalLM has no "
                    "shared expert (a Qwen2-MoE or Qwen3-Next checkpoint?)",
                    path);
  }
  unsigned char *moe = fdl_calloc(info->layers ? info->layers : 1, 1);
  if (!moe) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; i < info->layers; i++) moe[i] = (i + 1) % step == 0;
  const json_t *only = fdl_eng_cfg_given(cfg, "mlp_only_layers");
  if (only && !json_is_array(only)) {
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

/* Expert e's three matrices as views into the fused tensors (rows of gate_up_proj: gate's
 * then up's, moe_inter each; down_proj's [hidden, moe_inter] block). */
static void fused_views(const fdl_tensor *gu, const fdl_tensor *dn, const fdl_model_info *in,
                        eng_layer *l) {
  const size_t E = in->experts, I = in->moe_intermediate, H = in->hidden;
  const size_t es = fdl_dtype_size(gu->dtype), block = I * H * es;
  for (size_t e = 0; e < E; e++)
    for (size_t j = 0; j < 3; j++) {
      fdl_tensor *v = &l->ex_view[3 * e + j];
      const fdl_tensor *src = j < 2 ? gu : dn;
      size_t at = j < 2 ? (2 * e + j) * block : e * block;
      *v = *src;
      v->ndim = 2;
      v->shape[0] = (int64_t)(j < 2 ? I : H);
      v->shape[1] = (int64_t)(j < 2 ? H : I);
      v->offset = src->offset + at;
      v->nbytes = block;
      v->data = src->data + at;
      l->ex[3 * e + j].t = v;
      l->ex[3 * e + j].type = fdl_gemm_type_of(v->dtype);
    }
}

fdl_status fdl_eng_bind_moe(eng_binder *b, eng_layer *l, const char *pre, fdl_err *err) {
  const fdl_model_info *in = &b->m->info;
  const size_t E = in->experts, I = in->moe_intermediate, H = in->hidden;
  const size_t S = in->shared_intermediate;
  char n[192];
#define NAME(...) (snprintf(n, sizeof n, __VA_ARGS__), n)
  fdl_status s;
  if (!(l->ex = fdl_calloc(3 * E, sizeof *l->ex))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  if ((s = fdl_eng_bind_mat(b, NAME("%smlp.gate.weight", pre), E, H, &l->router, err))) return s;
  if (S && ((s = fdl_eng_bind_mat(b, NAME("%smlp.shared_expert.gate_proj.weight", pre), S, H,
                                  &l->shared[0], err)) ||
            (s = fdl_eng_bind_mat(b, NAME("%smlp.shared_expert.up_proj.weight", pre), S, H,
                                  &l->shared[1], err)) ||
            (s = fdl_eng_bind_mat(b, NAME("%smlp.shared_expert.down_proj.weight", pre), H, S,
                                  &l->shared[2], err)) ||
            (s = fdl_eng_bind_mat(b, NAME("%smlp.shared_expert_gate.weight", pre), 1, H,
                                  &l->shared_gate, err))))
    return s;
  if (fdl_eng_find(b->m, NAME("%smlp.experts.gate_up_proj", pre))) {
    const fdl_tensor *gu, *dn;
    size_t dgu[3] = {E, 2 * I, H}, ddn[3] = {E, H, I};
    if ((s = fdl_eng_bind(b, n, 3, dgu, false, &gu, err)) ||
        (s = fdl_eng_bind(b, NAME("%smlp.experts.down_proj", pre), 3, ddn, false, &dn, err)))
      return s;
    if (!(l->ex_view = fdl_calloc(3 * E, sizeof *l->ex_view)))
      return fdl_fail(err, FDL_NOMEM, "out of memory");
    fused_views(gu, dn, in, l);
    return FDL_OK;
  }
  for (size_t e = 0; e < E; e++)
    if ((s = fdl_eng_bind_mat(b, NAME("%smlp.experts.%zu.gate_proj.weight", pre, e), I, H,
                              &l->ex[3 * e], err)) ||
        (s = fdl_eng_bind_mat(b, NAME("%smlp.experts.%zu.up_proj.weight", pre, e), I, H,
                              &l->ex[3 * e + 1], err)) ||
        (s = fdl_eng_bind_mat(b, NAME("%smlp.experts.%zu.down_proj.weight", pre, e), H, I,
                              &l->ex[3 * e + 2], err)))
      return s;
  return FDL_OK;
#undef NAME
}

void fdl_eng_moe_free(eng_moe_work *w) {
  void *bufs[] = {w->logits, w->sel, w->weight, w->start, w->rows, w->row_wt,
                  w->x,      w->y,   w->g,      w->u,     w->sg,   w->out};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) free(bufs[i]);
  memset(w, 0, sizeof *w);
}

static fdl_status ensure(fdl_model *m, size_t n, fdl_err *err) {
  eng_moe_work *w = &m->w.moe;
  if (w->cap >= n) return FDL_OK;
  const fdl_model_info *in = &m->info;
  fdl_eng_moe_free(w);
  size_t E = in->experts, K = in->experts_per_tok, H = in->hidden;
  size_t I = in->moe_intermediate > in->shared_intermediate ? in->moe_intermediate
                                                            : in->shared_intermediate;
  eng_scratch sc = {0};
  w->logits = fdl_eng_scratch(&sc, n, E, 1, sizeof *w->logits);
  w->sel = fdl_eng_scratch(&sc, n, K, 1, sizeof *w->sel);
  w->weight = fdl_eng_scratch(&sc, n, K, 1, sizeof *w->weight);
  w->start = fdl_eng_scratch(&sc, E + 1, 1, 1, sizeof *w->start);
  w->rows = fdl_eng_scratch(&sc, n, K, 1, sizeof *w->rows);
  w->row_wt = fdl_eng_scratch(&sc, n, K, 1, sizeof *w->row_wt);
  w->x = fdl_eng_scratch(&sc, n, H, 1, sizeof *w->x);
  w->y = fdl_eng_scratch(&sc, n, H, 1, sizeof *w->y);
  w->g = fdl_eng_scratch(&sc, n, I, 1, sizeof *w->g);
  w->u = fdl_eng_scratch(&sc, n, I, 1, sizeof *w->u);
  w->sg = fdl_eng_scratch(&sc, n, 1, 1, sizeof *w->sg);
  w->out = fdl_eng_scratch(&sc, n, H, 1, sizeof *w->out);
  if (sc.too_large || sc.nomem) {
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
  for (size_t e = 0; e < E; e++) sum += fdl_num_exp_neg((double)l[e] - (double)mx);
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
      p[k] = fdl_num_exp_neg((double)l[e] - (double)mx) / sum;
      chosen += p[k];
      k++;
    }
  for (k = 0; k < K; k++) weight[k] = (float)(in->norm_topk_prob ? p[k] / chosen : p[k]);
}

/* Qwen3.5 MoE's shared expert, added after the routed sum: out += (float)(sigmoid(g x) y), with
 * y = down(silu(gate x) * up x) over every position and the gate one float64 expression
 * rounded once (as fdl_eng_sigmoid_mul). */
static fdl_status shared_expert(fdl_model *m, const eng_layer *l, size_t rows, fdl_err *err) {
  const size_t H = m->info.hidden, S = m->info.shared_intermediate;
  eng_moe_work *w = &m->w.moe;
  const float *xn = m->w.xn;
  fdl_status s;
  if ((s = fdl_eng_gemm(m, xn, H, rows, &l->shared[0], w->g, S, err)) ||
      (s = fdl_eng_gemm(m, xn, H, rows, &l->shared[1], w->u, S, err)) ||
      (s = fdl_eng_gemm(m, xn, H, rows, &l->shared_gate, w->sg, 1, err)))
    return s;
  fdl_num_silu_mul(w->g, w->u, rows * S);
  if ((s = fdl_eng_gemm(m, w->g, S, rows, &l->shared[2], w->y, H, err))) return s;
  for (size_t r = 0; r < rows; r++) {
    float *y = w->y + r * H;
    const double gate = fdl_eng_sigmoid(w->sg[r]);
    for (size_t h = 0; h < H; h++) y[h] = (float)((double)y[h] * gate);
    fdl_eng_add(w->out + r * H, y, H);
  }
  return FDL_OK;
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
    fdl_num_silu_mul(w->g, w->u, n * I);
    if ((s = fdl_eng_gemm(m, w->g, I, n, &ex[2], w->y, H, err))) return s;
    for (size_t j = 0; j < n; j++) {
      float *o = w->out + pos[j] * H;
      const float *y = w->y + j * H;
      for (size_t h = 0; h < H; h++) o[h] += wts[j] * y[h];
    }
  }
  if (in->shared_intermediate && (s = shared_expert(m, l, rows, err))) return s;
  memcpy(xn, w->out, rows * H * sizeof *xn);
  return FDL_OK;
}
