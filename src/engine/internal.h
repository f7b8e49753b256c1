/* internal.h - internal to src/engine: the loaded model, its config parser and weight table, the
 * deterministic elementary functions and the scalar kernels of the forward pass. */
#ifndef FDL_ENGINE_INTERNAL_H
#define FDL_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fidelis/engine.h"
#include "num/gemm_run.h"
#include "fidelis/gguf.h"
#include "fidelis/pool.h"
#include "fidelis/tensor.h"
#include "gguf/decoder.h"
#include "gguf/qdot.h"
#include "num/vec.h"

/* Rows (or columns) of a GGUF tensor stored in another order than Hugging Face's: element r of
 * the Hugging Face axis is element fdl_eng_reorder_src(o, r) of the stored one. */
typedef struct {
  size_t head_dim; /* llama's Q/K: heads of head_dim rows, interleaved RoPE order; 0: no */
  size_t v_first, v_nk, v_r, v_hd; /* Qwen3.5's tiled V heads from v_first on; v_r 0: no */
  bool cols;                       /* the V heads are columns (out_proj) */
} eng_reorder;
size_t fdl_eng_reorder_src(const eng_reorder *o, size_t r);

/* One matrix the GEMM reads as stored: [rows, cols], k = cols contiguous. A quantized GGUF
 * matrix stays in its ggml blocks (row_bytes per row, t->dtype U8): the GEMM asks for float32
 * rows as it reaches them (mat.c), so the model never holds it whole in float32. */
typedef struct {
  const fdl_tensor *t;
  fdl_gemm_type type;   /* of the stored elements; F32 for ggml blocks (their rows arrive so) */
  uint32_t ggml_type;   /* the block type when row_bytes > 0 */
  size_t row_bytes;     /* 0: elements of `type` */
  fdl_dq_kernel decode; /* row_bytes > 0: the block type's kernel for the model's isa */
  uint32_t block_elems; /* and its values per block */
  const eng_reorder *rows_from; /* NULL, or row r is stored row fdl_eng_reorder_src(rows_from, r) */
  fdl_qdot_kernel qdot;         /* NULL, or the decoder's fused product */
} eng_mat;

typedef struct {
  float *in_norm, *post_norm;               /* [hidden] */
  float *q_norm, *k_norm;                   /* [head_dim] (Qwen3) or NULL */
  float *q_bias, *k_bias, *v_bias, *o_bias; /* or NULL */
  eng_mat q, k, v, o, gate, up, down;       /* q: [2 * heads * head_dim] rows with a gate */
  /* A mixture-of-experts layer (info.moe[i]) instead of gate/up/down: */
  eng_mat router;      /* [experts, hidden] */
  eng_mat *ex;         /* [experts * 3]: expert e's gate, up and down at 3e, 3e + 1, 3e + 2 */
  fdl_tensor *ex_view; /* [experts * 3] or NULL: ex's tensors, when the checkpoint stores the
                          experts fused (gate_up_proj [experts, 2 moe_inter, hidden] and
                          down_proj [experts, hidden, moe_inter]): views into those */
  eng_mat shared[3];   /* Qwen3.5 MoE: the shared expert's gate, up and down */
  eng_mat shared_gate; /* [1, hidden]: its sigmoid gate */
  /* A Gated DeltaNet layer (Qwen3.5) instead of q/k/v/o: */
  eng_mat qkv, z, b, a, out;
  float *conv;    /* [conv_dim, conv_kernel] */
  double *decay;  /* [v_heads] exp(A_log) */
  float *dt_bias; /* [v_heads] */
  float *gnorm;   /* [v_dim] the output norm's weight */
  size_t lin;     /* index among the DeltaNet layers (their caches and states) */
} eng_layer;

