/* kld_import.c - llama.cpp `.kld` base files: the reader, and their import as a sealed dataset
 * (fidelis/llamacpp_kld.h, docs/LLAMACPP-KLD.md, ../shared/spec/LLAMACPP-KLD.md).
 *
 * The import follows capture's shape: pack's inputs (the panel JSONL, one F32 logit tensor per
 * chunk, a meta JSON) are written into a staging directory beside --out, fdl_ds_pack turns them
 * into the dataset inside it, and one no-replace rename publishes it. Everything that can be
 * wrong with the file or the tokenizer is found before the staging directory exists.
 *
 * Divisions: the reader; the import's checks; the panel; the records; the meta; the run. */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fidelis/vocab.h"
#include "base/sys.h"
#include "base/buf.h"
#include "base/fs.h"
#include "fidelis/digest.h"
#include "fidelis/gguf.h"
#include "fidelis/hub.h"
#include "json/get.h"
#include "json/json.h"
#include "dataset/dataset_json.h"
#include "fidelis/llamacpp_kld.h"
#include "base/path.h"
#include "base/quote.h"
#include "base/refusal.h"
#include "fidelis/tensor.h"
#include "fidelis/tokenizer.h"
#include "tensor/safetensors_json.h"

/* `fidelis panel --like-llama-perplexity`'s scoring-window policy (src/panel/text.c): the
 * comparator requires the exact string of the panel it compares with, and
 * tests/test_pack_kld.py checks that both commands write the same one. */
#define KLD_POLICY                                                                                 \
  "llama-perplexity -c n_ctx: positions 0..n_ctx/2-1 of every chunk are context only; "            \
  "positions n_ctx/2..n_ctx-2 are scored"
#define KLD_CODEC "llamacpp-kld-uint16-logprob"
#define KLD_CREATED_BY "fidelis pack --from-llamacpp-kld"
/* Rows decoded and written per write call: a few MB whatever the vocabulary. */
#define KLD_WRITE_BYTES ((size_t)8 << 20)

/* ---- the reader ---------------------------------------------------------------------------- */

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static float lef32(const uint8_t *p) {
  uint32_t u = le32(p);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

fdl_status fdl_kld_parse_header(const uint8_t *data, uint64_t size, const char *name,
                                fdl_kld_info *info, fdl_err *err) {
  memset(info, 0, sizeof *info);
  if (size < FDL_KLD_HEADER_BYTES)
    return fdl_fail(err, FDL_PARSE,
                    "%s: %" PRIu64 " bytes, shorter than the 20-byte .kld header (magic "
                    "\"" FDL_KLD_MAGIC "\", n_ctx, n_vocab, n_chunk)",
                    name, size);
  if (memcmp(data, FDL_KLD_MAGIC, 8)) {
    char q[FDL_QUOTE_CAP];
    return fdl_fail(err, FDL_PARSE,
                    "%s: magic %s, expected \"" FDL_KLD_MAGIC
                    "\" (not a llama-perplexity --kl-divergence-base file)",
                    name, fdl_quote((const char *)data, 8, q, sizeof q));
  }
  /* llama.cpp writes the counts as int32; a negative one reads here as a huge uint32 and is
   * refused by the bound below, but its message should say what it is. */
  const char *names[3] = {"n_ctx", "n_vocab", "n_chunk"};
  uint32_t v[3];
  for (int i = 0; i < 3; i++) {
    v[i] = le32(data + 8 + 4 * i);
    if (v[i] > INT32_MAX)
      return fdl_fail(err, FDL_INVALID, "%s: %s is %" PRId32 ", not a count", name, names[i],
                      (int32_t)v[i]);
  }
  uint32_t n_ctx = v[0], n_vocab = v[1], n_chunk = v[2];
  if (n_ctx < FDL_KLD_MIN_CTX)
    return fdl_fail(err, FDL_INVALID,
                    "%s: n_ctx is %" PRIu32 "; at least %u is needed (a chunk scores positions "
                    "n_ctx/2..n_ctx-2)",
                    name, n_ctx, FDL_KLD_MIN_CTX);
  if (n_vocab < 1) return fdl_fail(err, FDL_INVALID, "%s: n_vocab is 0", name);
  if (n_chunk < 1)
    return fdl_fail(err, FDL_INVALID, "%s: n_chunk is 0: the file holds no chunk", name);
  uint64_t body = size - FDL_KLD_HEADER_BYTES;
  /* Every count is bounded by what the bytes after the header can hold before any product is
   * formed, so no product below overflows 64 bits. */
  if ((uint64_t)n_ctx * 4 > body)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: n_ctx %" PRIu32 " needs %" PRIu64 " bytes of tokens per chunk, but the "
                    "file has %" PRIu64 " bytes after its header",
                    name, n_ctx, (uint64_t)n_ctx * 4, body);
  if ((uint64_t)n_chunk > body / ((uint64_t)n_ctx * 4))
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: n_chunk %" PRIu32 " chunks of %" PRIu32 " tokens need %" PRIu64
                    " bytes of tokens alone, but the file has %" PRIu64 " bytes after its header",
                    name, n_chunk, n_ctx, (uint64_t)n_chunk * n_ctx * 4, body);
  uint64_t tokens = (uint64_t)n_chunk * n_ctx * 4;
  uint32_t first = n_ctx / 2, rows = n_ctx - 1 - first;
  uint64_t words = 2 * (((uint64_t)n_vocab + 1) / 2) + 4;
  uint64_t row_bytes = 2 * words, left = body - tokens;
  if (row_bytes > left || (uint64_t)rows > left / row_bytes ||
      (uint64_t)n_chunk > left / (row_bytes * rows)) {
    /* the size the header asks for, saturated where it would not fit 64 bits */
    uint64_t per_chunk = row_bytes * rows; /* < 2^34 * 2^31 */
    bool big = (uint64_t)n_chunk > (UINT64_MAX - size) / per_chunk;
    if (big)
      return fdl_fail(err, FDL_BOUNDS,
                      "%s: n_ctx %" PRIu32 ", n_vocab %" PRIu32 ", n_chunk %" PRIu32
                      " need more than 2^64 bytes; the file has %" PRIu64,
                      name, n_ctx, n_vocab, n_chunk, size);
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: n_ctx %" PRIu32 ", n_vocab %" PRIu32 ", n_chunk %" PRIu32
                    " need exactly %" PRIu64 " bytes (20 + 4*n_chunk*n_ctx + "
                    "2*n_chunk*%" PRIu32 "*%" PRIu64 "), but the file has %" PRIu64
                    " (truncated, or not what its header says)",
                    name, n_ctx, n_vocab, n_chunk,
                    FDL_KLD_HEADER_BYTES + tokens + (uint64_t)n_chunk * per_chunk, rows, words,
                    size);
  }
  uint64_t expected = FDL_KLD_HEADER_BYTES + tokens + (uint64_t)n_chunk * rows * row_bytes;
  if (expected != size)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: n_ctx %" PRIu32 ", n_vocab %" PRIu32 ", n_chunk %" PRIu32
                    " need exactly %" PRIu64 " bytes (20 + 4*n_chunk*n_ctx + "
                    "2*n_chunk*%" PRIu32 "*%" PRIu64 "), but the file has %" PRIu64 " (%" PRIu64
                    " bytes too many)",
                    name, n_ctx, n_vocab, n_chunk, expected, rows, words, size, size - expected);
  *info = (fdl_kld_info){.n_ctx = n_ctx,
                         .n_vocab = n_vocab,
                         .n_chunk = n_chunk,
                         .first = first,
                         .rows = rows,
                         .row_words = words,
                         .size = size};
  return FDL_OK;
}

