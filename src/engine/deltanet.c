/* deltanet.c - a Gated DeltaNet layer (Qwen3.5, docs/QWEN35.md) over rows [p0, p0 + rows):
 * projections through the GEMM, the causal convolution and the gates per row, then the delta
 * rule per value head, recurrent (one position at a time) or chunked (64 at a time, the
 * UT-transform form), then the gated output norm and out_proj. Rows and heads are pool tasks
 * whose results depend on their own inputs only, so threads never move a bit. The arithmetic
 * contract is docs/NUMERICS.md section 8.4. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

#define GDN_CHUNK 64
#define L2_EPS 1e-6

typedef struct {
  size_t nk, nv, dk, dv, kd, vd, cd, K;
} gdn_dims;

static gdn_dims dims_of(const fdl_model_info *in) {
  gdn_dims d = {in->lin_k_heads, in->lin_v_heads, in->lin_k_dim, in->lin_v_dim, 0, 0, 0,
                in->conv_kernel};
  d.kd = d.nk * d.dk;
  d.vd = d.nv * d.dv;
  d.cd = 2 * d.kd + d.vd;
  return d;
}

/* One worker's scratch for a chunk: KT, KdT [dk, C]; KK, QK, A, M [C, C]; U, P, R [C, dv];
 * W [C, dk]. */
static size_t chunk_floats(const gdn_dims *d) {
  size_t C = GDN_CHUNK;
  return 2 * d->dk * C + 4 * C * C + 3 * C * d->dv + C * d->dk;
}

void fdl_eng_gdn_free(eng_q35_work *q) {
  free(q->qg), free(q->mixed), free(q->conv_out), free(q->zg), free(q->ba), free(q->beta);
  free(q->gdec), free(q->core), free(q->state), free(q->chunk);
  memset(q, 0, sizeof *q);
}

fdl_status fdl_eng_gdn_work(fdl_model *m, size_t n, fdl_err *err) {
  const fdl_model_info *in = &m->info;
  eng_q35_work *q = &m->w.q35;
  if (q->cap >= n) return FDL_OK;
  gdn_dims d = dims_of(in);
  size_t qd = in->heads * in->head_dim, nl = in->linear_layers;
  fdl_eng_gdn_free(q);
  eng_scratch s = {0};
  q->qg = fdl_eng_scratch(&s, n, 2 * qd, 1, sizeof *q->qg);
  q->mixed = fdl_eng_scratch(&s, n, d.cd, nl, sizeof *q->mixed);
  q->conv_out = fdl_eng_scratch(&s, n, d.cd, 1, sizeof *q->conv_out);
  q->zg = fdl_eng_scratch(&s, n, d.vd, 1, sizeof *q->zg);
  q->ba = fdl_eng_scratch(&s, n, 2 * d.nv, 1, sizeof *q->ba);
  q->beta = fdl_eng_scratch(&s, n, d.nv, 1, sizeof *q->beta);
  q->gdec = fdl_eng_scratch(&s, n, d.nv, 1, sizeof *q->gdec);
  q->core = fdl_eng_scratch(&s, n, d.vd, 1, sizeof *q->core);
  q->state = fdl_eng_scratch(&s, d.nv * d.dk * d.dv, nl, 1, sizeof *q->state);
  q->chunk = fdl_eng_scratch(&s, chunk_floats(&d), m->pool.threads, 1, sizeof *q->chunk);
  if (!s.too_large && !s.nomem) {
    q->cap = n;
    return FDL_OK;
  }
  fdl_eng_gdn_free(q);
  if (s.too_large)
    return fdl_fail(err, FDL_TOO_LARGE, "a context of %zu positions overflows sizes", n);
  return fdl_fail(err, FDL_NOMEM,
                  "out of memory: the Gated DeltaNet scratch for a context of %zu positions "
                  "is %.0f MiB, of which the recurrent state of %zu layers is %.0f MiB",
                  n, s.mib, nl,
                  (double)(d.nv * d.dk * d.dv) * nl * sizeof(float) / (1024.0 * 1024.0));
}

/* ---- per row: convolution, SiLU, L2 norms, gates ------------------------------------------
 * A product of two floats is exact in float64, so `acc += (double)a * (double)b` rounds once,
 * exactly as fma would, without a libm call. */

typedef struct {
  fdl_model *m;
  const eng_layer *l;
  gdn_dims d;
  size_t p0, rows, chunk;
  const float *mixed; /* this layer's [cap, cd] history */
} row_job;

