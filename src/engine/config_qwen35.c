/* config_qwen35.c - the Qwen3.5 part of config.json (docs/QWEN35.md): the hybrid layer pattern,
 * the Gated DeltaNet's dimensions, partial RoPE, and the checkpoint's tensor prefix. What the
 * engine does not implement (attention biases, another layer type) is refused by name. */
#include <math.h>
#include <string.h>

#include "base/sys.h"
#include "base/check.h"
#include "engine/internal.h"

/* transformers' defaults for the fields a config may leave out. */
#define Q35_CONV 4
#define Q35_KDIM 128
#define Q35_VDIM 128
#define Q35_KHEADS 16
#define Q35_VHEADS 32
#define Q35_INTERVAL 4
#define Q35_PARTIAL 0.25

static fdl_status layer_kinds(const json_t *tc, const char *path, fdl_model_info *info,
                              fdl_err *err) {
  unsigned char *kind = fdl_calloc(info->layers, 1);
  if (!kind) return fdl_fail(err, FDL_NOMEM, "out of memory");
  info->linear = kind;
  const json_t *lt = fdl_eng_cfg_given(tc, "layer_types");
  if (lt) {
    if (!json_is_array(lt) || json_array_size(lt) != info->layers)
      return fdl_fail(err, FDL_PARSE,
                      "%s: layer_types must be an array of %zu strings (one per layer)", path,
                      info->layers);
    for (size_t i = 0; i < info->layers; i++) {
      const char *t = json_string_value(json_array_get(lt, i));
      if (t && !strcmp(t, "linear_attention"))
        kind[i] = 1;
      else if (!t || strcmp(t, "full_attention"))
        return fdl_fail(err, FDL_UNSUPPORTED,
                        "%s: layer_types[%zu] is %s: Qwen3.5 layers are linear_attention or "
                        "full_attention",
                        path, i, t ? t : "not a string");
    }
  } else {
    size_t every;
    fdl_status s =
        fdl_eng_cfg_size(tc, path, "full_attention_interval", false, Q35_INTERVAL, &every, err);
    if (s) return s;
    for (size_t i = 0; i < info->layers; i++) kind[i] = (i + 1) % every != 0;
  }
  for (size_t i = 0; i < info->layers; i++) info->linear_layers += kind[i];
  return FDL_OK;
}

/* tie_word_embeddings may sit at the top level of a wrapping checkpoint, in its text_config, or
 * both; two different answers are refused rather than one picked. */
static fdl_status tied(const json_t *cfg, const json_t *tc, const char *path, fdl_model_info *info,
                       fdl_err *err) {
  if (cfg == tc) return FDL_OK;
  if (!fdl_eng_cfg_given(cfg, "tie_word_embeddings")) return FDL_OK;
  bool t;
  fdl_status s = fdl_eng_cfg_bool(cfg, path, "tie_word_embeddings", false, &t, err);
  if (s) return s;
  if (fdl_eng_cfg_given(tc, "tie_word_embeddings") && t != info->tied)
    return fdl_fail(err, FDL_PARSE,
                    "%s: tie_word_embeddings is %s at the top level but %s in text_config", path,
                    t ? "true" : "false", info->tied ? "true" : "false");
  info->tied = t;
  return FDL_OK;
}

static fdl_status rotary(const json_t *rope_src, const json_t *tc, const char *path,
                         fdl_model_info *info, fdl_err *err) {
  const json_t *src = json_object_get(rope_src, "partial_rotary_factor") ? rope_src : tc;
  double f;
  fdl_status s = fdl_eng_cfg_real(src, path, "partial_rotary_factor", Q35_PARTIAL, &f, err);
  if (s) return s;
  /* transformers takes int(head_dim * factor). */
  double d = floor((double)info->head_dim * f);
  if (!(f <= 1.0) || d < 2.0 || fmod(d, 2.0) != 0.0)
    return fdl_fail(err, FDL_PARSE,
                    "%s: partial_rotary_factor %g gives %g rotary dimensions of head_dim %zu "
                    "(expected an even number from 2 to head_dim)",
                    path, f, d, info->head_dim);
  info->rotary_dim = (size_t)d;
  return FDL_OK;
}

