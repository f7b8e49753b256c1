/* weights_qwen35.c - binds one Qwen3.5 layer (docs/QWEN35.md): gated full attention with q/k
 * norm, or a Gated DeltaNet, then the SwiGLU MLP. The zero-centred norms are stored here as
 * (1 + w) in float32, the value transformers multiplies by (a GGUF holds that value already:
 * llama.cpp's converter added the 1 in float32; gguf_qwen35.c). */
#include <stdio.h>
#include <stdlib.h>

#include "base/sys.h"
#include "engine/internal.h"

void fdl_eng_zero_centred(float *w, size_t n) {
  for (size_t i = 0; i < n; i++) w[i] = 1.0f + w[i];
}

static void centre(const fdl_model *m, float *w, size_t n) {
  if (!m->gguf_converted) fdl_eng_zero_centred(w, n);
}

/* A small vector that releases keep in full precision even in a BF16 checkpoint, widened. */
static fdl_status bind_small(eng_binder *b, const char *name, int nd, const size_t *dim, float *out,
                             fdl_err *err) {
  const fdl_tensor *t;
  fdl_status s = fdl_eng_bind(b, name, nd, dim, true, &t, err);
  if (!s) fdl_tensor_widen_f32(t, 0, fdl_tensor_numel(t), out);
  return s;
}

static fdl_status deltanet(eng_binder *b, eng_layer *l, const char *pre, fdl_err *err) {
  const fdl_model_info *in = &b->m->info;
  size_t H = in->hidden, nv = in->lin_v_heads, kd = in->lin_k_heads * in->lin_k_dim,
         vd = nv * in->lin_v_dim, cd = 2 * kd + vd, K = in->conv_kernel;
  char n[192];
#define NAME(suffix) (snprintf(n, sizeof n, "%slinear_attn.%s", pre, suffix), n)
  fdl_status s;
  if ((s = fdl_eng_bind_mat(b, NAME("in_proj_qkv.weight"), cd, H, &l->qkv, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("in_proj_z.weight"), vd, H, &l->z, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("in_proj_b.weight"), nv, H, &l->b, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("in_proj_a.weight"), nv, H, &l->a, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("out_proj.weight"), H, vd, &l->out, err)) ||
      (s = fdl_eng_bind_vec(b, NAME("norm.weight"), in->lin_v_dim, &l->gnorm, err)))
    return s;
  float *alog = fdl_malloc(nv * sizeof *alog);
  l->conv = fdl_malloc(cd * K * sizeof *l->conv);
  l->dt_bias = fdl_malloc(nv * sizeof *l->dt_bias);
  l->decay = fdl_malloc(nv * sizeof *l->decay);
  size_t conv_dim[3] = {cd, 1, K};
  if (!alog || !l->conv || !l->dt_bias || !l->decay) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (!s) s = bind_small(b, NAME("conv1d.weight"), 3, conv_dim, l->conv, err);
  if (!s) s = bind_small(b, NAME("dt_bias"), 1, &nv, l->dt_bias, err);
  if (!s) s = bind_small(b, NAME("A_log"), 1, &nv, alog, err);
#undef NAME
  /* exp(A_log) for A_log > 0 as 1 / exp(-A_log): fidelis' exp takes arguments <= 0. A GGUF
   * holds -exp(A_log), rounded to float32 by the converter: A_log itself is gone, so that value
   * is the model (docs/GGUF.md says what it costs). */
  for (size_t h = 0; !s && h < nv; h++) {
    if (b->m->gguf_converted && !(alog[h] < 0.0f))
      s = fdl_fail(err, FDL_PARSE, "tensor %s[%zu] = %g: ssm_a must be -exp(A_log) < 0", n, h,
                   (double)alog[h]);
    else if (b->m->gguf_converted)
      l->decay[h] = -(double)alog[h];
    else
      l->decay[h] = alog[h] <= 0.0f ? fdl_num_exp_neg((double)alog[h])
                                    : 1.0 / fdl_num_exp_neg(-(double)alog[h]);
  }
  free(alog);
  return s;
}

static fdl_status attention(eng_binder *b, eng_layer *l, const char *pre, fdl_err *err) {
  const fdl_model_info *in = &b->m->info;
  size_t H = in->hidden, hd = in->head_dim, qd = in->heads * hd, kvd = in->kv_heads * hd;
  char n[192];
#define NAME(suffix) (snprintf(n, sizeof n, "%sself_attn.%s", pre, suffix), n)
  fdl_status s;
  if ((s = fdl_eng_bind_mat(b, NAME("q_proj.weight"), 2 * qd, H, &l->q, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("k_proj.weight"), kvd, H, &l->k, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("v_proj.weight"), kvd, H, &l->v, err)) ||
      (s = fdl_eng_bind_mat(b, NAME("o_proj.weight"), H, qd, &l->o, err)) ||
      (s = fdl_eng_bind_vec(b, NAME("q_norm.weight"), hd, &l->q_norm, err)) ||
      (s = fdl_eng_bind_vec(b, NAME("k_norm.weight"), hd, &l->k_norm, err)))
    return s;
#undef NAME
  centre(b->m, l->q_norm, hd);
  centre(b->m, l->k_norm, hd);
  return FDL_OK;
}

fdl_status fdl_eng_bind_qwen35_layer(eng_binder *b, size_t i, fdl_err *err) {
  fdl_model *m = b->m;
  const fdl_model_info *in = &m->info;
  eng_layer *l = &m->layer[i];
  size_t H = in->hidden;
  char pre[96], n[192];
  snprintf(pre, sizeof pre, "%slayers.%zu.", in->prefix, i);
#define NAME(suffix) (snprintf(n, sizeof n, "%s%s", pre, suffix), n)
  fdl_status s;
  if ((s = fdl_eng_bind_vec(b, NAME("input_layernorm.weight"), H, &l->in_norm, err)) ||
      (s = fdl_eng_bind_vec(b, NAME("post_attention_layernorm.weight"), H, &l->post_norm, err)) ||
      (s = fdl_eng_bind_mlp(b, i, pre, err)))
    return s;
#undef NAME
  centre(m, l->in_norm, H);
  centre(m, l->post_norm, H);
  if (!in->linear[i]) return attention(b, l, pre, err);
  for (size_t j = 0; j < i; j++) l->lin += in->linear[j];
  return deltanet(b, l, pre, err);
}
