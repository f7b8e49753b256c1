/* model_init.c - `fidelis model init`: a deterministic random model in Hugging Face layout.
 *
 * The checkpoint is a pure function of (preset, seed), the same bytes on every machine. Each
 * tensor draws from its own xoshiro256** stream, seeded by the model seed and the tensor's
 * name, so adding a tensor to a preset never moves another one's values. A value is
 * approximately normal: the four 16-bit lanes of one 64-bit draw are summed (Irwin-Hall, n = 4)
 * in integers, centred, and scaled by one double multiply to the wanted standard deviation.
 * Box-Muller or the polar method would need log, sin or cos, which libm does not round the
 * same way everywhere; integer sums, one multiply, sqrt and the conversions are exact or
 * correctly rounded in IEEE arithmetic, so the bits cannot move. The tails stop at
 * 2 sqrt(3) = 3.46 standard deviations, which a random test model does not miss.
 *
 * Distributions (docs/MODELS.md): embeddings N(0, 1); every projection N(0, 1/fan_in), so a
 * unit-RMS input gives unit-RMS outputs; an untied lm_head N(0, 9/hidden) and, for a tied
 * model, a final norm scaled by 3/sqrt(hidden), so the logits spread with a standard deviation
 * of about 3 either way; q/k/v biases N(0, 0.01); norms 1 + N(0, 0.0025). Qwen3.5 stores its
 * zero-centred norms as the multiplier minus 1 (the final one with the same gain), its conv1d
 * N(0, 1/K), dt_bias 1 + N(0, 0.01) and A_log as a fixed log-even spread of A over [1, 8].
 *
 * Divisions: the panel; tensors; config; the run. The presets are model_presets.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/sys.h"
#include "engine/model_internal.h"
#include "json/json.h"
#include "fidelis/model.h"
#include "base/path.h"

/* ---- the panel ---------------------------------------------------------------------------- */

/* Token ids are bytes: bos (256), then the ASCII codes of a fixed text, which every preset's
 * vocabulary (>= 272) holds. Nothing here depends on the seed: a model and its quantized twin,
 * or two seeds, are measured on the same panel. */
static const char *const PANEL_DOMAINS[FDL_MODEL_PANEL_CONTEXTS] = {"garden", "arithmetic", "code",
                                                                    "instructions"};
static const char *const PANEL_TEXTS[FDL_MODEL_PANEL_CONTEXTS] = {
    "Sow the peas by the north wall in March, water the young tomatoes at dawn, and mulch "
    "the beans.",
    "17 + 25 = 42; 42 * 3 = 126; 126 - 48 = 78; 78 / 6 = 13; 13 * 13 = 169; 169 + 31 = 200.",
    "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / "
    "len(xs)\n",
    "Preheat the oven to 180 C. Whisk two eggs with the sugar, fold in the flour, and bake for "
    "25 minutes.",
};

fdl_status fdl_model_panel(fdl_buf *out, fdl_err *err) {
  for (size_t c = 0; c < FDL_MODEL_PANEL_CONTEXTS; c++) {
    const char *text = PANEL_TEXTS[c];
    if (strlen(text) < FDL_MODEL_PANEL_TOKENS - 1)
      return fdl_fail(err, FDL_INVALID, "model panel: text %zu is shorter than %d bytes", c,
                      FDL_MODEL_PANEL_TOKENS - 1);
    fdl_buf_printf(out,
                   "{\"index\":%zu,\"window_id\":\"fidelis-model-%04zu\",\"domain\":\"%s\","
                   "\"document_id\":\"fidelis-model-panel/%s\",\"role\":\"final\","
                   "\"tokens\":[%d",
                   c, c, PANEL_DOMAINS[c], PANEL_DOMAINS[c], FDL_MODEL_PANEL_BOS);
    for (size_t t = 0; t + 1 < FDL_MODEL_PANEL_TOKENS; t++)
      fdl_buf_printf(out, ",%u", (unsigned)(unsigned char)text[t]);
    fdl_buf_puts(out, "]}\n");
  }
  fdl_status s = fdl_buf_status(out);
  return s == FDL_OK ? FDL_OK : fdl_fail(err, s, "out of memory for the model panel");
}

/* ---- tensors ------------------------------------------------------------------------------ */

