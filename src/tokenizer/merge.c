/* merge.c - what both merge models share: the symbol arrays of one piece and a binary heap of
 * candidate merges, smallest key first and, on equal keys, the leftmost (the order Hugging Face
 * tokenizers and llama.cpp both use). */
#include <stdlib.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

fdl_status fdl_tk_scratch_reserve(tk_scratch *s, size_t n, fdl_err *err) {
  if (n <= s->cap) return FDL_OK;
  /* five arrays of 4-byte elements that share one capacity: each grows from it */
  void *arrs[5] = {&s->id, &s->start, &s->len, &s->prev, &s->next};
  size_t cap = s->cap;
  for (int i = 0; i < 5; i++) {
    cap = s->cap;
    if (!fdl_grow(arrs[i], n, &cap, sizeof(uint32_t), 256))
      return fdl_fail(err, FDL_NOMEM, "out of memory for a piece of %zu symbols", n);
  }
  s->cap = cap;
  return FDL_OK;
}

static bool before(const struct tk_heap_entry *x, const struct tk_heap_entry *y) {
  return x->key < y->key || (x->key == y->key && x->left < y->left);
}

fdl_status fdl_tk_heap_push(tk_scratch *s, double key, uint32_t left, uint32_t right, uint32_t a,
                            uint32_t b, fdl_err *err) {
  /* n == cap tested here, not only in fdl_grow: no call per push (a hot path) */
  if (s->n_heap == s->cap_heap && !FDL_GROW(s->heap, s->n_heap, s->cap_heap, 256))
    return fdl_fail(err, FDL_NOMEM, "out of memory for the merge queue");
  struct tk_heap_entry e = {key, left, right, a, b};
  size_t i = s->n_heap++;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!before(&e, &s->heap[up])) break;
    s->heap[i] = s->heap[up];
    i = up;
  }
  s->heap[i] = e;
  return FDL_OK;
}

bool fdl_tk_heap_pop(tk_scratch *s, struct tk_heap_entry *out) {
  if (!s->n_heap) return false;
  *out = s->heap[0];
  struct tk_heap_entry last = s->heap[--s->n_heap];
  size_t i = 0, n = s->n_heap;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(&s->heap[c + 1], &s->heap[c])) c++;
    if (!before(&s->heap[c], &last)) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n) s->heap[i] = last;
  return true;
}

void fdl_tk_scratch_free(tk_scratch *s) {
  free(s->id);
  free(s->start);
  free(s->len);
  free(s->prev);
  free(s->next);
  free(s->heap);
}

fdl_status fdl_tk_push_id(tk_out *o, int32_t id, fdl_err *err) {
  if (o->n == o->cap && !FDL_GROW(o->ids, o->n, o->cap, 1024)) /* as in fdl_tk_heap_push */
    return fdl_fail(err, FDL_NOMEM, "out of memory for %zu token ids", o->n + 1);
  o->ids[o->n++] = id;
  return FDL_OK;
}

fdl_status fdl_tk_out_flush(tk_out *o, bool last, fdl_err *err) {
  if (!o->sink || !o->n || (!last && o->n < TK_BATCH)) return FDL_OK;
  fdl_status st = o->sink(o->ctx, o->ids, o->n, err);
  o->n = 0;
  return st;
}
