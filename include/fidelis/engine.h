/* fidelis/engine.h - the inference engine's building blocks. For now the int4 weight quantizer
 * that synth uses to make an honest candidate; the capture engine will live beside it. Nothing
 * here depends on compare. */
#ifndef FIDELIS_ENGINE_H
#define FIDELIS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "num.h"
#include "status.h"
#include "model.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symmetric int4 round-to-nearest (ties to even) of a [rows x cols] row-major matrix in groups
 * of `group` consecutive columns: scale = max|w| / 7 in float32, q = clamp(rint(w / scale), -7,
 * 7), out = q * scale (exact in float32). A zero group stays zero. in and out may alias. */
FDL_API void fdl_quant_int4_rtn(const float *in, size_t rows, size_t cols, size_t group,
                                float *out);

/* ---- the capture engine: HF decoder models, forward pass in float32 ----------------------
 *
 * A model directory in Hugging Face layout (config.json plus model.safetensors, or shards named
 * by model.safetensors.index.json; dense Llama/Qwen2/Qwen3, or the Qwen3.5 hybrid of
 * docs/QWEN35.md) is read once into memory: weights stay as stored (BF16, F16
 * or F32) and every matrix product reads them through fdl_gemm_run. Everything else (RMSNorm,
 * RoPE, softmax, SiLU) is a fixed scalar chain with fidelis' own exp, sin, cos and log, so a
 * run is bit-identical for any thread count and any ISA (docs/NUMERICS.md section 8). What the
 * engine cannot compute exactly as the architecture says (MoE, another activation, a RoPE
 * scaling other than linear, dynamic, yarn and llama3, a sliding window outside Qwen2/Qwen3's
 * rules) is refused by name. */

typedef struct fdl_model fdl_model;

/* RoPE's frequency scaling, from rope_scaling or rope_parameters (docs/ROPE.md). */
typedef struct {
  const char *type;            /* "default", "linear", "dynamic", "yarn" or "llama3" */
  double factor;               /* 1 for default */
  double low_freq_factor;      /* llama3 */
  double high_freq_factor;     /* llama3 */
  size_t original_max;         /* the trained context: original_max_position_embeddings (llama3,
                                  yarn), max_position_embeddings as read (dynamic); 0 for default */
  double attention_factor;     /* cos and sin are scaled by it: yarn's mscale, 1 otherwise */
  double beta_fast, beta_slow; /* yarn */
  bool truncate;               /* yarn: the correction range in whole dimensions */
  const float *freq_factors;   /* llama3 from a GGUF: [rotary_dim / 2] divisors of the inverse
                                  frequencies (llama.cpp's rope_freqs tensor), or NULL */
} fdl_rope_scaling;

typedef struct {
  const char *arch; /* the config's architecture: "LlamaForCausalLM", "MistralForCausalLM",
                       "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
                       "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration",
                       "Qwen3_5MoeForCausalLM" or "Qwen3_5MoeForConditionalGeneration" */
  size_t vocab, hidden, layers, heads, kv_heads, head_dim, intermediate, max_positions;
  double rope_theta, rms_eps;
  bool tied;               /* lm_head is the embedding */
  bool qk_norm, attn_bias; /* Qwen3 per-head q/k RMSNorm; q/k/v bias (Qwen2, or attention_bias) */
  fdl_dtype weight_dtype;  /* of the stored weights (BF16/F16/F32) */
  const char *head_tensor; /* "lm_head.weight" or "model.embed_tokens.weight" */
  bool o_bias;             /* o_proj.bias too (attention_bias on Llama and Qwen3, not Qwen2) */
  size_t gptq_group;       /* 0: dense weights; else a GPTQ checkpoint with groups of this many
                              inputs, whose quantized matrices the engine multiplies as their
                              float32 reconstruction (q - zero) * scale */
  unsigned gptq_bits;      /* 2, 3, 4 or 8 */
  bool gptq_v2;            /* checkpoint_format gptq_v2: zero points stored as is */
  bool awq;                /* an AWQ checkpoint (GEMM layout, 4-bit; gptq_group its group) */
  const char *ct_format;   /* compressed-tensors: NULL, "pack-quantized" or "float-quantized" */
  fdl_ct_scheme ct;        /* pack-quantized's bits, group (0: per channel) and symmetry */
  bool quant_attn, quant_mlp; /* after loading: the checkpoint stores attention / MLP matrices
                                 quantized */
  /* Mixture of experts (Qwen3MoeForCausalLM and Qwen3.5 MoE, docs/MOE.md); experts 0 for a
   * dense model. */
  size_t experts, experts_per_tok, moe_intermediate;
  size_t shared_intermediate; /* Qwen3.5 MoE's shared expert (sigmoid-gated); 0: none */
  bool norm_topk_prob;        /* the chosen experts' weights renormalised to sum to 1 */
  const unsigned char *moe;   /* [layers]: 1 for a layer whose MLP is routed; NULL when none is */
  size_t rotary_dim;          /* leading dimensions of each head that RoPE rotates (head_dim, or
                                 head_dim * partial_rotary_factor on Qwen3.5) */
  fdl_rope_scaling rope;      /* for dynamic, max_positions is max_position_embeddings x factor */
  size_t sliding_window; /* keys a sliding layer's query sees: itself and the window - 1 before */
  const unsigned char *sliding; /* [layers]: 1 for a sliding-window layer; NULL when none is */
  /* Qwen3.5 (docs/QWEN35.md); all zero / NULL / false for the dense architectures. */
  const unsigned char *linear; /* [layers]: 1 for a Gated DeltaNet layer, 0 for full attention */
  size_t linear_layers;        /* how many of the layers are Gated DeltaNet */
  size_t lin_k_heads, lin_v_heads, lin_k_dim, lin_v_dim, conv_kernel;
  bool zero_centred;  /* RMSNorm weights apply as (1 + w) */
  bool attn_gate;     /* q_proj also yields a sigmoid output gate per head */
  bool vision_tower;  /* the checkpoint carries a vision tower, which the engine ignores */
  const char *prefix; /* tensor-name prefix of the text model: "model." or
                         "model.language_model." */
} fdl_model_info;