/* K_ZNORM and K_ZFINAL_NORM are Qwen3.5's zero-centred RMSNorm weights (the model multiplies by
 * 1 + w); K_A_LOG is not random at all. */
typedef enum {
  K_EMBED,
  K_PROJ,
  K_HEAD,
  K_BIAS,
  K_NORM,
  K_FINAL_NORM,
  K_ZNORM,
  K_ZFINAL_NORM,
  K_CONV,
  K_DT_BIAS,
  K_A_LOG,
  K_VISION
} kind;

#define SPEC_DIMS 5 /* the vision stub's Conv3d patch embedding */

typedef struct {
  char name[96];
  fdl_dtype dtype;
  int ndim;
  int64_t shape[SPEC_DIMS];
  kind k;
} spec;

/* Appends prefix + fmt (formatted with layer) of the given shape; the shape ends at the first
 * 0 dimension. */
static void put(spec *t, size_t *n, kind k, const int64_t *shape, const char *prefix,
                const char *fmt, size_t layer) {
  spec *s = &t[(*n)++];
  int len = snprintf(s->name, sizeof s->name, "%s", prefix);
  snprintf(s->name + len, sizeof s->name - (size_t)len, fmt, layer);
  s->k = k;
  /* Releases keep A_log in float32 in a BF16 checkpoint (docs/QWEN35.md); so does this one, so
   * that a loader meets the mixed case. */
  s->dtype = k == K_A_LOG ? FDL_DTYPE_F32 : FDL_DTYPE_BF16;
  s->ndim = 0;
  while (s->ndim < SPEC_DIMS && shape[s->ndim]) {
    s->shape[s->ndim] = shape[s->ndim];
    s->ndim++;
  }
}

static void add(spec *t, size_t *n, kind k, int64_t d0, int64_t d1, const char *fmt, size_t layer) {
  put(t, n, k, (const int64_t[SPEC_DIMS]){d0, d1}, "", fmt, layer);
}

static uint64_t numel(const spec *t) {
  uint64_t m = 1;
  for (int d = 0; d < t->ndim; d++) m *= (uint64_t)t->shape[d];
  return m;
}

/* Room for every preset's list: at most 14 tensors a layer beside its experts, 6 outside the
 * layers. */
static size_t tensor_cap(const fdl_model_preset *p) {
  return 8 + (16 + 3 * p->experts + 5) * p->layers;
}

/* A routed MLP in the module order of transformers' sparse MoE blocks: the router, the experts
 * (fused when there is a shared expert: Qwen3.5 MoE), then the shared expert and its gate. */
static void list_moe(const fdl_model_preset *p, spec *t, size_t *n, const char *P, size_t l) {
  int64_t h = (int64_t)p->hidden, e = (int64_t)p->experts, f = (int64_t)p->moe_intermediate,
          sh = (int64_t)p->shared_intermediate;
#define T(d0, d1, d2, fmt) put(t, n, K_PROJ, (const int64_t[SPEC_DIMS]){d0, d1, d2}, P, fmt, l)
  T(e, h, 0, "layers.%zu.mlp.gate.weight");
  if (sh) {
    T(e, 2 * f, h, "layers.%zu.mlp.experts.gate_up_proj");
    T(e, h, f, "layers.%zu.mlp.experts.down_proj");
    T(sh, h, 0, "layers.%zu.mlp.shared_expert.gate_proj.weight");
    T(sh, h, 0, "layers.%zu.mlp.shared_expert.up_proj.weight");
    T(h, sh, 0, "layers.%zu.mlp.shared_expert.down_proj.weight");
    T(1, h, 0, "layers.%zu.mlp.shared_expert_gate.weight");
  } else {
    for (size_t x = 0; x < p->experts; x++) {
      char fmt[80];
      snprintf(fmt, sizeof fmt, "layers.%%zu.mlp.experts.%zu.gate_proj.weight", x);
      T(f, h, 0, fmt);
      snprintf(fmt, sizeof fmt, "layers.%%zu.mlp.experts.%zu.up_proj.weight", x);
      T(f, h, 0, fmt);
      snprintf(fmt, sizeof fmt, "layers.%%zu.mlp.experts.%zu.down_proj.weight", x);
      T(h, f, 0, fmt);
    }
  }
#undef T
}

