/* bench_generate.c - `generate --new N` (fdl_generate_greedy, the KV cache carried across
 * steps) against an honest floor (issue 24's benchmark): a plain single-threaded float32 decode
 * loop with a KV cache, written here from the Llama definition in the manner of llama2.c's
 * run.c (plain loops, no intrinsics, no threads; the compiler vectorises what it will at the
 * build's -O2). The floor reads its weights itself from model.safetensors through fidelis'
 * safetensors reader and widens them to float32 once, so it shares none of the engine's code.
 *
 *   bench_generate MODEL_DIR N THREADS [REPEATS]
 *
 * Both generate N and N/4 new tokens after the same 8-token prompt with no stop id (`--stop
 * none`), each timed best of REPEATS (3). time(N)/time(N/4) shows the growth: linear is about
 * 4, a re-run of the whole sequence per token about 16; the floor's own ratio is what a KV cache
 * gives on this model: a little under 4 where the prompt's fixed cost shows (the floor runs
 * its 8 positions one by one: 263 positions against 71 is 3.7), a little over where attention,
 * which still grows with the position, weighs against the weights (a tiny model). Tokens/s are new
 * tokens over the whole call, prompt included. The greedy tokens are compared, not asserted: both
 * compute the same model in float32, but in different summation orders. Only LlamaForCausalLM in
 * one model.safetensors is written here. Prints one key=value line per figure. */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_clock.h"
#include "fidelis/engine.h"
#include "fidelis/generate.h"
#include "fidelis/tensor.h"

#define PROMPT_LEN 8

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("bench_generate: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(3);
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) die("out of memory (%zu x %zu bytes)", n, size);
  return p;
}

/* ---- the floor's model: config.json and the weights, widened once ------------------------ */

typedef struct {
  size_t dim;    /* hidden_size */
  size_t inter;  /* intermediate_size */
  size_t layers; /* num_hidden_layers */
  size_t heads;  /* num_attention_heads */
  size_t kv;     /* num_key_value_heads */
  size_t hd;     /* head_dim */
  size_t vocab;  /* vocab_size */
  float eps;     /* rms_norm_eps */
  float theta;   /* rope_theta */
  bool tied;     /* tie_word_embeddings: the head is the embedding */
} floor_config;

typedef struct {
  float *embed;      /* (vocab, dim) */
  float *attn_norm;  /* (layers, dim) */
  float *wq;         /* (layers, heads * hd, dim) */
  float *wk, *wv;    /* (layers, kv * hd, dim) */
  float *wo;         /* (layers, dim, heads * hd) */
  float *mlp_norm;   /* (layers, dim) */
  float *gate, *up;  /* (layers, inter, dim) */
  float *down;       /* (layers, dim, inter) */
  float *final_norm; /* (dim) */
  float *head;       /* (vocab, dim); the embedding when tied */
} floor_weights;

static size_t cfg_size(const json_t *c, const char *key, size_t dflt) {
  const json_t *v = json_object_get(c, key);
  if (!v || json_is_null(v)) {
    if (dflt) return dflt;
    die("config.json: no %s", key);
  }
  if (!json_is_integer(v) || json_integer_value(v) <= 0) die("config.json: bad %s", key);
  return (size_t)json_integer_value(v);
}

static double cfg_real(const json_t *c, const char *key, double dflt) {
  const json_t *v = json_object_get(c, key);
  if (!v || json_is_null(v)) return dflt;
  if (!json_is_number(v)) die("config.json: bad %s", key);
  return json_number_value(v);
}

/* What this loop computes is Llama as transformers defines it with no options: anything else
 * is refused by name rather than computed some other way. */
