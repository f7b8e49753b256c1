/* pretok.c - the pre-tokenizer steps: a fragment becomes pieces, each encoded on its own.
 *
 * Each step maps the list of pieces to a new list (Hugging Face tokenizers' semantics): Split
 * cuts every piece at its pattern's matches and keeps, drops or attaches them per `behavior`;
 * ByteLevel optionally prefixes a space and splits with the GPT-2 pattern; Digits isolates
 * numeric characters (Unicode categories Nd, Nl and No, Rust's char::is_numeric, which Hugging
 * Face's Digits uses: "½" and "၄" are digits too); Metaspace writes spaces as U+2581, may prepend
 * one, and may split before each. Pieces flow down one at a time: each piece a step makes goes
 * through the next steps and the model before the step looks for the next one, so no list of
 * pieces is ever held. A piece is an offset into the fragment (borrowed, never copied) or, past
 * its end, into the text the steps write (Metaspace's, ByteLevel's prefix space), which is
 * dropped once the piece it was written for is encoded. */
#include <string.h>

#include <utf8proc.h>

#include "tokenizer/internal.h"

/* Where each piece goes: the steps from `level` on, then the model. */
typedef struct {
  fdl_tok *t;
  tk_text *x;
  tk_out *o;
  bool first;                /* the fragment starts the text */
  bool seen[TK_MAX_OPS + 1]; /* a piece has reached this step already */
  fdl_err *err;
} flow;

typedef struct {
  size_t lo, hi; /* offsets in the text */
  bool match, open;
} pend;

static const char *text_at(const tk_text *x, size_t off) {
  return off < x->base_n ? x->base + off : x->ext.data + (off - x->base_n);
}

static fdl_status down(flow *f, size_t level, size_t off, size_t n);

static fdl_status flush(flow *f, size_t level, pend *p) {
  bool open = p->open;
  p->open = false;
  return open ? down(f, level, p->lo, p->hi - p->lo) : FDL_OK;
}

/* One segment (a match or the text between two) into pieces for `level`, per the behavior. */
static fdl_status segment(flow *f, size_t level, tk_behavior b, pend *p, size_t lo, size_t hi,
                          bool match) {
  if (hi <= lo) return FDL_OK;
  fdl_status st;
  switch (b) {
  case TK_B_REMOVED:
    return match ? FDL_OK : down(f, level, lo, hi - lo);
  case TK_B_ISOLATED:
    return down(f, level, lo, hi - lo);
  case TK_B_MERGED_PREV:
    if (match && p->open) {
      p->hi = hi;
      return flush(f, level, p);
    }
    if ((st = flush(f, level, p)) != FDL_OK) return st;
    *p = (pend){lo, hi, match, true};
    return match ? flush(f, level, p) : FDL_OK;
  case TK_B_MERGED_NEXT:
    if (!match && p->open && p->match) {
      p->hi = hi;
      return flush(f, level, p);
    }
    if ((st = flush(f, level, p)) != FDL_OK) return st;
    *p = (pend){lo, hi, match, true};
    return FDL_OK;
  case TK_B_CONTIGUOUS:
    if (match && p->open && p->match && p->hi == lo) {
      p->hi = hi;
      return FDL_OK;
    }
    if ((st = flush(f, level, p)) != FDL_OK) return st;
    *p = (pend){lo, hi, match, true};
    return FDL_OK;
  }
  return FDL_OK;
}

/* The length of the numeric character at s[0..n), or 0 when it is not one (the text is UTF-8:
 * encode checked it). */
static size_t numeric_at(const char *s, size_t n) {
  uint32_t cp;
  size_t k = fdl_utf8_decode((const unsigned char *)s, n, &cp);
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
    size_t step = fdl_utf8_decode((const unsigned char *)s + i, n - i, &cp);
    i += step ? step : 1;
  }
  if (i >= n) return 0;
  *lo = i;
  *hi = i + k;
  if (!op->individual)
    while (*hi < n && (k = numeric_at(s + *hi, n - *hi))) *hi += k;
  return 1;
}

/* Cuts the piece [off, off+n) at the matches of pt (or the digits), handing the pieces to the
 * next level. The piece's bytes are looked up again after each hand-off: the written text may
 * have moved as the levels below wrote theirs. */