static void list_dense(const fdl_model_preset *p, spec *t, size_t *pn) {
  size_t n = 0;
  int64_t h = (int64_t)p->hidden, q = (int64_t)(p->heads * p->head_dim),
          kv = (int64_t)(p->kv_heads * p->head_dim), f = (int64_t)p->intermediate,
          hd = (int64_t)p->head_dim;
  add(t, &n, K_EMBED, (int64_t)p->vocab, h, "model.embed_tokens.weight", 0);
  for (size_t l = 0; l < p->layers; l++) {
    add(t, &n, K_NORM, h, 0, "model.layers.%zu.input_layernorm.weight", l);
    add(t, &n, K_PROJ, q, h, "model.layers.%zu.self_attn.q_proj.weight", l);
    if (p->qkv_bias) add(t, &n, K_BIAS, q, 0, "model.layers.%zu.self_attn.q_proj.bias", l);
    add(t, &n, K_PROJ, kv, h, "model.layers.%zu.self_attn.k_proj.weight", l);
    if (p->qkv_bias) add(t, &n, K_BIAS, kv, 0, "model.layers.%zu.self_attn.k_proj.bias", l);
    add(t, &n, K_PROJ, kv, h, "model.layers.%zu.self_attn.v_proj.weight", l);
    if (p->qkv_bias) add(t, &n, K_BIAS, kv, 0, "model.layers.%zu.self_attn.v_proj.bias", l);
    add(t, &n, K_PROJ, h, q, "model.layers.%zu.self_attn.o_proj.weight", l);
    if (p->qk_norm) {
      add(t, &n, K_NORM, hd, 0, "model.layers.%zu.self_attn.q_norm.weight", l);
      add(t, &n, K_NORM, hd, 0, "model.layers.%zu.self_attn.k_norm.weight", l);
    }
    add(t, &n, K_NORM, h, 0, "model.layers.%zu.post_attention_layernorm.weight", l);
    if (p->experts) {
      list_moe(p, t, &n, "model.", l);
      continue;
    }
    add(t, &n, K_PROJ, f, h, "model.layers.%zu.mlp.gate_proj.weight", l);
    add(t, &n, K_PROJ, f, h, "model.layers.%zu.mlp.up_proj.weight", l);
    add(t, &n, K_PROJ, h, f, "model.layers.%zu.mlp.down_proj.weight", l);
  }
  add(t, &n, K_FINAL_NORM, h, 0, "model.norm.weight", 0);
  if (!p->tied) add(t, &n, K_HEAD, (int64_t)p->vocab, h, "lm_head.weight", 0);
  *pn = n;
}

/* The vision stub's width, patch and channels: small, and only there so that a checkpoint with
 * a vision tower (its config and its tensors) is exercised. */
#define VIS_HIDDEN 32
#define VIS_PATCH 4
#define VIS_TEMPORAL 2
#define VIS_POSITIONS 16

static bool layer_is_full(const fdl_model_preset *p, size_t layer) {
  return !p->full_attention_interval || (layer + 1) % p->full_attention_interval == 0;
}

