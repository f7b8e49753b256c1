/* pretok.c - the pre-tokenizer steps: a fragment becomes pieces, each encoded on its own.
 *
 * Each step maps the list of pieces to a new list (Hugging Face tokenizers' semantics): Split
 * cuts every piece at its pattern's matches and keeps, drops or attaches them per `behavior`;
 * ByteLevel optionally prefixes a space and splits with the GPT-2 pattern; Digits isolates
 * numeric characters (Unicode categories Nd, Nl and No, Rust's char::is_numeric, which Hugging
 * Face's Digits uses: "½" and "၄" are digits too); Metaspace writes spaces as U+2581, may prepend
 * one, and may split before each. Pieces live in one growing buffer; steps that change text append
 * the new text to it. */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer/internal.h"

typedef struct {
  size_t lo, hi; /* offsets in the buffer */
  bool match, open;
} pend;

static void flush(pend *p, tk_pieces *out) {
  if (p->open) fdl_tk_pieces_put(out, p->lo, p->hi - p->lo);
  p->open = false;
}

/* One segment (a match or the text between two) into pieces, per the behavior. */
static void segment(tk_behavior b, pend *p, size_t lo, size_t hi, bool match, tk_pieces *out) {
  if (hi <= lo) return;
  switch (b) {
  case TK_B_REMOVED:
    if (!match) fdl_tk_pieces_put(out, lo, hi - lo);
    return;
  case TK_B_ISOLATED:
    fdl_tk_pieces_put(out, lo, hi - lo);
    return;
  case TK_B_MERGED_PREV:
    if (match && p->open) {
      p->hi = hi;
      flush(p, out);
      return;
    }
    flush(p, out);
    *p = (pend){lo, hi, match, true};
    if (match) flush(p, out);
    return;
  case TK_B_MERGED_NEXT:
    if (!match && p->open && p->match) {
      p->hi = hi;
      flush(p, out);
      return;
    }
    flush(p, out);
    *p = (pend){lo, hi, match, true};
    return;
  case TK_B_CONTIGUOUS:
    if (match && p->open && p->match && p->hi == lo) {
      p->hi = hi;
      return;
    }
    flush(p, out);
    *p = (pend){lo, hi, match, true};
    return;
  }
}

/* The length of the numeric character at s[0..n), or 0 when it is not one (the text is UTF-8:
 * encode checked it). */
static size_t numeric_at(const char *s, size_t n) {
  uint32_t cp;
  size_t k = fdl_tk_utf8_len((const unsigned char *)s, n, &cp);
  if (!k) return 0;
  utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO ? k
                                                                                             : 0;
}

static int next_digits(const tk_pre *op, const char *s, size_t n, size_t at, size_t *lo,
                       size_t *hi) {
  size_t i = at, k = 0;
  while (i < n && !(k = numeric_at(s + i, n - i))) {
    uint32_t cp;
    size_t step = fdl_tk_utf8_len((const unsigned char *)s + i, n - i, &cp);
    i += step ? step : 1;
  }
  if (i >= n) return 0;
  *lo = i;
  *hi = i + k;
  if (!op->individual)
    while (*hi < n && (k = numeric_at(s + *hi, n - *hi))) *hi += k;
  return 1;
}

/* Cuts the piece buf[off, off+n) into pieces. */
static fdl_status cut(const fdl_tok *t, const tk_pre *op, const tk_pattern *pt, tk_behavior b,
                      bool invert, const tk_bytes *buf, size_t off, size_t n, tk_pieces *out,
                      fdl_err *err) {
  const char *s = buf->p + off;
  size_t at = 0, lo, hi;
  pend p = {0};
  for (;;) {
    int m = op->kind == TK_P_DIGITS ? next_digits(op, s, n, at, &lo, &hi)
                                    : fdl_tk_pattern_next(t, pt, s, n, at, &lo, &hi);
    if (m < 0)
      return fdl_fail(err, FDL_TOO_LARGE,
                      "pre-tokenizer: the regex ran out of its limits on a piece of %zu bytes", n);
    if (!m) break;
    segment(b, &p, off + at, off + lo, invert, out);
    segment(b, &p, off + lo, off + hi, !invert, out);
    at = hi;
  }
  segment(b, &p, off + at, off + n, invert, out);
  flush(&p, out);
  return FDL_OK;
}