static floor_config read_config(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/config.json", dir);
  json_error_t je;
  json_t *c = json_load_file(path, 0, &je);
  if (!c) die("%s: %s", path, je.text);
  const char *arch = json_string_value(json_array_get(json_object_get(c, "architectures"), 0));
  if (!arch || strcmp(arch, "LlamaForCausalLM"))
    die("the floor is written for LlamaForCausalLM only, not %s", arch ? arch : "(none)");
  const json_t *rs = json_object_get(c, "rope_scaling");
  if (rs && !json_is_null(rs)) die("the floor has no rope_scaling");
  if (json_is_true(json_object_get(c, "attention_bias")) ||
      json_is_true(json_object_get(c, "mlp_bias")))
    die("the floor has no biases");
  const char *act = json_string_value(json_object_get(c, "hidden_act"));
  if (act && strcmp(act, "silu")) die("the floor has SiLU only, not %s", act);
  floor_config f;
  f.dim = cfg_size(c, "hidden_size", 0);
  f.inter = cfg_size(c, "intermediate_size", 0);
  f.layers = cfg_size(c, "num_hidden_layers", 0);
  f.heads = cfg_size(c, "num_attention_heads", 0);
  f.kv = cfg_size(c, "num_key_value_heads", f.heads);
  f.hd = cfg_size(c, "head_dim", f.dim / f.heads);
  f.vocab = cfg_size(c, "vocab_size", 0);
  f.eps = (float)cfg_real(c, "rms_norm_eps", 1e-6);
  f.theta = (float)cfg_real(c, "rope_theta", 10000.0);
  f.tied = json_is_true(json_object_get(c, "tie_word_embeddings"));
  json_decref(c);
  if (f.heads % f.kv || f.hd % 2) die("config.json: heads, kv heads or head_dim do not fit");
  return f;
}

/* Widens the named tensor, which must have exactly the shape rows x cols (cols 0: a vector of
 * rows), into out. */
static void widen(const fdl_safetensors *st, const char *name, size_t rows, size_t cols,
                  float *out) {
  const fdl_tensor *t = fdl_safetensors_find(st, name);
  if (!t) die("model.safetensors: no %s", name);
  if (!fdl_tensor_widenable(t->dtype)) die("%s: dtype %s", name, fdl_dtype_name(t->dtype));
  bool ok = cols ? t->ndim == 2 && (size_t)t->shape[0] == rows && (size_t)t->shape[1] == cols
                 : t->ndim == 1 && (size_t)t->shape[0] == rows;
  if (!ok) die("%s: not the shape config.json gives", name);
  fdl_tensor_widen_f32(t, 0, cols ? rows * cols : rows, out);
}

/* Layer l's tensor `suffix` into the l-th slice of a (layers, rows, cols) array. */
static void widen_layer(const fdl_safetensors *st, size_t l, const char *suffix, size_t rows,
                        size_t cols, float *all) {
  char name[256];
  snprintf(name, sizeof name, "model.layers.%zu.%s", l, suffix);
  size_t n = cols ? rows * cols : rows;
  widen(st, name, rows, cols, all + l * n);
}

static void read_weights(const char *dir, const floor_config *f, floor_weights *w) {
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors", dir);
  fdl_safetensors *st = NULL;
  fdl_err err;
  if (fdl_safetensors_open(path, &st, &err) != FDL_OK) die("%s", err.msg);
  size_t d = f->dim, q = f->heads * f->hd, kv = f->kv * f->hd, L = f->layers;
  w->embed = xcalloc(f->vocab * d, sizeof(float));
  w->attn_norm = xcalloc(L * d, sizeof(float));
  w->wq = xcalloc(L * q * d, sizeof(float));
  w->wk = xcalloc(L * kv * d, sizeof(float));
  w->wv = xcalloc(L * kv * d, sizeof(float));
  w->wo = xcalloc(L * d * q, sizeof(float));
  w->mlp_norm = xcalloc(L * d, sizeof(float));
  w->gate = xcalloc(L * f->inter * d, sizeof(float));
  w->up = xcalloc(L * f->inter * d, sizeof(float));
  w->down = xcalloc(L * d * f->inter, sizeof(float));
  w->final_norm = xcalloc(d, sizeof(float));
  widen(st, "model.embed_tokens.weight", f->vocab, d, w->embed);
  for (size_t l = 0; l < L; l++) {
    widen_layer(st, l, "input_layernorm.weight", d, 0, w->attn_norm);
    widen_layer(st, l, "self_attn.q_proj.weight", q, d, w->wq);
    widen_layer(st, l, "self_attn.k_proj.weight", kv, d, w->wk);
    widen_layer(st, l, "self_attn.v_proj.weight", kv, d, w->wv);
    widen_layer(st, l, "self_attn.o_proj.weight", d, q, w->wo);
    widen_layer(st, l, "post_attention_layernorm.weight", d, 0, w->mlp_norm);
    widen_layer(st, l, "mlp.gate_proj.weight", f->inter, d, w->gate);
    widen_layer(st, l, "mlp.up_proj.weight", f->inter, d, w->up);
    widen_layer(st, l, "mlp.down_proj.weight", d, f->inter, w->down);
  }
  widen(st, "model.norm.weight", d, 0, w->final_norm);
  if (f->tied) {
    w->head = w->embed;
  } else {
    w->head = xcalloc(f->vocab * d, sizeof(float));
    widen(st, "lm_head.weight", f->vocab, d, w->head);
  }
  fdl_safetensors_close(st);
}