/* Qwen3.5 in the module order of transformers' qwen3_5 (docs/QWEN35.md, "Tensors"). */
static void list_qwen35(const fdl_model_preset *p, spec *t, size_t *pn) {
  size_t n = 0;
  const char *P = p->vision ? "model.language_model." : "model.";
  int64_t h = (int64_t)p->hidden, f = (int64_t)p->intermediate, hd = (int64_t)p->head_dim,
          q = (int64_t)(p->heads * p->head_dim), kv = (int64_t)(p->kv_heads * p->head_dim);
  int64_t nv = (int64_t)p->linear_value_heads,
          vdim = (int64_t)(p->linear_value_heads * p->linear_value_dim),
          conv = (int64_t)(2 * p->linear_key_heads * p->linear_key_dim) + vdim,
          k = (int64_t)p->conv_kernel;
  if (p->vision) {
    put(t, &n, K_VISION,
        (const int64_t[SPEC_DIMS]){VIS_HIDDEN, 3, VIS_TEMPORAL, VIS_PATCH, VIS_PATCH},
        "model.visual.", "patch_embed.proj.weight", 0);
    put(t, &n, K_VISION, (const int64_t[SPEC_DIMS]){VIS_HIDDEN}, "model.visual.",
        "patch_embed.proj.bias", 0);
    put(t, &n, K_VISION, (const int64_t[SPEC_DIMS]){VIS_POSITIONS, VIS_HIDDEN}, "model.visual.",
        "pos_embed.weight", 0);
  }
#define T(kd, d0, d1, d2, fmt) put(t, &n, kd, (const int64_t[SPEC_DIMS]){d0, d1, d2}, P, fmt, l)
  size_t l = 0;
  T(K_EMBED, (int64_t)p->vocab, h, 0, "embed_tokens.weight");
  for (l = 0; l < p->layers; l++) {
    T(K_ZNORM, h, 0, 0, "layers.%zu.input_layernorm.weight");
    if (layer_is_full(p, l)) {
      T(K_PROJ, 2 * q, h, 0, "layers.%zu.self_attn.q_proj.weight");
      T(K_PROJ, kv, h, 0, "layers.%zu.self_attn.k_proj.weight");
      T(K_PROJ, kv, h, 0, "layers.%zu.self_attn.v_proj.weight");
      T(K_PROJ, h, q, 0, "layers.%zu.self_attn.o_proj.weight");
      T(K_ZNORM, hd, 0, 0, "layers.%zu.self_attn.q_norm.weight");
      T(K_ZNORM, hd, 0, 0, "layers.%zu.self_attn.k_norm.weight");
    } else {
      T(K_PROJ, conv, h, 0, "layers.%zu.linear_attn.in_proj_qkv.weight");
      T(K_PROJ, vdim, h, 0, "layers.%zu.linear_attn.in_proj_z.weight");
      T(K_PROJ, nv, h, 0, "layers.%zu.linear_attn.in_proj_b.weight");
      T(K_PROJ, nv, h, 0, "layers.%zu.linear_attn.in_proj_a.weight");
      T(K_CONV, conv, 1, k, "layers.%zu.linear_attn.conv1d.weight");
      T(K_DT_BIAS, nv, 0, 0, "layers.%zu.linear_attn.dt_bias");
      T(K_A_LOG, nv, 0, 0, "layers.%zu.linear_attn.A_log");
      T(K_NORM, (int64_t)p->linear_value_dim, 0, 0, "layers.%zu.linear_attn.norm.weight");
      T(K_PROJ, h, vdim, 0, "layers.%zu.linear_attn.out_proj.weight");
    }
    T(K_ZNORM, h, 0, 0, "layers.%zu.post_attention_layernorm.weight");
    if (p->experts) {
      list_moe(p, t, &n, P, l);
      continue;
    }
    T(K_PROJ, f, h, 0, "layers.%zu.mlp.gate_proj.weight");
    T(K_PROJ, f, h, 0, "layers.%zu.mlp.up_proj.weight");
    T(K_PROJ, h, f, 0, "layers.%zu.mlp.down_proj.weight");
  }
  T(K_ZFINAL_NORM, h, 0, 0, "norm.weight");
#undef T
  if (!p->tied) add(t, &n, K_HEAD, (int64_t)p->vocab, h, "lm_head.weight", 0);
  *pn = n;
}

/* The tensors in HF's module order; t has room for tensor_cap(p). */
static size_t list_tensors(const fdl_model_preset *p, spec *t) {
  size_t n = 0;
  if (p->full_attention_interval)
    list_qwen35(p, t, &n);
  else
    list_dense(p, t, &n);
  return n;
}

uint64_t fdl_model_preset_params(const fdl_model_preset *p) {
  spec *t = fdl_calloc(tensor_cap(p), sizeof *t);
  if (!t) return 0;
  size_t n = list_tensors(p, t);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) sum += numel(&t[i]);
  free(t);
  return sum;
}

static uint64_t fnv1a64(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
  return h;
}

/* Centred Irwin-Hall sum of the four 16-bit lanes of one draw: an integer in
 * [-131070, 131070] with variance (2^32 - 1) / 3. */
static int64_t irwin_hall4(fdl_rng *r) {
  uint64_t x = fdl_rng_next(r);
  int64_t s = (int64_t)(x & 0xffff) + (int64_t)((x >> 16) & 0xffff) +
              (int64_t)((x >> 32) & 0xffff) + (int64_t)(x >> 48);
  return s - 131070;
}

