/* load_gguf.c - the tokenizer inside a GGUF file (tokenizer.ggml.*), as llama.cpp reads it.
 *
 * model "gpt2": byte-level BPE, merges ranked by their order, the split regexes of the `pre`
 * name (pre_table.c). model "llama": SentencePiece BPE over scores with <0xXX> byte fallback,
 * a U+2581 prefixed to every text fragment (add_space_prefix, default true) and spaces written
 * U+2581. Tokens typed CONTROL (3) are special; USER_DEFINED (4) ones are matched in the text
 * always, as llama.cpp does. Any other model ("bert", "t5", "rwkv", ...) is refused by name. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "fidelis/digest.h"
#include "fidelis/gguf.h"
#include "tokenizer/internal.h"

static fdl_status array_of(const fdl_gguf *g, const char *key, fdl_gguf_type elem, size_t n,
                           bool required, const fdl_gguf_kv **out, fdl_err *err) {
  const fdl_gguf_kv *kv = fdl_gguf_find(g, key);
  *out = NULL;
  if (!kv) return required ? fdl_fail(err, FDL_PARSE, "%s: no %s", g->path, key) : FDL_OK;
  bool num_ok = elem != FDL_GGUF_STRING && kv->elem != FDL_GGUF_STRING && kv->elem != FDL_GGUF_BOOL;
  if (kv->type != FDL_GGUF_ARRAY || (kv->elem != elem && !num_ok))
    return fdl_fail(err, FDL_PARSE, "%s: %s is not an array of %s", g->path, key,
                    fdl_gguf_type_name(elem));
  if (n && kv->count != n)
    return fdl_fail(err, FDL_PARSE, "%s: %s has %" PRIu64 " entries for %zu tokens", g->path, key,
                    kv->count, n);
  *out = kv;
  return FDL_OK;
}

static fdl_status opt_bool(const fdl_gguf *g, const char *key, bool *v, fdl_err *err) {
  const fdl_gguf_kv *kv = fdl_gguf_find(g, key);
  return kv ? fdl_gguf_get_bool(g, kv, v, err) : FDL_OK;
}

/* tokenizer.ggml.<what>_token_id: an id inside the vocabulary, or dflt (-1: none) when absent. */
static fdl_status special_id(const fdl_gguf *g, const char *path, const char *what, size_t n,
                             int32_t dflt, int32_t *id, fdl_err *err) {
  char key[64];
  snprintf(key, sizeof key, "tokenizer.ggml.%s_token_id", what);
  const fdl_gguf_kv *kv = fdl_gguf_find(g, key);
  int64_t v = 0;
  fdl_status s = kv ? fdl_gguf_get_int(g, kv, &v, err) : FDL_OK;
  if (s != FDL_OK) return s;
  if (kv && (v < 0 || (uint64_t)v >= n))
    return fdl_fail(err, FDL_PARSE, "%s: %s is %" PRId64 ", outside the vocabulary of %zu", path,
                    key, v, n);
  *id = kv ? (int32_t)v : dflt >= 0 && (size_t)dflt < n ? dflt : -1;
  return FDL_OK;
}

/* tokenizer.ggml.add_<what>_token over the default in *add. */
static fdl_status add_flag(const fdl_gguf *g, const char *path, const char *what, int32_t id,
                           bool *add, fdl_err *err) {
  char key[64];
  snprintf(key, sizeof key, "tokenizer.ggml.add_%s_token", what);
  const fdl_gguf_kv *kv = fdl_gguf_find(g, key);
  if (!kv) {
    if (id < 0) *add = false;
    return FDL_OK;
  }
  fdl_status s = fdl_gguf_get_bool(g, kv, add, err);
  if (s == FDL_OK && *add && id < 0)
    s = fdl_fail(err, FDL_PARSE, "%s: %s is true but the file names no %s token id", path, key,
                 what);
  return s;
}