static fdl_status cut(flow *f, size_t level, const tk_pre *op, const tk_pattern *pt, tk_behavior b,
                      bool invert, size_t off, size_t n) {
  size_t at = 0, lo, hi;
  pend p = {0};
  fdl_status st = FDL_OK;
  for (;;) {
    const char *s = text_at(f->x, off);
    int m = op->kind == TK_P_DIGITS ? next_digits(op, s, n, at, &lo, &hi)
                                    : fdl_tk_pattern_next(f->t, pt, s, n, at, &lo, &hi);
    if (m < 0)
      return fdl_fail(f->err, FDL_TOO_LARGE,
                      "pre-tokenizer: the regex ran out of its limits on a piece of %zu bytes", n);
    if (!m) break;
    if ((st = segment(f, level, b, &p, off + at, off + lo, invert)) != FDL_OK ||
        (st = segment(f, level, b, &p, off + lo, off + hi, !invert)) != FDL_OK)
      return st;
    at = hi;
  }
  if ((st = segment(f, level, b, &p, off + at, off + n, invert)) != FDL_OK) return st;
  return flush(f, level, &p);
}

/* Appends the piece [off, off+n) to the written text, after `prefix`; returns its offset. */
static size_t rewrite(tk_text *x, const char *prefix, size_t prefix_len, size_t off, size_t n) {
  size_t start = x->base_n + x->ext.len;
  fdl_buf_append(&x->ext, prefix, prefix_len);
  if (off < x->base_n) {
    fdl_buf_append(&x->ext, x->base + off, n);
  } else { /* byte by byte: the source moves as ext grows */
    for (size_t k = 0; k < n && !x->ext.err; k++) {
      char c = x->ext.data[off - x->base_n + k];
      fdl_buf_append(&x->ext, &c, 1);
    }
  }
  return start;
}

/* Metaspace: spaces become the replacement, which may also be prepended. */
static size_t metaspace_text(const tk_pre *op, tk_text *x, size_t off, size_t n, bool first) {
  size_t start = x->base_n + x->ext.len;
  bool lead = n >= op->repl_len && !memcmp(text_at(x, off), op->repl, op->repl_len);
  if (!lead && (op->prepend == TK_PREPEND_ALWAYS || (op->prepend == TK_PREPEND_FIRST && first)))
    fdl_buf_append(&x->ext, op->repl, op->repl_len);
  for (size_t i = 0; i < n && !x->ext.err; i++) {
    char c = *text_at(x, off + i);
    if (c == ' ')
      fdl_buf_append(&x->ext, op->repl, op->repl_len);
    else
      fdl_buf_append(&x->ext, &c, 1);
  }
  return start;
}

static fdl_status nomem(flow *f) {
  return fdl_fail(f->err, FDL_NOMEM, "out of memory pre-tokenizing");
}

/* The piece [off, off+n) through step `level` and below; the text it writes is dropped after. */
static fdl_status down(flow *f, size_t level, size_t off, size_t n) {
  if (!n) return FDL_OK;
  if (level == f->t->n_pre) return fdl_tk_model_piece(f->t, text_at(f->x, off), n, f->o, f->err);
  const tk_pre *op = &f->t->pre[level];
  bool first = f->first && !f->seen[level];
  f->seen[level] = true;
  size_t mark = f->x->ext.len;
  fdl_status st = FDL_OK;
  switch (op->kind) {
  case TK_P_SPLIT:
    st = cut(f, level + 1, op, &op->pat, op->behavior, op->invert, off, n);
    break;
  case TK_P_DIGITS:
    st = cut(f, level + 1, op, NULL, op->individual ? TK_B_ISOLATED : TK_B_CONTIGUOUS, false, off,
             n);
    break;
  case TK_P_BYTELEVEL:
    if (op->prefix_space && *text_at(f->x, off) != ' ') {
      off = rewrite(f->x, " ", 1, off, n);
      n++;
    }
    if (f->x->ext.err) return nomem(f);
    st = op->use_regex ? cut(f, level + 1, op, &op->pat, TK_B_ISOLATED, false, off, n)
                       : down(f, level + 1, off, n);
    break;
  case TK_P_METASPACE: {
    size_t start = metaspace_text(op, f->x, off, n, first);
    if (f->x->ext.err) return nomem(f);
    size_t len = f->x->base_n + f->x->ext.len - start;
    tk_pattern lit = {.lit = (char *)op->repl, .lit_len = op->repl_len};
    st = op->split ? cut(f, level + 1, op, &lit, TK_B_MERGED_NEXT, false, start, len)
                   : down(f, level + 1, start, len);
    break;
  }
  }
  f->x->ext.len = mark;
  return st;
}

fdl_status fdl_tk_pretokenize(fdl_tok *t, tk_text *x, size_t off, size_t len, bool first, tk_out *o,
                              fdl_err *err) {
  flow f = {.t = t, .x = x, .o = o, .first = first, .err = err};
  return down(&f, 0, off, len);
}