static void free_weights(const floor_config *f, floor_weights *w) {
  if (!f->tied) free(w->head);
  free(w->embed);
  free(w->attn_norm);
  free(w->wq);
  free(w->wk);
  free(w->wv);
  free(w->wo);
  free(w->mlp_norm);
  free(w->gate);
  free(w->up);
  free(w->down);
  free(w->final_norm);
}

/* ---- the floor's forward pass: one position through the KV cache ------------------------ */

typedef struct {
  float *x, *xb, *xb2; /* (dim) the residual stream, a normed copy, a projection's output */
  float *q, *ao;       /* (heads * hd) the query, attention's output */
  float *hb, *hb2;     /* (inter) gate and up */
  float *att;          /* (seq) one head's scores */
  float *cos, *sin;    /* (hd / 2) RoPE at this position */
  float *logits;       /* (vocab) */
  float *kcache;       /* (layers, seq, kv * hd) */
  float *vcache;       /* (layers, seq, kv * hd) */
  size_t seq;          /* positions the caches hold */
} floor_state;

static void rmsnorm(float *o, const float *x, const float *w, size_t n, float eps) {
  float ss = 0.0f;
  for (size_t j = 0; j < n; j++) ss += x[j] * x[j];
  ss = 1.0f / sqrtf(ss / (float)n + eps);
  for (size_t j = 0; j < n; j++) o[j] = w[j] * (ss * x[j]);
}

/* o (d) = W (d, n) x (n) */
static void matmul(float *o, const float *x, const float *w, size_t n, size_t d) {
  for (size_t i = 0; i < d; i++) {
    float v = 0.0f;
    for (size_t j = 0; j < n; j++) v += w[i * n + j] * x[j];
    o[i] = v;
  }
}

static void softmax(float *x, size_t n) {
  float max = x[0];
  for (size_t i = 1; i < n; i++)
    if (x[i] > max) max = x[i];
  float sum = 0.0f;
  for (size_t i = 0; i < n; i++) {
    x[i] = expf(x[i] - max);
    sum += x[i];
  }
  for (size_t i = 0; i < n; i++) x[i] /= sum;
}

/* Rotate-half RoPE of nh heads of hd at v: element i pairs with i + hd/2. */
static void rope(float *v, size_t nh, size_t hd, const float *c, const float *s) {
  size_t half = hd / 2;
  for (size_t h = 0; h < nh; h++) {
    float *p = v + h * hd;
    for (size_t i = 0; i < half; i++) {
      float a = p[i], b = p[i + half];
      p[i] = a * c[i] - b * s[i];
      p[i + half] = b * c[i] + a * s[i];
    }
  }
}

static void state_init(floor_state *s, const floor_config *f, size_t seq) {
  size_t kv = f->kv * f->hd;
  s->seq = seq;
  s->x = xcalloc(f->dim, sizeof(float));
  s->xb = xcalloc(f->dim, sizeof(float));
  s->xb2 = xcalloc(f->dim, sizeof(float));
  s->q = xcalloc(f->heads * f->hd, sizeof(float));
  s->ao = xcalloc(f->heads * f->hd, sizeof(float));
  s->hb = xcalloc(f->inter, sizeof(float));
  s->hb2 = xcalloc(f->inter, sizeof(float));
  s->att = xcalloc(seq, sizeof(float));
  s->cos = xcalloc(f->hd / 2, sizeof(float));
  s->sin = xcalloc(f->hd / 2, sizeof(float));
  s->logits = xcalloc(f->vocab, sizeof(float));
  s->kcache = xcalloc(f->layers * seq * kv, sizeof(float));
  s->vcache = xcalloc(f->layers * seq * kv, sizeof(float));
}

static void state_free(floor_state *s) {
  free(s->x);
  free(s->xb);
  free(s->xb2);
  free(s->q);
  free(s->ao);
  free(s->hb);
  free(s->hb2);
  free(s->att);
  free(s->cos);
  free(s->sin);
  free(s->logits);
  free(s->kcache);
  free(s->vcache);
}

