/* bpe.c - the BPE model on one piece: rank-ordered merges on token ids, with a word cache.
 *
 * A piece starts as one symbol per byte (byte-level vocabularies: each byte's stand-in token)
 * or per UTF-8 character (others; a character outside the vocabulary becomes its <0xXX> byte
 * tokens with byte_fallback, else the unknown token, consecutive ones fused with fuse_unk, else
 * nothing - as Hugging Face tokenizers does). Then, repeatedly, the adjacent pair with the
 * lowest merge rank (leftmost on ties) is merged, until no pair has a rank. Pieces seen before
 * come from the word cache (cache.c). */

#include "tokenizer/internal.h"

/* The initial symbols of a piece, into t->scratch; returns their count via *n_sym. */
static fdl_status symbols(fdl_tok *t, const char *p, size_t n, size_t *n_sym, fdl_err *err) {
  tk_scratch *s = &t->scratch;
  fdl_status st = fdl_tk_scratch_reserve(s, 4 * n + 1, err);
  if (st != FDL_OK) return st;
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    size_t len = 1;
    int32_t id;
    if (t->byte_level) {
      id = t->byte_tok[(unsigned char)p[i]];
    } else {
      len = fdl_utf8_decode((const unsigned char *)p + i, n - i, NULL);
      if (!len) len = 1;
      id = fdl_tk_lookup(t, p + i, len);
      if (id < 0 && t->byte_fallback) {
        bool all = true;
        for (size_t b = 0; b < len; b++) all &= t->byte_tok[(unsigned char)p[i + b]] >= 0;
        if (all) {
          for (size_t b = 0; b < len; b++) {
            s->id[k] = t->byte_tok[(unsigned char)p[i + b]];
            s->start[k] = (uint32_t)(i + b);
            s->len[k++] = 1;
          }
          i += len;
          continue;
        }
      }
    }
    if (id < 0) {
      if (t->unk < 0) { /* no unknown token: the character is dropped, as the reference does */
        i += len;
        continue;
      }
      if (t->fuse_unk && k && s->id[k - 1] == t->unk) {
        s->len[k - 1] += (uint32_t)len;
        i += len;
        continue;
      }
      id = t->unk;
    }
    s->id[k] = id;
    s->start[k] = (uint32_t)i;
    s->len[k++] = (uint32_t)len;
    i += len;
  }
  for (size_t i = 0; i < k; i++) {
    s->prev[i] = i ? (uint32_t)i - 1 : UINT32_MAX;
    s->next[i] = i + 1 < k ? (uint32_t)i + 1 : UINT32_MAX;
  }
  *n_sym = k;
  return FDL_OK;
}

static fdl_status candidate(fdl_tok *t, uint32_t l, uint32_t r, fdl_err *err) {
  if (l == UINT32_MAX || r == UINT32_MAX) return FDL_OK;
  tk_scratch *s = &t->scratch;
  const tk_merge *m = fdl_tk_merge_find(t, (uint32_t)s->id[l], (uint32_t)s->id[r]);
  if (!m) return FDL_OK;
  return fdl_tk_heap_push(s, m->rank, l, r, (uint32_t)s->id[l], (uint32_t)s->id[r], err);
}

/* One piece's merges, uncached. */
static fdl_status merge_piece(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err) {
  fdl_status st;
  size_t k;
  if ((st = symbols(t, p, n, &k, err)) != FDL_OK) return st;
  tk_scratch *s = &t->scratch;
  s->n_heap = 0;
  for (size_t i = 0; i + 1 < k && st == FDL_OK; i++)
    st = candidate(t, (uint32_t)i, (uint32_t)i + 1, err);
  struct tk_heap_entry top;
  while (st == FDL_OK && fdl_tk_heap_pop(s, &top)) {
    uint32_t l = top.left, r = top.right;
    /* stale: one side merged since, or the neighbour changed */
    if (s->len[l] == 0 || s->next[l] != r || (uint32_t)s->id[l] != top.a ||
        (uint32_t)s->id[r] != top.b)
      continue;
    const tk_merge *m = fdl_tk_merge_find(t, top.a, top.b);
    s->id[l] = (int32_t)m->merged;
    s->len[l] += s->len[r];
    s->len[r] = 0;
    s->next[l] = s->next[r];
    if (s->next[r] != UINT32_MAX) s->prev[s->next[r]] = l;
    st = candidate(t, s->prev[l], l, err);
    if (st == FDL_OK) st = candidate(t, l, s->next[l], err);
  }
  for (uint32_t i = k ? 0 : UINT32_MAX; i != UINT32_MAX && st == FDL_OK; i = s->next[i])
    st = fdl_tk_push_id(o, s->id[i], err);
  return st;
}

fdl_status fdl_tk_bpe_piece(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err) {
  if (t->ignore_merges) {
    int32_t whole = fdl_tk_lookup(t, p, n);
    if (whole >= 0) return fdl_tk_push_id(o, whole, err);
  }
  return fdl_tk_cached(t, p, n, merge_piece, o, err);
}