/* Qwen3.5's scratch (NULL otherwise), for `cap` positions. */
typedef struct {
  float *qg;          /* [cap, 2 * heads * head_dim] query and gate per head */
  float *mixed;       /* [linear layers][cap, conv_dim] q/k/v before the convolution */
  float *conv_out;    /* [cap, conv_dim] after the convolution and SiLU, q and k normalised */
  float *zg;          /* [cap, v_heads * v_dim] the output gate */
  float *ba;          /* [cap, 2 * v_heads]: in_proj_b's then in_proj_a's outputs */
  float *beta, *gdec; /* [cap, v_heads] sigmoid(b); g = -exp(A_log) softplus(a + dt_bias) */
  float *core;        /* [cap, v_heads * v_dim] the delta rule's output */
  float *state;       /* [linear layers][v_heads, k_dim, v_dim] the recurrent state */
  float *chunk;       /* [workers][one chunk's scratch] */
  size_t cap;         /* positions the buffers above hold */
} eng_q35_work;

/* A mixture-of-experts layer's scratch (moe.c), for `cap` positions. */
typedef struct {
  float *logits; /* [cap, experts] router */
  size_t *sel;   /* [cap, experts_per_tok] chosen experts, ascending */
  float *weight; /* [cap, experts_per_tok] their routing weights */
  size_t *start; /* [experts + 1]: expert e's positions are rows[start[e] .. start[e + 1]) */
  size_t *rows;  /* [cap, experts_per_tok] positions grouped by expert, ascending in each */
  float *row_wt; /* [cap, experts_per_tok] the routing weight beside each of them */
  float *x, *y;  /* [cap, hidden] an expert's gathered inputs, its outputs */
  float *g, *u;  /* [cap, max(moe_intermediate, shared_intermediate)] */
  float *sg;     /* [cap] the shared expert's gate logits */
  float *out;    /* [cap, hidden] the weighted sum */
  size_t cap;
} eng_moe_work;

/* Scratch for one run, sized for `cap` positions; grown only between runs. */
typedef struct {
  size_t cap;
  float *x, *xn;        /* [cap, hidden] residual stream, normed input */
  float *q, *att;       /* [cap, heads * head_dim] */
  float *kc, *vtmp;     /* [layers][cap, kv_dim] keys after RoPE; [cap, kv_dim] values */
  float *vt;            /* [layers][kv_dim, cap] values transposed (k contiguous for P.V) */
  float *g, *u;         /* [cap, intermediate] */
  float *cos_t, *sin_t; /* [cap, rotary_dim / 2] */
  float *tile;          /* [FDL_NUM_TILE_ROWS, FDL_NUM_VOCAB_CHUNK] greedy tile, or one slice
                           per worker (greedy.c) */
  float *scores;        /* [workers][ENG_ATT_ROWS, cap] attention scores, then probabilities */
  double *exps;         /* [workers][cap] one softmax row's exponentials */
  eng_q35_work q35;     /* sized on its own, by fdl_eng_gdn_work */
  eng_moe_work moe;     /* sized on its own, by fdl_eng_moe */
} eng_work;

