/* text.c - fdl_panel_from_text: text files into a pack panel (fidelis/panel.h, docs/PANEL.md).
 *
 * Records are written one JSON line each as they are cut, after a header line; the file is
 * staged beside its target and renamed into place only when complete. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "base/buf.h"
#include "base/path.h"
#include "dataset/dataset_json.h"
#include "base/fs.h"
#include "json/json.h"
#include "fidelis/panel.h"
#include "base/quote.h"
#include "fidelis/tokenizer.h"

#define TEXT_MAX ((size_t)1 << 30)
#define LIKE_LLAMA_POLICY                                                                          \
  "llama-perplexity -c n_ctx: positions 0..n_ctx/2-1 of every chunk are context only; "            \
  "positions n_ctx/2..n_ctx-2 are scored"
#define FROM_POLICY                                                                                \
  "positions before score_from are context only; every later causal prediction position of "       \
  "every window is scored"

typedef struct {
  const fdl_panel_opts *o;
  fdl_panel_result *r;
  fdl_tok *tok;
  fdl_tok_info info;
  fdl_out out;
  fdl_buf line;
  size_t score_from;
  int32_t bos; /* -1: no BOS in the records */
} ctx;

static fdl_status put_json(ctx *c, json_t *j, fdl_err *err) {
  if (!j) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_buf_reset(&c->line);
  fdl_status s = fdl_json_dump(j, 0, &c->line, err);
  json_decref(j);
  fdl_buf_putc(&c->line, '\n');
  if (s == FDL_OK && (s = fdl_buf_status(&c->line)) != FDL_OK)
    fdl_fail(err, s, "out of memory writing the panel");
  return s == FDL_OK ? fdl_out_write(&c->out, c->line.data, c->line.len, err) : s;
}

static fdl_status record(ctx *c, const int32_t *ids, size_t n, const char *domain, const char *doc,
                         size_t k, fdl_err *err) {
  json_t *t = fdl_json_append_ints(json_array(), ids, n, sizeof *ids);
  char wid[512];
  snprintf(wid, sizeof wid, "%s:%zu", domain, k);
  json_t *rec = t ? json_pack("{s:I, s:o, s:s, s:s, s:s}", "index", (json_int_t)c->r->records,
                              "tokens", t, "domain", domain, "document_id", doc, "window_id", wid)
                  : NULL;
  fdl_status s = put_json(c, rec, err);
  if (s == FDL_OK) {
    c->r->records++;
    c->r->scored += n - 1 - c->score_from;
  }
  return s;
}

/* The records of one text: ordinary windows, or llama-perplexity's chunks. */
static fdl_status cut(ctx *c, const int32_t *ids, size_t n, const char *path, const char *domain,
                      size_t *made, fdl_err *err) {
  const fdl_panel_opts *o = c->o;
  size_t N = o->context, b = c->bos >= 0;
  int32_t *rec = fdl_malloc(N * sizeof *rec);
  if (!rec) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = FDL_OK;
  size_t k = 0, covered = 0;
  const char *doc = fdl_path_base(path);
  if (o->like_llama) {
    size_t total = n + b, chunks = total / N;
    if (o->chunks && chunks > o->chunks) chunks = o->chunks;
    for (; k < chunks && s == FDL_OK; k++) {
      /* token j of the chunk is text token k*N + j - b (the BOS, if any, is position -1) */
      for (size_t j = 0; j < N; j++) rec[j] = k * N + j < b ? c->bos : ids[k * N + j - b];
      if (b) rec[0] = c->bos;
      s = record(c, rec, N, domain, doc, k, err);
    }
    covered = k * N > b ? k * N - b : 0;
  } else {
    size_t w = N - b, stride = o->stride ? o->stride : w;
    for (size_t start = 0; start + w <= n && (!o->chunks || k < o->chunks) && s == FDL_OK;
         start += stride, k++) {
      if (b) rec[0] = c->bos;
      memcpy(rec + b, ids + start, w * sizeof *rec);
      s = record(c, rec, N, domain, doc, k, err);
      covered = stride <= w ? start + w : covered + w;
    }
  }
  free(rec);
  if (s == FDL_OK && k == 0)
    s = fdl_fail(err, FDL_REFUSED,
                 "%s has %zu tokens, too few for one record of %zu (%s): give more text or a "
                 "smaller --context",
                 path, n, N, b ? "a BOS and the text" : "text tokens");
  c->r->unused_tokens += n - (covered < n ? covered : n);
  *made = k;
  return s;
}