/* ln 2 to double precision: A_log is built from it so that no libm call can move its bits. */
#define LN2 0.693147180559945309417

/* Fills f[0..n) with values first.. of tensor t's stream and, for a BF16 tensor, out[0..n)
 * with their BF16 bits. The multiplies and adds are separate statements so that no compiler
 * fuses them into an FMA, which would round once instead of twice and move bits between
 * builds. */
static void generate(const fdl_model_preset *p, const spec *t, fdl_rng *r, uint64_t first, float *f,
                     uint16_t *out, size_t n) {
  const double unit = sqrt(3.0 / 4294967295.0); /* 1 / sd of irwin_hall4 */
  double sd, offset = 0.0, gain = 1.0, shift = 0.0;
  switch (t->k) {
  case K_EMBED:
    sd = 1.0;
    break;
  case K_PROJ: /* fan-in: the last dimension (a fused expert tensor has three) */
    sd = 1.0 / sqrt((double)t->shape[t->ndim - 1]);
    break;
  case K_HEAD:
    sd = 3.0 / sqrt((double)p->hidden);
    break;
  case K_BIAS:
  case K_DT_BIAS:
    sd = 0.1, offset = t->k == K_DT_BIAS ? 1.0 : 0.0;
    break;
  case K_FINAL_NORM:
    if (p->tied) gain = 3.0 / sqrt((double)p->hidden);
    sd = 0.05, offset = 1.0;
    break;
  case K_ZNORM:
    sd = 0.05;
    break;
  case K_ZFINAL_NORM:
    /* The dense final norm's multiplier, stored as w = multiplier - 1. */
    if (p->tied) gain = 3.0 / sqrt((double)p->hidden);
    sd = 0.05, offset = 1.0, shift = -1.0;
    break;
  case K_CONV:
    sd = 1.0 / sqrt((double)t->shape[t->ndim - 1]);
    break;
  case K_VISION:
    sd = 0.02;
    break;
  case K_A_LOG: {
    /* Head j of nv decays at A = 2^(3 j / (nv - 1)): log-evenly spread over [1, 8]. */
    double last = t->shape[0] > 1 ? (double)(t->shape[0] - 1) : 1.0;
    for (size_t i = 0; i < n; i++) {
      double v = (double)(3 * (first + i)) / last;
      v = v * LN2;
      f[i] = (float)v;
    }
    return;
  }
  default:
    sd = 0.05, offset = 1.0;
    break;
  }
  const double k = unit * sd;
  for (size_t i = 0; i < n; i++) {
    double v = (double)irwin_hall4(r) * k;
    v = v + offset;
    v = v * gain;
    if (shift != 0.0) v = v + shift;
    f[i] = (float)v;
  }
  fdl_f32_to_bf16_n(f, out, n);
}

/* ---- config ------------------------------------------------------------------------------- */

static json_t *fidelis_init(const fdl_model_preset *p, uint64_t seed) {
  return json_pack("{s:s, s:I, s:s}", "preset", p->name, "seed", (json_int_t)seed, "init",
                   "fidelis irwin-hall-4 v1 (docs/MODELS.md)");
}

/* The text config of transformers' Qwen3_5TextConfig (docs/QWEN35.md lists what the engine
 * reads), layer_types written out although full_attention_interval implies them. */