fdl_status fdl_eng_config_qwen35(const json_t *cfg, const json_t *tc, const json_t *rope_src,
                                 const char *path, fdl_model_info *info, fdl_err *err) {
  bool wrapped = cfg != tc;
  if (fdl_eng_cfg_set(json_object_get(tc, "attention_bias")))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: attention_bias is true: Qwen3.5 attention biases are not supported", path);
  fdl_status s;
  if ((s = fdl_eng_cfg_size(tc, path, "linear_conv_kernel_dim", false, Q35_CONV, &info->conv_kernel,
                            err)) ||
      (s = fdl_eng_cfg_size(tc, path, "linear_key_head_dim", false, Q35_KDIM, &info->lin_k_dim,
                            err)) ||
      (s = fdl_eng_cfg_size(tc, path, "linear_value_head_dim", false, Q35_VDIM, &info->lin_v_dim,
                            err)) ||
      (s = fdl_eng_cfg_size(tc, path, "linear_num_key_heads", false, Q35_KHEADS, &info->lin_k_heads,
                            err)) ||
      (s = fdl_eng_cfg_size(tc, path, "linear_num_value_heads", false, Q35_VHEADS,
                            &info->lin_v_heads, err)))
    return s;
  if (info->lin_v_heads % info->lin_k_heads)
    return fdl_fail(err, FDL_PARSE,
                    "%s: linear_num_value_heads %zu is not a multiple of linear_num_key_heads %zu",
                    path, info->lin_v_heads, info->lin_k_heads);
  if (info->conv_kernel > 64 || info->lin_k_dim > 4096 || info->lin_v_dim > 4096 ||
      info->lin_k_heads > 4096 || info->lin_v_heads > 4096)
    return fdl_fail(err, FDL_PARSE, "%s: Gated DeltaNet dimensions beyond the engine's bounds",
                    path);
  /* The recurrent state of a DeltaNet layer (v heads x dk x dv floats) must be justified by
   * the layer's own projections (in_proj_qkv and out_proj: H x (2 nk dk + 2 nv dv) weights),
   * so a small checkpoint cannot ask for gigabytes of state; released models hold 30 times
   * more weights than state (docs/QWEN35.md, "Limits"). */
  size_t H = info->hidden, nk = info->lin_k_heads, nv = info->lin_v_heads;
  size_t dk = info->lin_k_dim, dv = info->lin_v_dim; /* each <= 4096: no product overflows */
  size_t state = nv * dk * dv, per = 2 * nk * dk + 2 * nv * dv;
  size_t proj;
  if (!fdl_size_mul(H, per, &proj)) proj = SIZE_MAX; /* hidden_size < 2^40 */
  if (state > proj)
    return fdl_fail(err, FDL_PARSE,
                    "%s: a Gated DeltaNet layer's recurrent state would be %zu floats "
                    "(linear_num_value_heads %zu x linear_key_head_dim %zu x "
                    "linear_value_head_dim %zu), more than the %zu weights of its projections "
                    "(hidden_size %zu): no real model is shaped so; refused",
                    path, state, nv, dk, dv, proj, H);
  if ((s = layer_kinds(tc, path, info, err)) || (s = tied(cfg, tc, path, info, err)) ||
      (s = rotary(rope_src, tc, path, info, err)))
    return s;
  info->qk_norm = info->zero_centred = info->attn_gate = true;
  info->vision_tower = wrapped && fdl_eng_cfg_given(cfg, "vision_config");
  info->prefix = wrapped ? "model.language_model." : "model.";
  info->head_tensor = !info->tied ? "lm_head.weight"
                      : wrapped   ? "model.language_model.embed_tokens.weight"
                                  : "model.embed_tokens.weight";
  return FDL_OK;
}