fdl_status fdl_kld_open(const char *path, fdl_kld *k, fdl_err *err) {
  memset(k, 0, sizeof *k);
  char *real = NULL;
  fdl_status s = fdl_resolve_named(path, &real, err);
  if (s == FDL_OK) s = fdl_map_file(real, &k->map, err);
  free(real);
  if (s == FDL_OK && !(k->path = fdl_strdup(path)))
    s = fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  if (s == FDL_OK) s = fdl_kld_parse_header(k->map.data, k->map.size, path, &k->info, err);
  return s;
}

void fdl_kld_close(fdl_kld *k) {
  if (!k) return;
  if (k->map.data) fdl_unmap(&k->map);
  free(k->path);
  memset(k, 0, sizeof *k);
}

int32_t fdl_kld_token(const fdl_kld *k, uint64_t i) {
  return (int32_t)le32(k->map.data + FDL_KLD_HEADER_BYTES + 4 * i);
}

void fdl_kld_row_at(const fdl_kld *k, uint32_t chunk, uint32_t row, fdl_kld_row *r) {
  const fdl_kld_info *in = &k->info;
  uint64_t at = FDL_KLD_HEADER_BYTES + (uint64_t)in->n_chunk * in->n_ctx * 4 +
                ((uint64_t)chunk * in->rows + row) * in->row_words * 2;
  const uint8_t *p = k->map.data + at;
  r->scale = lef32(p);
  r->min_log_prob = lef32(p + 4);
  r->q = p + 8;
}

/* The row's two floats, checked: every decoded value lies between min_log_prob (q = 0) and
 * scale * 65535 + min_log_prob, so these checks make every decoded value finite. */
static fdl_status check_row(const fdl_kld *k, uint32_t chunk, uint32_t row, const fdl_kld_row *r,
                            fdl_err *err) {
  uint32_t pos = k->info.first + row;
  if (!isfinite(r->scale) || !isfinite(r->min_log_prob))
    return fdl_fail(err, FDL_NONFINITE,
                    "%s: chunk %" PRIu32 " row %" PRIu32 " (position %" PRIu32
                    "): scale %g, min_log_prob %g; both must be finite",
                    k->path, chunk, row, pos, (double)r->scale, (double)r->min_log_prob);
  if (r->scale < 0)
    return fdl_fail(err, FDL_INVALID,
                    "%s: chunk %" PRIu32 " row %" PRIu32 " (position %" PRIu32
                    "): scale %g is negative ((max_logit - min_logit) / 65535 is >= 0)",
                    k->path, chunk, row, pos, (double)r->scale);
  float top = r->scale * 65535.0f + r->min_log_prob;
  if (!isfinite(top))
    return fdl_fail(err, FDL_NONFINITE,
                    "%s: chunk %" PRIu32 " row %" PRIu32 " (position %" PRIu32
                    "): scale %g and min_log_prob %g decode to a value that is not finite",
                    k->path, chunk, row, pos, (double)r->scale, (double)r->min_log_prob);
  return FDL_OK;
}

