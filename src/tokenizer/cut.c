/* cut.c - cutting a piece where no merge can join across, so that its parts merge on their own.
 *
 * Every merge, BPE's or SentencePiece's, makes a vocabulary token whose text is its two sides'
 * texts joined; a token spanning the cut between characters x and y would hold x and y side by
 * side. So where no token's text has x followed by y, no merge ever joins across, and the parts
 * merge independently, in the same order (ranks and scores compare only pairs inside one part;
 * ties go leftmost either way), to the same ids as the whole. This keeps a piece with no
 * pre-tokenizer before it (a whole SentencePiece text) from becoming one heap of a million
 * candidates, and lets the ids leave part by part.
 *
 * BPE also needs both characters to be tokens themselves: a character outside the vocabulary
 * becomes byte tokens or an unknown token that fuse_unk joins with the next, which the pair set
 * of token texts does not see. */

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
      size_t k = fdl_utf8_decode(p + i, n - i, &cp);
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

/* The code point at p[i..n) (or one that pairs with nothing for a stray byte), its length in k. */
static uint32_t cp_at(const char *p, size_t i, size_t n, size_t *k) {
  uint32_t cp;
  *k = fdl_utf8_decode((const unsigned char *)p + i, n - i, &cp);
  if (!*k) *k = 1, cp = 0x110000u + (unsigned char)p[i];
  return cp;
}

fdl_status fdl_tk_cut_parts(fdl_tok *t, const char *p, size_t n, bool need_tokens, tk_part_fn fn,
                            tk_out *o, fdl_err *err) {
  fdl_status st = t->pairs ? FDL_OK : build_pairs(t, err);
  size_t from = 0, i = 0;
  uint32_t prev = UINT32_MAX, cp;
  bool prev_token = false;
  while (st == FDL_OK && i < n) {
    size_t k;
    cp = cp_at(p, i, n, &k);
    bool token = !need_tokens || fdl_tk_lookup(t, p + i, k) >= 0;
    if (prev != UINT32_MAX && token && prev_token && !pair_inside(t, prev, cp)) {
      st = fn(t, p + from, i - from, o, err);
      if (st == FDL_OK) st = fdl_tk_out_flush(o, false, err);
      from = i;
    }
    prev = cp;
    prev_token = token;
    i += k;
  }
  if (st == FDL_OK && from < n) st = fn(t, p + from, n - from, o, err);
  return st;
}

fdl_status fdl_tk_last_cut(fdl_tok *t, const char *p, size_t n, bool need_tokens, size_t *at,
                           fdl_err *err) {
  fdl_status st = t->pairs ? FDL_OK : build_pairs(t, err);
  *at = 0;
  if (st != FDL_OK || n == 0) return st;
  size_t i = n - 1, k;
  while (i > 0 && ((unsigned char)p[i] & 0xC0) == 0x80) i--;
  /* i: the start of the last character; back pair by pair (left at j, right at i) */
  while (i > 0) {
    size_t j = i - 1;
    while (j > 0 && ((unsigned char)p[j] & 0xC0) == 0x80) j--;
    size_t kr;
    uint32_t left = cp_at(p, j, n, &k), right = cp_at(p, i, n, &kr);
    if (!pair_inside(t, left, right) &&
        (!need_tokens || (fdl_tk_lookup(t, p + j, k) >= 0 && fdl_tk_lookup(t, p + i, kr) >= 0))) {
      *at = i;
      return FDL_OK;
    }
    i = j;
  }
  return FDL_OK;
}
