/* bpe.c - the BPE model on one piece: rank-ordered merges on token ids, with a word cache.
 *
 * A piece starts as one symbol per byte (byte-level vocabularies: each byte's stand-in token)
 * or per UTF-8 character (others; a character outside the vocabulary becomes its <0xXX> byte
 * tokens with byte_fallback, else the unknown token, consecutive ones fused with fuse_unk, else
 * nothing - as Hugging Face tokenizers does). Then, repeatedly, the adjacent pair with the
 * lowest merge rank (leftmost on ties) is merged, until no pair has a rank. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

#define CACHE_SLOTS (1u << 17)
#define CACHE_ENTRIES (1u << 16)
#define CACHE_BYTES ((size_t)8 << 20)

void fdl_tk_cache_free(tk_cache *c) {
  free(c->slot);
  free(c->bytes);
  free(c->ids);
  free(c->ent);
  memset(c, 0, sizeof *c);
}

static const struct tk_cache_entry *cache_get(const tk_cache *c, const char *p, size_t n,
                                              uint64_t h) {
  if (!c->slot) return NULL;
  for (size_t i = (size_t)h & c->mask;; i = (i + 1) & c->mask) {
    uint64_t v = c->slot[i];
    if (!v) return NULL;
    if ((v >> 32) != (h >> 32)) continue;
    const struct tk_cache_entry *e = &c->ent[(uint32_t)v - 1];
    if (e->len == n && !memcmp(c->bytes + e->off, p, n)) return e;
  }
}

static bool grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : 1024;
  while (nc < need) nc *= 2;
  void *np = fdl_realloc(*p, nc * elem);
  if (!np) return false;
  *p = np;
  *cap = nc;
  return true;
}

/* Remembers a piece's ids; a full cache starts over (its content never changes a result). */
static void cache_put(tk_cache *c, const char *p, size_t n, uint64_t h, const int32_t *ids,
                      size_t k) {
  if (n > 256) return;
  if (!c->slot) {
    c->slot = fdl_calloc(CACHE_SLOTS, sizeof *c->slot);
    if (!c->slot) return;
    c->mask = CACHE_SLOTS - 1;
  }
  if (c->n_ent >= CACHE_ENTRIES || c->bytes_len + n > CACHE_BYTES) {
    memset(c->slot, 0, CACHE_SLOTS * sizeof *c->slot);
    c->n_ent = c->bytes_len = c->ids_len = 0;
  }
  if (!grow((void **)&c->bytes, &c->bytes_cap, c->bytes_len + n, 1) ||
      !grow((void **)&c->ids, &c->ids_cap, c->ids_len + k, sizeof *c->ids) ||
      !grow((void **)&c->ent, &c->cap_ent, c->n_ent + 1, sizeof *c->ent))
    return;
  memcpy(c->bytes + c->bytes_len, p, n);
  memcpy(c->ids + c->ids_len, ids, k * sizeof *ids);
  c->ent[c->n_ent] = (struct tk_cache_entry){(uint32_t)c->bytes_len, (uint32_t)n,
                                             (uint32_t)c->ids_len, (uint32_t)k};
  c->bytes_len += n;
  c->ids_len += k;
  size_t i = (size_t)h & c->mask;
  while (c->slot[i]) i = (i + 1) & c->mask;
  c->slot[i] = (h >> 32) << 32 | (uint64_t)(c->n_ent + 1);
  c->n_ent++;
}

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
      len = fdl_tk_utf8_len((const unsigned char *)p + i, n - i, NULL);
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

fdl_status fdl_tk_bpe_piece(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err) {
  fdl_status st = FDL_OK;
  if (t->ignore_merges) {
    int32_t whole = fdl_tk_lookup(t, p, n);
    if (whole >= 0) return fdl_tk_push_id(o, whole, err);
  }
  uint64_t h = fdl_tk_hash(p, n);
  const struct tk_cache_entry *e = cache_get(&t->cache, p, n, h);
  if (e) {
    for (uint32_t i = 0; i < e->n_ids && st == FDL_OK; i++)
      st = fdl_tk_push_id(o, t->cache.ids[e->ids_off + i], err);
    return st;
  }
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
  size_t first = o->n;
  for (uint32_t i = k ? 0 : UINT32_MAX; i != UINT32_MAX && st == FDL_OK; i = s->next[i])
    st = fdl_tk_push_id(o, s->id[i], err);
  if (st == FDL_OK) cache_put(&t->cache, p, n, h, o->ids + first, o->n - first);
  return st;
}
