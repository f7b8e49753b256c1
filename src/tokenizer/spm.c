/* spm.c - SentencePiece's BPE as llama.cpp runs a GGUF "llama" vocabulary, on one piece.
 *
 * One symbol per UTF-8 character; every adjacent pair whose joined text is a vocabulary token
 * is a candidate with that token's score; the highest score merges first (leftmost on ties),
 * and new neighbours become candidates. A final symbol that is not a token (a character outside
 * the vocabulary) becomes its <0xXX> byte tokens, else the unknown token.
 *
 * A piece is first cut where no merge can ever join across: between two characters that are
 * not adjacent inside any vocabulary token (every merge makes a token, and a token spanning the
 * cut would hold that pair). The parts merge independently, in the same order, to the same ids
 * as the whole; without the cut a whole text (SentencePiece has no pre-tokenizer) is one heap
 * of a million candidates, and each merge a walk through memory. */
#include <stdlib.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

static uint64_t pair_key(uint32_t a, uint32_t b) {
  return ((uint64_t)a + 1) << 32 | ((uint64_t)b + 1); /* never 0, the empty slot */
}

static size_t pair_slot(const fdl_tok *t, uint64_t key) {
  size_t mask = t->pairs_cap - 1, i = (size_t)((key * 0x9E3779B97F4A7C15u) >> 20) & mask;
  while (t->pairs[i] && t->pairs[i] != key) i = (i + 1) & mask;
  return i;
}

static bool pair_inside(const fdl_tok *t, uint32_t a, uint32_t b) {
  return t->pairs[pair_slot(t, pair_key(a, b))] != 0;
}

/* The pair set of every token's text, at most half full. */
static fdl_status build_pairs(fdl_tok *t, fdl_err *err) {
  size_t total = 0;
  for (size_t id = 0; id < t->n; id++) total += t->text[id].len;
  size_t cap = 1024;
  while (cap < 2 * total) cap *= 2;
  t->pairs = fdl_calloc(cap, sizeof *t->pairs);
  if (!t->pairs) return fdl_fail(err, FDL_NOMEM, "out of memory for the vocabulary's pairs");
  t->pairs_cap = cap;
  for (size_t id = 0; id < t->n; id++) {
    const unsigned char *p = (const unsigned char *)tk_ptr(t, t->text[id]);
    size_t n = t->text[id].len, i = 0;
    uint32_t prev = UINT32_MAX, cp;
    while (i < n) {
      size_t k = fdl_tk_utf8_len(p + i, n - i, &cp);
      if (!k) break; /* token texts are UTF-8: the loaders checked */
      if (prev != UINT32_MAX) {
        uint64_t key = pair_key(prev, cp);
        t->pairs[pair_slot(t, key)] = key;
      }
      prev = cp;
      i += k;
    }
  }
  return FDL_OK;
}

static fdl_status candidate(fdl_tok *t, const char *p, uint32_t l, uint32_t r, fdl_err *err) {
  if (l == UINT32_MAX || r == UINT32_MAX) return FDL_OK;
  tk_scratch *s = &t->scratch;
  uint32_t len = s->len[l] + s->len[r];
  int32_t id = fdl_tk_lookup(t, p + s->start[l], len);
  if (id < 0) return FDL_OK;
  /* a = the joined length: the entry is stale when the sides no longer add up to it */
  return fdl_tk_heap_push(s, -(double)t->score[id], l, r, len, (uint32_t)id, err);
}

static fdl_status part(fdl_tok *t, const char *p, size_t n, int32_t **ids, size_t *n_ids,
                       size_t *cap, fdl_err *err) {
  tk_scratch *s = &t->scratch;
  fdl_status st = fdl_tk_scratch_reserve(s, n + 1, err);
  if (st != FDL_OK) return st;
  size_t k = 0;
  for (size_t i = 0; i < n; k++) {
    size_t len = fdl_tk_utf8_len((const unsigned char *)p + i, n - i, NULL);
    if (!len) len = 1;
    s->start[k] = (uint32_t)i;
    s->len[k] = (uint32_t)len;
    s->prev[k] = k ? (uint32_t)k - 1 : UINT32_MAX;
    s->next[k] = i + len < n ? (uint32_t)k + 1 : UINT32_MAX;
    i += len;
  }
  s->n_heap = 0;
  for (size_t i = 0; i + 1 < k && st == FDL_OK; i++)
    st = candidate(t, p, (uint32_t)i, (uint32_t)i + 1, err);
  struct tk_heap_entry top;
  while (st == FDL_OK && fdl_tk_heap_pop(s, &top)) {
    uint32_t l = top.left, r = top.right;
    if (s->len[l] == 0 || s->len[r] == 0 || s->next[l] != r || s->len[l] + s->len[r] != top.a)
      continue;
    s->len[l] += s->len[r];
    s->len[r] = 0;
    s->next[l] = s->next[r];
    if (s->next[r] != UINT32_MAX) s->prev[s->next[r]] = l;
    st = candidate(t, p, s->prev[l], l, err);
    if (st == FDL_OK) st = candidate(t, p, l, s->next[l], err);
  }
  for (uint32_t i = k ? 0 : UINT32_MAX; i != UINT32_MAX && st == FDL_OK; i = s->next[i]) {
    int32_t id = fdl_tk_lookup(t, p + s->start[i], s->len[i]);
    if (id >= 0) {
      st = fdl_tk_push_id(id, ids, n_ids, cap, err);
      continue;
    }
    for (uint32_t b = 0; b < s->len[i] && st == FDL_OK; b++) {
      int32_t bt = t->byte_tok[(unsigned char)p[s->start[i] + b]];
      if (bt >= 0)
        st = fdl_tk_push_id(bt, ids, n_ids, cap, err);
      else if (t->unk >= 0)
        st = fdl_tk_push_id(t->unk, ids, n_ids, cap, err);
    }
  }
  return st;
}

fdl_status fdl_tk_spm_piece(fdl_tok *t, const char *p, size_t n, int32_t **ids, size_t *n_ids,
                            size_t *cap, fdl_err *err) {
  fdl_status st = t->pairs ? FDL_OK : build_pairs(t, err);
  size_t from = 0, i = 0;
  uint32_t prev = UINT32_MAX, cp;
  while (st == FDL_OK && i < n) {
    size_t k = fdl_tk_utf8_len((const unsigned char *)p + i, n - i, &cp);
    if (!k) k = 1, cp = 0x110000u + (unsigned char)p[i]; /* pairs with nothing */
    if (prev != UINT32_MAX && !pair_inside(t, prev, cp)) {
      st = part(t, p + from, i - from, ids, n_ids, cap, err);
      from = i;
    }
    prev = cp;
    i += k;
  }
  if (st == FDL_OK && from < n) st = part(t, p + from, n - from, ids, n_ids, cap, err);
  return st;
}
