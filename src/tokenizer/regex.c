/* regex.c - the split and replace patterns, run by PCRE2 as the files write them.
 *
 * Patterns are compiled with PCRE2_UTF | PCRE2_UCP (so \p{L}, \p{N}, \s and \w are Unicode's)
 * and JIT-compiled. One deliberate rewrite (docs/TOKENIZER.md): under UCP, PCRE2's \s is the
 * Unicode separators plus \t\n\v\f\r, while the references' \s (Oniguruma in Hugging Face
 * tokenizers, llama.cpp's tables) is the White_Space property, which also holds U+0085 (NEXT
 * LINE). \s is rewritten to [\s\x{85}] (and \S to [^\s\x{85}]) so the two agree. Subjects are
 * checked UTF-8 once, before any match. */
#include <string.h>

#include "base/sys.h"
#include "tokenizer/internal.h"

const char fdl_tk_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* Rewrites \s and \S as described above into out (at most 4 * len + 1 bytes). */
static size_t rewrite_space(const char *re, size_t len, char *out) {
  size_t o = 0;
  bool in_class = false;
  for (size_t i = 0; i < len; i++) {
    char c = re[i];
    if (c == '\\' && i + 1 < len) {
      char d = re[i + 1];
      const char *rep = NULL;
      if (d == 's') rep = in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      if (d == 'S' && !in_class) rep = "[^\\s\\x{85}]";
      if (rep) {
        memcpy(out + o, rep, strlen(rep));
        o += strlen(rep);
      } else {
        out[o++] = c;
        out[o++] = d;
      }
      i++;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out[o++] = c;
      /* "[]" and "[^]" open with a literal ']' */
      if (i + 1 < len && re[i + 1] == '^') out[o++] = re[++i];
      if (i + 1 < len && re[i + 1] == ']') out[o++] = re[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out[o++] = c;
  }
  out[o] = '\0';
  return o;
}

fdl_status fdl_tk_pattern_regex(tk_pattern *pt, const char *re, size_t len, const char *where,
                                fdl_err *err) {
  memset(pt, 0, sizeof *pt);
  if (len > 65536) return fdl_fail(err, FDL_BOUNDS, "%s: a regex of %zu bytes", where, len);
  char *src = fdl_malloc(4 * len + 1);
  if (!src) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t n = rewrite_space(re, len, src);
  int code;
  PCRE2_SIZE off;
  pt->code = pcre2_compile((PCRE2_SPTR)src, n, PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &code,
                           &off, NULL);
  free(src);
  if (!pt->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(code, msg, sizeof msg);
    return fdl_fail(err, FDL_PARSE, "%s: the regex does not compile (PCRE2: %s, near byte %zu)",
                    where, (const char *)msg, (size_t)off);
  }
  /* without JIT it still runs, slower */
  pt->jit = pcre2_jit_compile(pt->code, PCRE2_JIT_COMPLETE) == 0;
  return FDL_OK;
}

fdl_status fdl_tk_pattern_literal(tk_pattern *pt, const char *s, size_t len, fdl_err *err) {
  memset(pt, 0, sizeof *pt);
  pt->lit = fdl_strndup(s, len);
  if (!pt->lit) return fdl_fail(err, FDL_NOMEM, "out of memory");
  pt->lit_len = len;
  return FDL_OK;
}

void fdl_tk_pattern_free(tk_pattern *pt) {
  if (pt->code) pcre2_code_free(pt->code);
  free(pt->lit);
  memset(pt, 0, sizeof *pt);
}

fdl_status fdl_tk_regex_ready(fdl_tok *t, fdl_err *err) {
  if (t->md) return FDL_OK;
  t->md = pcre2_match_data_create(1, NULL);
  t->mc = pcre2_match_context_create(NULL);
  /* A long run of one class (megabytes of spaces) needs a deep JIT stack. */
  t->jit = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, NULL);
  if (!t->md || !t->mc || !t->jit) return fdl_fail(err, FDL_NOMEM, "out of memory for the regex");
  pcre2_jit_stack_assign(t->mc, NULL, t->jit);
  return FDL_OK;
}

int fdl_tk_pattern_next(const fdl_tok *t, const tk_pattern *pt, const char *s, size_t n,
                        size_t from, size_t *lo, size_t *hi) {
  if (!pt->code) {
    if (!pt->lit_len || from >= n) return 0;
    const char *f = memmem(s + from, n - from, pt->lit, pt->lit_len);
    if (!f) return 0;
    *lo = (size_t)(f - s);
    *hi = *lo + pt->lit_len;
    return 1;
  }
  /* Empty matches are not cuts. After one at p, a non-empty match anchored at p is tried (as
   * a regex iterator would find next), then the search moves one character on. */
  uint32_t opts = 0;
  while (from <= n) {
    /* JIT directly on the common search (pcre2_match would check its options first each time);
     * an anchored retry is one the interpreter runs anyway (JIT takes no match-time ANCHORED) */
    int rc = pt->jit && !opts ? pcre2_jit_match(pt->code, (PCRE2_SPTR)s, n, from, 0, t->md, t->mc)
                              : pcre2_match(pt->code, (PCRE2_SPTR)s, n, from,
                                            PCRE2_NO_UTF_CHECK | opts, t->md, t->mc);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (!opts) return 0;
      opts = 0;
      if (from >= n) return 0;
      size_t k = fdl_utf8_decode((const unsigned char *)s + from, n - from, NULL);
      from += k ? k : 1;
      continue;
    }
    if (rc < 0) return -1;
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(t->md);
    if (ov[1] > ov[0]) {
      *lo = ov[0];
      *hi = ov[1];
      return 1;
    }
    from = ov[0];
    opts = PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
  }
  return 0;
}