/* Runs token at pos (the positions before it are in the caches); fills s->logits when asked:
 * a prompt position before the last needs only its keys and values. */
static void forward(const floor_config *f, const floor_weights *w, floor_state *s, int32_t token,
                    size_t pos, bool logits) {
  size_t d = f->dim, hd = f->hd, qd = f->heads * hd, kvd = f->kv * hd, group = f->heads / f->kv;
  float scale = 1.0f / sqrtf((float)hd);
  /* transformers' inv_freq and angle, both in float32 */
  for (size_t i = 0; i < hd / 2; i++) {
    float inv = 1.0f / powf(f->theta, (float)(2 * i) / (float)hd);
    float a = (float)pos * inv;
    s->cos[i] = cosf(a);
    s->sin[i] = sinf(a);
  }
  memcpy(s->x, w->embed + (size_t)token * d, d * sizeof(float));
  for (size_t l = 0; l < f->layers; l++) {
    float *kc = s->kcache + l * s->seq * kvd, *vc = s->vcache + l * s->seq * kvd;
    rmsnorm(s->xb, s->x, w->attn_norm + l * d, d, f->eps);
    matmul(s->q, s->xb, w->wq + l * qd * d, d, qd);
    matmul(kc + pos * kvd, s->xb, w->wk + l * kvd * d, d, kvd);
    matmul(vc + pos * kvd, s->xb, w->wv + l * kvd * d, d, kvd);
    rope(s->q, f->heads, hd, s->cos, s->sin);
    rope(kc + pos * kvd, f->kv, hd, s->cos, s->sin);
    for (size_t h = 0; h < f->heads; h++) {
      const float *qh = s->q + h * hd;
      size_t kh = (h / group) * hd; /* the key/value head this query head shares */
      for (size_t t = 0; t <= pos; t++) {
        const float *k = kc + t * kvd + kh;
        float v = 0.0f;
        for (size_t i = 0; i < hd; i++) v += qh[i] * k[i];
        s->att[t] = v * scale;
      }
      softmax(s->att, pos + 1);
      float *o = s->ao + h * hd;
      memset(o, 0, hd * sizeof(float));
      for (size_t t = 0; t <= pos; t++) {
        const float *v = vc + t * kvd + kh;
        for (size_t i = 0; i < hd; i++) o[i] += s->att[t] * v[i];
      }
    }
    matmul(s->xb2, s->ao, w->wo + l * d * qd, qd, d);
    for (size_t i = 0; i < d; i++) s->x[i] += s->xb2[i];
    rmsnorm(s->xb, s->x, w->mlp_norm + l * d, d, f->eps);
    matmul(s->hb, s->xb, w->gate + l * f->inter * d, d, f->inter);
    matmul(s->hb2, s->xb, w->up + l * f->inter * d, d, f->inter);
    for (size_t i = 0; i < f->inter; i++) {
      float g = s->hb[i];
      s->hb[i] = g / (1.0f + expf(-g)) * s->hb2[i];
    }
    matmul(s->xb2, s->hb, w->down + l * d * f->inter, f->inter, d);
    for (size_t i = 0; i < d; i++) s->x[i] += s->xb2[i];
  }
  if (!logits) return;
  rmsnorm(s->x, s->x, w->final_norm, d, f->eps);
  matmul(s->logits, s->x, w->head, d, f->vocab);
}

/* Lowest index on ties, as fidelis' greedy path. */
static int32_t argmax(const float *v, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] > v[best]) best = i;
  return (int32_t)best;
}

/* The prompt one position at a time, then n_new greedy tokens into out (the last is chosen,
 * never run). The caches are overwritten position by position, so a state is reused. */
static void floor_generate(const floor_config *f, const floor_weights *w, floor_state *s,
                           const int32_t *prompt, size_t n, size_t n_new, int32_t *out) {
  int32_t tok = prompt[0];
  for (size_t pos = 0, k = 0; k < n_new; pos++) {
    bool chooses = pos + 1 >= n;
    forward(f, w, s, tok, pos, chooses);
    if (!chooses) {
      tok = prompt[pos + 1];
      continue;
    }
    tok = out[k++] = argmax(s->logits, f->vocab);
  }
}

/* ---- timing ------------------------------------------------------------------------------ */