static double silu(double x) {
  return x * fdl_eng_sigmoid(x);
}

/* softplus(x) = max(x, 0) + log(1 + e^-|x|). */
static double softplus(double x) {
  return (x > 0 ? x : 0.0) + fdl_eng_log(1.0 + fdl_num_exp_neg(-fabs(x)));
}

/* x / sqrt(sum(x^2) + eps) * scale, the sum in float64 in index order. */
static void l2norm(float *x, size_t n, double scale) {
  double ss = 0.0;
  for (size_t i = 0; i < n; i++) ss += (double)x[i] * (double)x[i];
  double r = scale / sqrt(ss + L2_EPS);
  for (size_t i = 0; i < n; i++) x[i] = (float)((double)x[i] * r);
}

static void prep_row(const row_job *j, size_t r) {
  const fdl_model *m = j->m;
  const eng_layer *l = j->l;
  const gdn_dims *d = &j->d;
  const eng_work *w = &m->w;
  size_t pos = j->p0 + r, K = d->K;
  float *c = w->q35.conv_out + r * d->cd;
  /* out[t] = sum_k w[k] x[t - K + 1 + k], in k order, positions before 0 reading zero. */
  for (size_t ch = 0; ch < d->cd; ch++) {
    double acc = 0.0;
    for (size_t k = 0; k < K; k++) {
      if (pos + k + 1 < K) continue;
      size_t t = pos + k + 1 - K;
      acc += (double)l->conv[ch * K + k] * (double)j->mixed[t * d->cd + ch];
    }
    c[ch] = (float)silu(acc);
  }
  double qs = 1.0 / sqrt((double)d->dk);
  for (size_t h = 0; h < d->nk; h++) {
    l2norm(c + h * d->dk, d->dk, qs);
    l2norm(c + d->kd + h * d->dk, d->dk, 1.0);
  }
  const float *ba = w->q35.ba + r * 2 * d->nv;
  for (size_t h = 0; h < d->nv; h++) {
    w->q35.beta[r * d->nv + h] = (float)fdl_eng_sigmoid(ba[h]);
    double x = (double)ba[d->nv + h] + (double)l->dt_bias[h];
    w->q35.gdec[r * d->nv + h] = (float)(-l->decay[h] * softplus(x));
  }
}

/* y = o / sqrt(mean(o^2) + eps) * w * silu(z) per value head, one float64 expression each. */
static void out_row(const row_job *j, size_t r) {
  const fdl_model *m = j->m;
  const gdn_dims *d = &j->d;
  const eng_work *w = &m->w;
  for (size_t h = 0; h < d->nv; h++) {
    float *o = w->q35.core + r * d->vd + h * d->dv;
    const float *z = w->q35.zg + r * d->vd + h * d->dv;
    double ss = 0.0;
    for (size_t i = 0; i < d->dv; i++) ss += (double)o[i] * (double)o[i];
    double inv = 1.0 / sqrt(ss / (double)d->dv + m->info.rms_eps);
    for (size_t i = 0; i < d->dv; i++)
      o[i] = (float)((double)o[i] * inv * (double)j->l->gnorm[i] * silu(z[i]));
  }
}

typedef struct {
  row_job *j;
  bool out;
} row_pass;

static fdl_status row_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  const row_pass *p = arg;
  size_t r0 = index * p->j->chunk, r1 = r0 + p->j->chunk;
  if (r1 > p->j->rows) r1 = p->j->rows;
  for (size_t r = r0; r < r1; r++) p->out ? out_row(p->j, r) : prep_row(p->j, r);
  return FDL_OK;
}

static fdl_status rows_pass(fdl_model *m, row_job *j, bool out, fdl_err *err) {
  row_pass p = {j, out};
  size_t ntasks = (j->rows + j->chunk - 1) / j->chunk;
  return fdl_pool_run(&m->pool, ntasks, row_task, &p, err);
}

/* ---- the delta rule, per value head --------------------------------------------------------
 * Every product below is a float32 multiply and every sum a float32 add in a written order
 * (ISO C forbids contraction), vectorised across the value dimension only: the same bits for
 * any vector width. */

typedef struct {
  fdl_model *m;
  gdn_dims d;
  size_t rows;
  float *S; /* this layer's [nv, dk, dv] states */
  bool chunked;
} head_job;

/* The head's operands of row r: q, k (normalised) and v in conv_out, beta and g. */
typedef struct {
  const float *q, *k, *v;
  size_t ld; /* conv_out's row stride */
} head_rows;