static json_t *qwen35_text_config(const fdl_model_preset *p) {
  json_t *types = json_array();
  for (size_t l = 0; types && l < p->layers; l++)
    if (json_array_append_new(
            types, json_string(layer_is_full(p, l) ? "full_attention" : "linear_attention"))) {
      json_decref(types);
      types = NULL;
    }
  if (!types) return NULL;
  return json_pack(
      "{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:f, "
      "s:{s:s, s:f, s:f, s:[i, i, i], s:b}, s:b, s:b, s:f, s:f, s:b, s:o, s:I, s:I, s:I, s:I, "
      "s:I, s:I, s:s, s:I, s:I}",
      "model_type", "qwen3_5_text", "vocab_size", (json_int_t)p->vocab, "hidden_size",
      (json_int_t)p->hidden, "intermediate_size", (json_int_t)p->intermediate, "num_hidden_layers",
      (json_int_t)p->layers, "num_attention_heads", (json_int_t)p->heads, "num_key_value_heads",
      (json_int_t)p->kv_heads, "head_dim", (json_int_t)p->head_dim, "hidden_act", "silu",
      "max_position_embeddings", (json_int_t)p->max_position, "rms_norm_eps", p->rms_norm_eps,
      "rope_parameters", "rope_type", "default", "rope_theta", p->rope_theta,
      "partial_rotary_factor", p->partial_rotary_factor, "mrope_section", 11, 11, 10,
      "mrope_interleaved", 1, "tie_word_embeddings", p->tied, "attention_bias", 0,
      "attention_dropout", 0.0, "initializer_range", 0.02, "use_cache", 1, "layer_types", types,
      "full_attention_interval", (json_int_t)p->full_attention_interval, "linear_conv_kernel_dim",
      (json_int_t)p->conv_kernel, "linear_key_head_dim", (json_int_t)p->linear_key_dim,
      "linear_value_head_dim", (json_int_t)p->linear_value_dim, "linear_num_key_heads",
      (json_int_t)p->linear_key_heads, "linear_num_value_heads", (json_int_t)p->linear_value_heads,
      "torch_dtype", "bfloat16", "bos_token_id", (json_int_t)p->bos, "eos_token_id",
      (json_int_t)p->eos);
}

/* A MoE preset's keys, as transformers' Qwen3MoeConfig / Qwen3_5MoeTextConfig write them;
 * Qwen3.5 MoE has no dense MLP, so no intermediate_size. */
static bool moe_keys(const fdl_model_preset *p, json_t *c) {
  if (!p->experts) return true;
  bool ok = !json_object_set_new(c, "num_experts", json_integer((json_int_t)p->experts)) &&
            !json_object_set_new(c, "num_experts_per_tok",
                                 json_integer((json_int_t)p->experts_per_tok)) &&
            !json_object_set_new(c, "moe_intermediate_size",
                                 json_integer((json_int_t)p->moe_intermediate)) &&
            !json_object_set_new(c, "router_aux_loss_coef", json_real(0.001)) &&
            !json_object_set_new(c, "output_router_logits", json_false());
  if (p->shared_intermediate)
    return ok && !json_object_del(c, "intermediate_size") &&
           !json_object_set_new(c, "model_type", json_string("qwen3_5_moe_text")) &&
           !json_object_set_new(c, "shared_expert_intermediate_size",
                                json_integer((json_int_t)p->shared_intermediate));
  return ok && !json_object_set_new(c, "norm_topk_prob", json_true()) &&
         !json_object_set_new(c, "decoder_sparse_step", json_integer(1)) &&
         !json_object_set_new(c, "mlp_only_layers", json_array());
}

/* Qwen3_5ForCausalLM: the text config at the top level. Qwen3_5ForConditionalGeneration: the
 * text config under text_config, the vision stub's under vision_config, and
 * tie_word_embeddings at the top level too (transformers reads it there for the head). */
static json_t *qwen35_config(const fdl_model_preset *p, uint64_t seed) {
  json_t *text = qwen35_text_config(p), *c = NULL;
  if (text && !moe_keys(p, text)) {
    json_decref(text);
    text = NULL;
  }
  if (!text) return NULL;
  if (!p->vision) {
    c = text;
    if (json_object_set_new(c, "architectures", json_pack("[s]", p->architecture))) {
      json_decref(c);
      c = NULL;
    }
  } else {
    c = json_pack(
        "{s:[s], s:s, s:o, s:{s:s, s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I, "
        "s:I, s:f, s:[]}, s:b, s:s}",
        "architectures", p->architecture, "model_type", p->model_type, "text_config", text,
        "vision_config", "model_type", p->model_type, "depth", (json_int_t)0, "hidden_size",
        (json_int_t)VIS_HIDDEN, "intermediate_size", (json_int_t)(2 * VIS_HIDDEN), "hidden_act",
        "gelu_pytorch_tanh", "num_heads", (json_int_t)2, "in_channels", (json_int_t)3, "patch_size",
        (json_int_t)VIS_PATCH, "temporal_patch_size", (json_int_t)VIS_TEMPORAL,
        "spatial_merge_size", (json_int_t)2, "out_hidden_size", (json_int_t)p->hidden,
        "num_position_embeddings", (json_int_t)VIS_POSITIONS, "initializer_range", 0.02,
        "deepstack_visual_indexes", "tie_word_embeddings", p->tied, "torch_dtype", "bfloat16");
  }
  json_t *fi = c ? fidelis_init(p, seed) : NULL;
  if (!fi || json_object_set_new(c, "fidelis_init", fi)) {
    json_decref(c);
    return NULL;
  }
  return c;
}