static double time_fidelis(fdl_model *m, const int32_t *prompt, size_t n_new, int repeats,
                           int32_t *out) {
  fdl_generate_opts o = {.n_new = n_new, .path = FDL_ENGINE_PREFILL, .n_stop = 0};
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    size_t got = 0;
    fdl_err err;
    double t0 = bench_now();
    if (fdl_generate_greedy(m, prompt, PROMPT_LEN, &o, out, &got, &err) != FDL_OK)
      die("fdl_generate_greedy: %s", err.msg);
    double t = bench_now() - t0;
    if (got != n_new) die("fdl_generate_greedy: %zu tokens, not %zu", got, n_new);
    if (t < best) best = t;
  }
  return best;
}

static double time_floor(const floor_config *f, const floor_weights *w, floor_state *s,
                         const int32_t *prompt, size_t n_new, int repeats, int32_t *out) {
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    double t0 = bench_now();
    floor_generate(f, w, s, prompt, PROMPT_LEN, n_new, out);
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: bench_generate MODEL_DIR N THREADS [REPEATS]\n");
    return 4;
  }
  const char *dir = argv[1];
  size_t n_new = (size_t)atol(argv[2]), quarter = n_new / 4;
  unsigned threads = (unsigned)atoi(argv[3]);
  int repeats = argc == 5 ? atoi(argv[4]) : 3;
  if (quarter < 1 || repeats < 1) die("N must be at least 4 and REPEATS at least 1");
  /* The floor's refusals come first, before any time is spent. */
  floor_config f = read_config(dir);

  fdl_err err;
  fdl_model *m = NULL;
  fdl_model_opts mo = {.threads = threads, .skip_digests = true};
  double t0 = bench_now();
  if (fdl_model_load(dir, &mo, &m, &err) != FDL_OK) die("%s", err.msg);
  double load = bench_now() - t0;
  const fdl_model_info *info = fdl_model_get_info(m);
  if (info->vocab != f.vocab || info->hidden != f.dim || info->layers != f.layers)
    die("the engine and config.json disagree on the model's size");
  int32_t prompt[PROMPT_LEN];
  for (size_t k = 0; k < PROMPT_LEN; k++) prompt[k] = (int32_t)((k * 7919u + 13u) % f.vocab);
  int32_t *fid = xcalloc(n_new, sizeof *fid), *flo = xcalloc(n_new, sizeof *flo);

  double tf = time_fidelis(m, prompt, n_new, repeats, fid);
  double tfq = time_fidelis(m, prompt, quarter, repeats, flo);
  double rss_fidelis = bench_peak_rss_mib();
  printf("model=%s prompt_tokens=%d threads=%u repeats=%d load_s=%.3f\n", info->arch, PROMPT_LEN,
         threads, repeats, load);
  fdl_model_free(m); /* info is the model's: nothing reads it past here */
  printf("fidelis new=%zu seconds=%.4f tokens_per_s=%.2f\n", n_new, tf, (double)n_new / tf);
  printf("fidelis new=%zu seconds=%.4f tokens_per_s=%.2f\n", quarter, tfq, (double)quarter / tfq);
  printf("fidelis ratio_time_n_over_quarter=%.2f (linear ~4, quadratic ~16)\n", tf / tfq);
  printf("fidelis peak_rss_mib=%.1f\n", rss_fidelis);
  fflush(stdout);

  floor_weights w;
  t0 = bench_now();
  read_weights(dir, &f, &w);
  double widen_s = bench_now() - t0;
  floor_state s;
  state_init(&s, &f, PROMPT_LEN + n_new);
  double tl = time_floor(&f, &w, &s, prompt, n_new, repeats, flo);
  size_t agree = 0;
  while (agree < n_new && flo[agree] == fid[agree]) agree++;
  double tlq = time_floor(&f, &w, &s, prompt, quarter, repeats, flo);
  printf("floor threads=1 widen_s=%.3f\n", widen_s);
  printf("floor new=%zu seconds=%.4f tokens_per_s=%.2f\n", n_new, tl, (double)n_new / tl);
  printf("floor new=%zu seconds=%.4f tokens_per_s=%.2f\n", quarter, tlq, (double)quarter / tlq);
  printf("floor ratio_time_n_over_quarter=%.2f\n", tl / tlq);
  printf("fidelis_vs_floor speed=%.2f agree_leading=%zu/%zu\n", tl / tf, agree, n_new);
  printf("peak_rss_mib=%.1f\n", bench_peak_rss_mib());
  state_free(&s);
  free_weights(&f, &w);
  free(fid);
  free(flo);
  return 0;
}