/* One text, read, hashed and tokenized before anything is written. */
typedef struct {
  int32_t *ids;
  size_t n, bytes;
  char domain[256], hex[FDL_SHA256_HEX_LEN + 1];
} text_in;

static fdl_status read_text(ctx *c, const fdl_panel_text *t, text_in *x, fdl_err *err) {
  char *text = NULL;
  size_t len = 0;
  fdl_status s = fdl_read_file(t->path, TEXT_MAX, &text, &len, err);
  if (s != FDL_OK) return s;
  if (t->domain) {
    snprintf(x->domain, sizeof x->domain, "%s", t->domain);
  } else {
    snprintf(x->domain, sizeof x->domain, "%s", fdl_path_base(t->path));
    char *dot = strrchr(x->domain, '.');
    if (dot && dot != x->domain) *dot = '\0';
  }
  char q[FDL_QUOTE_CAP];
  size_t dl = strlen(x->domain);
  if (!dl || fdl_quote_has_control(x->domain, dl) || fdl_utf8_invalid_at(x->domain, dl) < dl)
    s = fdl_fail(err, FDL_INVALID, "the domain %s of %s must be printable UTF-8 text",
                 fdl_quote_str(x->domain, q, sizeof q), t->path);
  if (s == FDL_OK && (s = fdl_tok_encode(c->tok, text, len, 0, &x->ids, &x->n, err)) != FDL_OK)
    fdl_err_prefix(err, "%s", t->path);
  if (s == FDL_OK) s = fdl_sha256_buf_hex(text, len, x->hex, err);
  x->bytes = len;
  free(text);
  return s;
}

static json_t *tokenizer_block(const ctx *c) {
  json_t *t = fdl_ds_panel_tokenizer_json(&c->info, c->bos >= 0);
  /* A block short of a member (memory) is no block: the header must not be written without it. */
  if (t && c->o->tokenizer_repository &&
      (json_object_set_new(t, "repository", json_string(c->o->tokenizer_repository)) ||
       json_object_set_new(t, "revision",
                           c->o->tokenizer_revision ? json_string(c->o->tokenizer_revision)
                                                    : json_null()))) {
    json_decref(t);
    return NULL;
  }
  return t;
}

static json_t *window(const ctx *c) {
  size_t m = c->score_from;
  const char *policy = c->o->like_llama ? LIKE_LLAMA_POLICY
                       : m              ? FROM_POLICY
                                        : FDL_DS_WINDOW_POLICY_ALL;
  return json_pack("{s:I, s:b, s:I, s:s, s:I}", "score_from", (json_int_t)m, "windowed", m > 0,
                   "min_left_context_tokens", (json_int_t)(m + 1), "policy", policy,
                   "dropped_positions_total", (json_int_t)0);
}

static fdl_status checks(const fdl_panel_opts *o, fdl_err *err) {
  if (o->context < 2 || o->context > ((size_t)1 << 24))
    return fdl_fail(err, FDL_INVALID, "the context must be 2 to 16777216 tokens, not %zu",
                    o->context);
  if (!o->n_texts) return fdl_fail(err, FDL_INVALID, "no text to cut into a panel");
  if (o->like_llama && (o->stride || o->score_from))
    return fdl_fail(err, FDL_INVALID,
                    "llama-perplexity's chunks fix the stride (N) and the scored positions (N/2 "
                    "on); --stride and --score-from do not apply");
  if (o->score_from + 1 >= o->context)
    return fdl_fail(err, FDL_INVALID,
                    "score_from %zu leaves no scored row in a record of %zu tokens (at most %zu)",
                    o->score_from, o->context, o->context - 2);
  return FDL_OK;
}