static fdl_status tokens(fdl_tok *t, const fdl_gguf *g, const fdl_gguf_kv *tk,
                         const fdl_gguf_kv *ty, const fdl_gguf_kv *sc, fdl_err *err) {
  char *raw = fdl_malloc(TK_MAX_TOKEN_BYTES);
  fdl_status s = raw ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  uint64_t pos = tk->value;
  size_t n_added = 0;
  for (size_t id = 0; id < t->n && s == FDL_OK; id++) {
    const char *p;
    size_t len;
    fdl_gguf_next_str(g, &pos, &p, &len);
    if (fdl_utf8_invalid_at(p, len) < len) {
      s = fdl_fail(err, FDL_PARSE, "%s: token %zu is not UTF-8", g->path, id);
      break;
    }
    if ((s = fdl_tk_pool_add(t, p, len, &t->shown[id], err)) != FDL_OK) break;
    int64_t type = ty ? (int64_t)fdl_gguf_num_at(g, ty, id) : TK_NORMAL;
    t->type[id] = type >= 1 && type <= 6 ? (uint8_t)type : 0;
    if (sc) t->score[id] = (float)fdl_gguf_num_at(g, sc, id);
    size_t rl;
    if (!t->byte_level)
      t->text[id] = t->shown[id];
    else if (len <= TK_MAX_TOKEN_BYTES && fdl_tk_unbyte(p, len, raw, &rl))
      s = fdl_tk_pool_add(t, raw, rl, &t->text[id], err);
    else
      t->text[id] = t->shown[id]; /* matched as written, as llama.cpp's text lookup does */
    if (t->type[id] == TK_CONTROL || t->type[id] == TK_USER) n_added++;
  }
  free(raw);
  if (s != FDL_OK) return s;
  t->added = fdl_calloc(n_added ? n_added : 1, sizeof *t->added);
  if (!t->added) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t id = 0; id < t->n; id++)
    if (t->type[id] == TK_CONTROL || t->type[id] == TK_USER)
      t->added[t->n_added++] =
          (tk_added){(int32_t)id, t->type[id] == TK_CONTROL, false, false, false, false};
  return fdl_tk_index_added(t, err);
}

static fdl_status merges(fdl_tok *t, const fdl_gguf *g, const fdl_gguf_kv *mg, fdl_err *err) {
  char *a = fdl_malloc(2 * TK_MAX_TOKEN_BYTES + 2), *raw = fdl_malloc(2 * TK_MAX_TOKEN_BYTES + 2);
  fdl_status s = a && raw ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  uint64_t pos = mg->value;
  for (uint64_t i = 0; i < mg->count && s == FDL_OK; i++) {
    const char *p;
    size_t len, rl;
    fdl_gguf_next_str(g, &pos, &p, &len);
    /* "left right": the first space after the first byte separates them */
    const char *sp = len > 1 ? memchr(p + 1, ' ', len - 1) : NULL;
    int32_t id[3] = {-1, -1, -1};
    if (sp && len <= 2 * TK_MAX_TOKEN_BYTES) {
      size_t an = (size_t)(sp - p), bn = len - an - 1;
      const char *part[3] = {p, sp + 1, a};
      size_t plen[3] = {an, bn, an + bn};
      memcpy(a, p, an);
      memcpy(a + an, sp + 1, bn);
      for (int k = 0; k < 3; k++)
        if (fdl_tk_unbyte(part[k], plen[k], raw, &rl)) id[k] = fdl_tk_lookup(t, raw, rl);
    }
    if (id[0] < 0 || id[1] < 0 || id[2] < 0)
      s = fdl_fail(err, FDL_PARSE, "%s: tokenizer.ggml.merges[%" PRIu64 "] %s", g->path, i,
                   !sp                      ? "is not \"left right\""
                   : id[0] < 0 || id[1] < 0 ? "names a token that is not in the vocabulary"
                                            : "joins into a token that is not in the vocabulary");
    else
      s = fdl_tk_merge_add(t, (uint32_t)id[0], (uint32_t)id[1], (uint32_t)i, (uint32_t)id[2], err);
  }
  free(a);
  free(raw);
  return s;
}

