/* config.c - reads a Hugging Face config.json into fdl_model_info. Every fact the forward pass
 * depends on is read here, and every field that would change the math in a way the engine does
 * not implement is refused by name: computing something else under the same name would make a
 * capture lie about what it measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/sys.h"
#include "engine/internal.h"
#include "base/quote.h"

static const char *const k_arch[] = {"LlamaForCausalLM",
                                     "Qwen2ForCausalLM",
                                     "Qwen3ForCausalLM",
                                     "Qwen3_5ForCausalLM",
                                     "Qwen3_5ForConditionalGeneration",
                                     "Qwen3MoeForCausalLM",
                                     "Qwen3_5MoeForCausalLM",
                                     "Qwen3_5MoeForConditionalGeneration",
                                     "MistralForCausalLM"};
#define N_ARCH (sizeof k_arch / sizeof *k_arch)
#define ARCHS                                                                                      \
  "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "                    \
  "Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, Qwen3_5MoeForCausalLM or "                 \
  "Qwen3_5MoeForConditionalGeneration"

/* Fields whose presence (non-null, non-false, non-zero) means a mixture of experts. */
static const char *const k_moe[] = {
    "num_experts",           "num_local_experts", "num_experts_per_tok", "n_routed_experts",
    "moe_intermediate_size", "n_shared_experts",  "decoder_sparse_step"};

const json_t *fdl_eng_cfg_given(const json_t *o, const char *key) {
  const json_t *v = json_object_get(o, key);
  return json_is_null(v) ? NULL : v;
}

bool fdl_eng_cfg_set(const json_t *v) {
  if (!v || json_is_null(v) || json_is_false(v)) return false;
  if (json_is_integer(v)) return json_integer_value(v) != 0;
  return true;
}

fdl_status fdl_eng_cfg_size(const json_t *cfg, const char *path, const char *key, bool required,
                            size_t dflt, size_t *out, fdl_err *err) {
  const json_t *v = fdl_eng_cfg_given(cfg, key);
  if (!v) {
    if (required)
      return fdl_fail(err, FDL_PARSE, "%s: missing field %s (a positive integer)", path, key);
    *out = dflt;
    return FDL_OK;
  }
  if (!json_is_integer(v) || json_integer_value(v) <= 0 || json_integer_value(v) > (1LL << 40))
    return fdl_fail(err, FDL_PARSE, "%s: field %s must be a positive integer below 2^40", path,
                    key);
  *out = (size_t)json_integer_value(v);
  return FDL_OK;
}

fdl_status fdl_eng_cfg_real(const json_t *cfg, const char *path, const char *key, double dflt,
                            double *out, fdl_err *err) {
  const json_t *v = fdl_eng_cfg_given(cfg, key);
  if (!v) {
    *out = dflt;
    return FDL_OK;
  }
  if (!json_is_number(v) || !(json_number_value(v) > 0) || !isfinite(json_number_value(v)))
    return fdl_fail(err, FDL_PARSE, "%s: field %s must be a positive number", path, key);
  *out = json_number_value(v);
  return FDL_OK;
}

fdl_status fdl_eng_cfg_bool(const json_t *cfg, const char *path, const char *key, bool dflt,
                            bool *out, fdl_err *err) {
  const json_t *v = fdl_eng_cfg_given(cfg, key);
  if (!v) {
    *out = dflt;
    return FDL_OK;
  }
  if (!json_is_boolean(v))
    return fdl_fail(err, FDL_PARSE, "%s: field %s must be true or false", path, key);
  *out = json_is_true(v);
  return FDL_OK;
}

/* Which layers attend over a sliding window (docs/SLIDING.md, as transformers' Qwen2/Qwen3
 * configs decide): the window is sliding_window when use_sliding_window is true; layer_types, when
 * given, names each layer full_attention or sliding_attention, and otherwise layers from
 * max_window_layers (default 28) on slide. Llama has no sliding window: a value there, or a
 * sliding layer, means a model of another family and is refused. */