static json_t *header(const ctx *c, const text_in *x) {
  json_t *src = json_array();
  for (size_t i = 0; src && i < c->o->n_texts; i++)
    if (json_array_append_new(src, json_pack("{s:s, s:I, s:s, s:s, s:I}", "name",
                                             fdl_path_base(c->o->texts[i].path), "bytes",
                                             (json_int_t)x[i].bytes, "sha256", x[i].hex, "domain",
                                             x[i].domain, "tokens", (json_int_t)x[i].n))) {
      json_decref(src); /* a source list cut short is no list: the header fails instead */
      src = NULL;
    }
  const char *bos = c->o->bos == FDL_PANEL_BOS_ALWAYS  ? "always"
                    : c->o->bos == FDL_PANEL_BOS_NEVER ? "never"
                                                       : "auto";
  json_t *h =
      json_pack("{s:s, s:o, s:o, s:I, s:I, s:I, s:s, s:b, s:o, s:s}", "schema",
                "fidelis.text-panel.v1", "tokenizer", tokenizer_block(c), "scoring_window",
                window(c), "context", (json_int_t)c->o->context, "stride", (json_int_t)c->o->stride,
                "chunks", (json_int_t)c->o->chunks, "bos", bos, "like_llama_perplexity",
                c->o->like_llama, "sources", src, "created_by", "fidelis panel");
  return h ? json_pack("{s:o}", "header", h) : NULL;
}

fdl_status fdl_panel_from_text(const fdl_panel_opts *o, fdl_panel_result *r, fdl_err *err) {
  memset(r, 0, sizeof *r);
  fdl_status s = checks(o, err);
  if (s != FDL_OK) return s;
  ctx c = {.o = o, .r = r, .bos = -1};
  if ((s = fdl_tok_load(o->tokenizer, &c.tok, err)) != FDL_OK) return s;
  fdl_tok_get_info(c.tok, &c.info);
  snprintf(r->tokenizer_id, sizeof r->tokenizer_id, "%s", c.info.id);
  bool want = o->bos == FDL_PANEL_BOS_ALWAYS || (o->bos == FDL_PANEL_BOS_AUTO && c.info.add_bos);
  if (want && c.info.bos < 0)
    s = fdl_fail(err, FDL_REFUSED, "%s has no BOS token (--bos always needs one)", o->tokenizer);
  if (want) c.bos = c.info.bos;
  c.score_from = o->like_llama ? o->context / 2 : o->score_from;
  fdl_buf_init(&c.line, 0);
  text_in *x = fdl_calloc(o->n_texts ? o->n_texts : 1, sizeof *x);
  if (s == FDL_OK && !x) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < o->n_texts; i++)
    s = read_text(&c, &o->texts[i], &x[i], err);
  bool open = false;
  if (s == FDL_OK && (s = fdl_out_open(&c.out, o->out, err)) == FDL_OK) open = true;
  if (s == FDL_OK) s = put_json(&c, header(&c, x), err);
  for (size_t i = 0; s == FDL_OK && i < o->n_texts; i++) {
    size_t made;
    s = cut(&c, x[i].ids, x[i].n, o->texts[i].path, x[i].domain, &made, err);
    if (s == FDL_OK) r->text_tokens += x[i].n;
  }
  if (open && s == FDL_OK)
    s = fdl_out_commit(&c.out, err);
  else if (open)
    fdl_out_abort(&c.out);
  for (size_t i = 0; x && i < o->n_texts; i++) free(x[i].ids);
  free(x);
  fdl_buf_free(&c.line);
  fdl_tok_free(c.tok);
  return s;
}
