/* synth.c - `fidelis synth`: a synthetic but honest reference/candidate pair.
 *
 * The reference is a random BF16 head over random BF16 hidden states on a built-in panel with
 * four domains. The candidate is the same model with only its head quantized (int4, symmetric
 * round-to-nearest, groups of 32 along the hidden axis) and decoded back to BF16. Quantizing
 * only the head leaves the hidden states (the tensor handed to the head) bit-identical, so the
 * candidate ships the very same hidden states: the two captures have equal content digests,
 * and only --own-heads measures the pair (HEAD-1c), which is exactly the head's quantization
 * error. Everything is declared: random weights (a blocking dataset disclosure), the head's
 * quantization in scope and head blocks, and the decode in the runtime's weights_decode.
 *
 * Both datasets are produced by fdl_ds_pack from files written to a staging directory beside
 * --out (panel JSONL, per-record safetensors, head files, meta JSON); the pair appears whole
 * at --out or not at all.
 *
 * Divisions: random numbers; inputs; metas; the run. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/vocab.h"
#include "base/rng.h"
#include "base/sys.h"
#include "dataset/dataset_json.h"
#include "fidelis/digest.h"
#include "fidelis/engine.h"
#include "base/fs.h"
#include "json/json.h"
#include "fidelis/synth.h"
#include "fidelis/tensor.h"
#include "base/path.h"
#include "tensor/safetensors_json.h"

/* ---- random numbers --------------------------------------------------------------------- */

typedef fdl_rng rng;

/* Independent streams per purpose (panel, head, each context) from one user seed. */
static void rng_seed(rng *r, uint64_t seed, uint64_t stream) {
  fdl_rng_seed(r, seed ^ (stream * 0xd1b54a32d192ed03ull));
}

/* Approximately standard normal: a scaled sum of four uniforms (Irwin-Hall). Only +, * and an
 * exact constant, so the values do not depend on the platform's libm. */
static float rng_gauss(rng *r) {
  double s = fdl_rng_unit(r) + fdl_rng_unit(r) + fdl_rng_unit(r) + fdl_rng_unit(r) - 2.0;
  return (float)(s * 1.7320508075688772);
}

/* ---- inputs ----------------------------------------------------------------------------- */

static const char *const DOMAINS[4] = {"prose", "code", "arithmetic", "dialogue"};
/* Hidden-state scale per domain: sharper distributions (code) feel quantization more. */
static const float DOMAIN_SCALE[4] = {1.0f, 1.6f, 1.3f, 0.8f};

typedef struct {
  const fdl_synth_opts *o;
  fdl_stage st;                   /* becomes --out */
  char *inputs;                   /* st.path/.inputs: pack's inputs, removed before publishing */
  const char *outs;               /* st.path */
  uint16_t *head_ref, *head_cand; /* [vocab x hidden] BF16 */
  char exe_sha[FDL_SHA256_HEX_BUF];
} synth;