fdl_status fdl_kld_decode_row(const fdl_kld *k, uint32_t chunk, uint32_t row, float *out,
                              uint64_t *floor_count, fdl_err *err) {
  if (chunk >= k->info.n_chunk || row >= k->info.rows)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: chunk %" PRIu32 " row %" PRIu32 " is outside %" PRIu32
                    " chunks of %" PRIu32 " rows",
                    k->path, chunk, row, k->info.n_chunk, k->info.rows);
  fdl_kld_row r;
  fdl_kld_row_at(k, chunk, row, &r);
  fdl_status s = check_row(k, chunk, row, &r, err);
  if (s != FDL_OK) return s;
  uint64_t floors = 0;
  const float scale = r.scale, lo = r.min_log_prob;
  for (uint32_t i = 0; i < k->info.n_vocab; i++) {
    uint16_t q = (uint16_t)(r.q[2 * i] | (uint16_t)(r.q[2 * i + 1] << 8));
    floors += q == 0;
    /* two float32 roundings, never fused (the library builds with -ffp-contract=off) */
    float prod = scale * (float)q;
    out[i] = prod + lo;
  }
  if (floor_count) *floor_count = floors;
  return FDL_OK;
}

/* ---- the import's checks ------------------------------------------------------------------- */

typedef struct {
  const fdl_kld_import_opts *o;
  fdl_kld_import_result *r;
  fdl_kld k;
  fdl_tok *tok;
  fdl_tok_info ti;
  int32_t bos;    /* -1: no BOS in the records */
  json_t *over;   /* --meta, or NULL */
  int64_t hidden; /* the head's width; 0 when unknown */
  char hidden_from[160];
  char kld_hex[FDL_SHA256_HEX_LEN + 1];
  char base[128], stem[128]; /* the file's name and stem, as printable ASCII */
  fdl_stage st;
  char *inputs;  /* staging/.inputs: pack's inputs */
  fdl_buf panel; /* the panel JSONL */
  char panel_hex[FDL_SHA256_HEX_LEN + 1];
} kld_ctx;

static fdl_status refuse(kld_ctx *c, fdl_err *err, fdl_refusal_code code, fdl_status st,
                         const char *fmt, ...) FDL_PRINTF(5, 6);
static fdl_status refuse(kld_ctx *c, fdl_err *err, fdl_refusal_code code, fdl_status st,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_status s = fdl_refusev(&c->r->pack.refusal, err, st, code, FDL_GATE_PACK, NULL, fmt, ap);
  va_end(ap);
  return s;
}

/* A failure of a library call, kept with its own status under a refusal code. */
static fdl_status refuse_err(kld_ctx *c, fdl_err *err, fdl_refusal_code code, fdl_status st) {
  return refuse(c, err, code, st, "%s", fdl_err_msg(err));
}

/* The last path component, and without its extension; anything outside [A-Za-z0-9._-] becomes
 * '-', so the names can go into a dataset id and the panel's labels. */
static void names_of(kld_ctx *c, const char *path) {
  const char *b = fdl_path_base(path);
  snprintf(c->base, sizeof c->base, "%s", *b ? b : "base.kld");
  fdl_path_name_safe(c->base);
  snprintf(c->stem, sizeof c->stem, "%s", c->base);
  char *dot = strrchr(c->stem, '.');
  if (dot && dot != c->stem) *dot = '\0';
}

/* The keys of --meta that the file decides; the rest replace the generated values. */
static fdl_status read_overrides(kld_ctx *c, fdl_err *err) {
  if (!c->o->meta_path) return FDL_OK;
  char *real = NULL, *text = NULL;
  size_t len = 0;
  fdl_status s = fdl_resolve_named(c->o->meta_path, &real, err);
  if (s == FDL_OK) s = fdl_read_file(real, (size_t)16 << 20, &text, &len, err);
  free(real);
  if (s == FDL_OK) s = fdl_json_parse(text, len, NULL, &c->over, err);
  free(text);
  if (s != FDL_OK)
    return refuse(c, err, FDL_REF_BAD_INPUT, s, "meta %s: %s", c->o->meta_path, fdl_err_msg(err));
  if (!json_is_object(c->over))
    return refuse(c, err, FDL_REF_BAD_INPUT, FDL_PARSE, "meta %s: not a JSON object",
                  c->o->meta_path);
  static const char *const FIXED[] = {"form",
                                      "lossy_codec",
                                      "runtime_source",
                                      "vocab_size",
                                      "tokenizer.id",
                                      "tokenizer.vocab_size",
                                      "tokenizer.add_special_tokens",
                                      "panel.scoring_window",
                                      NULL};
  for (size_t i = 0; FIXED[i]; i++)
    if (fdl_json_path(c->over, FIXED[i]))
      return refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                    "meta %s: '%s' is decided by the .kld file and the tokenizer, not by the "
                    "meta (docs/LLAMACPP-KLD.md)",
                    c->o->meta_path, FIXED[i]);
  const json_t *d = json_object_get(c->over, "disclosures");
  if (d && !json_is_array(d))
    return refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "meta %s: 'disclosures' must be an array",
                  c->o->meta_path);
  return FDL_OK;
}