struct fdl_model {
  fdl_model_info info;
  fdl_tensor **owned; /* GPTQ reconstructions: float32 tensors the model allocated */
  size_t nowned;
  char *arch;
  fdl_safetensors **shards;
  size_t nshards;
  eng_mat embed, head;
  float *final_norm;
  float *rope_factors; /* a GGUF's rope_freqs (info.rope.freq_factors), or NULL */
  eng_layer *layer;
  double *inv_freq;  /* [rotary_dim / 2]: the current run's (fdl_eng_rope_freqs) */
  fdl_pool pool;     /* attention tasks and row-parallel kernels */
  fdl_num_isa isa;   /* the kernel choice asked for (GEMM and block decoding) */
  bool skip_digests; /* fdl_model_opts.skip_digests */
  fdl_gemm **wgemm;  /* one single-thread GEMM per pool worker: every product is pool tasks */
  fdl_gemm **sgemm;  /* NULL, or under FDL_NUM_ISA_AUTO with AVX-512 chosen: AVX2 contexts for
                        products of few rows, where that kernel is faster (same bits) */
  eng_work w;
  json_t *config; /* config.json, parsed from the bytes digested in files */
  /* config.json, the index when present and every shard, sorted by name once loaded; each
   * digested in the read that parsed or checked it. */
  struct eng_file {
    char *name;
    uint64_t bytes;
    char hex[65];
    char blob[65]; /* a Hugging Face cache blob's sha256 name, checked by the shard pass, or "" */
  } * files;
  size_t nfiles;
  const fdl_tensor **checked; /* the tensors fdl_eng_bind bound: the ones checked for finiteness */
  size_t nchecked, capchecked;
  /* A model from a GGUF file instead of shards (gguf_model.c): */
  fdl_gguf *gguf;
  fdl_tensor *gt; /* [ngt] its tensors under the Hugging Face names */
  char **gt_names;
  bool *gguf_checked;        /* [ngt] checked finite by fdl_ggml_dequant at load */
  size_t *gguf_row_bytes;    /* [ngt] a matrix held in ggml blocks: bytes per row; else 0 */
  eng_reorder *gguf_reorder; /* [ngt] how its rows or columns go back to Hugging Face order */
  /* llama.cpp's converter changed values, not only names (qwen35): the zero-centred norms are
   * stored as 1 + w, A_log as -exp(A_log) (gguf_qwen35.c). */
  bool gguf_converted;
  size_t ngt;
  char gguf_codec[40]; /* "gguf:<the matrices' most common type>" */
  bool gguf_quantized; /* some matrix is stored quantized (run dequantized) */
};

/* Attention query rows per task. */
#define ENG_ATT_ROWS 16

/* config.c: fills everything in info that config.json says; arch points into cfg's strings (the
 * caller copies it). Refusals name the field. */
fdl_status fdl_eng_config(const json_t *cfg, const char *path, fdl_model_info *info, fdl_err *err);

/* config.c: the readers config_qwen35.c shares; each refusal names path and key. */
bool fdl_eng_cfg_set(const json_t *v); /* present, non-null, non-false, non-zero */
/* The field's value, or NULL when it is absent or null (transformers writes null for unset). */
const json_t *fdl_eng_cfg_given(const json_t *o, const char *key);
fdl_status fdl_eng_cfg_size(const json_t *cfg, const char *path, const char *key, bool required,
                            size_t dflt, size_t *out, fdl_err *err);
fdl_status fdl_eng_cfg_real(const json_t *cfg, const char *path, const char *key, double dflt,
                            double *out, fdl_err *err);
fdl_status fdl_eng_cfg_bool(const json_t *cfg, const char *path, const char *key, bool dflt,
                            bool *out, fdl_err *err);
/* config_qwen35.c: the Qwen3.5 fields of cfg (tc: its text config; rope_src: where rope_theta
 * was found). info->linear is allocated here and freed with the model. */
fdl_status fdl_eng_config_qwen35(const json_t *cfg, const json_t *tc, const json_t *rope_src,
                                 const char *path, fdl_model_info *info, fdl_err *err);

/* gguf_model.c: whether path is a GGUF file; opening one (m->gguf, m->config from its
 * metadata, m->files its one entry); its tensors as views (after fdl_eng_config); its digest and
 * the bound tensors' finiteness (after binding). */
bool fdl_eng_is_gguf(const char *path);
/* Whether t is a matrix held in ggml blocks; if so its block type and bytes per row. */
bool fdl_eng_gguf_blocks(const fdl_model *m, const fdl_tensor *t, uint32_t *type,
                         size_t *row_bytes);
/* For a matrix held in ggml blocks whose stored rows are not in Hugging Face order (llama's
 * Q/K, Qwen3.5's tiled V heads), how they map (fdl_eng_reorder_src); NULL otherwise. */