static fdl_status windows(const json_t *cfg, const char *path, int arch, fdl_model_info *info,
                          fdl_err *err) {
  fdl_status s;
  size_t w = 0, from = 28;
  bool use = fdl_eng_cfg_set(json_object_get(cfg, "use_sliding_window"));
  if (arch == 0 && (use || fdl_eng_cfg_set(json_object_get(cfg, "sliding_window"))))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: sliding_window is set on Llama, which has no sliding-window attention "
                    "(a model of another family?)",
                    path);
  if (use && (s = fdl_eng_cfg_size(cfg, path, "sliding_window", true, 0, &w, err))) return s;
  const json_t *mw = fdl_eng_cfg_given(cfg, "max_window_layers"); /* 0: every layer slides */
  if (use && mw) {
    if (!json_is_integer(mw) || json_integer_value(mw) < 0)
      return fdl_fail(err, FDL_PARSE, "%s: field max_window_layers must be an integer >= 0", path);
    from = (size_t)json_integer_value(mw);
  }
  const json_t *lt = fdl_eng_cfg_given(cfg, "layer_types");
  if (lt && (!json_is_array(lt) || json_array_size(lt) != info->layers))
    return fdl_fail(err, FDL_PARSE,
                    "%s: layer_types must be an array of num_hidden_layers (%zu) strings", path,
                    info->layers);
  unsigned char *slide = fdl_calloc(info->layers ? info->layers : 1, 1);
  if (!slide) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t n = 0;
  for (size_t i = 0; i < info->layers; i++) {
    const char *t = lt ? json_string_value(json_array_get(lt, i)) : NULL;
    if (lt && (!t || (strcmp(t, "full_attention") && strcmp(t, "sliding_attention")))) {
      free(slide);
      return fdl_fail(err, FDL_UNSUPPORTED,
                      "%s: layer_types[%zu] is %s (expected full_attention or sliding_attention)",
                      path, i, t ? t : "not a string");
    }
    slide[i] = lt ? !strcmp(t, "sliding_attention") : w && i >= from;
    n += slide[i];
  }
  if (n && !w) {
    free(slide);
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: layer_types names sliding_attention layers but %s: no window to "
                    "apply (expected use_sliding_window true and a sliding_window)",
                    path,
                    arch == 0 ? "Llama has no sliding window" : "use_sliding_window is not true");
  }
  if (!n) {
    free(slide);
    return FDL_OK;
  }
  info->sliding = slide;
  info->sliding_window = w;
  return FDL_OK;
}

/* Mistral (transformers' MistralConfig): every layer attends over sliding_window keys; absent,
 * the window is its default 4096; null, there is none. */
static fdl_status mistral_window(const json_t *cfg, const char *path, fdl_model_info *info,
                                 fdl_err *err) {
  const json_t *v = json_object_get(cfg, "sliding_window");
  if (v && json_is_null(v)) return FDL_OK;
  fdl_status s =
      fdl_eng_cfg_size(cfg, path, "sliding_window", false, 4096, &info->sliding_window, err);
  if (s) return s;
  unsigned char *slide = fdl_malloc(info->layers ? info->layers : 1);
  if (!slide) return fdl_fail(err, FDL_NOMEM, "out of memory");
  memset(slide, 1, info->layers ? info->layers : 1);
  info->sliding = slide;
  return FDL_OK;
}

static fdl_status refusals(const json_t *cfg, const char *path, bool moe, fdl_err *err) {
  const json_t *act = json_object_get(cfg, "hidden_act");
  if (act && !(json_is_string(act) && strcmp(json_string_value(act), "silu") == 0))
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: hidden_act %s is not supported (expected \"silu\")",
                    path, json_is_string(act) ? json_string_value(act) : "(not a string)");
  for (size_t i = 0; !moe && i < sizeof k_moe / sizeof *k_moe; i++)
    if (fdl_eng_cfg_set(json_object_get(cfg, k_moe[i])))
      return fdl_fail(err, FDL_UNSUPPORTED,
                      "%s: %s is set: mixture-of-experts (MoE) models are not supported", path,
                      k_moe[i]);
  if (fdl_eng_cfg_set(json_object_get(cfg, "mlp_bias")))
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: mlp_bias is true: MLP biases are not supported",
                    path);
  return FDL_OK;
}

/* AWQ's settings: 4-bit, AutoAWQ's GEMM packing, with zero points (what fdl_awq_reconstruct
 * reads); the other versions pack for other kernels and are refused by name. */
static fdl_status awq_config(const json_t *q, const char *path, fdl_model_info *info,
                             fdl_err *err) {
  const json_t *bits = json_object_get(q, "bits");
  if (!json_is_integer(bits) || json_integer_value(bits) != 4)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.bits: AWQ checkpoints are read at 4 bits only", path);
  const char *v = json_string_value(json_object_get(q, "version"));
  if (v && strcasecmp(v, "gemm"))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.version %s: only AutoAWQ's GEMM packing is read "
                    "(expected \"gemm\")",
                    path, v);
  const json_t *zp = fdl_eng_cfg_given(q, "zero_point");
  if (zp && !json_is_true(zp))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.zero_point is false: AWQ without zero points is not "
                    "read",
                    path);
  info->awq = true;
  info->gptq_bits = 4;
  return FDL_OK;
}

/* quantization_config: only what the engine decodes exactly (quant_load.c): GPTQ with 2-, 3-, 4-
 * or 8-bit weights in the v1 checkpoint format (`fidelis quantize` writes it; AutoGPTQ and
 * optimum do too) or v2 (GPTQModel), AWQ's GEMM layout, and compressed-tensors
 * (ctensors_config.c). Anything else (another method, other bits) is refused by name. */
