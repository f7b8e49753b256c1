/* gguf_qwen35.c - what a Qwen3.5 GGUF (`qwen35`) adds to gguf_model.c (docs/GGUF.md, "Qwen3.5"):
 * its metadata as the config.json keys config_qwen35.c reads, and the V-head order of its
 * Gated DeltaNet tensors put back.
 *
 * Facts from llama.cpp's converter (Qwen3_5TextModel over Qwen3NextModel):
 * - ssm.conv_kernel, ssm.state_size, ssm.group_count, ssm.time_step_rank and ssm.inner_size are
 *   linear_conv_kernel_dim, linear_key_head_dim, linear_num_key_heads, linear_num_value_heads
 *   and linear_value_head_dim x linear_num_value_heads; full_attention_interval is written, the
 *   per-layer pattern is not (layer i is full attention when (i + 1) % interval == 0);
 *   rope.dimension_count is int(head_dim x partial_rotary_factor); block_count counts the
 *   multi-token-prediction blocks (nextn_predict_layers) after the trunk.
 * - When linear_num_key_heads nk != linear_num_value_heads nv, the value heads are stored
 *   "tiled": GGUF head ri*nk + g is Hugging Face head g*r + ri (r = nv/nk), in the V rows of
 *   in_proj_qkv and the V channels of conv1d (after the 2*nk*dk query and key rows), the rows
 *   of in_proj_z (heads of dv), in_proj_b, in_proj_a, A_log, dt_bias (heads of 1), and the
 *   columns of out_proj (heads of dv). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/path.h"
#include "engine/internal.h"

static fdl_status get(const fdl_gguf *g, const char *key, bool required, int64_t *v, fdl_err *err) {
  char k[128];
  snprintf(k, sizeof k, "qwen35.%s", key);
  const fdl_gguf_kv *kv = fdl_gguf_find(g, k);
  if (!kv) return required ? fdl_fail(err, FDL_PARSE, "%s: no %s", g->path, k) : FDL_OK;
  fdl_status s = fdl_gguf_get_int(g, kv, v, err);
  if (!s && (*v < 0 || *v > (int64_t)1 << 40))
    s = fdl_fail(err, FDL_PARSE, "%s: %s = %lld is out of range", g->path, k, (long long)*v);
  return s;
}

fdl_status fdl_eng_gguf_qwen35_config(const fdl_gguf *g, json_t *cfg, fdl_err *err) {
  int64_t conv = 0, dk = 0, nk = 0, nv = 0, inner = 0, every = 4, rot = 0, hd = 0, vl = 0;
  int64_t layers = 0, nextn = 0;
  fdl_status s;
  if ((s = get(g, "ssm.conv_kernel", true, &conv, err)) ||
      (s = get(g, "ssm.state_size", true, &dk, err)) ||
      (s = get(g, "ssm.group_count", true, &nk, err)) ||
      (s = get(g, "ssm.time_step_rank", true, &nv, err)) ||
      (s = get(g, "ssm.inner_size", true, &inner, err)) ||
      (s = get(g, "full_attention_interval", false, &every, err)) ||
      (s = get(g, "rope.dimension_count", true, &rot, err)) ||
      (s = get(g, "attention.key_length", true, &hd, err)) ||
      (s = get(g, "attention.value_length", false, &vl, err)) ||
      (s = get(g, "block_count", true, &layers, err)) ||
      (s = get(g, "nextn_predict_layers", false, &nextn, err)))
    return s;
  if (fdl_gguf_find(g, "qwen35.attention.recurrent_layers"))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: qwen35.attention.recurrent_layers (a per-layer pattern) is not read yet; "
                    "only full_attention_interval is",
                    g->path);
  if (!nv || inner % nv || !every || (vl && vl != hd) || nextn >= layers || !hd)
    return fdl_fail(err, FDL_PARSE,
                    "%s: inconsistent qwen35 metadata (ssm.inner_size %lld over ssm.time_step_rank "
                    "%lld, full_attention_interval %lld, key/value_length %lld/%lld, block_count "
                    "%lld with %lld nextn layers)",
                    g->path, (long long)inner, (long long)nv, (long long)every, (long long)hd,
                    (long long)vl, (long long)layers, (long long)nextn);
  /* config_qwen35.c takes int(head_dim * factor) rotary dimensions: the factor must give back
   * exactly rope.dimension_count. */
  double f = (double)rot / (double)hd;
  if (floor((double)hd * f) != (double)rot)
    return fdl_fail(err, FDL_PARSE, "%s: rope.dimension_count %lld of key_length %lld", g->path,
                    (long long)rot, (long long)hd);
  json_object_set_new(cfg, "num_hidden_layers", json_integer(layers - nextn));
  json_object_set_new(cfg, "linear_conv_kernel_dim", json_integer(conv));
  json_object_set_new(cfg, "linear_key_head_dim", json_integer(dk));
  json_object_set_new(cfg, "linear_num_key_heads", json_integer(nk));
  json_object_set_new(cfg, "linear_num_value_heads", json_integer(nv));
  json_object_set_new(cfg, "linear_value_head_dim", json_integer(inner / nv));
  json_object_set_new(cfg, "full_attention_interval", json_integer(every));
  json_object_set_new(cfg, "partial_rotary_factor", json_real(f));
  return FDL_OK;
}

void fdl_eng_gguf_qwen35_reorder(const fdl_model_info *in, const char *hf, eng_reorder *o) {
  size_t nk = in->lin_k_heads, nv = in->lin_v_heads, qk = 2 * nk * in->lin_k_dim;
  if (!nk || nk == nv || !strstr(hf, ".linear_attn.")) return;
  static const struct {
    const char *tail;
    bool qk_first, dv, cols;
  } T[] = {{"in_proj_qkv.weight", true, true, false}, {"conv1d.weight", true, true, false},
           {"in_proj_z.weight", false, true, false},  {"in_proj_b.weight", false, false, false},
           {"in_proj_a.weight", false, false, false}, {"A_log", false, false, false},
           {"dt_bias", false, false, false},          {"out_proj.weight", false, true, true}};
  for (size_t i = 0; i < sizeof T / sizeof *T; i++)
    if (fdl_ends_with(hf, T[i].tail)) {
      o->v_first = T[i].qk_first ? qk : 0;
      o->v_nk = nk;
      o->v_r = nv / nk;
      o->v_hd = T[i].dv ? in->lin_v_dim : 1;
      o->cols = T[i].cols;
      return;
    }
}

size_t fdl_eng_reorder_src(const eng_reorder *o, size_t r) {
  if (o->head_dim) {
    size_t d = o->head_dim, half = d / 2, h = r / d, rem = r % d;
    return h * d + 2 * (rem % half) + rem / half;
  }
  if (!o->v_r || r < o->v_first) return r;
  size_t x = r - o->v_first, h = x / o->v_hd, e = x % o->v_hd;
  return o->v_first + ((h % o->v_r) * o->v_nk + h / o->v_r) * o->v_hd + e;
}
