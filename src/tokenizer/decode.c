/* decode.c - ids to text: each token's text as its file writes it, through the decoder steps.
 *
 * The steps work on the list of token strings, as Hugging Face tokenizers' decoders do:
 * ByteLevel maps the stand-in code points back to bytes; Replace, Strip (up to N copies of one
 * character at either end of each string) and Metaspace (U+2581 to a space, the first string's
 * leading space removed unless prepend_scheme is never) rewrite each string; ByteFallback turns
 * runs of <0xXX> tokens into their bytes (U+FFFD for each byte when the run is not UTF-8); Fuse
 * joins everything into one string.
 *
 * A GGUF's control and user-defined tokens are copied as written, past the ByteLevel step, as
 * llama.cpp's token_to_piece copies them; tokenizer.json's added tokens go through every step,
 * as Hugging Face's decode sends them (so "ü" added to a byte-level vocabulary decodes to the
 * byte 0xFC there, and to "ü" from the GGUF). */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

typedef struct {
  fdl_buf *s;
  bool *as_written; /* [n]: skips ByteLevel */
  size_t n;
} strs;

static void free_strs(strs *v) {
  for (size_t i = 0; i < v->n; i++) free(v->s[i].data);
  free(v->s);
  free(v->as_written);
}

static bool hexbyte(const char *p, size_t n, unsigned char *b) {
  if (n != 6 || memcmp(p, "<0x", 3) || p[5] != '>') return false;
  unsigned v = 0;
  for (int i = 3; i < 5; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return false;
    v = v * 16 + (unsigned)d;
  }
  *b = (unsigned char)v;
  return true;
}

static void replace_all(fdl_buf *s, const char *a, size_t an, const char *b, size_t bn) {
  if (!an || s->len < an) return;
  fdl_buf o = {0};
  size_t i = 0;
  while (i < s->len) {
    if (i + an <= s->len && !memcmp(s->data + i, a, an)) {
      fdl_buf_append(&o, b, bn);
      i += an;
    } else {
      fdl_buf_append(&o, s->data + i, 1);
      i++;
    }
  }
  fdl_buf_append(&o, "", 0);
  free(s->data);
  *s = o;
}

static void strip(fdl_buf *s, uint32_t ch, unsigned start, unsigned stop) {
  if (s->err) return; /* out of memory (it may hold nothing): the decode fails anyway */
  char c[4];
  size_t cl = fdl_tk_utf8_put(ch, c), lo = 0, hi = s->len;
  for (unsigned k = 0; k < start && hi - lo >= cl && !memcmp(s->data + lo, c, cl); k++) lo += cl;
  for (unsigned k = 0; k < stop && hi - lo >= cl && !memcmp(s->data + hi - cl, c, cl); k++)
    hi -= cl;
  memmove(s->data, s->data + lo, hi - lo);
  s->len = hi - lo;
  s->data[s->len] = '\0';
}

static void unbyte(fdl_buf *s) {
  size_t o = 0;
  for (size_t i = 0; i < s->len;) {
    uint32_t cp;
    size_t k = fdl_utf8_decode((const unsigned char *)s->data + i, s->len - i, &cp);
    int b = k ? fdl_tk_cp_byte(cp) : -1;
    if (b >= 0) {
      s->data[o++] = (char)b;
    } else { /* not a stand-in: kept as written */
      if (!k) k = 1;
      memmove(s->data + o, s->data + i, k);
      o += k;
    }
    i += k;
  }
  s->len = o;
  s->data[o] = '\0';
}

/* ByteFallback: runs of <0xXX> become their bytes. */
static void byte_fallback(strs *v) {
  size_t w = 0;
  for (size_t i = 0; i < v->n;) {
    unsigned char b;
    if (!hexbyte(v->s[i].data, v->s[i].len, &b)) {
      v->as_written[w] = v->as_written[i];
      v->s[w++] = v->s[i++];
      continue;
    }
    fdl_buf run = {0};
    size_t j = i;
    while (j < v->n && hexbyte(v->s[j].data, v->s[j].len, &b)) {
      fdl_buf_append(&run, (const char *)&b, 1);
      free(v->s[j].data);
      j++;
    }
    if (fdl_utf8_invalid_at(run.data, run.len) < run.len) {
      size_t count = run.len;
      run.len = 0;
      for (size_t k = 0; k < count; k++) fdl_buf_append(&run, "\xEF\xBF\xBD", 3);
    }
    v->as_written[w] = false;
    v->s[w++] = run;
    i = j;
  }
  v->n = w;
}