/* The tokenizer: its vocabulary is the file's, and its BOS rule decides position 0. */
static fdl_status check_tokenizer(kld_ctx *c, fdl_err *err) {
  fdl_status s = fdl_tok_load(c->o->tokenizer, &c->tok, err);
  if (s != FDL_OK) return refuse_err(c, err, FDL_REF_BAD_INPUT, s);
  fdl_tok_get_info(c->tok, &c->ti);
  snprintf(c->r->tokenizer_id, sizeof c->r->tokenizer_id, "%s", c->ti.id);
  const fdl_kld_info *in = &c->k.info;
  char q[FDL_QUOTE_CAP];
  if (c->ti.vocab != in->n_vocab)
    return refuse(c, err, FDL_REF_PANEL_BINDING, FDL_MISMATCH,
                  "%s: n_vocab is %" PRIu32 " but tokenizer %s (%s) has %zu tokens: the file "
                  "was written by a model with another vocabulary (give that model's tokenizer, "
                  "e.g. its .gguf)",
                  c->k.path, in->n_vocab, fdl_quote_str(c->o->tokenizer, q, sizeof q), c->ti.id,
                  c->ti.vocab);
  c->bos = -1;
  if (c->ti.add_bos) {
    if (c->ti.bos < 0)
      return refuse(c, err, FDL_REF_BAD_INPUT, FDL_REFUSED,
                    "tokenizer %s adds a BOS but names no BOS token",
                    fdl_quote_str(c->o->tokenizer, q, sizeof q));
    c->bos = c->ti.bos;
  }
  c->r->bos = c->bos >= 0;
  uint64_t n = (uint64_t)in->n_chunk * in->n_ctx;
  for (uint64_t i = 0; i < n; i++) {
    int32_t t = fdl_kld_token(&c->k, i);
    if (t < 0 || (uint32_t)t >= in->n_vocab)
      return refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                    "%s: token %" PRIu64 " (chunk %" PRIu64 ", position %" PRIu64 ") is id %" PRId32
                    ", outside the vocabulary of %" PRIu32,
                    c->k.path, i, i / in->n_ctx, i % in->n_ctx, t, in->n_vocab);
  }
  /* llama-perplexity tokenizes with add_special: with a BOS the text starts with it. */
  int32_t t0 = fdl_kld_token(&c->k, 0);
  if (c->bos >= 0 && t0 != c->bos)
    return refuse(c, err, FDL_REF_PANEL_BINDING, FDL_MISMATCH,
                  "%s: the first token is %" PRId32 ", but tokenizer %s adds BOS %" PRId32
                  ": llama-perplexity puts the BOS first, so the file was not made with this "
                  "tokenizer",
                  c->k.path, t0, c->ti.id, c->bos);
  for (uint32_t ch = 1; c->bos >= 0 && ch < in->n_chunk; ch++)
    c->r->replaced_by_bos += fdl_kld_token(&c->k, (uint64_t)ch * in->n_ctx) != c->bos;
  return FDL_OK;
}

/* Every row's scale and offset, before anything is written. */
static fdl_status check_rows(kld_ctx *c, fdl_err *err) {
  for (uint32_t ch = 0; ch < c->k.info.n_chunk; ch++)
    for (uint32_t j = 0; j < c->k.info.rows; j++) {
      fdl_kld_row row;
      fdl_kld_row_at(&c->k, ch, j, &row);
      fdl_status s = check_row(&c->k, ch, j, &row, err);
      if (s != FDL_OK)
        return refuse_err(c, err, s == FDL_NONFINITE ? FDL_REF_NON_FINITE : FDL_REF_BAD_INPUT, s);
    }
  return FDL_OK;
}

/* The head's width, which the .kld does not hold: the model's GGUF (<arch>.embedding_length) or
 * config.json (hidden_size) when the tokenizer comes with one, else the meta's head.shape. */
static void find_hidden(kld_ctx *c) {
  if (fdl_json_path(c->over, "head.shape")) {
    snprintf(c->hidden_from, sizeof c->hidden_from, "the meta's head.shape");
    return; /* pack checks it */
  }
  if (c->ti.source && !strcmp(c->ti.source, "gguf")) {
    char *real = NULL;
    fdl_gguf g;
    memset(&g, 0, sizeof g);
    if (fdl_resolve_named(c->o->tokenizer, &real, NULL) == FDL_OK &&
        fdl_gguf_open(real, &g, NULL) == FDL_OK) {
      const char *arch = NULL;
      size_t alen = 0;
      const fdl_gguf_kv *kv = fdl_gguf_find(&g, "general.architecture");
      if (kv && fdl_gguf_get_str(&g, kv, &arch, &alen, NULL) == FDL_OK && alen < 64) {
        char key[96];
        snprintf(key, sizeof key, "%.*s.embedding_length", (int)alen, arch);
        int64_t h = 0;
        kv = fdl_gguf_find(&g, key);
        if (kv && fdl_gguf_get_int(&g, kv, &h, NULL) == FDL_OK && h > 0 && h <= INT32_MAX) {
          c->hidden = h;
          snprintf(c->hidden_from, sizeof c->hidden_from, "the GGUF's %s", key);
        }
      }
      fdl_gguf_close(&g);
    }
    free(real);
    return;
  }
  char dir[4096];
  struct stat sb;
  if (stat(c->o->tokenizer, &sb) == 0 && S_ISDIR(sb.st_mode))
    snprintf(dir, sizeof dir, "%s", c->o->tokenizer);
  else if (!fdl_dirname(c->o->tokenizer, dir, sizeof dir))
    return;
  if (!*dir) snprintf(dir, sizeof dir, ".");
  char *path = NULL;
  json_t *cfg = NULL;
  if (fdl_model_member(dir, "config.json", &path, NULL) == FDL_OK && path &&
      fdl_json_load_file(path, NULL, &cfg, NULL) == FDL_OK) {
    const json_t *h = json_object_get(cfg, "hidden_size");
    if (!h) h = fdl_json_path(cfg, "text_config.hidden_size");
    if (json_is_integer(h) && json_integer_value(h) > 0 && json_integer_value(h) <= INT32_MAX) {
      c->hidden = (int64_t)json_integer_value(h);
      snprintf(c->hidden_from, sizeof c->hidden_from, "config.json's hidden_size");
    }
  }
  json_decref(cfg);
  free(path);
}