/* Metaspace: spaces become the replacement, which may also be prepended. */
static size_t metaspace_text(const tk_pre *op, tk_bytes *buf, size_t off, size_t n, bool first) {
  size_t start = buf->len;
  bool lead = n >= op->repl_len && !memcmp(buf->p + off, op->repl, op->repl_len);
  if (!lead && (op->prepend == TK_PREPEND_ALWAYS || (op->prepend == TK_PREPEND_FIRST && first)))
    fdl_tk_bytes_put(buf, op->repl, op->repl_len);
  for (size_t i = 0; i < n && !buf->failed; i++) {
    char c = buf->p[off + i];
    if (c == ' ')
      fdl_tk_bytes_put(buf, op->repl, op->repl_len);
    else
      fdl_tk_bytes_put(buf, &c, 1);
  }
  return start;
}

static fdl_status step(const fdl_tok *t, const tk_pre *op, tk_bytes *buf, const tk_pieces *in,
                       bool first, tk_pieces *out, fdl_err *err) {
  fdl_status st = FDL_OK;
  for (size_t i = 0; i < in->n && st == FDL_OK; i++) {
    size_t off = in->v[i].off, n = in->v[i].len;
    switch (op->kind) {
    case TK_P_SPLIT:
      st = cut(t, op, &op->pat, op->behavior, op->invert, buf, off, n, out, err);
      break;
    case TK_P_DIGITS:
      st = cut(t, op, NULL, op->individual ? TK_B_ISOLATED : TK_B_CONTIGUOUS, false, buf, off, n,
               out, err);
      break;
    case TK_P_BYTELEVEL:
      if (op->prefix_space && buf->p[off] != ' ') {
        size_t start = buf->len;
        fdl_tk_bytes_put(buf, " ", 1);
        for (size_t k = 0; k < n && !buf->failed; k++) { /* buf->p may move as it grows */
          char c = buf->p[off + k];
          fdl_tk_bytes_put(buf, &c, 1);
        }
        off = start;
        n++;
      }
      if (buf->failed) break;
      if (op->use_regex)
        st = cut(t, op, &op->pat, TK_B_ISOLATED, false, buf, off, n, out, err);
      else
        fdl_tk_pieces_put(out, off, n);
      break;
    case TK_P_METASPACE: {
      size_t start = metaspace_text(op, buf, off, n, first && i == 0);
      if (buf->failed) break;
      tk_pattern lit = {NULL, (char *)op->repl, op->repl_len};
      if (op->split)
        st = cut(t, op, &lit, TK_B_MERGED_NEXT, false, buf, start, buf->len - start, out, err);
      else
        fdl_tk_pieces_put(out, start, buf->len - start);
      break;
    }
    }
  }
  if (st == FDL_OK && (buf->failed || out->failed))
    st = fdl_fail(err, FDL_NOMEM, "out of memory pre-tokenizing");
  return st;
}

fdl_status fdl_tk_pretokenize(const fdl_tok *t, tk_bytes *buf, size_t off, size_t len, bool first,
                              tk_pieces *out, fdl_err *err) {
  tk_pieces a = {0}, b = {0};
  fdl_tk_pieces_put(&a, off, len);
  fdl_status st = a.failed ? fdl_fail(err, FDL_NOMEM, "out of memory") : FDL_OK;
  for (size_t i = 0; i < t->n_pre && st == FDL_OK; i++) {
    b.n = 0;
    st = step(t, &t->pre[i], buf, &a, first, &b, err);
    tk_pieces tmp = a;
    a = b;
    b = tmp;
  }
  for (size_t i = 0; i < a.n && st == FDL_OK; i++) fdl_tk_pieces_put(out, a.v[i].off, a.v[i].len);
  if (st == FDL_OK && out->failed) st = fdl_fail(err, FDL_NOMEM, "out of memory");
  free(a.v);
  free(b.v);
  return st;
}
