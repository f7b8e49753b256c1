/* ops.c - tokenizer.json's normalizer, pre_tokenizer and decoder objects into step lists.
 *
 * Each object has a "type"; Sequence nests. A type fidelis does not run is refused by name
 * (with where it was found), never skipped: a skipped step would change the ids silently. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "json/get.h"
#include "tokenizer/ops.h"

/* The position of name in names (its enum's order), or -1 for NULL or a name not there. */
static int kind_of(const char *name, const char *const *names, int n) {
  for (int i = 0; name && i < n; i++)
    if (!strcmp(name, names[i])) return i;
  return -1;
}

static fdl_status text_of(const json_t *o, const char *key, const char *where, const char **s,
                          size_t *n, fdl_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!json_is_string(v))
    return fdl_fail(err, FDL_PARSE, "%s: \"%s\" must be a string", where, key);
  *s = json_string_value(v);
  *n = json_string_length(v);
  return FDL_OK;
}

/* {"String": s} or {"Regex": r} */
static fdl_status pattern(const json_t *o, const char *where, tk_pattern *pt, fdl_err *err) {
  const json_t *p = json_object_get(o, "pattern");
  const json_t *str = json_object_get(p, "String"), *re = json_object_get(p, "Regex");
  if (json_is_string(str))
    return fdl_tk_pattern_literal(pt, json_string_value(str), json_string_length(str), err);
  if (json_is_string(re))
    return fdl_tk_pattern_regex(pt, json_string_value(re), json_string_length(re), where, err);
  return fdl_fail(err, FDL_PARSE, "%s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}",
                  where);
}

static fdl_status prepend_scheme(const json_t *o, const char *where, tk_prepend *p, fdl_err *err) {
  const json_t *v = json_object_get(o, "prepend_scheme");
  if (!v) { /* the older spelling */
    bool add = true;
    fdl_json_bool(o, "add_prefix_space", &add);
    *p = add ? TK_PREPEND_ALWAYS : TK_PREPEND_NEVER;
    return FDL_OK;
  }
  static const char *const SCHEMES[] = {"never", "first", "always"}; /* tk_prepend */
  int k = kind_of(json_string_value(v), SCHEMES, 3);
  if (k < 0)
    return fdl_fail(err, FDL_PARSE, "%s: prepend_scheme must be always, first or never", where);
  *p = (tk_prepend)k;
  return FDL_OK;
}

static fdl_status replacement(const json_t *o, const char *where, char *out, size_t *n,
                              fdl_err *err) {
  const json_t *v = json_object_get(o, "replacement");
  const char *s = json_is_string(v) ? json_string_value(v) : "\xE2\x96\x81";
  size_t len = json_is_string(v) ? json_string_length(v) : 3;
  if (len == 0 || len > 4)
    return fdl_fail(err, FDL_PARSE, "%s: replacement must be one character", where);
  memcpy(out, s, len);
  *n = len;
  return FDL_OK;
}

/* What every step object starts with: null is no step; a Sequence is its members (under
 * seq_key), each through parse, in order; any other type must be one of kinds and take a free
 * slot (n_ops are used). The type's position in kinds, or -1 with *st saying why there is no
 * step to fill. */
static int step_kind(fdl_tok *t, const json_t *o, const char *seq_key, const char *where,
                     fdl_status (*parse)(fdl_tok *, const json_t *, fdl_err *),
                     const char *const *kinds, int n_kinds, size_t n_ops, fdl_status *st,
                     fdl_err *err) {
  *st = FDL_OK;
  if (!o || json_is_null(o)) return -1;
  const char *ty = fdl_json_str(o, "type");
  if (ty && !strcmp(ty, "Sequence")) {
    const json_t *a = json_object_get(o, seq_key);
    if (!json_is_array(a)) *st = fdl_fail(err, FDL_PARSE, "%s: Sequence needs %s", where, seq_key);
    for (size_t i = 0; *st == FDL_OK && i < json_array_size(a); i++)
      *st = parse(t, json_array_get(a, i), err);
    return -1;
  }
  int k = kind_of(ty, kinds, n_kinds);
  if (n_ops == TK_MAX_OPS)
    *st = fdl_fail(err, FDL_BOUNDS, "%s: more than %d steps", where, TK_MAX_OPS);
  else if (k < 0)
    *st = fdl_fail(err, FDL_UNSUPPORTED,
                   "%s type %s is not supported (docs/TOKENIZER.md lists what is); refusing "
                   "rather than tokenizing differently from the model",
                   where, ty ? ty : "(missing)");
  return *st == FDL_OK ? k : -1;
}

fdl_status fdl_tk_parse_normalizer(fdl_tok *t, const json_t *o, fdl_err *err) {
  static const char W[] = "tokenizer.json normalizer";
  static const char *const KINDS[] = {"NFC",     "NFKC",    "NFD",  "NFKD", "Lowercase",
                                      "Prepend", "Replace", "Strip"}; /* tk_norm_kind */
  fdl_status st;
  int k = step_kind(t, o, "normalizers", W, fdl_tk_parse_normalizer, KINDS, 8, t->n_norm, &st, err);
  if (k < 0) return st;
  tk_norm *op = &t->norm[t->n_norm];
  memset(op, 0, sizeof *op);
  const char *s = NULL;
  size_t n = 0;
  op->kind = (tk_norm_kind)k;
  if (k == TK_N_STRIP) {
    op->left = op->right = true;
    fdl_json_bool(o, "strip_left", &op->left);
    fdl_json_bool(o, "strip_right", &op->right);
  } else if (k == TK_N_PREPEND || k == TK_N_REPLACE) {
    const char *key = k == TK_N_PREPEND ? "prepend" : "content";
    if ((st = text_of(o, key, W, &s, &n, err)) == FDL_OK && !(op->a = fdl_strndup(s, n)))
      st = fdl_fail(err, FDL_NOMEM, "out of memory");
    op->a_len = n;
    if (st == FDL_OK && k == TK_N_REPLACE) st = pattern(o, W, &op->pat, err);
  }
  t->n_norm++; /* counted even on failure, so fdl_tk_ops_free releases it */
  return st;
}