static fdl_status splits(fdl_tok *t, const fdl_gguf *g, fdl_err *err) {
  const fdl_gguf_kv *kv = fdl_gguf_find(g, "tokenizer.ggml.pre");
  const char *name = "default";
  size_t len = 7;
  if (kv) {
    fdl_status s = fdl_gguf_get_str(g, kv, &name, &len, err);
    if (s != FDL_OK) return s;
  }
  const tk_pre_entry *e = fdl_tk_pre_find(name, len);
  if (!e) {
    char names[2048];
    fdl_tk_pre_names(names, sizeof names);
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: tokenizer.ggml.pre \"%.*s\" is not a pre-tokenizer fidelis knows; "
                    "refusing rather than guess its split (known: %s)",
                    g->path, (int)(len > 64 ? 64 : len), name, names);
  }
  t->ignore_merges = e->ignore_merges;
  for (const char *const *r = e->regex; *r; r++) {
    tk_pre *op = &t->pre[t->n_pre];
    memset(op, 0, sizeof *op);
    op->kind = TK_P_SPLIT;
    op->behavior = TK_B_ISOLATED;
    t->n_pre++;
    fdl_status s = fdl_tk_pattern_regex(&op->pat, *r, strlen(*r), "tokenizer.ggml.pre", err);
    if (s != FDL_OK) return s;
  }
  snprintf(t->kind, sizeof t->kind, "byte-level BPE (pre %.*s)", (int)(len > 30 ? 30 : len), name);
  return FDL_OK;
}