typedef struct {
  unsigned threads;  /* 0 = every online CPU; never changes a bit */
  fdl_num_isa isa;   /* FDL_NUM_ISA_AUTO or a forced kernel; never changes a bit */
  bool skip_digests; /* the weight files (shards, a GGUF) are not digested: their hex is empty.
                        For a caller that records no identity (`generate`): it skips a SHA-256
                        pass over every weight byte */
} fdl_model_opts;

/* Loads and checks a model directory: every tensor's presence, dtype, shape and finiteness
 * against config.json. o may be NULL (defaults). dir may also be a GGUF file (llama, qwen2,
 * qwen3, qwen35; docs/GGUF.md): its metadata stands for config.json and its one file for the
 * shards. */
FDL_API fdl_status fdl_model_load(const char *dir, const fdl_model_opts *o, fdl_model **out,
                                  fdl_err *err);
FDL_API void fdl_model_free(fdl_model *m);
FDL_API const fdl_model_info *fdl_model_get_info(const fdl_model *m);
/* The head ([vocab, hidden]) as a float tensor to write: as stored, or for a head in ggml blocks
 * (a quantized GGUF) its float32 reconstruction, made now into *owned, which the caller frees
 * (NULL otherwise). */
FDL_API fdl_status fdl_model_head(const fdl_model *m, fdl_tensor *out, void **owned, fdl_err *err);
/* The files the loader read, each digested in the one read that parsed or checked it:
 * config.json, model.safetensors.index.json when present, and every shard, sorted by name. */
FDL_API size_t fdl_model_file_count(const fdl_model *m);
/* File i: its name in the model directory (borrowed), its size, and its SHA-256 as 64 lowercase
 * hex and a NUL (empty for a weight file loaded with skip_digests). False when i is out of range.
 */
FDL_API bool fdl_model_file_digest(const fdl_model *m, size_t i, const char **name, uint64_t *bytes,
                                   char hex[65]);
/* Whether the model came from a GGUF file; then *codec ("gguf:q4_K": its matrices' most common
 * ggml type; borrowed) and *quantized (some matrix is stored quantized and runs as its float32
 * dequantization), each when not NULL. */
FDL_API bool fdl_model_is_gguf(const fdl_model *m, const char **codec, bool *quantized);
/* Tensor i of a GGUF model: its Hugging Face name (borrowed), its stored ggml type and its
 * element count. False past the last, or for a model not from GGUF. */
FDL_API bool fdl_model_gguf_tensor(const fdl_model *m, size_t i, const char **name,
                                   uint32_t *ggml_type, uint64_t *n_elems);

typedef enum {
  FDL_ENGINE_PREFILL = 0, /* the whole context at once, causal mask */
  FDL_ENGINE_DECODE = 1   /* one token at a time through a KV cache */
} fdl_engine_path;

/* What a run writes; each pointer may be NULL. */
typedef struct {
  float *hidden;   /* [n, hidden]: after the final norm */
  float *logits;   /* [n, vocab] */
  int32_t *greedy; /* [n]: argmax of each row's logits (first index on ties; NaN never wins),
                      through a tiled path that never holds a whole [n, vocab] block */
  float *layers;   /* [layers + 2, hidden]: the last position's row at each layer boundary, as
                      Kiln's layer records name them: the embedding, the residual stream after
                      each layer, the final norm's output */
} fdl_engine_out;

/* Runs one context of n >= 1 token ids (each in [0, vocab), n <= max_positions) from position
 * 0. Prefill and decode give the same values to float32 tolerance (the same bits on the dense
 * architectures; on Qwen3.5 prefill runs the DeltaNet layers in their chunked form and decode in
 * their recurrent form, which differ in rounding); each is bit-identical whatever the threads or
 * ISA. One run at a time per model. */
FDL_API fdl_status fdl_engine_run(fdl_model *m, const int32_t *ids, size_t n, fdl_engine_path path,
                                  const fdl_engine_out *out, fdl_err *err);

/* The float64 oracle: the same model's forward pass over the whole context at once (causal),
 * every weight widened exactly to double and every step (products, norms, RoPE, softmax, SiLU)
 * in double in a fixed order with fidelis' own exp, sin, cos and log. It is slow and is no
 * capture path: it exists to measure how far the float32 engine (or anything else) is from
 * the architecture's exact math. Bit-identical for any thread count and machine. Writes
 * hidden [n, hidden] (after the final norm) and logits [n, vocab]; each may be NULL. Refuses
 * the inputs fdl_engine_run refuses, and Qwen3.5 models (FDL_UNSUPPORTED: dense only). */
FDL_API fdl_status fdl_engine_run_f64(fdl_model *m, const int32_t *ids, size_t n, double *hidden,
                                      double *logits, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
