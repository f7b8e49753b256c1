/* normalize.c - the normalizer steps of a tokenizer.json, in order, on one text fragment.
 *
 * Unicode normalization is utf8proc's (NFC, NFKC, NFD, NFKD: the same Unicode algorithm the
 * references run); Lowercase maps each code point by utf8proc's simple lowercase mapping.
 *
 * A long fragment may be normalized in blocks (encode.c): fdl_tk_norm_cut finds where a block
 * can end so that the blocks' results joined are the whole's. It cuts between two ASCII
 * characters that are neither white space nor upper case, nor in any Replace pattern or
 * content: every step leaves both as they are (ASCII is its own NFC, NFKC, NFD and NFKD, no
 * composition has an ASCII second character, Lowercase maps one code point at a time), no
 * Replace match can span them, and Strip finds nothing to strip beside them. Prepend writes
 * only before the first block (start). A Replace with a regex could match anything: such a
 * tokenizer is normalized whole. */
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/internal.h"

static fdl_status unicode_form(tk_norm_kind k, const char *s, size_t n, fdl_buf *out,
                               fdl_err *err) {
  utf8proc_option_t opt = UTF8PROC_STABLE;
  if (k == TK_N_NFC || k == TK_N_NFKC) opt |= UTF8PROC_COMPOSE;
  if (k == TK_N_NFD || k == TK_N_NFKD) opt |= UTF8PROC_DECOMPOSE;
  if (k == TK_N_NFKC || k == TK_N_NFKD) opt |= UTF8PROC_COMPAT;
  utf8proc_uint8_t *dst = NULL;
  utf8proc_ssize_t r = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &dst, opt);
  if (r < 0) {
    free(dst);
    return fdl_fail(err, r == UTF8PROC_ERROR_NOMEM ? FDL_NOMEM : FDL_INVALID,
                    "Unicode normalization: %s", utf8proc_errmsg(r));
  }
  fdl_buf_append(out, (const char *)dst, (size_t)r);
  free(dst);
  return FDL_OK;
}

static void lower(const char *s, size_t n, fdl_buf *out) {
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    size_t k = fdl_utf8_decode((const unsigned char *)s + i, n - i, &cp);
    if (!k) k = 1, cp = 0xFFFD; /* not reached: the text was checked */
    char buf[4];
    fdl_buf_append(out, buf,
                   fdl_tk_utf8_put((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), buf));
    i += k;
  }
}

static bool white(uint32_t cp) {
  return (cp >= 9 && cp <= 13) || cp == ' ' || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

static void strip(const tk_norm *op, const char *s, size_t n, fdl_buf *out) {
  size_t lo = 0, hi = n;
  while (op->left && lo < hi) {
    uint32_t cp;
    size_t k = fdl_utf8_decode((const unsigned char *)s + lo, hi - lo, &cp);
    if (!k || !white(cp)) break;
    lo += k;
  }
  while (op->right && hi > lo) {
    size_t b = hi - 1;
    while (b > lo && ((unsigned char)s[b] & 0xC0) == 0x80) b--;
    uint32_t cp;
    size_t k = fdl_utf8_decode((const unsigned char *)s + b, hi - b, &cp);
    if (!k || !white(cp)) break;
    hi = b;
  }
  fdl_buf_append(out, s + lo, hi - lo);
}

static fdl_status replace(const fdl_tok *t, const tk_norm *op, const char *s, size_t n,
                          fdl_buf *out, fdl_err *err) {
  size_t at = 0, lo, hi;
  int m;
  while ((m = fdl_tk_pattern_next(t, &op->pat, s, n, at, &lo, &hi)) == 1) {
    fdl_buf_append(out, s + at, lo - at);
    fdl_buf_append(out, op->a, op->a_len);
    if (hi == lo) { /* an empty match: keep one character and move on */
      size_t k = lo < n ? fdl_utf8_decode((const unsigned char *)s + lo, n - lo, NULL) : 0;
      fdl_buf_append(out, s + lo, k ? k : (lo < n));
      hi = lo + (k ? k : 1);
    }
    at = hi;
    if (at >= n) break;
  }
  if (m < 0) return fdl_fail(err, FDL_TOO_LARGE, "Replace: the regex ran out of its limits");
  if (at < n) fdl_buf_append(out, s + at, n - at);
  return FDL_OK;
}

fdl_status fdl_tk_normalize(const fdl_tok *t, const char *s, size_t n, bool start, fdl_buf *out,
                            fdl_err *err) {
  fdl_buf a = {0}, b = {0};
  fdl_buf_append(&a, s, n);
  fdl_status st = FDL_OK;
  for (size_t i = 0; i < t->n_norm && st == FDL_OK && !a.err; i++) {
    const tk_norm *op = &t->norm[i];
    b.len = 0;
    switch (op->kind) {
    case TK_N_NFC:
    case TK_N_NFKC:
    case TK_N_NFD:
    case TK_N_NFKD:
      st = unicode_form(op->kind, a.data, a.len, &b, err);
      break;
    case TK_N_LOWER:
      lower(a.data, a.len, &b);
      break;
    case TK_N_PREPEND:
      if (a.len && start) fdl_buf_append(&b, op->a, op->a_len);
      fdl_buf_append(&b, a.data, a.len);
      break;
    case TK_N_REPLACE:
      st = replace(t, op, a.data, a.len, &b, err);
      break;
    case TK_N_STRIP:
      strip(op, a.data, a.len, &b);
      break;
    }
    if (b.err) a.err = b.err;
    fdl_buf tmp = a;
    a = b;
    b = tmp;
  }
  if (st == FDL_OK && a.err) st = fdl_fail(err, FDL_NOMEM, "out of memory normalizing text");
  if (st == FDL_OK) fdl_buf_append(out, a.data, a.len);
  if (st == FDL_OK && out->err) st = fdl_fail(err, FDL_NOMEM, "out of memory normalizing text");
  free(a.data);
  free(b.data);
  return st;
}

/* Whether the character c may stand beside a block cut (above). */
static bool cut_char(const fdl_tok *t, unsigned char c) {
  if (c <= ' ' || c >= 0x7F || (c >= 'A' && c <= 'Z')) return false;
  for (size_t i = 0; i < t->n_norm; i++) {
    const tk_norm *op = &t->norm[i];
    if (op->kind != TK_N_REPLACE) continue;
    if ((op->pat.lit && memchr(op->pat.lit, c, op->pat.lit_len)) ||
        (op->a && memchr(op->a, c, op->a_len)))
      return false;
  }
  return true;
}

bool fdl_tk_norm_blocks(const fdl_tok *t) {
  for (size_t i = 0; i < t->n_norm; i++)
    if (t->norm[i].kind == TK_N_REPLACE && t->norm[i].pat.code) return false;
  return true;
}

size_t fdl_tk_norm_cut(const fdl_tok *t, const char *s, size_t from, size_t n) {
  for (size_t i = from ? from : 1; i < n; i++)
    if (cut_char(t, (unsigned char)s[i]) && cut_char(t, (unsigned char)s[i - 1])) return i;
  return n;
}
