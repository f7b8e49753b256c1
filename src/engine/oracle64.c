/* oracle64.c - the float64 oracle (fdl_engine_run_f64): the decoder's math written out plainly
 * in double, to measure the float32 engine against, never to capture with. Weights stay as the
 * model holds them (mapped BF16/F16/F32, or GPTQ's float32 reconstructions) and are widened a
 * row at a time, exactly, so the oracle needs no second copy of the model. Every reduction runs
 * in index order (ISO C: no contraction), exp/sin/cos/log are fidelis' own, and pool tasks
 * only decide who computes an element: the bits depend on nothing but the model and the ids
 * (docs/NUMERICS.md section 8). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

typedef struct {
  size_t n, maxk;
  double *x, *xn;        /* [n, hidden] residual stream, normed input (then a block's output) */
  double *q, *att;       /* [n, heads * head_dim] */
  double *k, *v;         /* [n, kv_dim] this layer's keys (after RoPE) and values */
  double *g, *u;         /* [n, intermediate] */
  double *cos_t, *sin_t; /* [n, head_dim / 2] */
  double *sc;            /* [workers][n] one query row's scores, then exponentials */
  float *row;            /* [workers][maxk] one weight row as widened */
} o64;

static void o64_free(o64 *o) {
  double *v[] = {o->x, o->xn, o->q, o->att, o->k, o->v, o->g, o->u, o->cos_t, o->sin_t, o->sc};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) free(v[i]);
  free(o->row);
}

static fdl_status o64_alloc(const fdl_model *m, size_t n, o64 *o, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  size_t qd = in->heads * in->head_dim, kd = in->kv_heads * in->head_dim, w = m->pool.threads;
  memset(o, 0, sizeof *o);
  o->n = n;
  o->maxk = in->hidden > qd ? in->hidden : qd;
  if (in->intermediate > o->maxk) o->maxk = in->intermediate;
  eng_scratch s = {0};
  o->x = fdl_eng_scratch(&s, n, in->hidden, 1, sizeof *o->x);
  o->xn = fdl_eng_scratch(&s, n, in->hidden, 1, sizeof *o->xn);
  o->q = fdl_eng_scratch(&s, n, qd, 1, sizeof *o->q);
  o->att = fdl_eng_scratch(&s, n, qd, 1, sizeof *o->att);
  o->k = fdl_eng_scratch(&s, n, kd, 1, sizeof *o->k);
  o->v = fdl_eng_scratch(&s, n, kd, 1, sizeof *o->v);
  o->g = fdl_eng_scratch(&s, n, in->intermediate, 1, sizeof *o->g);
  o->u = fdl_eng_scratch(&s, n, in->intermediate, 1, sizeof *o->u);
  o->cos_t = fdl_eng_scratch(&s, n, in->head_dim / 2, 1, sizeof *o->cos_t);
  o->sin_t = fdl_eng_scratch(&s, n, in->head_dim / 2, 1, sizeof *o->sin_t);
  o->sc = fdl_eng_scratch(&s, w, n, 1, sizeof *o->sc);
  o->row = fdl_eng_scratch(&s, w, o->maxk, 1, sizeof *o->row);
  if (!s.too_large && !s.nomem) return FDL_OK;
  o64_free(o);
  return fdl_fail(err, FDL_NOMEM, "float64 oracle: out of memory for a context of %zu positions",
                  n);
}

/* c[r, j] = sum_i a[r, i] * W[j, i] (+ bias[j]) for the n rows: one task per block of W's rows,
 * each row widened once and used for every position; each element a plain chain over i. */
typedef struct {
  o64 *o;
  const double *a;
  const eng_mat *w;
  const float *bias;
  size_t k, nout, chunk;
  double *c;
} mm_job;

static fdl_status mm_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  (void)err;
  const mm_job *j = arg;
  size_t n = j->o->n, k = j->k, j0 = index * j->chunk;
  size_t j1 = j0 + j->chunk < j->nout ? j0 + j->chunk : j->nout;
  float *w = j->o->row + (size_t)worker * j->o->maxk;
  for (size_t col = j0; col < j1; col++) {
    fdl_eng_mat_row(j->w, col, w);
    for (size_t r = 0; r < n; r++) {
      const double *a = j->a + r * k;
      double acc = 0.0;
      for (size_t i = 0; i < k; i++) acc += a[i] * (double)w[i];
      if (j->bias) acc += (double)j->bias[col];
      j->c[r * j->nout + col] = acc;
    }
  }
  return FDL_OK;
}