/* The keys transformers writes for the architecture (config.json is json.dumps(indent=2,
 * sort_keys=True) there too), plus a fidelis_init block naming how the weights were made. */
static json_t *config_json(const fdl_model_preset *p, uint64_t seed) {
  if (p->full_attention_interval) return qwen35_config(p, seed);
  json_t *c = json_pack(
      "{s:[s], s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:I, s:f, s:f, s:n, s:b, s:b, s:s, "
      "s:I, s:I, s:f, s:f, s:b}",
      "architectures", p->architecture, "model_type", p->model_type, "vocab_size",
      (json_int_t)p->vocab, "hidden_size", (json_int_t)p->hidden, "intermediate_size",
      (json_int_t)p->intermediate, "num_hidden_layers", (json_int_t)p->layers,
      "num_attention_heads", (json_int_t)p->heads, "num_key_value_heads", (json_int_t)p->kv_heads,
      "head_dim", (json_int_t)p->head_dim, "hidden_act", "silu", "max_position_embeddings",
      (json_int_t)p->max_position, "rms_norm_eps", p->rms_norm_eps, "rope_theta", p->rope_theta,
      "rope_scaling", "tie_word_embeddings", p->tied, "attention_bias", p->qkv_bias, "torch_dtype",
      "bfloat16", "bos_token_id", (json_int_t)p->bos, "eos_token_id", (json_int_t)p->eos,
      "attention_dropout", 0.0, "initializer_range", 0.02, "use_cache", 1);
  if (!c) return NULL;
  bool ok = true;
  if (!strcmp(p->model_type, "llama")) {
    ok = !json_object_set_new(c, "mlp_bias", json_false()) &&
         !json_object_set_new(c, "pretraining_tp", json_integer(1));
  } else if (p->sliding_window) { /* MistralConfig: a window on every layer, no switch */
    ok = !json_object_set_new(c, "sliding_window", json_integer((json_int_t)p->sliding_window));
  } else {
    /* Qwen2 and Qwen3 spell out that no layer uses sliding-window attention. */
    ok = !json_object_set_new(c, "use_sliding_window", json_false()) &&
         !json_object_set_new(c, "sliding_window", json_null()) &&
         !json_object_set_new(c, "max_window_layers", json_integer((json_int_t)p->layers));
  }
  ok = ok && moe_keys(p, c);
  json_t *fi = ok ? fidelis_init(p, seed) : NULL; /* made only where it can be handed over */
  ok = ok && fi && !json_object_set_new(c, "fidelis_init", fi);
  if (!ok) {
    json_decref(c);
    return NULL;
  }
  return c;
}

/* ---- the run ------------------------------------------------------------------------------ */

#define CHUNK ((size_t)1 << 20) /* elements generated and written at a time */

