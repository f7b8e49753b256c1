/* fidelis/model.h - models for the capture engine to run: deterministic random models in Hugging
 * Face layout (`fidelis model init`) and their int4 GPTQ-v1 packed twins (`fidelis quantize`).
 *
 * A random model is a pure function of (preset, seed): the same bytes on every machine, so two
 * people who run `fidelis model init --preset tiny-random --seed 1` hold the same checkpoint and
 * the same captures. docs/MODELS.md gives the presets, the weight distribution, the built-in
 * panel and the quantized format with its sources. */
#ifndef FIDELIS_MODEL_H
#define FIDELIS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- presets ------------------------------------------------------------------------------ */

typedef struct {
  const char *name;         /* "tiny-random" */
  const char *architecture; /* "Qwen3ForCausalLM", "LlamaForCausalLM", "MistralForCausalLM",
                               "Qwen2ForCausalLM", "Qwen3MoeForCausalLM", "Qwen3_5ForCausalLM",
                               "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
                               "Qwen3_5MoeForConditionalGeneration" */
  const char *model_type;   /* "qwen3", "llama", "mistral", "qwen2", "qwen3_moe",
                               "qwen3_5_text", "qwen3_5", "qwen3_5_moe_text", "qwen3_5_moe" */
  size_t vocab, hidden, intermediate, layers, heads, kv_heads, head_dim;
  size_t max_position;
  bool tied;     /* lm_head is the embedding (no lm_head.weight) */
  bool qk_norm;  /* per-head q/k RMSNorm (Qwen3, Qwen3.5) */
  bool qkv_bias; /* q/k/v projections carry a bias (Qwen2) */
  double rope_theta, rms_norm_eps;
  int64_t bos, eos;
  const char *about; /* one line for --help */
  /* Qwen3.5's hybrid (docs/QWEN35.md): layer i is gated full attention when (i + 1) %
   * full_attention_interval == 0, Gated DeltaNet otherwise. 0 for a dense model, which leaves
   * every field below unused. */
  size_t full_attention_interval;
  size_t linear_key_heads, linear_value_heads, linear_key_dim, linear_value_dim, conv_kernel;
  double partial_rotary_factor;
  bool vision; /* Qwen3_5ForConditionalGeneration: text under text_config and
                  model.language_model., plus a token vision tower under model.visual. */
  /* Mixture of experts (docs/MOE.md), every layer routed; experts 0 for a dense model. Qwen3
   * MoE stores one tensor per expert; Qwen3.5 MoE fuses them (gate_up_proj, down_proj, as its
   * releases do) and adds a shared expert of shared_intermediate. */
  size_t experts, experts_per_tok, moe_intermediate, shared_intermediate;
  size_t sliding_window; /* Mistral: every layer's window; 0 for the others */
} fdl_model_preset;

/* Every preset, in a fixed order. */
FDL_API const fdl_model_preset *fdl_model_presets(size_t *n);
/* The preset with that name, or NULL. */
FDL_API const fdl_model_preset *fdl_model_preset_find(const char *name);
/* Parameter count of a preset (embedding counted once when tied); 0 when out of memory. */
FDL_API uint64_t fdl_model_preset_params(const fdl_model_preset *p);

/* ---- model init --------------------------------------------------------------------------- */

typedef struct {
  const char *preset;  /* a preset name */
  uint64_t seed;       /* the weights' seed (the panel does not depend on it) */
  const char *out_dir; /* must not exist; appears whole or not at all */
  fdl_notice_fn notice;
  void *notice_arg;
  bool no_weights; /* everything but model.safetensors: a big preset's config, checked in
                      seconds (the result still counts its tensors and parameters) */
} fdl_model_write_opts;

typedef struct {
  uint64_t params; /* parameters written (with no_weights: that would be written) */
  uint64_t bytes;  /* size of model.safetensors; 0 with no_weights */
  size_t tensors;  /* tensors in it */
  size_t panel_contexts, panel_tokens;
} fdl_model_write_result;

/* Writes OUT/config.json, OUT/generation_config.json, OUT/model.safetensors (BF16, HF names;
 * Qwen3.5's A_log F32) and OUT/panel.jsonl (the built-in panel), streaming one tensor chunk at a
 * time. FDL_INVALID for an unknown preset, FDL_EXISTS when OUT exists. */
