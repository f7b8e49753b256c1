/* cache.c - the word cache both models share: piece bytes -> ids, which never changes a result.
 *
 * Text repeats its words, so most pieces were seen before. A direct-mapped table small enough
 * to stay in the core's cache (256 KiB) holds the pieces of at most 8 bytes that are one token,
 * keyed by their bytes; behind it an open-addressing table holds any piece of at most 256
 * bytes, dropped whole when full (8 MiB of bytes or 65536 pieces). */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

#define CACHE_SLOTS (1u << 17)
#define CACHE_ENTRIES (1u << 16)
#define CACHE_BYTES ((size_t)8 << 20)
#define HOT_BITS 14
#define HOT_SLOTS (1u << HOT_BITS) /* 256 KiB */

void fdl_tk_cache_free(tk_cache *c) {
  free(c->slot);
  free(c->bytes);
  free(c->ids);
  free(c->ent);
  free(c->hot);
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
  if (!fdl_grow(&c->bytes, c->bytes_len + n, &c->bytes_cap, 1, 1024) ||
      !fdl_grow(&c->ids, c->ids_len + k, &c->ids_cap, sizeof *c->ids, 1024) ||
      !FDL_GROW(c->ent, c->n_ent, c->cap_ent, 1024))
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

static uint64_t load32(const char *p) {
  const unsigned char *u = (const unsigned char *)p;
  return (uint64_t)u[0] | (uint64_t)u[1] << 8 | (uint64_t)u[2] << 16 | (uint64_t)u[3] << 24;
}

/* The piece's n <= 8 bytes as a number (byte i at bits 8i), zero above them: two 4-byte loads
 * that overlap (a byte in both lands in the same place) instead of a copy of variable length. */
static uint64_t hot_key(const char *p, size_t n) {
  if (n >= 4) return load32(p) | load32(p + n - 4) << (8 * (n - 4));
  uint64_t k = 0;
  for (size_t i = 0; i < n; i++) k |= (uint64_t)(unsigned char)p[i] << (8 * i);
  return k;
}

static struct tk_hot *hot_slot(const tk_cache *c, uint64_t key, size_t n) {
  return &c->hot[((key + n) * 0x9E3779B97F4A7C15u) >> (64 - HOT_BITS)];
}

fdl_status fdl_tk_cached(fdl_tok *t, const char *p, size_t n, tk_part_fn fn, tk_out *o,
                         fdl_err *err) {
  tk_cache *c = &t->cache;
  struct tk_hot *hot = NULL;
  if (n <= 8) {
    if (!c->hot && !(c->hot = fdl_calloc(HOT_SLOTS, sizeof *c->hot)))
      return fdl_fail(err, FDL_NOMEM, "out of memory for the word cache");
    uint64_t key = hot_key(p, n);
    hot = hot_slot(c, key, n);
    if (hot->len == n && hot->key == key) return fdl_tk_push_id(o, hot->id, err);
  }
  uint64_t h = fdl_tk_hash(p, n);
  const struct tk_cache_entry *e = cache_get(c, p, n, h);
  fdl_status st = FDL_OK;
  if (e) {
    if (hot && e->n_ids == 1)
      *hot = (struct tk_hot){hot_key(p, n), c->ids[e->ids_off], (uint32_t)n};
    for (uint32_t i = 0; i < e->n_ids && st == FDL_OK; i++)
      st = fdl_tk_push_id(o, c->ids[e->ids_off + i], err);
    return st;
  }
  size_t first = o->n;
  st = fn(t, p, n, o, err);
  if (st != FDL_OK) return st;
  cache_put(c, p, n, h, o->ids + first, o->n - first);
  if (hot && o->n - first == 1) *hot = (struct tk_hot){hot_key(p, n), o->ids[first], (uint32_t)n};
  return FDL_OK;
}