/* SentencePiece: U+2581 prefixed to each fragment and written for each space; decoded back. */
static fdl_status spm_steps(fdl_tok *t, bool prefix, fdl_err *err) {
  static const char SP[] = "\xE2\x96\x81";
  fdl_status s = FDL_OK;
  if (prefix) {
    tk_norm *p = &t->norm[t->n_norm++];
    memset(p, 0, sizeof *p);
    p->kind = TK_N_PREPEND;
    if (!(p->a = fdl_strdup(SP))) return fdl_fail(err, FDL_NOMEM, "out of memory");
    p->a_len = 3;
  }
  tk_norm *r = &t->norm[t->n_norm++];
  memset(r, 0, sizeof *r);
  r->kind = TK_N_REPLACE;
  if (!(r->a = fdl_strdup(SP))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  r->a_len = 3;
  if ((s = fdl_tk_pattern_literal(&r->pat, " ", 1, err)) != FDL_OK) return s;
  tk_dec *d = &t->dec[t->n_dec++];
  memset(d, 0, sizeof *d);
  d->kind = TK_D_REPLACE;
  d->a = fdl_strdup(SP);
  d->b = fdl_strdup(" ");
  d->a_len = 3;
  d->b_len = 1;
  if (!d->a || !d->b) return fdl_fail(err, FDL_NOMEM, "out of memory");
  t->dec[t->n_dec++] = (tk_dec){.kind = TK_D_BYTEFALLBACK};
  t->dec[t->n_dec++] = (tk_dec){.kind = TK_D_FUSE};
  if (prefix) t->dec[t->n_dec++] = (tk_dec){.kind = TK_D_STRIP, .ch = ' ', .start = 1};
  snprintf(t->kind, sizeof t->kind, "SentencePiece BPE (scores)");
  return FDL_OK;
}

fdl_status fdl_tk_load_gguf(fdl_tok *t, const char *path, fdl_tok_file *f, fdl_err *err) {
  fdl_gguf g;
  fdl_status s = fdl_gguf_open(path, &g, err);
  if (s != FDL_OK) return s;
  s = fdl_sha256_buf_hex(g.map.data, g.map.size, f->sha256, err);
  f->bytes = g.map.size;
  const fdl_gguf_kv *mk = fdl_gguf_find(&g, "tokenizer.ggml.model"), *tk, *ty, *sc, *mg;
  const char *model = NULL;
  size_t mlen = 0;
  if (!mk)
    s = fdl_fail(err, FDL_PARSE, "%s: no tokenizer.ggml.model (no tokenizer in this GGUF)", path);
  if (s == FDL_OK) s = fdl_gguf_get_str(&g, mk, &model, &mlen, err);
  bool gpt2 = s == FDL_OK && mlen == 4 && !memcmp(model, "gpt2", 4);
  bool llama = s == FDL_OK && mlen == 5 && !memcmp(model, "llama", 5);
  if (s == FDL_OK && !gpt2 && !llama)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "%s: tokenizer.ggml.model \"%.*s\" is not supported (fidelis reads \"gpt2\" and "
                 "\"llama\"); refusing rather than approximating it",
                 path, (int)(mlen > 32 ? 32 : mlen), model);
  if (s == FDL_OK) s = array_of(&g, "tokenizer.ggml.tokens", FDL_GGUF_STRING, 0, true, &tk, err);
  if (s == FDL_OK) s = fdl_tk_init(t, tk->count <= SIZE_MAX ? (size_t)tk->count : 0, err);
  if (s == FDL_OK)
    s = array_of(&g, "tokenizer.ggml.token_type", FDL_GGUF_I32, t->n, false, &ty, err);
  if (s == FDL_OK) s = array_of(&g, "tokenizer.ggml.scores", FDL_GGUF_F32, t->n, llama, &sc, err);
  if (s == FDL_OK && gpt2)
    s = array_of(&g, "tokenizer.ggml.merges", FDL_GGUF_STRING, 0, true, &mg, err);
  t->byte_level = gpt2;
  t->byte_fallback = llama;
  t->model = gpt2 ? TK_MODEL_BPE : TK_MODEL_SPM;
  if (s == FDL_OK) s = tokens(t, &g, tk, ty, sc, err);
  if (s == FDL_OK) s = fdl_tk_build_map(t, err);
  if (s == FDL_OK && gpt2) s = merges(t, &g, mg, err);
  if (s == FDL_OK && gpt2) s = splits(t, &g, err);
  bool prefix = true, extra_ws = false;
  if (s == FDL_OK && llama) s = opt_bool(&g, "tokenizer.ggml.add_space_prefix", &prefix, err);
  if (s == FDL_OK && llama)
    s = opt_bool(&g, "tokenizer.ggml.remove_extra_whitespaces", &extra_ws, err);
  if (s == FDL_OK && extra_ws)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "%s: tokenizer.ggml.remove_extra_whitespaces is not supported", path);
  if (s == FDL_OK && llama) s = spm_steps(t, prefix, err);
  if (s == FDL_OK && gpt2) t->dec[t->n_dec++] = (tk_dec){.kind = TK_D_BYTELEVEL};
  /* defaults as llama.cpp: BOS for SentencePiece and the llama3/tekken pre-tokenizers */
  t->add_bos = llama || t->ignore_merges;
  if (s == FDL_OK) s = special_id(&g, path, "bos", t->n, llama ? 1 : -1, &t->bos, err);
  if (s == FDL_OK) s = special_id(&g, path, "eos", t->n, llama ? 2 : -1, &t->eos, err);
  if (s == FDL_OK) s = special_id(&g, path, "unknown", t->n, llama ? 0 : -1, &t->unk, err);
  /* A default with no token to add is off; a file that asks for a token it does not name lies. */
  if (s == FDL_OK) s = add_flag(&g, path, "bos", t->bos, &t->add_bos, err);
  if (s == FDL_OK) s = add_flag(&g, path, "eos", t->eos, &t->add_eos, err);
  t->added_as_written = true;
  fdl_gguf_close(&g);
  return s;
}