static void fuse(strs *v) {
  if (v->n < 2) return;
  for (size_t i = 1; i < v->n; i++) {
    fdl_buf_append(&v->s[0], v->s[i].data, v->s[i].len);
    free(v->s[i].data);
  }
  v->as_written[0] = false;
  v->n = 1;
}

fdl_status fdl_tok_decode(const fdl_tok *t, const int32_t *ids, size_t n, char **text, size_t *len,
                          fdl_err *err) {
  *text = NULL;
  *len = 0;
  strs v = {fdl_calloc(n ? n : 1, sizeof(fdl_buf)), fdl_calloc(n ? n : 1, sizeof(bool)), 0};
  if (!v.s || !v.as_written) {
    free(v.s);
    free(v.as_written);
    return fdl_fail(err, FDL_NOMEM, "out of memory decoding %zu ids", n);
  }
  bool failed = false;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= t->n) {
      free_strs(&v);
      return fdl_fail(err, FDL_INVALID, "id %d at position %zu is outside the vocabulary of %zu",
                      ids[i], i, t->n);
    }
    tk_str s = t->shown[ids[i]];
    uint8_t ty = t->type[ids[i]];
    v.as_written[v.n] = t->added_as_written && (ty == TK_CONTROL || ty == TK_USER);
    fdl_buf_append(&v.s[v.n], tk_ptr(t, s), s.len);
    failed |= v.s[v.n++].err != FDL_OK;
  }
  /* A string an append left short or empty (out of memory) goes through no further step: the
   * steps read their strings whole, and fuse and byte_fallback would drop its error. */
  for (size_t d = 0; !failed && d < t->n_dec; d++) {
    const tk_dec *op = &t->dec[d];
    switch (op->kind) {
    case TK_D_BYTELEVEL:
      for (size_t i = 0; i < v.n; i++)
        if (!v.as_written[i]) unbyte(&v.s[i]);
      break;
    case TK_D_REPLACE:
      for (size_t i = 0; i < v.n; i++) replace_all(&v.s[i], op->a, op->a_len, op->b, op->b_len);
      break;
    case TK_D_STRIP:
      for (size_t i = 0; i < v.n; i++) strip(&v.s[i], op->ch, op->start, op->stop);
      break;
    case TK_D_METASPACE:
      for (size_t i = 0; i < v.n; i++) {
        replace_all(&v.s[i], op->repl, op->repl_len, " ", 1);
        if (i == 0 && op->prepend != TK_PREPEND_NEVER) strip(&v.s[i], ' ', 1, 0);
      }
      break;
    case TK_D_BYTEFALLBACK:
      byte_fallback(&v);
      break;
    case TK_D_FUSE:
      fuse(&v);
      break;
    }
    for (size_t i = 0; i < v.n; i++) failed |= v.s[i].err != FDL_OK;
  }
  fdl_buf out = {0};
  fdl_buf_append(&out, "", 0);
  failed |= out.err != FDL_OK;
  for (size_t i = 0; i < v.n; i++) {
    failed |= v.s[i].err != FDL_OK;
    fdl_buf_append(&out, v.s[i].data, v.s[i].len);
  }
  free_strs(&v);
  if (failed || out.err) {
    free(out.data);
    return fdl_fail(err, FDL_NOMEM, "out of memory decoding %zu ids", n);
  }
  *text = out.data;
  *len = out.len;
  return FDL_OK;
}

const char *fdl_tok_token_text(const fdl_tok *t, int32_t id, size_t *len) {
  if (id < 0 || (size_t)id >= t->n) return NULL;
  if (len) *len = t->shown[id].len;
  return tk_ptr(t, t->shown[id]);
}
