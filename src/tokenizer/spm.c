/* spm.c - SentencePiece's BPE as llama.cpp runs a GGUF "llama" vocabulary, on one piece.
 *
 * One symbol per UTF-8 character; every adjacent pair whose joined text is a vocabulary token
 * is a candidate with that token's score; the highest score merges first (leftmost on ties),
 * and new neighbours become candidates. A final symbol that is not a token (a character outside
 * the vocabulary) becomes its <0xXX> byte tokens, else the unknown token.
 *
 * encode.c first cuts a piece where no merge can join across (cut.c): SentencePiece has no
 * pre-tokenizer, so without the cut a whole text is one heap of a million candidates. */

#include "tokenizer/internal.h"

static fdl_status candidate(fdl_tok *t, const char *p, uint32_t l, uint32_t r, fdl_err *err) {
  if (l == UINT32_MAX || r == UINT32_MAX) return FDL_OK;
  tk_scratch *s = &t->scratch;
  uint32_t len = s->len[l] + s->len[r];
  int32_t id = fdl_tk_lookup(t, p + s->start[l], len);
  if (id < 0) return FDL_OK;
  /* a = the joined length: the entry is stale when the sides no longer add up to it */
  return fdl_tk_heap_push(s, -(double)t->score[id], l, r, len, (uint32_t)id, err);
}

fdl_status fdl_tk_spm_part(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err) {
  tk_scratch *s = &t->scratch;
  fdl_status st = fdl_tk_scratch_reserve(s, n + 1, err);
  if (st != FDL_OK) return st;
  size_t k = 0;
  for (size_t i = 0; i < n; k++) {
    size_t len = fdl_utf8_decode((const unsigned char *)p + i, n - i, NULL);
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
      st = fdl_tk_push_id(o, id, err);
      continue;
    }
    for (uint32_t b = 0; b < s->len[i] && st == FDL_OK; b++) {
      int32_t bt = t->byte_tok[(unsigned char)p[s->start[i] + b]];
      if (bt >= 0)
        st = fdl_tk_push_id(o, bt, err);
      else if (t->unk >= 0)
        st = fdl_tk_push_id(o, t->unk, err);
    }
  }
  return st;
}