/* ---- the panel ----------------------------------------------------------------------------- */

static fdl_status put_line(fdl_buf *b, json_t *j, fdl_err *err) {
  if (!j) return fdl_fail(err, FDL_NOMEM, "out of memory building the panel");
  fdl_status s = fdl_json_dump(j, 0, b, err);
  json_decref(j);
  fdl_buf_putc(b, '\n');
  return s;
}

/* The header `fidelis panel --like-llama-perplexity` writes (src/panel/text.c, docs/PANEL.md),
 * with the .kld as the source. */
static json_t *panel_header(const kld_ctx *c) {
  const fdl_kld_info *in = &c->k.info;
  json_t *h = json_pack(
      "{s:s, s:o, s:{s:I, s:b, s:I, s:s, s:I}, s:I, s:I, s:I, s:s, s:b, "
      "s:[{s:s, s:I, s:s, s:s, s:I}], s:s}",
      "schema", "fidelis.text-panel.v1", "tokenizer",
      fdl_ds_panel_tokenizer_json(&c->ti, c->bos >= 0), "scoring_window", "score_from",
      (json_int_t)in->first, "windowed", in->first > 0, "min_left_context_tokens",
      (json_int_t)in->first + 1, "policy", KLD_POLICY, "dropped_positions_total", (json_int_t)0,
      "context", (json_int_t)in->n_ctx, "stride", (json_int_t)0, "chunks", (json_int_t)in->n_chunk,
      "bos", "auto", "like_llama_perplexity", 1, "sources", "name", c->base, "bytes",
      (json_int_t)in->size, "sha256", c->kld_hex, "domain", c->stem, "tokens",
      (json_int_t)((uint64_t)in->n_chunk * in->n_ctx), "created_by", KLD_CREATED_BY);
  return h ? json_pack("{s:o}", "header", h) : NULL;
}

/* One record per chunk: the file's tokens with the BOS at position 0 when the tokenizer adds
 * one, as llama-perplexity evaluates the chunk. */
static fdl_status build_panel(kld_ctx *c, fdl_err *err) {
  const fdl_kld_info *in = &c->k.info;
  fdl_buf_init(&c->panel, 0);
  fdl_status s = put_line(&c->panel, panel_header(c), err);
  for (uint32_t ch = 0; s == FDL_OK && ch < in->n_chunk; ch++) {
    json_t *t = json_array();
    for (uint32_t j = 0; t && j < in->n_ctx; j++) {
      int32_t id =
          j == 0 && c->bos >= 0 ? c->bos : fdl_kld_token(&c->k, (uint64_t)ch * in->n_ctx + j);
      if (json_array_append_new(t, json_integer(id))) {
        json_decref(t);
        t = NULL;
      }
    }
    char wid[160];
    snprintf(wid, sizeof wid, "%s:%" PRIu32, c->stem, ch);
    s = put_line(&c->panel,
                 t ? json_pack("{s:I, s:o, s:s, s:s, s:s}", "index", (json_int_t)ch, "tokens", t,
                               "domain", c->stem, "document_id", c->base, "window_id", wid)
                   : NULL,
                 err);
  }
  if (s == FDL_OK && fdl_buf_status(&c->panel) != FDL_OK)
    s = fdl_fail(err, FDL_NOMEM, "out of memory building the panel");
  if (s == FDL_OK) s = fdl_sha256_buf_hex(c->panel.data, c->panel.len, c->panel_hex, err);
  if (s != FDL_OK) return refuse_err(c, err, FDL_REF_IO_ERROR, s);
  char *path = fdl_path_join(c->inputs, "panel.jsonl");
  s = path ? fdl_write_file(path, c->panel.data, c->panel.len, err)
           : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  return s == FDL_OK ? FDL_OK : refuse_err(c, err, FDL_REF_IO_ERROR, s);
}

/* ---- the records --------------------------------------------------------------------------- */

/* tensors/NNNN.safetensors: chunk ch's rows decoded, [rows, n_vocab] F32 under key "logits",
 * written a few rows at a time. */