FDL_API fdl_status fdl_model_write(const fdl_model_write_opts *opts, fdl_model_write_result *res,
                                   fdl_err *err);

/* Appends the built-in panel (JSONL in the format `fidelis pack` reads, docs/PACK.md): 4
 * contexts x 64 tokens, domains garden, arithmetic, code and instructions. Token 256 (bos)
 * followed by the ASCII bytes of a fixed text: the same for every seed and every preset. */
#define FDL_MODEL_PANEL_CONTEXTS 4
#define FDL_MODEL_PANEL_TOKENS 64
#define FDL_MODEL_PANEL_BOS 256
FDL_API fdl_status fdl_model_panel(fdl_buf *out, fdl_err *err);

/* ---- GPTQ-v1 int4 ------------------------------------------------------------------------- */

/* Round-to-nearest asymmetric int4 of one [out x in] row-major matrix (a Linear's weight) in
 * groups of `group` consecutive input columns, packed as a GPTQ-v1 checkpoint stores it:
 *   qweight [in/8, out]      nibble k of qweight[r][o] (bits 4k..4k+3) is q[o][8r+k]
 *   qzeros  [in/group, out/8] nibble k of qzeros[g][c] is (zero[g][8c+k] - 1) & 15
 *   scales  [in/group, out]  F16 bits
 *   g_idx   [in]             i / group
 * Per group (docs/MODELS.md, "quantize"): lo = min(0, min w), hi = max(0, max w) (an all-zero
 * group takes [-1, 1]); scale = f16((hi - lo) / 15); zero = rint(-lo / scale), and a zero of 0,
 * which v1 cannot store, becomes 1 with scale = f16(hi / 14); q = clamp(rint(w / scale) + zero,
 * 0, 15), ties to even. Refuses: in or out not a multiple of 8, a group that does not divide
 * in, a non-finite weight (named by row and column; found before any output is touched), a
 * scale beyond F16 (the outputs are then partly written and must be discarded). */
FDL_API fdl_status fdl_gptq_quantize_matrix(const float *w, size_t out, size_t in, size_t group,
                                            uint32_t *qweight, uint32_t *qzeros, uint16_t *scales,
                                            int32_t *g_idx, fdl_err *err);

/* How a GPTQ checkpoint packs its integers (quantization_config): bits 2, 3, 4 or 8 per value,
 * a run of values as one little-endian bit stream over consecutive int32 words, lowest bits
 * first (32 / bits whole values per word for 2, 4 and 8; 32 values in 3 words for 3, two of them
 * straddling words); v2 (checkpoint_format "gptq_v2", GPTQModel) stores each zero point as is,
 * v1 ("gptq", AutoGPTQ) stores zero - 1. */
typedef struct {
  size_t group;
  unsigned bits;
  bool v2;
} fdl_gptq_format;

/* The affine decode the engine uses to load such a checkpoint: w[o * in + i] =
 * (q - zero) * scale in float32, exact (q - zero has at most bits + 1 bits and scale 11), where
 * q is value i of column o of qweight and zero = the stored field (+ 1 for v1, as the GPTQ-v1
 * reference loaders add it; v1 never masks the sum). Checks every shape and dtype (qweight I32
 * [in*bits/32, out], qzeros I32 [in/group, out*bits/32], scales F16 [in/group, out], g_idx I32
 * [in]; in and out multiples of 32 / bits, or of 32 for 3 bits), every g_idx value (in
 * [0, in/group)) and that g_idx gives every group exactly `group` inputs (act-order checkpoints
 * permute the inputs, never the group sizes) before reading. Views may be unaligned. */
FDL_API fdl_status fdl_gptq_reconstruct(const fdl_tensor *qweight, const fdl_tensor *qzeros,
                                        const fdl_tensor *scales, const fdl_tensor *g_idx,
                                        size_t in, size_t out, const fdl_gptq_format *fmt, float *w,
                                        fdl_err *err);

/* The decode of an AWQ checkpoint in AutoAWQ's GEMM layout (awq.c, docs/MODELS.md):
 * w[o * in + i] = (q - zero) * scale in float32, exact, with qweight I32 [in, out/8] and qzeros
 * I32 [in/group, out/8] (output 8c + t of word c in nibble 0, 4, 1, 5, 2, 6, 3, 7 for t = 0..7;
 * zeros stored as is) and scales F16 [in/group, out]. Checks every shape, dtype and byte count
 * before reading, and refuses non-finite scales. */
