/* encode.c - text to ids: added tokens, then per fragment normalize, pre-tokenize, model.
 *
 * Added tokens are found leftmost-longest (Hugging Face tokenizers' rule): those the file marks
 * normalized false (all of them when there is no normalizer) on the raw text, the others in
 * each normalized fragment. Special ones only with FDL_TOK_PARSE_SPECIAL. lstrip/rstrip take
 * the white space beside a match into it; single_word needs no word character beside it.
 *
 * Nothing grows with the text but its normalized copy: pieces go to the model one at a time
 * (pretok.c) and, with a sink, ids leave in batches (fdl_tok_encode_each). */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

typedef struct {
  uint32_t first, len, index;
} order_key;

/* first byte, then longest first, then file order */
static int by_first_len(const void *x, const void *y) {
  const order_key *a = x, *b = y;
  if (a->first != b->first) return a->first < b->first ? -1 : 1;
  if (a->len != b->len) return a->len > b->len ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

fdl_status fdl_tk_index_added(fdl_tok *t, fdl_err *err) {
  free(t->added_order);
  size_t m = t->n_added ? t->n_added : 1;
  t->added_order = fdl_malloc(m * sizeof *t->added_order);
  order_key *keys = fdl_malloc(m * sizeof *keys);
  if (!t->added_order || !keys) {
    free(keys);
    return fdl_fail(err, FDL_NOMEM, "out of memory for %zu added tokens", t->n_added);
  }
  size_t k = 0;
  memset(t->added_kinds, 0, sizeof t->added_kinds);
  for (size_t i = 0; i < t->n_added; i++) {
    t->added_kinds[t->added[i].special][t->added[i].normalized]++;
    tk_str s = t->shown[t->added[i].id];
    if (s.len) keys[k++] = (order_key){(unsigned char)t->pool[s.off], s.len, (uint32_t)i};
  }
  qsort(keys, k, sizeof *keys, by_first_len);
  memset(t->added_start, 0, sizeof t->added_start);
  for (size_t i = 0; i < k; i++) {
    t->added_order[i] = keys[i].index;
    t->added_start[keys[i].first + 1]++;
  }
  for (int b = 0; b < 256; b++) t->added_start[b + 1] += t->added_start[b];
  free(keys);
  return FDL_OK;
}

static bool word_char(const char *s, size_t n, size_t at, bool before) {
  /* the character just before `at` (before) or at `at` */
  size_t i = at;
  if (before) {
    if (at == 0) return false;
    i = at - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
  } else if (at >= n) {
    return false;
  }
  uint32_t cp;
  if (!fdl_utf8_decode((const unsigned char *)s + i, n - i, &cp)) return false;
  if (cp == '_') return true;
  utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
  return (c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO) ||
         (c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO) ||
         (c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME);
}

static bool space_at(const char *s, size_t n, size_t i, size_t *k) {
  uint32_t cp;
  *k = fdl_utf8_decode((const unsigned char *)s + i, n - i, &cp);
  return *k && (utf8proc_category((utf8proc_int32_t)cp) == UTF8PROC_CATEGORY_ZS ||
                (cp >= 9 && cp <= 13) || cp == 0x85 || cp == 0x2028 || cp == 0x2029);
}

/* Whether any added token takes part in this phase (0: the raw text, 1: normalized text). */
static bool phase_has_added(const fdl_tok *t, int phase, bool special) {
  for (int sp = 0; sp <= (int)special; sp++)
    for (int nm = 0; nm < 2; nm++)
      if (t->added_kinds[sp][nm] && (phase == 0 ? !(t->n_norm && nm) : nm)) return true;
  return false;
}

/* The leftmost-longest added token in s[from..n) of the given phase. */
static bool find_added(const fdl_tok *t, const char *s, size_t n, size_t from, int phase,
                       bool special, size_t *lo, size_t *hi, int32_t *id) {
  if (!phase_has_added(t, phase, special)) return false; /* a scan of every byte saved */
  for (size_t p = from; p < n; p++) {
    unsigned b = (unsigned char)s[p];
    for (uint32_t j = t->added_start[b]; j < t->added_start[b + 1]; j++) {
      const tk_added *a = &t->added[t->added_order[j]];
      if (a->special && !special) continue;
      if (phase == 0 ? (t->n_norm && a->normalized) : !a->normalized) continue;
      tk_str txt = t->shown[a->id];
      if (txt.len > n - p || memcmp(s + p, tk_ptr(t, txt), txt.len)) continue;
      size_t l = p, h = p + txt.len, k;
      if (a->single_word && (word_char(s, n, l, true) || word_char(s, n, h, false))) continue;
      if (a->lstrip)
        while (l > from) {
          size_t q = l - 1;
          while (q > from && ((unsigned char)s[q] & 0xC0) == 0x80) q--;
          if (!space_at(s, n, q, &k)) break;
          l = q;
        }
      if (a->rstrip)
        while (h < n && space_at(s, n, h, &k)) h += k;
      *lo = l;
      *hi = h;
      *id = a->id;
      return true;
    }
  }
  return false;
}

/* An added token's id; flushed, so that a text of nothing but added tokens stays bounded too. */
static fdl_status push_added(tk_out *o, int32_t id, fdl_err *err) {
  fdl_status st = fdl_tk_push_id(o, id, err);
  return st == FDL_OK ? fdl_tk_out_flush(o, false, err) : st;
}

/* Whether the model cuts its pieces (cut.c), and with which rule: SentencePiece always (it has
 * no pre-tokenizer), BPE unless its pieces come from a byte-level regex split (short, and
 * ignore_merges looks a piece up whole). */
static bool model_cuts(const fdl_tok *t, bool *need_tokens) {
  *need_tokens = t->model != TK_MODEL_SPM;
  return t->model == TK_MODEL_SPM || !(t->byte_level || t->ignore_merges);
}

static fdl_status spm_cached(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err) {
  return fdl_tk_cached(t, p, n, fdl_tk_spm_part, o, err);
}

fdl_status fdl_tk_model_piece(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err) {
  bool need_tokens;
  fdl_status st;
  if (!model_cuts(t, &need_tokens))
    st = fdl_tk_bpe_piece(t, p, n, o, err);
  else
    st = fdl_tk_cut_parts(t, p, n, need_tokens,
                          t->model == TK_MODEL_SPM ? spm_cached : fdl_tk_bpe_piece, o, err);
  return st == FDL_OK ? fdl_tk_out_flush(o, false, err) : st;
}

/* [off, off+len) of the normalized fragment x: pre-tokenize and encode each piece. */
static fdl_status model(fdl_tok *t, tk_text *x, size_t off, size_t len, bool first, tk_out *o,
                        fdl_err *err) {
  x->ext.len = 0;
  return fdl_tk_pretokenize(t, x, off, len, first, o, err);
}

/* A fragment whose normalized text is one piece (no pre-tokenizer) for a model that cuts it,
 * normalized in blocks of about BLOCK bytes (normalize.c says where one can end) and encoded up
 * to the last cut the model would make, the rest carried into the next block: the same parts,
 * so the same ids, as the whole, with memory that does not grow with the fragment. */
#define BLOCK ((size_t)1 << 12)
static fdl_status fragment_blocks(fdl_tok *t, const char *s, size_t n, bool need_tokens, tk_out *o,
                                  fdl_err *err) {
  fdl_buf r = {0};
  fdl_status st = FDL_OK;
  for (size_t at = 0; at < n && st == FDL_OK;) {
    size_t end = n - at > BLOCK ? fdl_tk_norm_cut(t, s, at + BLOCK, n) : n;
    st = fdl_tk_normalize(t, s + at, end - at, at == 0, &r, err);
    if (st == FDL_OK && r.err) st = fdl_fail(err, FDL_NOMEM, "out of memory normalizing");
    at = end;
    size_t cut = r.len;
    if (st == FDL_OK && at < n) st = fdl_tk_last_cut(t, r.data, r.len, need_tokens, &cut, err);
    if (st == FDL_OK && cut) {
      st = fdl_tk_model_piece(t, r.data, cut, o, err);
      memmove(r.data, r.data + cut, r.len - cut);
      r.len -= cut;
    }
  }
  free(r.data);
  return st;
}

static fdl_status fragment(fdl_tok *t, const char *s, size_t n, bool first, bool special, tk_out *o,
                           fdl_err *err) {
  bool need_tokens;
  if (t->n_norm && !t->n_pre && n > BLOCK && model_cuts(t, &need_tokens) && fdl_tk_norm_blocks(t) &&
      !phase_has_added(t, 1, special))
    return fragment_blocks(t, s, n, need_tokens, o, err);
  fdl_buf norm = {0};
  tk_text x = {s, n, {0}};
  fdl_status st = FDL_OK;
  if (t->n_norm) {
    st = fdl_tk_normalize(t, s, n, true, &norm, err);
    if (st == FDL_OK && norm.err) st = fdl_fail(err, FDL_NOMEM, "out of memory");
    x.base = norm.data;
    x.base_n = norm.len;
  }
  size_t at = 0, total = x.base_n, lo, hi;
  int32_t id;
  while (st == FDL_OK && t->n_norm && find_added(t, x.base, total, at, 1, special, &lo, &hi, &id)) {
    if (lo > at) st = model(t, &x, at, lo - at, first && at == 0, o, err);
    if (st == FDL_OK) st = push_added(o, id, err);
    at = hi;
  }
  if (st == FDL_OK && at < total) st = model(t, &x, at, total - at, first && at == 0, o, err);
  free(norm.data);
  free(x.ext.data);
  return st;
}

/* BOS, the raw text's added tokens and the fragments between them, EOS; the text is checked
 * UTF-8 first. */
static fdl_status encode(fdl_tok *t, const char *text, size_t len, unsigned flags, tk_out *o,
                         fdl_err *err) {
  size_t bad = fdl_utf8_invalid_at(text, len);
  if (bad < len)
    return fdl_fail(err, FDL_INVALID,
                    "the text is not UTF-8: byte offset %zu (0x%02X) does not start or continue a "
                    "valid sequence",
                    bad, (unsigned char)text[bad]);
  fdl_status st = fdl_tk_regex_ready(t, err);
  if (st != FDL_OK) return st;
  bool add = flags & FDL_TOK_ADD_SPECIAL, special = flags & FDL_TOK_PARSE_SPECIAL;
  if (add && t->add_bos && t->bos >= 0) st = fdl_tk_push_id(o, t->bos, err);
  size_t at = 0, lo, hi;
  int32_t id;
  while (st == FDL_OK && find_added(t, text, len, at, 0, special, &lo, &hi, &id)) {
    if (lo > at) st = fragment(t, text + at, lo - at, at == 0, special, o, err);
    if (st == FDL_OK) st = push_added(o, id, err);
    at = hi;
  }
  if (st == FDL_OK && at < len) st = fragment(t, text + at, len - at, at == 0, special, o, err);
  if (st == FDL_OK && add && t->add_eos && t->eos >= 0) st = fdl_tk_push_id(o, t->eos, err);
  return st;
}

fdl_status fdl_tok_encode_each(fdl_tok *t, const char *text, size_t len, unsigned flags,
                               fdl_tok_sink sink, void *ctx, fdl_err *err) {
  tk_out o = {.sink = sink, .ctx = ctx};
  fdl_status st = encode(t, text, len, flags, &o, err);
  if (st == FDL_OK) st = fdl_tk_out_flush(&o, true, err);
  free(o.ids);
  return st;
}

fdl_status fdl_tok_encode(fdl_tok *t, const char *text, size_t len, unsigned flags, int32_t **ids,
                          size_t *n, fdl_err *err) {
  *ids = NULL;
  *n = 0;
  tk_out o = {0}; /* no sink: every id stays in o */
  fdl_status st = encode(t, text, len, flags, &o, err);
  if (st != FDL_OK) {
    free(o.ids);
    return st;
  }
  *ids = o.ids;
  *n = o.n;
  return FDL_OK;
}