static head_rows head_of(const head_job *j, size_t h) {
  const gdn_dims *d = &j->d;
  size_t kh = h / (d->nv / d->nk);
  const float *c = j->m->w.q35.conv_out;
  return (head_rows){c + kh * d->dk, c + d->kd + kh * d->dk, c + 2 * d->kd + h * d->dv, d->cd};
}

static void recurrent(const head_job *j, size_t h, float *S) {
  const gdn_dims *d = &j->d;
  const eng_work *w = &j->m->w;
  head_rows x = head_of(j, h);
  size_t dk = d->dk, dv = d->dv;
  float kv[4096], delta[4096]; /* dv <= 4096 (config_qwen35.c) */
  for (size_t r = 0; r < j->rows; r++) {
    const float *q = x.q + r * x.ld, *k = x.k + r * x.ld, *v = x.v + r * x.ld;
    float e = (float)fdl_num_exp_neg((double)w->q35.gdec[r * d->nv + h]);
    float beta = w->q35.beta[r * d->nv + h];
    float *o = w->q35.core + r * d->vd + h * dv;
    for (size_t c = 0; c < dv; c++) kv[c] = 0.0f;
    for (size_t i = 0; i < dk; i++) {
      float *s = S + i * dv;
      for (size_t c = 0; c < dv; c++) {
        s[c] = s[c] * e;
        kv[c] = kv[c] + s[c] * k[i];
      }
    }
    for (size_t c = 0; c < dv; c++) delta[c] = (v[c] - kv[c]) * beta;
    for (size_t c = 0; c < dv; c++) o[c] = 0.0f;
    for (size_t i = 0; i < dk; i++) {
      float *s = S + i * dv;
      for (size_t c = 0; c < dv; c++) {
        s[c] = s[c] + k[i] * delta[c];
        o[c] = o[c] + s[c] * q[i];
      }
    }
  }
}

static void chunked(const head_job *j, size_t h, float *S, float *scr) {
  const gdn_dims *d = &j->d;
  const eng_work *w = &j->m->w;
  head_rows x = head_of(j, h);
  size_t dk = d->dk, dv = d->dv, C = GDN_CHUNK;
  float *KT = scr, *KdT = KT + dk * C, *KK = KdT + dk * C, *QK = KK + C * C, *A = QK + C * C,
        *M = A + C * C, *U = M + C * C, *P = U + C * dv, *R = P + C * dv, *W = R + C * dv;
  double cs[GDN_CHUNK], ec[GDN_CHUNK];
  for (size_t t0 = 0; t0 < j->rows; t0 += C) {
    size_t L = j->rows - t0 < C ? j->rows - t0 : C;
    const float *q = x.q + t0 * x.ld, *k = x.k + t0 * x.ld, *v = x.v + t0 * x.ld;
    const float *beta = w->q35.beta + t0 * d->nv + h, *g = w->q35.gdec + t0 * d->nv + h;
    double acc = 0.0;
    for (size_t t = 0; t < L; t++) {
      acc += (double)g[t * d->nv];
      cs[t] = acc;
      ec[t] = fdl_num_exp_neg(acc);
    }
    for (size_t t = 0; t < L; t++)
      for (size_t i = 0; i < dk; i++) KT[i * C + t] = k[t * x.ld + i];
    /* KK = K K^T and QK = Q K^T, lower triangles (with the diagonal). */
    memset(KK, 0, C * C * sizeof *KK);
    memset(QK, 0, C * C * sizeof *QK);
    for (size_t t = 0; t < L; t++)
      for (size_t i = 0; i < dk; i++) {
        float kt = k[t * x.ld + i], qt = q[t * x.ld + i];
        for (size_t s = 0; s <= t; s++) {
          KK[t * C + s] = KK[t * C + s] + kt * KT[i * C + s];
          QK[t * C + s] = QK[t * C + s] + qt * KT[i * C + s];
        }
      }
    for (size_t t = 0; t < L; t++)
      for (size_t s = 0; s <= t; s++) {
        double dec = fdl_num_exp_neg(cs[t] - cs[s]);
        A[t * C + s] = s < t ? (float)((double)beta[t * d->nv] * (double)KK[t * C + s] * dec) : 0;
        M[t * C + s] = (float)((double)QK[t * C + s] * dec);
      }
    /* U = T^-1 (beta v) and W = T^-1 (beta e^c k) by forward substitution, T = I + A. */
    for (size_t t = 0; t < L; t++) {
      float *u = U + t * dv, *wk = W + t * dk;
      double b = beta[t * d->nv];
      for (size_t c = 0; c < dv; c++) u[c] = (float)(b * (double)v[t * x.ld + c]);
      for (size_t i = 0; i < dk; i++) wk[i] = (float)(b * ec[t] * (double)k[t * x.ld + i]);
      for (size_t s = 0; s < t; s++) {
        float a = A[t * C + s];
        for (size_t c = 0; c < dv; c++) u[c] = u[c] - a * U[s * dv + c];
        for (size_t i = 0; i < dk; i++) wk[i] = wk[i] - a * W[s * dk + i];
      }
    }
    /* v' = U - W S (into U); R = Q S. */
    memset(P, 0, L * dv * sizeof *P);
    memset(R, 0, L * dv * sizeof *R);
    fdl_num_mm_acc(P, dv, W, dk, S, dv, L, dk, dv);
    fdl_num_mm_acc(R, dv, q, x.ld, S, dv, L, dk, dv);
    for (size_t t = 0; t < L * dv; t++) U[t] = U[t] - P[t];
    /* o = e^c (Q S) + M v'. */
    for (size_t t = 0; t < L; t++) {
      float *o = w->q35.core + (t0 + t) * d->vd + h * dv;
      for (size_t c = 0; c < dv; c++) o[c] = (float)(ec[t] * (double)R[t * dv + c]);
      fdl_num_mm_acc(o, 0, M + t * C, C, U, dv, 1, t + 1, dv);
    }
    /* S = e^c_last S + (e^(c_last - c) k)^T v'. */
    float el = (float)ec[L - 1];
    double tail[GDN_CHUNK];
    for (size_t t = 0; t < L; t++) tail[t] = fdl_num_exp_neg(cs[L - 1] - cs[t]);
    for (size_t i = 0; i < dk; i++)
      for (size_t t = 0; t < L; t++) KdT[i * C + t] = (float)(tail[t] * (double)k[t * x.ld + i]);
    for (size_t t = 0; t < dk * dv; t++) S[t] = S[t] * el;
    fdl_num_mm_acc(S, dv, KdT, C, U, dv, dk, L, dv);
  }
}