static fdl_status write_weights(const fdl_model_preset *p, uint64_t seed, const char *dir,
                                fdl_model_write_result *res, fdl_err *err) {
  size_t cap = tensor_cap(p);
  spec *t = fdl_calloc(cap, sizeof *t);
  fdl_tensor_in *ti = fdl_calloc(cap, sizeof *ti);
  uint16_t *buf = fdl_malloc(CHUNK * sizeof *buf);
  float *wide = fdl_malloc(CHUNK * sizeof *wide);
  char *path = fdl_path_join(dir, "model.safetensors");
  json_t *meta = fdl_model_st_metadata();
  fdl_status s = FDL_OK;
  if (!t || !ti || !buf || !wide || !path || !meta) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t n = s == FDL_OK ? list_tensors(p, t) : 0;
  for (size_t i = 0; i < n; i++)
    ti[i] = (fdl_tensor_in){t[i].name, t[i].dtype, t[i].ndim, t[i].shape, buf};
  fdl_out o = {-1, NULL, NULL, false};
  bool opened = false;
  uint64_t data_bytes = 0;
  if (s == FDL_OK) s = fdl_out_open(&o, path, err), opened = s == FDL_OK;
  if (s == FDL_OK) s = fdl_model_st_header(&o, ti, n, meta, &data_bytes, err);
  uint64_t params = 0;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    fdl_rng r;
    fdl_rng_seed(&r, seed ^ (fnv1a64(t[i].name) * 0x9e3779b97f4a7c15ull));
    uint64_t count = numel(&t[i]);
    params += count;
    for (uint64_t done = 0; done < count && s == FDL_OK;) {
      size_t m = count - done < CHUNK ? (size_t)(count - done) : CHUNK;
      generate(p, &t[i], &r, done, wide, buf, m);
      /* little-endian host */
      if (t[i].dtype == FDL_DTYPE_F32)
        s = fdl_out_write(&o, wide, m * sizeof *wide, err);
      else
        s = fdl_out_write(&o, buf, m * sizeof *buf, err);
      done += m;
    }
    if (s != FDL_OK) fdl_err_prefix(err, "model.safetensors: tensor %s", t[i].name);
  }
  if (s == FDL_OK)
    s = fdl_out_commit(&o, err);
  else if (opened)
    fdl_out_abort(&o);
  if (s == FDL_OK) {
    res->params = params;
    res->tensors = n;
    res->bytes = data_bytes;
  }
  json_decref(meta);
  free(path);
  free(buf);
  free(wide);
  free(ti);
  free(t);
  return s;
}

static fdl_status count_weights(const fdl_model_preset *p, fdl_model_write_result *res,
                                fdl_err *err) {
  spec *t = fdl_calloc(tensor_cap(p), sizeof *t);
  if (!t) return fdl_fail(err, FDL_NOMEM, "out of memory");
  res->tensors = list_tensors(p, t);
  for (size_t i = 0; i < res->tensors; i++) res->params += numel(&t[i]);
  free(t);
  return FDL_OK;
}

fdl_status fdl_model_write(const fdl_model_write_opts *o, fdl_model_write_result *res,
                           fdl_err *err) {
  memset(res, 0, sizeof *res);
  const fdl_model_preset *p = fdl_model_preset_find(o->preset);
  if (!p) {
    char names[512] = "";
    size_t np;
    const fdl_model_preset *all = fdl_model_presets(&np);
    for (size_t i = 0; i < np; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               all[i].name);
    return fdl_fail(err, FDL_INVALID, "model init: unknown preset '%s' (expected one of: %s)",
                    o->preset ? o->preset : "(none)", names);
  }
  if (!o->out_dir || !*o->out_dir) return fdl_fail(err, FDL_INVALID, "model init: OUT is required");
  fdl_stage st;
  memset(&st, 0, sizeof st);
  fdl_status s = fdl_stage_open(&st, o->out_dir, 0, o->notice, o->notice_arg, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "model init");
    return s;
  }
  s = fdl_model_write_json(st.path, "config.json", config_json(p, o->seed), err);
  if (s == FDL_OK)
    s = fdl_model_write_json(st.path, "generation_config.json",
                             json_pack("{s:b, s:I, s:I, s:b}", "_from_model_config", 1,
                                       "bos_token_id", (json_int_t)p->bos, "eos_token_id",
                                       (json_int_t)p->eos, "do_sample", 0),
                             err);
  if (s == FDL_OK) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    char *path = fdl_path_join(st.path, "panel.jsonl");
    s = path ? fdl_model_panel(&b, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s == FDL_OK) s = fdl_write_file(path, b.data, b.len, err);
    free(path);
    fdl_buf_free(&b);
    res->panel_contexts = FDL_MODEL_PANEL_CONTEXTS;
    res->panel_tokens = FDL_MODEL_PANEL_TOKENS;
  }
  /* The tiny presets' ids are bytes and specials: their tokenizer can be written down. */
  if (s == FDL_OK && p->vocab == 272) s = fdl_model_write_tokenizer(st.path, err);
  if (s == FDL_OK && !o->no_weights) s = write_weights(p, o->seed, st.path, res, err);
  if (s == FDL_OK && o->no_weights) s = count_weights(p, res, err);
  if (s == FDL_OK)
    s = fdl_stage_commit(&st, err); /* the model appears whole or not at all */
  else
    fdl_err_prefix(err, "model init %s", o->out_dir);
  fdl_stage_abort(&st);
  return s;
}