static fdl_status write_chunk(kld_ctx *c, uint32_t ch, const char *dir, float *buf, size_t per,
                              fdl_err *err) {
  const fdl_kld_info *in = &c->k.info;
  int64_t shape[2] = {(int64_t)in->rows, (int64_t)in->n_vocab};
  /* data is not read by the header, only required non-NULL: the rows follow it below */
  fdl_tensor_in t = {
      .name = "logits", .dtype = FDL_DTYPE_F32, .ndim = 2, .shape = shape, .data = buf};
  char name[64];
  snprintf(name, sizeof name, "%04" PRIu32 ".safetensors", ch);
  char *path = fdl_path_join(dir, name);
  fdl_buf head;
  fdl_buf_init(&head, 0);
  fdl_out out;
  bool open = false;
  fdl_status s = path ? fdl_safetensors_header(&t, 1, NULL, &head, err)
                      : fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK && (s = fdl_out_open(&out, path, err)) == FDL_OK) open = true;
  if (s == FDL_OK) s = fdl_out_write(&out, head.data, head.len, err);
  for (uint32_t j = 0; s == FDL_OK && j < in->rows;) {
    size_t n = 0;
    for (; s == FDL_OK && n < per && j < in->rows; n++, j++) {
      uint64_t floors = 0;
      float *row = buf + n * in->n_vocab;
      s = fdl_kld_decode_row(&c->k, ch, j, row, &floors, err);
      if (s != FDL_OK) break;
      c->r->floor_entries += floors;
      /* row j predicts the token at position first + j + 1 (never position 0) */
      uint32_t target =
          (uint32_t)fdl_kld_token(&c->k, (uint64_t)ch * in->n_ctx + in->first + j + 1);
      fdl_kld_row r;
      fdl_kld_row_at(&c->k, ch, j, &r);
      c->r->floor_targets += (r.q[2 * (size_t)target] | r.q[2 * (size_t)target + 1]) == 0;
    }
    if (s == FDL_OK) s = fdl_out_write(&out, buf, n * in->n_vocab * sizeof *buf, err);
  }
  if (open && s == FDL_OK)
    s = fdl_out_commit(&out, err);
  else if (open)
    fdl_out_abort(&out);
  fdl_buf_free(&head);
  free(path);
  if (s == FDL_OK) return FDL_OK;
  return refuse_err(c, err, s == FDL_NONFINITE ? FDL_REF_NON_FINITE : FDL_REF_IO_ERROR, s);
}

static fdl_status write_records(kld_ctx *c, fdl_err *err) {
  const fdl_kld_info *in = &c->k.info;
  size_t row_bytes = (size_t)in->n_vocab * sizeof(float);
  size_t per = KLD_WRITE_BYTES / row_bytes;
  if (per < 1) per = 1;
  if (per > in->rows) per = in->rows;
  char *dir = fdl_path_join(c->inputs, "tensors");
  float *buf = fdl_malloc(per * row_bytes);
  fdl_status s = dir && buf ? fdl_mkdirs(dir, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s != FDL_OK) s = refuse_err(c, err, FDL_REF_IO_ERROR, s);
  for (uint32_t ch = 0; s == FDL_OK && ch < in->n_chunk; ch++)
    s = write_chunk(c, ch, dir, buf, per, err);
  free(buf);
  free(dir);
  return s;
}

/* ---- the meta ------------------------------------------------------------------------------ */

static json_t *unknown_scope(void) {
  json_t *a = json_array();
  for (int i = 0; a && i < FDL_TCLASS_COUNT; i++)
    if (i != FDL_TCLASS_MOE_EXPERTS && /* a dense scope */
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:n, s:n, s:s}", "tensor_class",
                                           fdl_tensor_class_names[i], "treatment", "unknown",
                                           "format", "unknown", "bits_per_weight", "layer_range",
                                           "note", "not recorded in a llama.cpp .kld file"))) {
      json_decref(a);
      return NULL;
    }
  return a ? json_pack("{s:o, s:s, s:s, s:s}", "assignments", a, "policy", "unknown", "head_policy",
                       "unknown", "kv_cache_dtype", "unknown")
           : NULL;
}

/* The import's disclosures (the lossy codes, the BOS rule, what a .kld does not record); NULL
 * when out of memory. */
static json_t *disclosures(const kld_ctx *c) {
  const fdl_kld_info *in = &c->k.info;
  const fdl_kld_import_result *r = c->r;
  uint64_t entries = (uint64_t)in->n_chunk * in->rows * in->n_vocab,
           targets = (uint64_t)in->n_chunk * in->rows;
  char lossy[1024], head[512], bos[512];
  snprintf(lossy, sizeof lossy,
           "the stored rows are llama.cpp's 16-bit log-probability codes from %s (sha256 %s), "
           "decoded as scale*q + min_log_prob in float32: log-probabilities (softmax gives the "
           "same distribution as the logits would), resolved to at most 16/65535 nats; every "
           "logit at or below its row's max_logit - 16 was clamped to the row's floor "
           "min_log_prob: %" PRIu64 " of %" PRIu64 " entries (%.2f%%) and %" PRIu64 " of %" PRIu64
           " scored targets sit at the floor. The model's exact logits were not kept.",
           c->base, c->kld_hex, r->floor_entries, entries,
           entries ? 100.0 * (double)r->floor_entries / (double)entries : 0.0, r->floor_targets,
           targets);
  snprintf(head, sizeof head,
           "a .kld names no head: head.shape's width comes from %s; head.dtype F32 is the dtype "
           "of llama.cpp's logits, not a statement about the head's weights, whose digest is not "
           "known",
           c->hidden_from[0] ? c->hidden_from : "the meta");
  snprintf(bos, sizeof bos,
           "%s; %" PRIu64 " chunk start(s) held another token in the file, which llama-perplexity "
           "did not evaluate either. Positions 0 are never scored.",
           c->bos >= 0 ? "the panel holds the BOS at position 0 of every chunk, as "
                         "llama-perplexity evaluates it; the file keeps the text token there"
                       : "the tokenizer adds no BOS: the panel holds the file's tokens unchanged",
           r->replaced_by_bos);
  json_t *a = json_array();
  int lost = !a;
  if (a) {
    lost |= fdl_ds_disclose(a, true, "llamacpp_kld_lossy_log_probabilities", lossy, "caveat");
    lost |= fdl_ds_disclose(a, false, "llamacpp_kld_bos_rule", bos, "info");
    lost |= fdl_ds_disclose(a, false, "llamacpp_kld_head_not_recorded", head, "info");
    lost |= fdl_ds_disclose(a, false, "llamacpp_kld_runtime_not_recorded",
                            "a .kld records neither the llama.cpp build nor its backend, batch "
                            "sizes, KV cache type or model file: engine.version, device and the "
                            "weights are 'unknown' unless the meta names them. Runs with another "
                            "-c or batch split are not the same measurement.",
                            "caveat");
  }
  return fdl_ds_disclosures_end(a, json_object_get(c->over, "disclosures"), lost);
}