static fdl_status head_task(void *arg, size_t h, unsigned worker, fdl_err *err) {
  (void)err;
  const head_job *j = arg;
  float *S = j->S + h * j->d.dk * j->d.dv;
  if (j->chunked)
    chunked(j, h, S, j->m->w.q35.chunk + (size_t)worker * chunk_floats(&j->d));
  else
    recurrent(j, h, S);
  return FDL_OK;
}

/* ---- the layer ---------------------------------------------------------------------------- */

fdl_status fdl_eng_gdn_layer(fdl_model *m, size_t li, size_t p0, size_t rows, bool chunked_path,
                             fdl_err *err) {
  const fdl_model_info *in = &m->info;
  const eng_layer *l = &m->layer[li];
  eng_work *w = &m->w;
  gdn_dims d = dims_of(in);
  size_t H = in->hidden;
  float *mixed = w->q35.mixed + l->lin * w->q35.cap * d.cd;
  float *S = w->q35.state + l->lin * d.nv * d.dk * d.dv;
  if (p0 == 0) memset(S, 0, d.nv * d.dk * d.dv * sizeof *S);
  size_t parts = 4 * (size_t)m->pool.threads;
  row_job rj = {m, l, d, p0, rows, (rows + parts - 1) / parts, mixed};
  head_job hj = {m, d, rows, S, chunked_path};
  fdl_status s;
  if ((s = fdl_eng_gemm(m, w->xn, H, rows, &l->qkv, mixed + p0 * d.cd, d.cd, err)) ||
      (s = fdl_eng_gemm(m, w->xn, H, rows, &l->z, w->q35.zg, d.vd, err)) ||
      (s = fdl_eng_gemm(m, w->xn, H, rows, &l->b, w->q35.ba, 2 * d.nv, err)) ||
      (s = fdl_eng_gemm(m, w->xn, H, rows, &l->a, w->q35.ba + d.nv, 2 * d.nv, err)) ||
      (s = rows_pass(m, &rj, false, err)) ||
      (s = fdl_pool_run(&m->pool, d.nv, head_task, &hj, err)) ||
      (s = rows_pass(m, &rj, true, err)) ||
      (s = fdl_eng_gemm(m, w->q35.core, d.vd, rows, &l->out, w->xn, H, err)))
    return s;
  return FDL_OK;
}