static fdl_status matmul(fdl_model *m, o64 *o, const double *a, size_t k, const eng_mat *w,
                         const float *bias, size_t nout, double *c, fdl_err *err) {
  size_t parts = 4 * (size_t)m->pool.threads;
  mm_job j = {o, a, w, bias, k, nout, (nout + parts - 1) / parts, c};
  return fdl_pool_run(&m->pool, (nout + j.chunk - 1) / j.chunk, mm_task, &j, err);
}

/* y = x / sqrt(mean(x^2) + eps) * w, x and y may alias. */
static void rmsnorm(const double *x, const float *w, size_t n, double eps, double *y) {
  double ss = 0.0;
  for (size_t i = 0; i < n; i++) ss += x[i] * x[i];
  double r = 1.0 / sqrt(ss / (double)n + eps);
  for (size_t i = 0; i < n; i++) y[i] = x[i] * r * (double)w[i];
}

/* HF rotate_half: element i pairs with i + d/2. */
static void rope(double *v, const double *c, const double *s, size_t head_dim) {
  size_t h = head_dim / 2;
  for (size_t i = 0; i < h; i++) {
    double a = v[i], b = v[i + h];
    v[i] = a * c[i] - b * s[i];
    v[i + h] = b * c[i] + a * s[i];
  }
}

typedef struct {
  o64 *o;
  const fdl_model_info *in;
  size_t window; /* 0, or the keys a query of this sliding layer sees (itself included) */
} att_job;

/* One (head, query row): softmax(q k^T / sqrt(d)) over keys [t0, r] (t0 = 0, or the first key of
 * a sliding window), then the weighted sum of the values in key order. */
static fdl_status att_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  (void)err;
  const att_job *j = arg;
  o64 *o = j->o;
  size_t hd = j->in->head_dim, qd = j->in->heads * hd, kd = j->in->kv_heads * hd;
  size_t h = index / o->n, r = index % o->n, kvh = h / (j->in->heads / j->in->kv_heads);
  const double *q = o->q + r * qd + h * hd;
  double *e = o->sc + (size_t)worker * o->n, *out = o->att + r * qd + h * hd;
  double scale = 1.0 / sqrt((double)hd), mx = 0.0, sum = 0.0;
  size_t t0 = j->window && r + 1 > j->window ? r + 1 - j->window : 0;
  for (size_t t = t0; t <= r; t++) {
    const double *k = o->k + t * kd + kvh * hd;
    double d = 0.0;
    for (size_t i = 0; i < hd; i++) d += q[i] * k[i];
    e[t] = d * scale;
    if (t == t0 || e[t] > mx) mx = e[t];
  }
  for (size_t t = t0; t <= r; t++) sum += e[t] = fdl_num_exp_neg(e[t] - mx);
  memset(out, 0, hd * sizeof *out);
  for (size_t t = t0; t <= r; t++) {
    const double *v = o->v + t * kd + kvh * hd;
    double p = e[t] / sum;
    for (size_t i = 0; i < hd; i++) out[i] += p * v[i];
  }
  return FDL_OK;
}