const eng_reorder *fdl_eng_gguf_rows_from(const fdl_model *m, const fdl_tensor *t);
fdl_status fdl_eng_gguf_open(fdl_model *m, const char *path, fdl_err *err);
fdl_status fdl_eng_gguf_tensors(fdl_model *m, fdl_err *err);
fdl_status fdl_eng_gguf_scan(fdl_model *m, fdl_err *err);
/* gguf_qwen35.c: a qwen35 file's own metadata into cfg; the V-head reorder of tensor hf. */
fdl_status fdl_eng_gguf_qwen35_config(const fdl_gguf *g, json_t *cfg, fdl_err *err);
void fdl_eng_gguf_qwen35_reorder(const fdl_model_info *in, const char *hf, eng_reorder *o);

/* weights.c: opens the shards, binds and checks every tensor against info. */
fdl_status fdl_eng_weights(fdl_model *m, const char *dir, const json_t *cfg, fdl_err *err);
/* A JSON file of the model (config.json, the shard index) read once: parsed from the bytes
 * digested, a cache blob checked against its name, and listed among the model's files as name. */
fdl_status fdl_eng_json_file(fdl_model *m, const char *path, const char *name, json_t **out,
                             fdl_err *err);
typedef struct {
  fdl_model *m;
  const char **bound; /* names bound so far (borrowed from the shards) */
  size_t nbound, capbound;
} eng_binder;
/* Finds name and checks its shape (nd dims), alignment and dtype: the model's weight dtype, or
 * with any_float any of BF16/F16/F32. Its finiteness is checked later, in the pass that hashes
 * the shard. */
fdl_status fdl_eng_bind(eng_binder *b, const char *name, int nd, const size_t *dim, bool any_float,
                        const fdl_tensor **out, fdl_err *err);
/* A [rows, cols] matrix as stored (ggml blocks included), or its GPTQ reconstruction. */
fdl_status fdl_eng_bind_mat(eng_binder *b, const char *name, size_t rows, size_t cols, eng_mat *mat,
                            fdl_err *err);
/* A vector widened to float32 (norm weights and biases are small and read element-wise). */
fdl_status fdl_eng_bind_vec(eng_binder *b, const char *name, size_t n, float **out, fdl_err *err);
/* Layer i's MLP, its tensors named `pre`mlp.*: dense, or routed (fdl_eng_bind_moe, moe.c). */
fdl_status fdl_eng_bind_mlp(eng_binder *b, size_t i, const char *pre, fdl_err *err);
/* weights_qwen35.c: layer i of a Qwen3.5 checkpoint. */
fdl_status fdl_eng_bind_qwen35_layer(eng_binder *b, size_t i, fdl_err *err);
/* w = 1 + w in float32, as Qwen3.5's zero-centred RMSNorm applies its weight. */
void fdl_eng_zero_centred(float *w, size_t n);
/* mat.c: rows [j0, j1) of the eng_mat ctx as float32 (the GEMM's b_rows), one row, and the B
 * fields of a product with rows from row0 on. */
void fdl_eng_mat_rows(const void *ctx, size_t j0, size_t j1, float *dst);
void fdl_eng_mat_row(const eng_mat *b, size_t row, float *dst);
void fdl_eng_mat_args(const eng_mat *b, size_t row0, fdl_gemm_args *x);
/* The tensor called name in any shard, or NULL. */
const fdl_tensor *fdl_eng_find(const fdl_model *m, const char *name);
/* A new tensor, its bytes data (from fdl_malloc), that the model owns and frees with itself (a
 * float32 copy or reconstruction); NULL, data freed, when out of memory. */
fdl_tensor *fdl_eng_own(fdl_model *m, void *data);
/* quant_load.c: the [rows, cols] matrix `weight_name` (".weight") of a quantized checkpoint
 * (GPTQ, AWQ or compressed-tensors, as info says), from its parts, as a float32 tensor the model
 * owns; parts receives the names it read (NULL after the last). */
#define FDL_ENG_QUANT_PARTS 5
fdl_status fdl_eng_quant_mat(fdl_model *m, const char *weight_name, size_t rows, size_t cols,
                             eng_mat *mat, const char **parts, fdl_err *err);