static fdl_status quant_config(const json_t *cfg, const char *path, fdl_model_info *info,
                               fdl_err *err) {
  const json_t *q = fdl_eng_cfg_given(cfg, "quantization_config");
  if (!q) return FDL_OK;
  if (!json_is_object(q))
    return fdl_fail(err, FDL_PARSE, "%s: quantization_config must be an object", path);
  const char *method = json_string_value(json_object_get(q, "quant_method"));
  if (!method ||
      (strcmp(method, "gptq") && strcmp(method, "awq") && strcmp(method, "compressed-tensors")))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.quant_method %s is not supported (expected \"gptq\", "
                    "\"awq\" or \"compressed-tensors\")",
                    path, method ? method : "(missing)");
  if (!strcmp(method, "compressed-tensors")) return fdl_eng_ct_config(q, path, info, err);
  fdl_status s = !strcmp(method, "awq") ? awq_config(q, path, info, err) : FDL_OK;
  if (s) return s;
  const json_t *bits = json_object_get(q, "bits");
  json_int_t b = json_is_integer(bits) ? json_integer_value(bits) : 0;
  if (b != 2 && b != 3 && b != 4 && b != 8) {
    char got[32] = "(missing or not an integer)";
    if (json_is_integer(bits)) snprintf(got, sizeof got, "%lld", (long long)b);
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.bits %s: GPTQ checkpoints of these bits are not read "
                    "(expected 2, 3, 4 or 8)",
                    path, got);
  }
  info->gptq_bits = (unsigned)b;
  const json_t *fv = info->awq ? NULL : fdl_eng_cfg_given(q, "checkpoint_format");
  const char *fmt = json_string_value(fv);
  if (fv && (!fmt || (strcmp(fmt, "gptq") && strcmp(fmt, "gptq_v2")))) {
    char qf[FDL_QUOTE_CAP];
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.checkpoint_format %s is not supported (expected "
                    "\"gptq\", zero points stored minus 1, or \"gptq_v2\", stored as is)",
                    path, fmt ? fdl_quote_str(fmt, qf, sizeof qf) : "(not a string)");
  }
  info->gptq_v2 = fmt && !strcmp(fmt, "gptq_v2");
  const json_t *g = json_object_get(q, "group_size");
  if (!json_is_integer(g) || json_integer_value(g) <= 0)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.group_size must be a positive integer (one group "
                    "per row, -1, is not supported)",
                    path);
  info->gptq_group = (size_t)json_integer_value(g);
  return FDL_OK;
}

/* The text model's config: the top level, or text_config for a checkpoint that wraps it. */
static fdl_status text_config(const json_t *cfg, const char *path, int arch, const char *name,
                              const json_t **tc, fdl_err *err) {
  *tc = cfg;
  if (arch != 4) return FDL_OK;
  *tc = json_object_get(cfg, "text_config");
  if (!json_is_object(*tc))
    return fdl_fail(err, FDL_PARSE,
                    "%s: text_config must be an object (%s keeps the text "
                    "model's fields there)",
                    path, name);
  return FDL_OK;
}

static fdl_status dims(const json_t *tc, const char *path, bool no_mlp, fdl_model_info *info,
                       fdl_err *err) {
  fdl_status s;
  if ((s = fdl_eng_cfg_size(tc, path, "vocab_size", true, 0, &info->vocab, err)) ||
      (s = fdl_eng_cfg_size(tc, path, "hidden_size", true, 0, &info->hidden, err)) ||
      (s = fdl_eng_cfg_size(tc, path, "num_hidden_layers", true, 0, &info->layers, err)) ||
      (s = fdl_eng_cfg_size(tc, path, "num_attention_heads", true, 0, &info->heads, err)) ||
      (s = fdl_eng_cfg_size(tc, path, "num_key_value_heads", false, info->heads, &info->kv_heads,
                            err)) ||
      (s = fdl_eng_cfg_size(tc, path, "intermediate_size", !no_mlp, 0, &info->intermediate, err)) ||
      (s = fdl_eng_cfg_size(tc, path, "max_position_embeddings", true, 0, &info->max_positions,
                            err)))
    return s;
  if (info->hidden % info->heads && !json_object_get(tc, "head_dim"))
    return fdl_fail(err, FDL_PARSE,
                    "%s: hidden_size %zu is not a multiple of num_attention_heads %zu", path,
                    info->hidden, info->heads);
  if ((s = fdl_eng_cfg_size(tc, path, "head_dim", false, info->hidden / info->heads,
                            &info->head_dim, err)))
    return s;
  if (info->head_dim % 2)
    return fdl_fail(err, FDL_PARSE, "%s: head_dim %zu must be even for RoPE", path, info->head_dim);
  if (info->heads % info->kv_heads)
    return fdl_fail(err, FDL_PARSE,
                    "%s: num_attention_heads %zu is not a multiple of num_key_value_heads %zu",
                    path, info->heads, info->kv_heads);
  if (info->vocab > INT32_MAX)
    return fdl_fail(err, FDL_PARSE, "%s: vocab_size %zu exceeds int32 token ids", path,
                    info->vocab);
  /* Bounds the products the forward pass forms (heads * head_dim, layers * cap * kv_dim). */
  if (info->heads > 65536 || info->head_dim > 65536 || info->layers > 65536 ||
      info->hidden > (1u << 20) || info->intermediate > (1u << 22))
    return fdl_fail(err, FDL_PARSE,
                    "%s: model dimensions beyond the engine's bounds (num_attention_heads, "
                    "head_dim and num_hidden_layers at most 65536, hidden_size 2^20, "
                    "intermediate_size 2^22)",
                    path);
  return FDL_OK;
}