static fdl_status write_panel(synth *z, fdl_err *err) {
  const fdl_synth_opts *o = z->o;
  fdl_buf b;
  fdl_buf_init(&b, 0);
  rng r;
  rng_seed(&r, o->seed, 1);
  for (size_t c = 0; c < o->contexts; c++) {
    const char *dom = DOMAINS[c % 4];
    fdl_buf_printf(&b,
                   "{\"index\":%zu,\"window_id\":\"synth-%04zu\",\"domain\":\"%s\","
                   "\"document_id\":\"fidelis-synth/%s-%04zu\",\"role\":\"final\",\"tokens\":[",
                   c, c, dom, dom, c);
    for (size_t t = 0; t < o->tokens_per_context; t++)
      fdl_buf_printf(&b, "%s%" PRIu64, t ? "," : "", fdl_rng_below(&r, o->vocab));
    fdl_buf_puts(&b, "]}\n");
  }
  fdl_status s = fdl_buf_status(&b);
  if (s != FDL_OK) {
    fdl_buf_free(&b);
    return fdl_fail(err, s, "out of memory for the synthetic panel");
  }
  char *path = fdl_path_join(z->inputs, "panel.jsonl");
  s = path ? fdl_write_file(path, b.data, b.len, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  fdl_buf_free(&b);
  return s;
}

static fdl_status write_hidden(synth *z, fdl_err *err) {
  const fdl_synth_opts *o = z->o;
  size_t rows = o->tokens_per_context - 1, h = o->hidden;
  float *f = fdl_malloc(rows * h * sizeof *f);
  uint16_t *bf = fdl_malloc(rows * h * sizeof *bf);
  char *dir = fdl_path_join(z->inputs, "tensors");
  fdl_status s = FDL_OK;
  if (!f || !bf || !dir) s = fdl_fail(err, FDL_NOMEM, "out of memory for hidden states");
  if (s == FDL_OK) s = fdl_mkdirs(dir, err);
  for (size_t c = 0; c < o->contexts && s == FDL_OK; c++) {
    rng r;
    rng_seed(&r, o->seed, 1000 + c);
    for (size_t i = 0; i < rows * h; i++) f[i] = DOMAIN_SCALE[c % 4] * rng_gauss(&r);
    fdl_f32_to_bf16_n(f, bf, rows * h);
    char name[64], *path;
    snprintf(name, sizeof name, "%04zu.safetensors", c);
    if (!(path = fdl_path_join(dir, name))) {
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
      break;
    }
    int64_t shape[2] = {(int64_t)rows, (int64_t)h};
    fdl_tensor_in t = {"hidden_states", FDL_DTYPE_BF16, 2, shape, bf};
    s = fdl_safetensors_write(path, &t, 1, NULL, err);
    free(path);
  }
  free(f);
  free(bf);
  free(dir);
  return s;
}

/* The reference head (random, BF16) and the candidate head (its int4 round trip, BF16). */
static fdl_status write_heads(synth *z, fdl_err *err) {
  const fdl_synth_opts *o = z->o;
  size_t n = o->vocab * o->hidden;
  float *f = fdl_malloc(n * sizeof *f);
  z->head_ref = fdl_malloc(n * sizeof *z->head_ref);
  z->head_cand = fdl_malloc(n * sizeof *z->head_cand);
  if (!f || !z->head_ref || !z->head_cand) {
    free(f);
    return fdl_fail(err, FDL_NOMEM, "out of memory for a %zu x %zu head", o->vocab, o->hidden);
  }
  rng r;
  rng_seed(&r, o->seed, 2);
  /* Logits of about 3 nats spread per unit hidden scale (sqrt is correctly rounded in IEEE). */
  float sigma = (float)(3.0 / sqrt((double)o->hidden));
  for (size_t i = 0; i < n; i++) f[i] = sigma * rng_gauss(&r);
  fdl_f32_to_bf16_n(f, z->head_ref, n);
  fdl_bf16_to_f32_n(z->head_ref, f, n);
  fdl_quant_int4_rtn(f, o->vocab, o->hidden, FDL_SYNTH_GROUP, f);
  fdl_f32_to_bf16_n(f, z->head_cand, n);
  free(f);
  int64_t shape[2] = {(int64_t)o->vocab, (int64_t)o->hidden};
  const char *names[2] = {"head-reference.safetensors", "head-candidate.safetensors"};
  uint16_t *data[2] = {z->head_ref, z->head_cand};
  for (int i = 0; i < 2; i++) {
    char *path = fdl_path_join(z->inputs, names[i]);
    if (!path) return fdl_fail(err, FDL_NOMEM, "out of memory");
    fdl_tensor_in t = {"lm_head.weight", FDL_DTYPE_BF16, 2, shape, data[i]};
    fdl_status s = fdl_safetensors_write(path, &t, 1, NULL, err);
    free(path);
    if (s != FDL_OK) return s;
  }
  return FDL_OK;
}

/* ---- metas ------------------------------------------------------------------------------ */

/* NULL when out of memory: a scope short of a class must not be packed. */
static json_t *scope(bool quant) {
  json_t *a = json_array();
  int bad = 0;
  for (int i = 0; i < FDL_TCLASS_COUNT; i++) {
    if (i == FDL_TCLASS_MOE_EXPERTS) continue; /* a dense scope */
    bool q = quant && i == FDL_TCLASS_LM_HEAD;
    bad |= json_array_append_new(
        a, json_pack("{s:s, s:s, s:s, s:i, s:n}", "tensor_class", fdl_tensor_class_names[i],
                     "treatment", q ? "quantized" : "native", "format", q ? "int4" : "bf16",
                     "bits_per_weight", q ? 4 : 16, "layer_range"));
  }
  if (!(a = fdl_json_built(a, bad))) return NULL;
  return json_pack("{s:o, s:s, s:s, s:s}", "assignments", a, "policy", quant ? "mixed" : "native",
                   "head_policy", quant ? "quantized" : "native", "kv_cache_dtype", "bf16");
}

static json_t *meta(const synth *z, bool cand, const char *ckpt) {
  const fdl_synth_opts *o = z->o;
  char id[96], name[160], panel_id[96], repo[96];
  snprintf(id, sizeof id, "fidelity--fidelis.synth-s%" PRIu64 ".%s", o->seed,
           cand ? "int4-head" : "root");
  snprintf(name, sizeof name, "fidelis synth %s (seed %" PRIu64 ", vocab %zu, hidden %zu)",
           cand ? "candidate: int4 RTN g32 head" : "reference: random BF16 model", o->seed,
           o->vocab, o->hidden);
  snprintf(panel_id, sizeof panel_id, "panel--fidelis.synth-s%" PRIu64 "-%zux%zu", o->seed,
           o->contexts, o->tokens_per_context);
  snprintf(repo, sizeof repo, "fidelis/synth-%s", cand ? "int4-rtn-g32-head" : "random-bf16");
  json_t *m = json_pack(
      "{s:s, s:s, s:s, s:s, s:I, s:{s:s, s:s}, s:{s:s}, s:{s:s, s:I}, s:{s:s, s:s}}", "role",
      cand ? "quant" : "root", "form", "hidden", "lane", "other", "device", "cpu", "vocab_size",
      (json_int_t)o->vocab, "engine", "name", "fidelis-synth", "version", fdl_version(), "dtypes",
      "forward", "BF16", "tokenizer", "id", "fidelis-synth-tokenizer", "vocab_size",
      (json_int_t)o->vocab, "panel", "panel_id", panel_id, "name", "fidelis synth panel");
  if (!m) return NULL;
  /* Every set's failure (memory) is or-ed into bad: a meta missing a member is never packed. */
  int bad = json_object_set_new(m, "dataset", json_pack("{s:s, s:s}", "id", id, "name", name));
  json_t *w = json_pack("{s:s, s:n, s:n, s:b, s:s}", "repository", repo, "revision",
                        "model_revision", "quantized", cand, "checkpoint_identity_sha256", ckpt);
  if (cand) {
    bad |= json_object_set_new(w, "codec", json_string("int4"));
    bad |= json_object_set_new(w, "declared_head_bits", json_integer(4));
  }
  bad |= json_object_set_new(m, "weights", w);
  if (cand) {
    bad |= json_object_set_new(m, "scope", scope(true));
    bad |= json_object_set_new(
        m, "head",
        json_pack("{s:s, s:b, s:i}", "source", "artifact_dequantized", "quantized", 1, "bits", 4));
    bad |= json_object_set_new(
        m, "weights_decode",
        json_pack("{s:s, s:s, s:s, s:[s], s:{s:i, s:i, s:b, s:s, s:n}}", "method",
                  "affine-weight-reconstruction", "scope", "weights_reconstructed", "output_dtype",
                  "bfloat16", "modules_decoded", "lm_head", "quantization_config", "bits", 4,
                  "group_size", FDL_SYNTH_GROUP, "sym", 1, "rounding",
                  "round to nearest, ties to even; scale = max|w| / 7 per group of 32 along "
                  "the hidden axis",
                  "activation_scheme"));
  }
  if (o->created_utc) bad |= json_object_set_new(m, "created_utc", json_string(o->created_utc));
  if (*z->exe_sha)
    bad |= json_object_set_new(m, "source_files", json_pack("{s:s}", "bin/fidelis", z->exe_sha));
  bad |= json_object_set_new(
      m, "disclosures",
      json_pack("[{s:s, s:s, s:b, s:s}]", "code", "randomly_initialised_weights", "severity",
                "blocking", "affects_comparability", 1, "detail",
                "synthetic data from `fidelis synth`: a random head over random hidden states, "
                "not a trained model. Useful to exercise and demonstrate the comparator, "
                "meaningless as a fidelity result."));
  return fdl_json_built(m, bad);
}

/* ---- the run ---------------------------------------------------------------------------- */

/* One side's meta, written beside the inputs it describes, and the side packed. */
static fdl_status pack_side(synth *z, bool cand, fdl_synth_result *res, fdl_err *err) {
  const fdl_synth_opts *o = z->o;
  char ckpt[FDL_SHA256_HEX_BUF];
  uint16_t *h = cand ? z->head_cand : z->head_ref;
  /* The synthetic checkpoint is its head: identify it by the head's bytes. */
  fdl_status s = fdl_sha256_buf_hex(h, o->vocab * o->hidden * sizeof *h, ckpt, err);
  if (s != FDL_OK) return s;
  json_t *m = meta(z, cand, ckpt);
  char *out = fdl_path_join(z->outs, cand ? "candidate" : "reference");
  fdl_ds_pack_opts po = {.threads = o->threads,
                         .created_utc = o->created_utc,
                         .notice = o->notice,
                         .notice_arg = o->notice_arg};
  fdl_ds_pack_result pr;
  memset(&pr, 0, sizeof pr);
  if (!m)
    s = fdl_fail(err, FDL_NOMEM, "out of memory for the synth meta");
  else
    s = out ? fdl_ds_pack_staged(
                  z->inputs, cand ? "head-candidate.safetensors" : "head-reference.safetensors",
                  cand ? "meta-candidate.json" : "meta-reference.json", m, out, &po, &pr, err)
            : fdl_fail(err, FDL_NOMEM, "out of memory");
  json_decref(m);
  free(out);
  if (pr.refusal.code != FDL_REF_NONE) {
    fdl_err_prefix(err, "synth: packing the %s [%s]", cand ? "candidate" : "reference",
                   fdl_refusal_name(pr.refusal.code));
  } else if (s == FDL_OK) {
    memcpy(cand ? res->candidate_sha256 : res->reference_sha256, pr.dataset_sha256,
           FDL_SHA256_HEX_BUF);
    res->rows = (size_t)pr.scored_rows;
  }
  return s;
}

static fdl_status write_about(synth *z, const fdl_synth_result *res, fdl_err *err) {
  const fdl_synth_opts *o = z->o;
  json_t *a = json_pack(
      "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:{s:s, s:i, s:s, s:s, s:s}, s:s}", "schema",
      "fidelis.synth.v1", "fidelis_version", fdl_version(), "seed", (json_int_t)o->seed, "vocab",
      (json_int_t)o->vocab, "hidden", (json_int_t)o->hidden, "contexts", (json_int_t)o->contexts,
      "tokens_per_context", (json_int_t)o->tokens_per_context, "reference_dataset_sha256",
      res->reference_sha256, "candidate_dataset_sha256", res->candidate_sha256, "candidate_head",
      "scheme", "int4 symmetric round-to-nearest", "group_size", FDL_SYNTH_GROUP, "group_axis",
      "hidden (per head row)", "scale",
      "float32 max|w| / 7; q = clamp(rint(w / scale), -7, 7); w' = q * scale, rounded to BF16",
      "hidden_states", "identical to the reference (only the head is quantized)", "compare",
      "fidelis compare reference candidate --own-heads --out DIR");
  if (!a) return fdl_fail(err, FDL_NOMEM, "out of memory");
  char *path = fdl_path_join(z->outs, "synth.json");
  fdl_status s = path ? fdl_json_write_file(path, a, FDL_JSON_PRETTY, err)
                      : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  json_decref(a);
  return s;
}

void fdl_synth_opts_default(fdl_synth_opts *o) {
  memset(o, 0, sizeof *o);
  o->vocab = FDL_SYNTH_VOCAB_DEFAULT;
  o->hidden = FDL_SYNTH_HIDDEN_DEFAULT;
  o->contexts = FDL_SYNTH_CONTEXTS_DEFAULT;
  o->tokens_per_context = FDL_SYNTH_TOKENS_DEFAULT;
}

fdl_status fdl_synth(const fdl_synth_opts *in, fdl_synth_result *res, fdl_err *err) {
  fdl_synth_opts o = *in;
  if (!o.vocab) o.vocab = FDL_SYNTH_VOCAB_DEFAULT;
  if (!o.hidden) o.hidden = FDL_SYNTH_HIDDEN_DEFAULT;
  if (!o.contexts) o.contexts = FDL_SYNTH_CONTEXTS_DEFAULT;
  if (!o.tokens_per_context) o.tokens_per_context = FDL_SYNTH_TOKENS_DEFAULT;
  memset(res, 0, sizeof *res);
  if (!o.out_dir || !*o.out_dir) return fdl_fail(err, FDL_INVALID, "synth: --out is required");
  if (o.vocab < 2 || o.vocab > ((size_t)1 << 24) || o.hidden > ((size_t)1 << 16) ||
      o.vocab * o.hidden > ((size_t)1 << 31) || o.contexts > 100000 || o.tokens_per_context < 2 ||
      o.tokens_per_context > ((size_t)1 << 20))
    return fdl_fail(err, FDL_INVALID,
                    "synth: sizes out of range (vocab 2..2^24, hidden 1..65536 with vocab x "
                    "hidden <= 2^31, contexts 1..100000, tokens per context 2..2^20)");
  synth z = {.o = &o};
  /* Staged beside --out (one filesystem, one rename), before any work: an existing --out or a
   * parent that cannot be written is found at once. */
  fdl_status s = fdl_stage_open(&z.st, o.out_dir, 0, o.notice, o.notice_arg, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "synth");
    return s;
  }
  /* The binary that writes the inputs, named in their meta when readable: once it is, a failure
   * to hash it (memory, I/O) fails the run rather than leave source_files out. */
  fdl_sha256 exe;
  if (access("/proc/self/exe", R_OK) == 0 &&
      (s = fdl_sha256_file("/proc/self/exe", &exe, NULL, err)) == FDL_OK)
    fdl_sha256_hex(&exe, z.exe_sha);
  z.outs = z.st.path;
  z.inputs = fdl_path_join(z.st.path, ".inputs");
  if (s == FDL_OK && !z.inputs) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK) s = fdl_mkdirs(z.inputs, err);
  if (s == FDL_OK) s = write_panel(&z, err);
  if (s == FDL_OK) s = write_hidden(&z, err);
  if (s == FDL_OK) s = write_heads(&z, err);
  if (s == FDL_OK) s = pack_side(&z, false, res, err);
  if (s == FDL_OK) s = pack_side(&z, true, res, err);
  if (s == FDL_OK) s = write_about(&z, res, err);
  if (s == FDL_OK) s = fdl_remove_tree_at(z.st.dirfd, ".inputs", err);
  if (s == FDL_OK) s = fdl_stage_commit(&z.st, err); /* the pair appears whole or not at all */
  fdl_stage_abort(&z.st);
  free(z.inputs);
  free(z.head_ref);
  free(z.head_cand);
  return s;
}
