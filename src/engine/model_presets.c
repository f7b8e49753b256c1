/* model_presets.c - `fidelis model init`'s presets (docs/MODELS.md): tiny models for the tests,
 * and models with released models' shapes (random weights) for the benchmarks. */
#include <string.h>

#include "fidelis/model.h"

/* The tiny presets' common size: the test fixture's vocabulary (256 bytes, then BOS and EOS), a
 * width of 4 heads of 16, 4096 positions. */
#define TINY                                                                                       \
  .vocab = 272, .hidden = 64, .heads = 4, .head_dim = 16, .max_position = 4096, .bos = 256,        \
  .eos = 257

/* The upstream fixture's size, which the 2-layer tiny presets keep: 2 layers, an MLP of 128. */
#define TINY_2L TINY, .layers = 2, .intermediate = 128

/* Qwen3.5's layer layout: 3 Gated DeltaNet layers (key_heads key heads and value_heads value
 * heads, of dim) to 1 gated attention layer, a rotary quarter. The releases: 16, 32, of 128. */
#define QWEN35_LINEAR(key_heads, value_heads, dim)                                                 \
  .full_attention_interval = 4, .linear_key_heads = (key_heads),                                   \
  .linear_value_heads = (value_heads), .linear_key_dim = (dim), .linear_value_dim = (dim),         \
  .conv_kernel = 4, .partial_rotary_factor = 0.25

/* What the released Qwen3 models share: their tokenizer's vocabulary and BOS / EOS, context,
 * q/k norm, RoPE base and norm epsilon. */
#define QWEN3_RELEASE                                                                              \
  .vocab = 151936, .max_position = 40960, .qk_norm = true, .rope_theta = 1000000.0,                \
  .rms_norm_eps = 1e-6, .bos = 151643, .eos = 151645

/* The same for the released Qwen3.5 models, and their DeltaNet layout. */
#define QWEN35_RELEASE                                                                             \
  .vocab = 248320, .max_position = 262144, .qk_norm = true, .rope_theta = 10000000.0,              \
  .rms_norm_eps = 1e-6, .bos = 248044, .eos = 248046, QWEN35_LINEAR(16, 32, 128)