static json_t *lossy_codec(void) {
  return json_pack(
      "{s:s, s:i, s:s, s:s}", "kind", KLD_CODEC, "bits", 16, "clamp",
      "every logit l <= max_logit - 16 is stored as q = 0 and decodes to the row's min_log_prob",
      "description",
      "llama.cpp llama-perplexity --kl-divergence-base: per row a float32 scale = (max_logit - "
      "min_logit)/65535 and min_log_prob = min_logit - max_logit - log(sum exp(l - max_logit)), "
      "with min_logit = max(min l, max_logit - 16), then uint16 q = round((l - min_logit)/scale) "
      "(0 at or below min_logit); stored here as the float32 log-probability scale*q + "
      "min_log_prob");
}

static json_t *build_meta(const kld_ctx *c) {
  const fdl_kld_info *in = &c->k.info;
  char id[256], note[512], run[256], panel_id[64], name[256];
  snprintf(id, sizeof id, "fidelity--llamacpp-kld.%s.logits", c->stem);
  snprintf(note, sizeof note,
           "llama.cpp llama-perplexity --kl-divergence-base %s (sha256 %s, -c %" PRIu32 ", %" PRIu32
           " chunk(s)); that run's float32 logits were not kept, only their "
           "16-bit log-probability codes",
           c->base, c->kld_hex, in->n_ctx, in->n_chunk);
  snprintf(run, sizeof run, "llama-perplexity --kl-divergence-base %s", c->base);
  snprintf(panel_id, sizeof panel_id, "panel--fidelis.sha256-%.16s", c->panel_hex);
  snprintf(name, sizeof name, "llama-perplexity -c %" PRIu32 " chunks of %s", in->n_ctx, c->base);
  json_t *m = json_pack(
      "{s:s, s:s, s:{s:s, s:{s:n, s:n, s:n, s:n, s:s}}, s:{s:s, s:n}, s:o, s:s, s:{s:s, s:s}, "
      "s:s, s:{s:s}, s:s, s:{s:s, s:I, s:b, s:b}, s:{s:s, s:s}, s:I, "
      "s:{s:s, s:n, s:[I, I], s:s}, s:o, s:o, s:s, s:s}",
      "role", "derived", "form", "logit", "dataset", "id", id, "base_capture", "dataset_sha256",
      "capture_content_digest", "repository", "revision", "note", note, "weights", "repository",
      "unknown", "revision", "scope", unknown_scope(), "lane", "other", "engine", "name",
      "llama.cpp", "version", "unknown", "device", "unknown", "dtypes", "forward", "F32",
      "numeric_policy",
      "llama.cpp llama-perplexity (backend, batch split and KV cache type not recorded in the "
      ".kld); values are its 16-bit log-probability codes decoded in float32",
      "tokenizer", "id", c->ti.id, "vocab_size", (json_int_t)in->n_vocab, "add_special_tokens",
      c->bos >= 0, "chat_template_applied", 0, "panel", "panel_id", panel_id, "name", name,
      "vocab_size", (json_int_t)in->n_vocab, "head", "source", "unknown", "bits", "shape",
      (json_int_t)in->n_vocab, (json_int_t)(c->hidden > 0 ? c->hidden : 1), "dtype", "F32",
      "lossy_codec", lossy_codec(), "disclosures", disclosures(c), "runtime_source", "llama.cpp",
      "run_name", run);
  if (!m) return NULL;
  if (c->o->created_utc && json_object_set_new(m, "created_utc", json_string(c->o->created_utc))) {
    json_decref(m); /* a meta without its stated creation time is never packed */
    return NULL;
  }
  /* --meta: objects merged one level deep, other values replaced, disclosures appended above */
  const char *key;
  json_t *v;
  json_object_foreach(c->over, key, v) {
    if (!strcmp(key, "disclosures")) continue;
    json_t *mine = json_object_get(m, key);
    int bad = json_is_object(mine) && json_is_object(v) ? json_object_update(mine, v)
                                                        : json_object_set(m, key, v);
    if (bad) {
      json_decref(m);
      return NULL;
    }
  }
  return m;
}

/* ---- the run ------------------------------------------------------------------------------- */

/* Publishes the packed dataset (at out, in the staging directory) and the panel file: the panel
 * first, removed again if the dataset cannot follow, so the import leaves both or neither. The
 * staged inputs go before either, their removal checked: fdl_stage_abort's is best effort, and a
 * staging directory left full beside --out would outlive a run that reported success. */