fdl_status fdl_tk_parse_pretokenizer(fdl_tok *t, const json_t *o, fdl_err *err) {
  static const char W[] = "tokenizer.json pre_tokenizer";
  static const char *const KINDS[] = {"Split", "ByteLevel", "Digits",
                                      "Metaspace"}; /* tk_pre_kind */
  fdl_status st;
  int k =
      step_kind(t, o, "pretokenizers", W, fdl_tk_parse_pretokenizer, KINDS, 4, t->n_pre, &st, err);
  if (k < 0) return st;
  tk_pre *op = &t->pre[t->n_pre];
  memset(op, 0, sizeof *op);
  op->kind = (tk_pre_kind)k;
  if (k == TK_P_SPLIT) {
    static const char *const B[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                    "Contiguous"}; /* tk_behavior */
    int b = kind_of(json_string_value(json_object_get(o, "behavior")), B, 5);
    if (b < 0)
      return fdl_fail(err, FDL_PARSE,
                      "%s: Split behavior must be one of Removed, Isolated, "
                      "MergedWithPrevious, MergedWithNext, Contiguous",
                      W);
    op->behavior = (tk_behavior)b;
    fdl_json_bool(o, "invert", &op->invert);
    st = pattern(o, W, &op->pat, err);
  } else if (k == TK_P_BYTELEVEL) {
    op->prefix_space = op->use_regex = true;
    fdl_json_bool(o, "add_prefix_space", &op->prefix_space);
    fdl_json_bool(o, "use_regex", &op->use_regex);
    t->byte_level = true;
    if (op->use_regex)
      st = fdl_tk_pattern_regex(&op->pat, fdl_tk_gpt2_regex, strlen(fdl_tk_gpt2_regex), W, err);
  } else if (k == TK_P_DIGITS) {
    fdl_json_bool(o, "individual_digits", &op->individual);
  } else {
    op->split = true;
    fdl_json_bool(o, "split", &op->split);
    st = replacement(o, W, op->repl, &op->repl_len, err);
    if (st == FDL_OK) st = prepend_scheme(o, W, &op->prepend, err);
  }
  t->n_pre++;
  return st;
}

fdl_status fdl_tk_parse_decoder(fdl_tok *t, const json_t *o, fdl_err *err) {
  static const char W[] = "tokenizer.json decoder";
  static const char *const KINDS[] = {"ByteLevel", "Replace", "ByteFallback",
                                      "Fuse",      "Strip",   "Metaspace"}; /* tk_dec_kind */
  fdl_status st;
  int k = step_kind(t, o, "decoders", W, fdl_tk_parse_decoder, KINDS, 6, t->n_dec, &st, err);
  if (k < 0) return st;
  tk_dec *op = &t->dec[t->n_dec];
  memset(op, 0, sizeof *op);
  const char *s = NULL;
  size_t n = 0;
  op->kind = (tk_dec_kind)k;
  if (k == TK_D_REPLACE) {
    const json_t *str = json_object_get(json_object_get(o, "pattern"), "String");
    if (!json_is_string(str))
      return fdl_fail(err, FDL_UNSUPPORTED, "%s: Replace takes a String pattern here", W);
    if ((st = text_of(o, "content", W, &s, &n, err)) != FDL_OK) return st;
    op->a = fdl_strndup(json_string_value(str), json_string_length(str));
    op->a_len = json_string_length(str);
    op->b = fdl_strndup(s, n);
    op->b_len = n;
    if (!op->a || !op->b) st = fdl_fail(err, FDL_NOMEM, "out of memory");
  } else if (k == TK_D_STRIP) {
    if ((st = text_of(o, "content", W, &s, &n, err)) != FDL_OK) return st;
    uint32_t cp;
    if (!n || fdl_utf8_decode((const unsigned char *)s, n, &cp) != n)
      return fdl_fail(err, FDL_PARSE, "%s: Strip content must be one character", W);
    op->ch = cp;
    int64_t a = 0, b = 0; /* counts from 1 to 999, else 0 */
    fdl_json_int(o, "start", &a);
    fdl_json_int(o, "stop", &b);
    op->start = a > 0 && a < 1000 ? (unsigned)a : 0;
    op->stop = b > 0 && b < 1000 ? (unsigned)b : 0;
  } else if (k == TK_D_METASPACE) {
    st = replacement(o, W, op->repl, &op->repl_len, err);
    if (st == FDL_OK) st = prepend_scheme(o, W, &op->prepend, err);
  }
  t->n_dec++;
  return st;
}

void fdl_tk_ops_free(fdl_tok *t) {
  for (size_t i = 0; i < t->n_norm; i++) {
    fdl_tk_pattern_free(&t->norm[i].pat);
    free(t->norm[i].a);
  }
  for (size_t i = 0; i < t->n_pre; i++) fdl_tk_pattern_free(&t->pre[i].pat);
  for (size_t i = 0; i < t->n_dec; i++) {
    free(t->dec[i].a);
    free(t->dec[i].b);
  }
  t->n_norm = t->n_pre = t->n_dec = 0;
}