static fdl_status layer(fdl_model *m, o64 *o, const eng_layer *l, size_t li, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  size_t n = o->n, H = in->hidden, hd = in->head_dim, half = hd / 2, I = in->intermediate;
  size_t qd = in->heads * hd, kd = in->kv_heads * hd;
  for (size_t r = 0; r < n; r++) rmsnorm(o->x + r * H, l->in_norm, H, in->rms_eps, o->xn + r * H);
  fdl_status s;
  if ((s = matmul(m, o, o->xn, H, &l->q, l->q_bias, qd, o->q, err)) ||
      (s = matmul(m, o, o->xn, H, &l->k, l->k_bias, kd, o->k, err)) ||
      (s = matmul(m, o, o->xn, H, &l->v, l->v_bias, kd, o->v, err)))
    return s;
  for (size_t r = 0; r < n; r++) {
    const double *c = o->cos_t + r * half, *sn = o->sin_t + r * half;
    for (size_t h = 0; h < in->heads; h++) {
      double *q = o->q + r * qd + h * hd;
      if (l->q_norm) rmsnorm(q, l->q_norm, hd, in->rms_eps, q);
      rope(q, c, sn, hd);
    }
    for (size_t h = 0; h < in->kv_heads; h++) {
      double *k = o->k + r * kd + h * hd;
      if (l->k_norm) rmsnorm(k, l->k_norm, hd, in->rms_eps, k);
      rope(k, c, sn, hd);
    }
  }
  att_job aj = {o, in, in->sliding && in->sliding[li] ? in->sliding_window : 0};
  if ((s = fdl_pool_run(&m->pool, in->heads * n, att_task, &aj, err)) ||
      (s = matmul(m, o, o->att, qd, &l->o, l->o_bias, H, o->xn, err)))
    return s;
  for (size_t i = 0; i < n * H; i++) o->x[i] += o->xn[i];
  for (size_t r = 0; r < n; r++) rmsnorm(o->x + r * H, l->post_norm, H, in->rms_eps, o->xn + r * H);
  if ((s = matmul(m, o, o->xn, H, &l->gate, NULL, I, o->g, err)) ||
      (s = matmul(m, o, o->xn, H, &l->up, NULL, I, o->u, err)))
    return s;
  /* sigmoid from e = exp(-|x|) <= 1, so no exponential overflows. */
  for (size_t i = 0; i < n * I; i++) {
    double x = o->g[i], e = fdl_num_exp_neg(-fabs(x));
    o->g[i] = x * (x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e)) * o->u[i];
  }
  if ((s = matmul(m, o, o->g, I, &l->down, NULL, H, o->xn, err))) return s;
  for (size_t i = 0; i < n * H; i++) o->x[i] += o->xn[i];
  return FDL_OK;
}

fdl_status fdl_engine_run_f64(fdl_model *m, const int32_t *ids, size_t n, double *hidden,
                              double *logits, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  fdl_status s = fdl_eng_check_ids(m, ids, n, err);
  if (!s && in->moe)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "the float64 oracle runs the dense architectures; %s's experts are checked "
                 "against tests/engine_models.py's numpy oracle instead",
                 in->arch);
  if (!s && in->linear)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "the float64 oracle runs the dense architectures (Llama, Qwen2, Qwen3); %s is "
                 "checked against tests/qwen35_models.py's numpy oracle instead",
                 in->arch);
  o64 o;
  if (s || (s = o64_alloc(m, n, &o, err))) return s;
  size_t H = in->hidden, half = in->head_dim / 2;
  const double af = in->rope.attention_factor;
  fdl_eng_rope_freqs(in, n, m->inv_freq);
  for (size_t p = 0; p < n; p++)
    for (size_t i = 0; i < half; i++) {
      double *sn = &o.sin_t[p * half + i], *cs = &o.cos_t[p * half + i];
      fdl_eng_sincos((double)p * m->inv_freq[i], sn, cs);
      *sn *= af;
      *cs *= af;
    }
  for (size_t r = 0; r < n; r++) {
    float *e = o.row; /* worker 0's row: no task runs yet */
    fdl_eng_mat_row(&m->embed, (size_t)ids[r], e);
    for (size_t i = 0; i < H; i++) o.x[r * H + i] = (double)e[i];
  }
  for (size_t li = 0; li < in->layers && !s; li++)
    if ((s = layer(m, &o, &m->layer[li], li, err)))
      fdl_err_prefix(err, "float64 oracle: layer %zu", li);
  if (!s) {
    for (size_t r = 0; r < n; r++)
      rmsnorm(o.x + r * H, m->final_norm, H, in->rms_eps, o.xn + r * H);
    if (hidden) memcpy(hidden, o.xn, n * H * sizeof *hidden);
    if (logits) s = matmul(m, &o, o.xn, H, &m->head, NULL, in->vocab, logits, err);
  }
  o64_free(&o);
  return s;
}