/* Whether config.json declares a quantized checkpoint whose matrices the engine reconstructs. */
static inline bool fdl_eng_quantized(const fdl_model_info *in) {
  return in->gptq_group || in->ct_format;
}
/* ctensors_config.c: a compressed-tensors quantization_config into info (ct_format, ct). */
fdl_status fdl_eng_ct_config(const json_t *q, const char *path, fdl_model_info *info, fdl_err *err);

/* mathfn.c: fidelis' own double-precision functions, built from +, *, fma and exact scalings,
 * so no libm variant can move a bit. */
/* rope.c: the RoPE scaling of a config (into info->rope; *src: the object holding rope_theta),
 * refused on an architecture where !scaling_ok; and a run's rotary_dim / 2 inverse frequencies
 * for a context of n positions (dynamic scaling depends on n). */
fdl_status fdl_eng_rope_config(const json_t *tc, const char *path, bool scaling_ok,
                               fdl_model_info *info, const json_t **src, fdl_err *err);
void fdl_eng_rope_freqs(const fdl_model_info *in, size_t n, double *inv);
double fdl_eng_log(double x);                        /* x > 0 finite; ~1 ulp */
void fdl_eng_sincos(double x, double *s, double *c); /* |x| < 2^20; ~1 ulp */

/* kernels.c: the scalar kernels (fixed order, float64 accumulators). */
void fdl_eng_rmsnorm(const float *x, const float *w, size_t n, double eps, float *y);
void fdl_eng_rope(float *v, const float *cos_t, const float *sin_t, size_t head_dim);
void fdl_eng_add(float *y, const float *x, size_t n);
/* y *= sigmoid(g), each one float64 expression rounded once. */
void fdl_eng_sigmoid_mul(float *y, const float *g, size_t n);
/* sigmoid(x) = 1 / (1 + e^-x), with the exp argument -|x| <= 0 either side of 0. */
double fdl_eng_sigmoid(double x);
void fdl_eng_argmax_chunk(const float *row, size_t n, size_t base, float *best, int64_t *arg);

/* Below this many rows of A the AVX2 kernel outruns the AVX-512 one (measured 2x at 1..16). */
#define ENG_SMALL_M 32

/* Up to this many rows the AVX-512 contexts take their small-M kernel (lanes over B's rows),
 * which outruns the AVX2 one there (decode: one row). */
#define ENG_GEMV_M 4

/* The context a worker uses for a product of `rows` rows; every choice gives the same bits. */
static inline fdl_gemm *fdl_eng_ctx(const fdl_model *m, unsigned worker, size_t rows) {
  return rows > ENG_GEMV_M && rows < ENG_SMALL_M && m->sgemm ? m->sgemm[worker] : m->wgemm[worker];
}

/* rows.c: the per-position kernels of a layer step, over the pool in blocks of rows. */
typedef enum {
  ENG_ROW_NORM_IN,  /* xn = rmsnorm(x, input_layernorm) */
  ENG_ROW_QKV,      /* q/k/v biases, q/k norms, RoPE, V into the transposed cache */
  ENG_ROW_GATE,     /* att *= sigmoid(gate) (Qwen3.5's gated attention) */
  ENG_ROW_ATTN_OUT, /* xn += o bias; x += xn; xn = rmsnorm(x, post_attention_layernorm) */
  ENG_ROW_MLP_OUT,  /* x += xn */
  ENG_ROW_FINAL     /* xn = rmsnorm(x, model.norm) */
} eng_row_phase;
fdl_status fdl_eng_rows(fdl_model *m, eng_row_phase ph, size_t li, size_t p0, size_t rows,
                        fdl_err *err);

/* deltanet.c: sizes the Qwen3.5 buffers for n positions; then a Gated DeltaNet layer over rows
 * [p0, p0 + rows): w->xn (normed input) -> w->xn (out_proj's output), chunked or recurrent. */