FDL_API fdl_status fdl_awq_reconstruct(const fdl_tensor *qweight, const fdl_tensor *qzeros,
                                       const fdl_tensor *scales, size_t in, size_t out,
                                       size_t group, float *w, fdl_err *err);

/* compressed-tensors (llm-compressor) checkpoints, decoded to float32 (ctensors.c,
 * docs/MODELS.md). pack-quantized: bits 4 or 8, group 0 for one scale per output channel, else
 * inputs per group; symmetric: no zero points. */
typedef struct {
  unsigned bits;
  size_t group;
  bool symmetric;
} fdl_ct_scheme;

/* The parts of one pack-quantized matrix X: X.weight_packed, X.weight_scale, and when present
 * X.weight_zero_point (asymmetric), X.weight_g_idx (activation order) and X.weight_shape. */
typedef struct {
  const fdl_tensor *packed, *scale, *zero, *g_idx, *shape;
} fdl_ct_parts;

/* w[o * in + i] = (q - zero) * scale in float32, with q and zero the stored values minus
 * 2^(bits-1). Checks every part's dtype, shape and byte count, weight_shape against [out, in], and
 * that g_idx gives every group `group` inputs, before reading; refuses non-finite scales. */
FDL_API fdl_status fdl_ct_reconstruct_packed(const fdl_ct_parts *p, size_t in, size_t out,
                                             const fdl_ct_scheme *sc, float *w, fdl_err *err);

/* float-quantized FP8: w[o * in + i] = e4m3(weight) * scale in float32, the scale one for the
 * tensor or one per output channel; refuses the FP8 NaN code and non-finite scales. */
FDL_API fdl_status fdl_ct_reconstruct_fp8(const fdl_tensor *weight, const fdl_tensor *scale,
                                          size_t in, size_t out, float *w, fdl_err *err);

typedef enum {
  FDL_GPTQ_SCOPE_MLP = 0,    /* mlp.{gate,up,down}_proj, and a MoE model's
                                mlp.experts.E.{gate,up,down}_proj (fused experts split per
                                expert) and mlp.shared_expert.{gate,up,down}_proj; never the
                                router mlp.gate nor mlp.shared_expert_gate */
  FDL_GPTQ_SCOPE_ALL_LINEAR, /* those, self_attn.{q,k,v,o}_proj and Gated DeltaNet's
                                linear_attn.{in_proj_qkv,in_proj_z,out_proj} */
} fdl_gptq_scope;

/* The scope's name in config.json ("mlp", "all-linear"). */
FDL_API const char *fdl_gptq_scope_name(fdl_gptq_scope s);

typedef struct {
  const char *model_dir; /* config.json + model.safetensors */
  const char *out_dir;   /* must not exist */
  size_t group;          /* group size along the input dim (e.g. 32) */
  fdl_gptq_scope scope;
  fdl_notice_fn notice;
  void *notice_arg;
} fdl_gptq_opts;

typedef struct {
  size_t quantized; /* matrices quantized (a fused expert tensor counts each expert's) */
  size_t copied;    /* tensors copied unchanged */
  uint64_t params_quantized;
  uint64_t bytes; /* size of the output model.safetensors */
} fdl_gptq_result;

/* Quantizes every weight in scope of MODEL into OUT: each quantized X.weight becomes X.qweight,
 * X.qzeros, X.scales and X.g_idx (a fused mlp.experts.gate_up_proj or down_proj becomes those
 * parts of each mlp.experts.E.{gate,up,down}_proj), every other tensor is copied as stored, in
 * model.safetensors or, for a sharded checkpoint, in shards of the same names with
 * model.safetensors.index.json rewritten (weight_map, metadata.total_size). OUT/config.json is
 * MODEL's with a quantization_config; the other regular files of MODEL (generation_config.json,
 * tokenizer files, panel.jsonl) are copied byte for byte. Refuses (before OUT is created) a model
 * already quantized (FDL_REFUSED), an index that disagrees with its shards or an expert stored both
 * fused and alone (FDL_PARSE), no weight in scope (FDL_INVALID), and what
 * fdl_gptq_quantize_matrix refuses. */
FDL_API fdl_status fdl_gptq_quantize_model(const fdl_gptq_opts *opts, fdl_gptq_result *res,
                                           fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
