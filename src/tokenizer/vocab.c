/* vocab.c - the token table: a string pool, text -> id, and the merge table (pair -> rank).
 *
 * Both tables are open-addressing hashes sized to a power of two at least twice their content,
 * so a lookup is one hash and a short probe whatever the vocabulary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

/* FNV-1a, 64-bit: the hash only places entries; nothing depends on its values. */
uint64_t fdl_tk_hash(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3u;
  return h;
}

fdl_status fdl_tk_init(fdl_tok *t, size_t n, fdl_err *err) {
  if (n == 0 || n > TK_MAX_VOCAB)
    return fdl_fail(err, FDL_BOUNDS, "a vocabulary of %zu tokens (fidelis takes 1 to %u)", n,
                    TK_MAX_VOCAB);
  t->n = n;
  t->text = fdl_calloc(n, sizeof *t->text);
  t->shown = fdl_calloc(n, sizeof *t->shown);
  t->score = fdl_calloc(n, sizeof *t->score);
  t->type = fdl_malloc(n);
  if (!t->text || !t->shown || !t->score || !t->type)
    return fdl_fail(err, FDL_NOMEM, "out of memory for a vocabulary of %zu tokens", n);
  memset(t->type, TK_NORMAL, n);
  for (int b = 0; b < 256; b++) t->byte_tok[b] = -1;
  t->unk = t->bos = t->eos = -1;
  return FDL_OK;
}

fdl_status fdl_tk_pool_add(fdl_tok *t, const char *p, size_t len, tk_str *s, fdl_err *err) {
  if (len > TK_MAX_TOKEN_BYTES)
    return fdl_fail(err, FDL_BOUNDS, "a token of %zu bytes (at most %u)", len, TK_MAX_TOKEN_BYTES);
  if (t->pool_len + len + 1 > UINT32_MAX)
    return fdl_fail(err, FDL_BOUNDS, "the vocabulary's text exceeds 4 GiB");
  if (!fdl_grow(&t->pool, t->pool_len + len + 1, &t->pool_cap, 1, 1 << 16))
    return fdl_fail(err, FDL_NOMEM, "out of memory for the vocabulary's text");
  if (len) memcpy(t->pool + t->pool_len, p, len);
  t->pool[t->pool_len + len] = '\0';
  s->off = (uint32_t)t->pool_len;
  s->len = (uint32_t)len;
  t->pool_len += len + 1;
  return FDL_OK;
}

static size_t table_size(size_t n) {
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  return cap;
}

fdl_status fdl_tk_build_map(fdl_tok *t, fdl_err *err) {
  size_t cap = table_size(t->n);
  free(t->map.slot);
  t->map.slot = fdl_calloc(cap, sizeof *t->map.slot);
  if (!t->map.slot) return fdl_fail(err, FDL_NOMEM, "out of memory for the vocabulary index");
  t->map.mask = cap - 1;
  for (size_t id = 0; id < t->n; id++) {
    tk_str s = t->text[id];
    size_t h = (size_t)fdl_tk_hash(tk_ptr(t, s), s.len) & t->map.mask;
    for (;; h = (h + 1) & t->map.mask) {
      uint32_t v = t->map.slot[h];
      if (!v) {
        t->map.slot[h] = (uint32_t)id + 1;
        break;
      }
      tk_str o = t->text[v - 1];
      if (o.len == s.len && !memcmp(tk_ptr(t, o), tk_ptr(t, s), s.len)) break; /* first id wins */
    }
  }
  for (int b = 0; b < 256; b++) {
    char hex[8], one = (char)b;
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    t->byte_tok[b] = t->byte_level      ? fdl_tk_lookup(t, &one, 1)
                     : t->byte_fallback ? fdl_tk_lookup(t, hex, 6)
                                        : -1;
  }
  return FDL_OK;
}

int32_t fdl_tk_lookup(const fdl_tok *t, const char *p, size_t len) {
  if (!t->map.slot) return -1;
  for (size_t h = (size_t)fdl_tk_hash(p, len) & t->map.mask;; h = (h + 1) & t->map.mask) {
    uint32_t v = t->map.slot[h];
    if (!v) return -1;
    tk_str o = t->text[v - 1];
    if (o.len == len && !memcmp(tk_ptr(t, o), p, len)) return (int32_t)(v - 1);
  }
}

static size_t pair_slot(const tk_merges *m, uint64_t pair) {
  uint64_t h = pair * 0x9E3779B97F4A7C15u;
  return (size_t)(h >> 17) & m->mask;
}

static fdl_status merges_grow(tk_merges *m, fdl_err *err) {
  size_t cap = m->slot ? (m->mask + 1) * 2 : 1024;
  tk_merge *ns = fdl_malloc(cap * sizeof *ns);
  if (!ns) return fdl_fail(err, FDL_NOMEM, "out of memory for the merge table");
  for (size_t i = 0; i < cap; i++) ns[i].pair = UINT64_MAX;
  tk_merges nm = {ns, cap - 1, 0};
  if (m->slot)
    for (size_t i = 0; i <= m->mask; i++) {
      if (m->slot[i].pair == UINT64_MAX) continue;
      size_t h = pair_slot(&nm, m->slot[i].pair);
      while (ns[h].pair != UINT64_MAX) h = (h + 1) & nm.mask;
      ns[h] = m->slot[i];
    }
  nm.n = m->n;
  free(m->slot);
  *m = nm;
  return FDL_OK;
}

fdl_status fdl_tk_merge_add(fdl_tok *t, uint32_t a, uint32_t b, uint32_t rank, uint32_t merged,
                            fdl_err *err) {
  tk_merges *m = &t->merges;
  if (!m->slot || 2 * (m->n + 1) > m->mask + 1) {
    fdl_status s = merges_grow(m, err);
    if (s != FDL_OK) return s;
  }
  uint64_t pair = (uint64_t)a << 32 | b;
  size_t h = pair_slot(m, pair);
  for (; m->slot[h].pair != UINT64_MAX; h = (h + 1) & m->mask)
    if (m->slot[h].pair == pair) return FDL_OK; /* a repeated merge keeps its first rank */
  m->slot[h] = (tk_merge){pair, rank, merged};
  m->n++;
  return FDL_OK;
}

const tk_merge *fdl_tk_merge_find(const fdl_tok *t, uint32_t a, uint32_t b) {
  const tk_merges *m = &t->merges;
  if (!m->slot) return NULL;
  uint64_t pair = (uint64_t)a << 32 | b;
  for (size_t h = pair_slot(m, pair); m->slot[h].pair != UINT64_MAX; h = (h + 1) & m->mask)
    if (m->slot[h].pair == pair) return &m->slot[h];
  return NULL;
}

void fdl_tk_release(fdl_tok *t) {
  free(t->pool);
  free(t->text);
  free(t->shown);
  free(t->score);
  free(t->type);
  free(t->map.slot);
  free(t->merges.slot);
  free(t->added);
  fdl_tk_ops_free(t);
  fdl_tk_cache_free(&t->cache);
  if (t->md) pcre2_match_data_free(t->md);
}