fdl_status fdl_eng_gdn_work(fdl_model *m, size_t n, fdl_err *err);
void fdl_eng_gdn_free(eng_q35_work *q);
/* forward.c: the scratch's allocator, one call per buffer: a * b * c zeroed elements of size
 * bytes (at least one), or NULL. After an overflow or a failed allocation it allocates nothing
 * more but still adds what each buffer asks to mib, so a message can say what the whole scratch
 * would take. fdl_eng_work_free releases every kind's scratch (dense, Qwen3.5, MoE). */
typedef struct {
  bool too_large, nomem;
  double mib;
} eng_scratch;
void *fdl_eng_scratch(eng_scratch *s, size_t a, size_t b, size_t c, size_t size);
void fdl_eng_work_free(eng_work *w);
/* moe.c: which layers of a Qwen3MoeForCausalLM or (qwen35) Qwen3.5 MoE text config route
 * through experts, and their shapes (into info); layer li's routed MLP over rows [0, rows) of
 * w->xn, written back to w->xn; and binding layer i's MLP (dense or routed) under `pre`. */
fdl_status fdl_eng_moe_config(const json_t *cfg, const char *path, bool qwen35,
                              fdl_model_info *info, fdl_err *err);
fdl_status fdl_eng_moe(fdl_model *m, size_t li, size_t rows, fdl_err *err);
fdl_status fdl_eng_bind_moe(eng_binder *b, eng_layer *l, const char *pre, fdl_err *err);
void fdl_eng_moe_free(eng_moe_work *w);
fdl_status fdl_eng_gdn_layer(fdl_model *m, size_t li, size_t p0, size_t rows, bool chunked,
                             fdl_err *err);

/* forward.c: the input checks every run makes (1 <= n <= max_positions, ids in the vocabulary),
 * shared by fdl_engine_run and fdl_engine_run_f64 so both refuse the same inputs alike. */
fdl_status fdl_eng_check_ids(const fdl_model *m, const int32_t *ids, size_t n, fdl_err *err);
/* A run in pieces (fdl_engine_run is begin(n), span(0, n); generation extends the context one
 * token at a time): fdl_eng_begin sizes the scratch (the KV cache, Qwen3.5's states) and the RoPE
 * table for contexts of up to n positions, keeping what the scratch holds when it is large
 * enough already; fdl_eng_span runs positions [p0, n) of ids on the path, the caches holding
 * [0, p0) from the spans before it since fdl_eng_begin. Outputs go to their rows p0 .. n - 1. */
fdl_status fdl_eng_begin(fdl_model *m, size_t n, fdl_err *err);
fdl_status fdl_eng_span(fdl_model *m, const int32_t *ids, size_t p0, size_t n, fdl_engine_path path,
                        const fdl_engine_out *out, fdl_err *err);

/* pgemm.c: products on the model's pool (bits as one fdl_gemm_run, whatever the cut). */
fdl_status fdl_eng_gemm_args(fdl_model *m, const fdl_gemm_args *x, fdl_err *err);
fdl_status fdl_eng_gemm(fdl_model *m, const float *a, size_t lda, size_t rows, const eng_mat *b,
                        float *c, size_t ldc, fdl_err *err);

/* greedy.c: the greedy id of each of rows xn[0 .. rows) under the head: the first index of the
 * largest logit, a NaN never winning; the same ids whatever the threads and the ISA. */
fdl_status fdl_eng_greedy(fdl_model *m, size_t p0, size_t rows, int32_t *ids, fdl_err *err);

/* FDL_NONFINITE when rows [0, rows) of width w at v hold a NaN or an infinity: finite, accepted
 * weights can still overflow (an embedding at the BF16 maximum, a tiny rope_theta, a large
 * A_log), and nothing computed from such a row may be published. `what` names the stage; the
 * position is p0 + the row; the element is e0 + its column, counted in `unit`s. */
fdl_status fdl_eng_check_finite(const float *v, size_t rows, size_t w, size_t p0, size_t e0,
                                const char *what, const char *unit, fdl_err *err);

#endif
