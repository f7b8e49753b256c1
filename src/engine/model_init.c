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
 * of about 3 either way; q/k/v biases N(0, 0.01); norms 1 + N(0, 0.0025).
 *
 * Divisions: presets; the panel; tensors; config; the run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "base/sys.h"
#include "engine/model_internal.h"
#include "fidelis/json.h"
#include "fidelis/model.h"
#include "fidelis/path.h"

/* ---- presets ------------------------------------------------------------------------------ */

static const fdl_model_preset PRESETS[] = {
    {"tiny-random", "Qwen3ForCausalLM", "qwen3", 272, 64, 128, 2, 4, 2, 16, 4096, true, true, false,
     1000000.0, 1e-6, 256, 257,
     "Qwen3 at the upstream fixture's size: tied, q/k norm, GQA 2 (with the panel)"},
    {"llama-tiny-random", "LlamaForCausalLM", "llama", 272, 64, 128, 2, 4, 2, 16, 4096, false,
     false, false, 10000.0, 1e-5, 256, 257, "Llama, same size: untied lm_head, GQA 2"},
    {"qwen2-tiny-random", "Qwen2ForCausalLM", "qwen2", 272, 64, 128, 2, 4, 1, 16, 4096, true, false,
     true, 1000000.0, 1e-6, 256, 257, "Qwen2, same size: q/k/v bias, tied, GQA 4"},
    {"llama-100m", "LlamaForCausalLM", "llama", 32000, 768, 2048, 12, 12, 12, 64, 2048, false,
     false, false, 10000.0, 1e-5, 1, 2, "Llama of about 100M parameters (134M with lm_head)"},
    {"qwen3-0.6b", "Qwen3ForCausalLM", "qwen3", 151936, 1024, 3072, 28, 16, 8, 128, 40960, true,
     true, false, 1000000.0, 1e-6, 151643, 151645, "Qwen3-0.6B's shapes (596M parameters)"},
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

typedef enum { K_EMBED, K_PROJ, K_HEAD, K_BIAS, K_NORM, K_FINAL_NORM } kind;

typedef struct {
  char name[96];
  int ndim;
  int64_t shape[2];
  kind k;
} spec;

static void add(spec *t, size_t *n, kind k, int64_t d0, int64_t d1, const char *fmt, size_t layer) {
  spec *s = &t[(*n)++];
  snprintf(s->name, sizeof s->name, fmt, layer);
  s->k = k;
  s->ndim = d1 ? 2 : 1;
  s->shape[0] = d0;
  s->shape[1] = d1;
}

static size_t per_layer(const fdl_model_preset *p) {
  return 2 + 4 + 3 + (p->qkv_bias ? 3 : 0) + (p->qk_norm ? 2 : 0);
}

/* The tensors in HF's module order; t has room for 3 + layers * per_layer. */
static size_t list_tensors(const fdl_model_preset *p, spec *t) {
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
    add(t, &n, K_PROJ, f, h, "model.layers.%zu.mlp.gate_proj.weight", l);
    add(t, &n, K_PROJ, f, h, "model.layers.%zu.mlp.up_proj.weight", l);
    add(t, &n, K_PROJ, h, f, "model.layers.%zu.mlp.down_proj.weight", l);
  }
  add(t, &n, K_FINAL_NORM, h, 0, "model.norm.weight", 0);
  if (!p->tied) add(t, &n, K_HEAD, (int64_t)p->vocab, h, "lm_head.weight", 0);
  return n;
}