fdl_status fdl_eng_config(const json_t *cfg, const char *path, fdl_model_info *info, fdl_err *err) {
  memset(info, 0, sizeof *info);
  if (!json_is_object(cfg)) return fdl_fail(err, FDL_PARSE, "%s: not a JSON object", path);
  const json_t *archs = json_object_get(cfg, "architectures");
  if (!json_is_array(archs) || json_array_size(archs) != 1 ||
      !json_is_string(json_array_get(archs, 0)))
    return fdl_fail(err, FDL_PARSE, "%s: architectures must be an array of one string (" ARCHS ")",
                    path);
  const char *a = json_string_value(json_array_get(archs, 0));
  int arch = -1;
  for (int i = 0; i < (int)N_ARCH; i++)
    if (strcmp(a, k_arch[i]) == 0) arch = i;
  /* The MoE siblings are their dense architecture in everything but the MLP (moe.c); Mistral
   * is Llama with a sliding window on every layer */
  int named = arch;
  bool moe = arch >= 5 && arch <= 7, mistral = arch == 8;
  if (moe) arch = arch == 5 ? 2 : arch - 3;
  if (mistral) arch = 0;
  if (arch < 0)
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: unsupported architecture %s (expected " ARCHS ")",
                    path, a);
  info->arch = k_arch[named];
  const json_t *tc, *rope_src;
  fdl_status s = text_config(cfg, path, arch, info->arch, &tc, err);
  if (!s) s = refusals(tc, path, moe, err);
  if (!s) s = quant_config(cfg, path, info, err);
  /* Qwen3.5 MoE routes every layer: it has no dense MLP, so no intermediate_size */
  if (!s) s = dims(tc, path, moe && arch >= 3, info, err);
  if (!s) s = fdl_eng_rope_config(tc, path, arch < 3, info, &rope_src, err);
  if (!s && arch < 3)
    s = mistral ? mistral_window(tc, path, info, err) : windows(tc, path, arch, info, err);
  if (s) return s;
  if ((s = fdl_eng_cfg_real(rope_src, path, "rope_theta", 10000.0, &info->rope_theta, err)) ||
      (s = fdl_eng_cfg_real(tc, path, "rms_norm_eps", 1e-6, &info->rms_eps, err)) ||
      (s = fdl_eng_cfg_bool(tc, path, "tie_word_embeddings", false, &info->tied, err)))
    return s;
  /* theta >= 1 keeps every rotary frequency theta^(-2i/d) at or below 1, so a position times a
   * frequency stays below 2^20 (fdl_eng_check_ids bounds positions), inside fdl_eng_sincos's range.
   */
  if (!(info->rope_theta >= 1.0))
    return fdl_fail(err, FDL_PARSE,
                    "%s: field rope_theta is %g, expected at least 1 (below 1 the rotary "
                    "frequencies exceed 1 and the angles leave the range the engine computes)",
                    path, info->rope_theta);
  info->rotary_dim = info->head_dim;
  if (arch >= 3) {
    if ((s = fdl_eng_config_qwen35(cfg, tc, rope_src, path, info, err))) return s;
    return moe ? fdl_eng_moe_config(tc, path, true, info, err) : FDL_OK;
  }
  bool ab = false;
  if ((s = fdl_eng_cfg_bool(cfg, path, "attention_bias", false, &ab, err))) return s;
  info->attn_bias = arch == 1 || ab;
  info->o_bias = arch != 1 && ab;
  info->qk_norm = arch == 2;
  info->prefix = "model.";
  info->head_tensor = info->tied ? "model.embed_tokens.weight" : "lm_head.weight";
  return moe ? fdl_eng_moe_config(tc, path, false, info, err) : FDL_OK;
}