static const fdl_model_preset PRESETS[] = {
    {.name = "tiny-random",
     TINY_2L,
     .architecture = "Qwen3ForCausalLM",
     .model_type = "qwen3",
     .kv_heads = 2,
     .tied = true,
     .qk_norm = true,
     .rope_theta = 1000000.0,
     .rms_norm_eps = 1e-6,
     .about = "Qwen3 at the upstream fixture's size: tied, q/k norm, GQA 2 (with the panel)"},
    {.name = "llama-tiny-random",
     TINY_2L,
     .architecture = "LlamaForCausalLM",
     .model_type = "llama",
     .kv_heads = 2,
     .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5,
     .about = "Llama, same size: untied lm_head, GQA 2"},
    {.name = "mistral-tiny-random",
     TINY_2L,
     .architecture = "MistralForCausalLM",
     .model_type = "mistral",
     .kv_heads = 2,
     .rope_theta = 1000000.0,
     .rms_norm_eps = 1e-5,
     .sliding_window = 16,
     .about = "Mistral, same size: every layer over a window of 16 (the panel's 64 tokens "
              "cross it)"},
    {.name = "qwen2-tiny-random",
     TINY_2L,
     .architecture = "Qwen2ForCausalLM",
     .model_type = "qwen2",
     .kv_heads = 1,
     .tied = true,
     .qkv_bias = true,
     .rope_theta = 1000000.0,
     .rms_norm_eps = 1e-6,
     .about = "Qwen2, same size: q/k/v bias, tied, GQA 4"},
    {.name = "qwen3-moe-tiny-random",
     TINY_2L,
     .architecture = "Qwen3MoeForCausalLM",
     .model_type = "qwen3_moe",
     .kv_heads = 2,
     .qk_norm = true,
     .rope_theta = 1000000.0,
     .rms_norm_eps = 1e-6,
     .experts = 8,
     .experts_per_tok = 2,
     .moe_intermediate = 32,
     .about = "Qwen3 MoE, same size: top 2 of 8 experts in every layer, untied"},
    {.name = "qwen3.5-tiny-random",
     TINY,
     .architecture = "Qwen3_5ForConditionalGeneration",
     .model_type = "qwen3_5",
     .intermediate = 128,
     .layers = 4,
     .kv_heads = 2,
     .qk_norm = true,
     .rope_theta = 10000000.0,
     .rms_norm_eps = 1e-6,
     QWEN35_LINEAR(2, 4, 16),
     .vision = true,
     .about = "Qwen3.5 (3 Gated DeltaNet + 1 gated attention), untied, a minimal vision tower the "
              "engine skips"},
    {.name = "qwen3.5-moe-tiny-random",
     TINY,
     .architecture = "Qwen3_5MoeForConditionalGeneration",
     .model_type = "qwen3_5_moe",
     .layers = 4,
     .kv_heads = 2,
     .qk_norm = true,
     .rope_theta = 10000000.0,
     .rms_norm_eps = 1e-6,
     QWEN35_LINEAR(2, 4, 16),
     .vision = true,
     .experts = 8,
     .experts_per_tok = 2,
     .moe_intermediate = 16, /* 2 x 16 != hidden: a transposed gate_up_proj shows */
     .shared_intermediate = 64,
     .about = "Qwen3.5 MoE, same size: top 2 of 8 fused experts of 16 and a shared expert"},
    {.name = "llama-100m",
     .architecture = "LlamaForCausalLM",
     .model_type = "llama",
     .vocab = 32000,
     .hidden = 768,
     .intermediate = 2048,
     .layers = 12,
     .heads = 12,
     .kv_heads = 12,
     .head_dim = 64,
     .max_position = 2048,
     .rope_theta = 10000.0,
     .rms_norm_eps = 1e-5,
     .bos = 1,
     .eos = 2,
     .about = "Llama of about 100M parameters (134M with lm_head)"},
    {.name = "qwen3-0.6b",
     .architecture = "Qwen3ForCausalLM",
     .model_type = "qwen3",
     QWEN3_RELEASE,
     .hidden = 1024,
     .intermediate = 3072,
     .layers = 28,
     .heads = 16,
     .kv_heads = 8,
     .head_dim = 128,
     .tied = true,
     .about = "Qwen3-0.6B's shapes (596M parameters)"},
    {.name = "qwen3.5-4b",
     .architecture = "Qwen3_5ForCausalLM",
     .model_type = "qwen3_5_text",
     QWEN35_RELEASE,
     .hidden = 2560,
     .intermediate = 9216,
     .layers = 32,
     .heads = 16,
     .kv_heads = 4,
     .head_dim = 256,
     .tied = true,
     .about = "Qwen3.5-4B's shapes (4.2B parameters, 8.4 GB; benchmarks)"},
    {.name = "qwen3.5-35b-a3b-4l",
     .architecture = "Qwen3_5MoeForCausalLM",
     .model_type = "qwen3_5_moe_text",
     QWEN35_RELEASE,
     .hidden = 2048,
     .layers = 4,
     .heads = 16,
     .kv_heads = 2,
     .head_dim = 256,
     .experts = 256,
     .experts_per_tok = 8,
     .moe_intermediate = 512,
     .shared_intermediate = 512,
     .about = "Qwen3.5-35B-A3B's layer shapes, 4 of its 40 layers (3 DeltaNet + 1 gated "
              "attention; 4.3B parameters, 8.7 GB)"},
    {.name = "qwen3-30b-a3b-6l",
     .architecture = "Qwen3MoeForCausalLM",
     .model_type = "qwen3_moe",
     QWEN3_RELEASE,
     .hidden = 2048,
     .intermediate = 6144,
     .layers = 6,
     .heads = 32,
     .kv_heads = 4,
     .head_dim = 128,
     .experts = 128,
     .experts_per_tok = 8,
     .moe_intermediate = 768,
     .about = "Qwen3-30B-A3B's layer shapes, 6 of its 48 layers (4.4B parameters, 8.7 GB; the "
              "MoE benchmark)"},
};

const fdl_model_preset *fdl_model_presets(size_t *n) {
  *n = sizeof PRESETS / sizeof PRESETS[0];
  return PRESETS;
}

const fdl_model_preset *fdl_model_preset_find(const char *name) {
  for (size_t i = 0; name && i < sizeof PRESETS / sizeof PRESETS[0]; i++)
    if (!strcmp(PRESETS[i].name, name)) return &PRESETS[i];
  return NULL;
}