uint64_t fdl_model_preset_params(const fdl_model_preset *p) {
  spec *t = fdl_calloc(3 + p->layers * per_layer(p), sizeof *t);
  if (!t) return 0;
  size_t n = list_tensors(p, t);
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += (uint64_t)t[i].shape[0] * (uint64_t)(t[i].ndim == 2 ? t[i].shape[1] : 1);
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

/* Fills out[0..n) (through f, as wide) with the next n BF16 values of tensor t's stream. The
 * multiplies and adds are separate statements so that no compiler fuses them into an FMA, which
 * would round once instead of twice and move bits between builds. */
static void generate(const fdl_model_preset *p, const spec *t, fdl_rng *r, float *f, uint16_t *out,
                     size_t n) {
  const double unit = sqrt(3.0 / 4294967295.0); /* 1 / sd of irwin_hall4 */
  double sd, offset = 0.0, gain = 1.0;
  switch (t->k) {
  case K_EMBED:
    sd = 1.0;
    break;
  case K_PROJ:
    sd = 1.0 / sqrt((double)t->shape[1]);
    break;
  case K_HEAD:
    sd = 3.0 / sqrt((double)p->hidden);
    break;
  case K_BIAS:
    sd = 0.1;
    break;
  case K_FINAL_NORM:
    if (p->tied) gain = 3.0 / sqrt((double)p->hidden);
    sd = 0.05, offset = 1.0;
    break;
  default:
    sd = 0.05, offset = 1.0;
    break;
  }
  const double k = unit * sd;
  for (size_t i = 0; i < n; i++) {
    double v = (double)irwin_hall4(r) * k;
    v = v + offset;
    v = v * gain;
    f[i] = (float)v;
  }
  fdl_f32_to_bf16_n(f, out, n);
}

/* ---- config ------------------------------------------------------------------------------- */

/* The keys transformers writes for the architecture (config.json is json.dumps(indent=2,
 * sort_keys=True) there too), plus a fidelis_init block naming how the weights were made. */
static json_t *config_json(const fdl_model_preset *p, uint64_t seed) {
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
  } else {
    /* Qwen2 and Qwen3 spell out that no layer uses sliding-window attention. */
    ok = !json_object_set_new(c, "use_sliding_window", json_false()) &&
         !json_object_set_new(c, "sliding_window", json_null()) &&
         !json_object_set_new(c, "max_window_layers", json_integer((json_int_t)p->layers));
  }
  json_t *fi = json_pack("{s:s, s:I, s:s}", "preset", p->name, "seed", (json_int_t)seed, "init",
                         "fidelis irwin-hall-4 v1 (docs/MODELS.md)");
  ok = ok && fi && !json_object_set_new(c, "fidelis_init", fi);
  if (!ok) {
    json_decref(c);
    return NULL;
  }
  return c;
}

static fdl_status write_json(const char *dir, const char *name, json_t *v, fdl_err *err) {
  if (!v) return fdl_fail(err, FDL_NOMEM, "out of memory building %s", name);
  char *path = fdl_path_join(dir, name);
  fdl_status s = path ? fdl_json_write_file(path, v, FDL_JSON_PRETTY, err)
                      : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  json_decref(v);
  return s;
}

/* ---- the run ------------------------------------------------------------------------------ */

#define CHUNK ((size_t)1 << 20) /* elements generated and written at a time */

static fdl_status write_weights(const fdl_model_preset *p, uint64_t seed, const char *dir,
                                fdl_model_init_result *res, fdl_err *err) {
  size_t cap = 3 + p->layers * per_layer(p);
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
    ti[i] = (fdl_tensor_in){t[i].name, FDL_DTYPE_BF16, t[i].ndim, t[i].shape, buf};
  fdl_out o = {-1, NULL, NULL};
  bool opened = false;
  uint64_t data_bytes = 0;
  if (s == FDL_OK) s = fdl_out_open(&o, path, err), opened = s == FDL_OK;
  if (s == FDL_OK) s = fdl_model_st_header(&o, ti, n, meta, &data_bytes, err);
  uint64_t params = 0;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    fdl_rng r;
    fdl_rng_seed(&r, seed ^ (fnv1a64(t[i].name) * 0x9e3779b97f4a7c15ull));
    uint64_t numel = (uint64_t)t[i].shape[0] * (uint64_t)(t[i].ndim == 2 ? t[i].shape[1] : 1);
    params += numel;
    for (uint64_t done = 0; done < numel && s == FDL_OK;) {
      size_t m = numel - done < CHUNK ? (size_t)(numel - done) : CHUNK;
      generate(p, &t[i], &r, wide, buf, m);
      s = fdl_out_write(&o, buf, m * sizeof *buf, err); /* little-endian host */
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

fdl_status fdl_model_init(const fdl_model_init_opts *o, fdl_model_init_result *res, fdl_err *err) {
  memset(res, 0, sizeof *res);
  const fdl_model_preset *p = fdl_model_preset_find(o->preset);
  if (!p) {
    char names[256] = "";
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               PRESETS[i].name);
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
  s = write_json(st.path, "config.json", config_json(p, o->seed), err);
  if (s == FDL_OK)
    s = write_json(st.path, "generation_config.json",
                   json_pack("{s:b, s:I, s:I, s:b}", "_from_model_config", 1, "bos_token_id",
                             (json_int_t)p->bos, "eos_token_id", (json_int_t)p->eos, "do_sample",
                             0),
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
  if (s == FDL_OK) s = write_weights(p, o->seed, st.path, res, err);
  if (s == FDL_OK)
    s = fdl_stage_commit(&st, err); /* the model appears whole or not at all */
  else
    fdl_err_prefix(err, "model init %s", o->out_dir);
  fdl_stage_abort(&st);
  return s;
}
