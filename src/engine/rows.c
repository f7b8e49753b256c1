/* rows.c - the per-position kernels of a layer step (norms, biases, q/k norm, RoPE, the V
 * transpose, residual adds), run as pool tasks over blocks of rows. A row's result depends on
 * that row alone, so the cut into blocks, like the thread count, never moves a bit. Also the
 * finiteness check that every stage's output passes before anything is published. */
#include <string.h>

#include "engine/internal.h"

typedef struct {
  fdl_model *m;
  eng_row_phase ph;
  size_t li, p0, rows, chunk;
} row_job;

static void add(float *y, const float *b, size_t n) {
  if (b) fdl_eng_add(y, b, n);
}

static void one_row(const row_job *j, size_t r) {
  fdl_model *m = j->m;
  const fdl_model_info *in = &m->info;
  eng_work *w = &m->w;
  size_t H = in->hidden, hd = in->head_dim, qd = in->heads * hd, kd = in->kv_heads * hd;
  const eng_layer *l = j->ph == ENG_ROW_FINAL ? NULL : &m->layer[j->li];
  float *x = w->x + r * H, *xn = w->xn + r * H;
  switch (j->ph) {
  case ENG_ROW_NORM_IN:
    fdl_eng_rmsnorm(x, l->in_norm, H, in->rms_eps, xn);
    break;
  case ENG_ROW_QKV: {
    size_t half = in->rotary_dim / 2, pos = j->p0 + r;
    const float *c = w->cos_t + pos * half, *sn = w->sin_t + pos * half;
    float *q = w->q + r * qd;
    /* A gated q_proj row holds, per head, the query then the gate. */
    for (size_t h = 0; in->attn_gate && h < in->heads; h++)
      memcpy(q + h * hd, w->q35.qg + r * 2 * qd + h * 2 * hd, hd * sizeof *q);
    float *k = w->kc + j->li * w->cap * kd + pos * kd, *v = w->vtmp + r * kd;
    float *vt = w->vt + j->li * kd * w->cap;
    add(q, l->q_bias, qd);
    add(k, l->k_bias, kd);
    add(v, l->v_bias, kd);
    for (size_t h = 0; h < in->heads; h++) {
      if (l->q_norm) fdl_eng_rmsnorm(q + h * hd, l->q_norm, hd, in->rms_eps, q + h * hd);
      fdl_eng_rope(q + h * hd, c, sn, in->rotary_dim);
    }
    for (size_t h = 0; h < in->kv_heads; h++) {
      if (l->k_norm) fdl_eng_rmsnorm(k + h * hd, l->k_norm, hd, in->rms_eps, k + h * hd);
      fdl_eng_rope(k + h * hd, c, sn, in->rotary_dim);
    }
    for (size_t i = 0; i < kd; i++) vt[i * w->cap + pos] = v[i];
    break;
  }
  case ENG_ROW_GATE: {
    float *a = w->att + r * qd;
    for (size_t h = 0; h < in->heads; h++)
      fdl_eng_sigmoid_mul(a + h * hd, w->q35.qg + r * 2 * qd + h * 2 * hd + hd, hd);
    break;
  }
  case ENG_ROW_ATTN_OUT:
    add(xn, l->o_bias, H);
    fdl_eng_add(x, xn, H);
    fdl_eng_rmsnorm(x, l->post_norm, H, in->rms_eps, xn);
    break;
  case ENG_ROW_MLP_OUT:
    fdl_eng_add(x, xn, H);
    break;
  case ENG_ROW_FINAL:
    fdl_eng_rmsnorm(x, m->final_norm, H, in->rms_eps, xn);
    break;
  }
}

static fdl_status row_task(void *arg, size_t index, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  const row_job *j = arg;
  size_t r0 = index * j->chunk, r1 = r0 + j->chunk < j->rows ? r0 + j->chunk : j->rows;
  for (size_t r = r0; r < r1; r++) one_row(j, r);
  return FDL_OK;
}

fdl_status fdl_eng_rows(fdl_model *m, eng_row_phase ph, size_t li, size_t p0, size_t rows,
                        fdl_err *err) {
  size_t parts = 4 * (size_t)m->pool.threads;
  row_job j = {m, ph, li, p0, rows, (rows + parts - 1) / parts};
  if (j.chunk < 8) j.chunk = 8;
  size_t ntasks = (rows + j.chunk - 1) / j.chunk;
  if (ntasks <= 1) {
    for (size_t r = 0; r < rows; r++) one_row(&j, r);
    return FDL_OK;
  }
  return fdl_pool_run(&m->pool, ntasks, row_task, &j, err);
}

fdl_status fdl_eng_check_finite(const float *v, size_t rows, size_t w, size_t p0, size_t e0,
                                const char *what, const char *unit, fdl_err *err) {
  bool nan = false;
  uint64_t i =
      fdl_tensor_first_nonfinite((const uint8_t *)v, FDL_DTYPE_F32, (uint64_t)rows * w, &nan);
  if (i == UINT64_MAX) return FDL_OK;
  return fdl_fail(err, FDL_NONFINITE,
                  "the forward pass overflowed: %s is %s at position %zu (%s %zu), expected "
                  "a finite value; the weights or config values drive it out of float32 range",
                  what, nan ? "NaN" : "infinite", p0 + (size_t)(i / w), unit, e0 + (size_t)(i % w));
}