static fdl_status publish(kld_ctx *c, const char *out, fdl_err *err) {
  const fdl_kld_import_opts *o = c->o;
  fdl_status s = fdl_remove_tree_at(c->st.dirfd, ".inputs", err);
  if (s != FDL_OK) return refuse_err(c, err, FDL_REF_IO_ERROR, s);
  if (o->panel_out &&
      (s = fdl_write_file(o->panel_out, c->panel.data, c->panel.len, err)) != FDL_OK)
    return refuse(c, err, s == FDL_EXISTS ? FDL_REF_DESTINATION_EXISTS : FDL_REF_IO_ERROR, s,
                  "the panel %s cannot be written: %s", o->panel_out, fdl_err_msg(err));
  if ((s = fdl_rename_noreplace(out, o->out_dir, err)) != FDL_OK) {
    if (o->panel_out) /* ours: written above, never over a file */
      (void)fdl_sys_unlinkat(AT_FDCWD, o->panel_out, 0);
    return refuse_err(c, err, s == FDL_EXISTS ? FDL_REF_DESTINATION_EXISTS : FDL_REF_IO_ERROR, s);
  }
  return FDL_OK;
}

static fdl_status pack(kld_ctx *c, fdl_err *err) {
  json_t *m = build_meta(c);
  char *out = fdl_path_join(c->st.path, "dataset");
  fdl_ds_pack_opts po = {.threads = c->o->threads,
                         .created_utc = c->o->created_utc,
                         .notice = c->o->notice,
                         .notice_arg = c->o->notice_arg};
  fdl_status s =
      m && out ? fdl_ds_pack_staged(c->inputs, NULL, "meta.json", m, out, &po, &c->r->pack, err)
               : fdl_fail(err, FDL_NOMEM, "out of memory");
  json_decref(m);
  if (s != FDL_OK && c->r->pack.refusal.code == FDL_REF_NONE)
    s = refuse_err(c, err, FDL_REF_IO_ERROR, s);
  else if (s == FDL_OK)
    s = publish(c, out, err);
  free(out);
  return s;
}

static fdl_status run(kld_ctx *c, fdl_err *err) {
  const fdl_kld_import_opts *o = c->o;
  if (fdl_path_exists(o->out_dir))
    return refuse(c, err, FDL_REF_DESTINATION_EXISTS, FDL_EXISTS,
                  "%s already exists; pack never overwrites (choose a new directory)", o->out_dir);
  if (o->panel_out && fdl_path_exists(o->panel_out))
    return refuse(c, err, FDL_REF_DESTINATION_EXISTS, FDL_EXISTS,
                  "--panel-out %s already exists; pack never overwrites", o->panel_out);
  names_of(c, o->kld_path);
  fdl_status s = read_overrides(c, err);
  if (s != FDL_OK) return s;
  if ((s = fdl_kld_open(o->kld_path, &c->k, err)) != FDL_OK)
    return refuse_err(c, err, s == FDL_NOMEM || s == FDL_IO ? FDL_REF_IO_ERROR : FDL_REF_BAD_INPUT,
                      s);
  c->r->info = c->k.info;
  if ((s = check_tokenizer(c, err)) != FDL_OK) return s;
  if ((s = check_rows(c, err)) != FDL_OK) return s;
  find_hidden(c);
  if (!c->hidden_from[0])
    return refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                  "the head's width (hidden size) is in neither the .kld nor tokenizer %s: give "
                  "the model's .gguf or its directory (with config.json) as --tokenizer, or "
                  "--meta with head.shape [%" PRIu32 ", hidden]",
                  o->tokenizer, c->k.info.n_vocab);
  if ((s = fdl_sha256_buf_hex(c->k.map.data, c->k.map.size, c->kld_hex, err)) != FDL_OK)
    return refuse_err(c, err, FDL_REF_IO_ERROR, s);
  /* Staged beside --out: the inputs pack reads and the dataset it builds. */
  if ((s = fdl_stage_open(&c->st, o->out_dir, 0, o->notice, o->notice_arg, err)) != FDL_OK)
    return refuse_err(c, err, s == FDL_EXISTS ? FDL_REF_DESTINATION_EXISTS : FDL_REF_IO_ERROR, s);
  c->inputs = fdl_path_join(c->st.path, ".inputs");
  s = c->inputs ? fdl_mkdirs(c->inputs, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s != FDL_OK) return refuse_err(c, err, FDL_REF_IO_ERROR, s);
  if ((s = build_panel(c, err)) != FDL_OK) return s;
  if ((s = write_records(c, err)) != FDL_OK) return s;
  return pack(c, err);
}

fdl_status fdl_kld_import(const fdl_kld_import_opts *o, fdl_kld_import_result *r, fdl_err *err) {
  fdl_kld_import_result res;
  memset(&res, 0, sizeof res);
  kld_ctx c;
  memset(&c, 0, sizeof c);
  c.o = o;
  c.r = &res;
  c.bos = -1;
  fdl_status s;
  if (!o || !o->kld_path || !o->tokenizer || !o->out_dir)
    s = refuse(&c, err, FDL_REF_BAD_USAGE, FDL_INVALID,
               "the import needs a .kld file, a tokenizer and an output directory");
  else
    s = run(&c, err);
  fdl_stage_abort(&c.st); /* removes the inputs, and the dataset unless it was moved out */
  if (s != FDL_OK) {
    if (res.pack.refusal.code == FDL_REF_NONE) res.pack.refusal.code = FDL_REF_IO_ERROR;
    res.pack.refusal.status = s;
  }
  free(c.inputs);
  fdl_buf_free(&c.panel);
  json_decref(c.over);
  fdl_tok_free(c.tok);
  fdl_kld_close(&c.k);
  if (r) *r = res;
  return s;
}
