/* load_hf.c - a Hugging Face tokenizer.json (and tokenizer_config.json) into the pipeline.
 *
 * The model must be BPE (WordPiece, WordLevel and Unigram are refused by name). Ids are checked
 * (0 <= id < 2^24, one text per id); the vocabulary spans the model's ids and the added tokens'.
 * A merge must name two vocabulary tokens whose join is a vocabulary token, as the reference
 * loader requires; merges come as "a b" strings or ["a", "b"] pairs. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "json/json.h"
#include "tokenizer/ops.h"

#define W "tokenizer.json"

static fdl_status model_checks(const json_t *m, fdl_err *err) {
  const json_t *ty = json_object_get(m, "type");
  if (ty && (!json_is_string(ty) || strcmp(json_string_value(ty), "BPE")))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    W ": model type %s is not supported (fidelis runs BPE models: byte-level and "
                      "byte-fallback); refusing rather than approximating it",
                    json_is_string(ty) ? json_string_value(ty) : "(not a string)");
  const json_t *d = json_object_get(m, "dropout");
  if (d && !json_is_null(d) && !(json_is_number(d) && json_number_value(d) == 0))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    W ": BPE dropout is random; a fixed tokenization needs "
                      "dropout null");
  const char *keys[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  for (int i = 0; i < 2; i++) {
    const json_t *v = json_object_get(m, keys[i]);
    if (v && !json_is_null(v) && !(json_is_string(v) && json_string_length(v) == 0))
      return fdl_fail(err, FDL_UNSUPPORTED, W ": BPE %s is not supported", keys[i]);
  }
  if (!json_is_object(json_object_get(m, "vocab")))
    return fdl_fail(err, FDL_PARSE, W ": model.vocab must be an object of token: id");
  return FDL_OK;
}

static fdl_status id_of(const json_t *v, const char *what, int64_t *id, fdl_err *err) {
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= TK_MAX_VOCAB)
    return fdl_fail(err, FDL_BOUNDS, W ": %s: an id must be an integer in [0, %u)", what,
                    TK_MAX_VOCAB);
  *id = json_integer_value(v);
  return FDL_OK;
}

/* The vocabulary: ids from model.vocab and added_tokens; shown = the file's text. */
static fdl_status vocab(fdl_tok *t, const json_t *m, const json_t *added, fdl_err *err) {
  const json_t *vo = json_object_get(m, "vocab");
  int64_t max = -1, id = 0;
  const char *k;
  const json_t *v;
  fdl_status s;
  json_object_foreach((json_t *)vo, k, v) {
    if ((s = id_of(v, k, &id, err)) != FDL_OK) return s;
    if (id > max) max = id;
  }
  size_t i;
  json_array_foreach(added, i, v) {
    if ((s = id_of(json_object_get(v, "id"), "added_tokens", &id, err)) != FDL_OK) return s;
    if (id > max) max = id;
  }
  if (max < 0) return fdl_fail(err, FDL_PARSE, W ": the vocabulary is empty");
  if ((s = fdl_tk_init(t, (size_t)max + 1, err)) != FDL_OK) return s;
  uint8_t *seen = fdl_calloc((size_t)max + 1, 1);
  if (!seen) return fdl_fail(err, FDL_NOMEM, "out of memory");
  char *raw = fdl_malloc(TK_MAX_TOKEN_BYTES);
  s = raw ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  json_object_foreach((json_t *)vo, k, v) {
    if (s != FDL_OK) break;
    id = json_integer_value(v);
    size_t len = strlen(k);
    if (seen[id]) {
      s = fdl_fail(err, FDL_PARSE, W ": id %" PRId64 " is given to two vocabulary tokens", id);
      break;
    }
    seen[id] = 1;
    if ((s = fdl_tk_pool_add(t, k, len, &t->shown[id], err)) != FDL_OK) break;
    size_t rl;
    if (!t->byte_level)
      t->text[id] = t->shown[id];
    else if (len <= TK_MAX_TOKEN_BYTES && fdl_tk_unbyte(k, len, raw, &rl))
      s = fdl_tk_pool_add(t, raw, rl, &t->text[id], err);
    /* else: not in the byte alphabet, so no byte string can reach it (text stays empty) */
  }
  free(raw);
  free(seen);
  return s;
}

static fdl_status added_tokens(fdl_tok *t, const json_t *added, fdl_err *err) {
  size_t n = json_array_size(added), i;
  t->added = fdl_calloc(n ? n : 1, sizeof *t->added);
  if (!t->added) return fdl_fail(err, FDL_NOMEM, "out of memory");
  const json_t *a;
  json_array_foreach(added, i, a) {
    const json_t *c = json_object_get(a, "content");
    if (!json_is_string(c) || json_string_length(c) == 0)
      return fdl_fail(err, FDL_PARSE, W ": added_tokens[%zu].content must be a non-empty string",
                      i);
    int64_t id = json_integer_value(json_object_get(a, "id"));
    tk_added *x = &t->added[t->n_added++];
    *x = (tk_added){(int32_t)id,
                    json_is_true(json_object_get(a, "special")),
                    json_is_true(json_object_get(a, "lstrip")),
                    json_is_true(json_object_get(a, "rstrip")),
                    json_is_true(json_object_get(a, "single_word")),
                    !json_is_false(json_object_get(a, "normalized"))};
    fdl_status s =
        fdl_tk_pool_add(t, json_string_value(c), json_string_length(c), &t->shown[id], err);
    if (s != FDL_OK) return s;
    t->type[id] = x->special ? TK_CONTROL : TK_USER;
  }
  return fdl_tk_index_added(t, err);
}

/* A merge's side as the model matches it (byte-level: the decoded bytes). */
static int32_t side(const fdl_tok *t, const char *s, size_t n, char *raw) {
  size_t rl;
  if (!t->byte_level) return fdl_tk_lookup(t, s, n);
  if (n > TK_MAX_TOKEN_BYTES || !fdl_tk_unbyte(s, n, raw, &rl)) return -1;
  return fdl_tk_lookup(t, raw, rl);
}

static fdl_status merges(fdl_tok *t, const json_t *m, fdl_err *err) {
  const json_t *ms = json_object_get(m, "merges");
  if (!ms || json_is_null(ms)) return FDL_OK;
  if (!json_is_array(ms)) return fdl_fail(err, FDL_PARSE, W ": model.merges must be an array");
  char *join = fdl_malloc(2 * TK_MAX_TOKEN_BYTES + 2), *raw = fdl_malloc(2 * TK_MAX_TOKEN_BYTES);
  fdl_status s = join && raw ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t i;
  const json_t *e;
  json_array_foreach(ms, i, e) {
    if (s != FDL_OK) break;
    const char *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    if (json_is_string(e)) {
      const char *str = json_string_value(e), *sp = strchr(str, ' ');
      if (sp) a = str, an = (size_t)(sp - str), b = sp + 1, bn = json_string_length(e) - an - 1;
    } else if (json_is_array(e) && json_array_size(e) == 2 &&
               json_is_string(json_array_get(e, 0)) && json_is_string(json_array_get(e, 1))) {
      a = json_string_value(json_array_get(e, 0)), an = json_string_length(json_array_get(e, 0));
      b = json_string_value(json_array_get(e, 1)), bn = json_string_length(json_array_get(e, 1));
    }
    if (!a || an > TK_MAX_TOKEN_BYTES || bn > TK_MAX_TOKEN_BYTES) {
      s = fdl_fail(err, FDL_PARSE, W ": merges[%zu] is not \"a b\" or [\"a\", \"b\"]", i);
      break;
    }
    int32_t ia = side(t, a, an, raw), ib = side(t, b, bn, raw);
    memcpy(join, a, an);
    memcpy(join + an, b, bn);
    int32_t im = side(t, join, an + bn, raw);
    if (ia < 0 || ib < 0 || im < 0) {
      s = fdl_fail(err, FDL_PARSE, W ": merges[%zu] names %s that is not in the vocabulary", i,
                   ia < 0   ? "a left token"
                   : ib < 0 ? "a right token"
                            : "a merged token");
      break;
    }
    s = fdl_tk_merge_add(t, (uint32_t)ia, (uint32_t)ib, (uint32_t)i, (uint32_t)im, err);
  }
  free(join);
  free(raw);
  return s;
}

/* BOS/EOS from the post-processor: a TemplateProcessing "single" of special tokens around A. */
static fdl_status post_processor(fdl_tok *t, const json_t *pp, fdl_err *err) {
  if (!pp || json_is_null(pp)) return FDL_OK;
  const char *ty = json_string_value(json_object_get(pp, "type"));
  if (!ty) return fdl_fail(err, FDL_PARSE, W ": post_processor has no type");
  if (!strcmp(ty, "ByteLevel")) return FDL_OK;
  if (!strcmp(ty, "Sequence")) {
    size_t i;
    const json_t *e;
    json_array_foreach(json_object_get(pp, "processors"), i, e) {
      fdl_status s = post_processor(t, e, err);
      if (s != FDL_OK) return s;
    }
    return FDL_OK;
  }
  if (!strcmp(ty, "RobertaProcessing") || !strcmp(ty, "BertProcessing")) {
    int64_t cls = -1, sep = -1;
    fdl_status s =
        id_of(json_array_get(json_object_get(pp, "cls"), 1), "post_processor cls", &cls, err);
    if (s == FDL_OK)
      s = id_of(json_array_get(json_object_get(pp, "sep"), 1), "post_processor sep", &sep, err);
    if (s != FDL_OK) return s;
    t->bos = (int32_t)cls;
    t->eos = (int32_t)sep;
    t->add_bos = t->add_eos = true;
    return FDL_OK;
  }
  if (strcmp(ty, "TemplateProcessing"))
    return fdl_fail(err, FDL_UNSUPPORTED, W ": post_processor type %s is not supported", ty);
  const json_t *single = json_object_get(pp, "single"), *sp = json_object_get(pp, "special_tokens");
  size_t i;
  const json_t *e;
  bool after = false;
  json_array_foreach(single, i, e) {
    if (json_object_get(e, "Sequence")) {
      after = true;
      continue;
    }
    const json_t *st = json_object_get(e, "SpecialToken");
    const char *name = json_string_value(json_object_get(st, "id"));
    const json_t *ids = json_object_get(json_object_get(sp, name ? name : ""), "ids");
    if (!name || json_array_size(ids) != 1 || !json_is_integer(json_array_get(ids, 0)))
      return fdl_fail(err, FDL_UNSUPPORTED,
                      W ": post_processor: only one-token specials around the text are supported");
    int64_t id = -1;
    fdl_status s = id_of(json_array_get(ids, 0), "post_processor special_tokens", &id, err);
    if (s != FDL_OK) return s;
    if ((after ? t->add_eos : t->add_bos))
      return fdl_fail(err, FDL_UNSUPPORTED,
                      W ": post_processor adds more than one token %s the text",
                      after ? "after" : "before");
    if (after)
      t->eos = (int32_t)id, t->add_eos = true;
    else
      t->bos = (int32_t)id, t->add_bos = true;
  }
  return FDL_OK;
}

static int32_t named(const fdl_tok *t, const json_t *v) {
  if (json_is_object(v)) v = json_object_get(v, "content");
  if (!json_is_string(v)) return -1;
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  for (size_t i = 0; i < t->n_added; i++) {
    tk_str x = t->shown[t->added[i].id];
    if (x.len == n && !memcmp(tk_ptr(t, x), s, n)) return t->added[i].id;
  }
  for (size_t id = 0; id < t->n; id++)
    if (t->shown[id].len == n && !memcmp(tk_ptr(t, t->shown[id]), s, n)) return (int32_t)id;
  return -1;
}

/* tokenizer_config.json: add_bos_token / add_eos_token, when given, decide; bos_token and
 * eos_token name the tokens. */
static fdl_status config(fdl_tok *t, const char *path, const char *text, size_t len, fdl_err *err) {
  if (!path) return FDL_OK;
  json_t *c;
  fdl_status s = fdl_json_parse(text, len, NULL, &c, err);
  if (s != FDL_OK) return fdl_err_prefix(err, "%s", path);
  int32_t b = named(t, json_object_get(c, "bos_token")),
          e = named(t, json_object_get(c, "eos_token"));
  if (b >= 0) t->bos = b;
  if (e >= 0) t->eos = e;
  const json_t *ab = json_object_get(c, "add_bos_token"), *ae = json_object_get(c, "add_eos_token");
  if (json_is_boolean(ab)) t->add_bos = json_is_true(ab);
  if (json_is_boolean(ae)) t->add_eos = json_is_true(ae);
  json_decref(c);
  if ((t->add_bos && t->bos < 0) || (t->add_eos && t->eos < 0))
    return fdl_fail(err, FDL_PARSE, "%s: add_%s_token is true but no %s token is named", path,
                    t->add_bos && t->bos < 0 ? "bos" : "eos",
                    t->add_bos && t->bos < 0 ? "bos" : "eos");
  return FDL_OK;
}

static bool has_bytelevel_decoder(const json_t *d) {
  const char *ty = json_string_value(json_object_get(d, "type"));
  if (!ty) return false;
  if (!strcmp(ty, "ByteLevel")) return true;
  size_t i;
  const json_t *e;
  json_array_foreach(json_object_get(d, "decoders"), i,
                     e) if (has_bytelevel_decoder(e)) return true;
  return false;
}

fdl_status fdl_tk_load_hf(fdl_tok *t, const tk_source *js, const tk_source *cfg, fdl_err *err) {
  json_t *doc;
  fdl_status s = fdl_json_parse(js->text, js->len, NULL, &doc, err);
  if (s != FDL_OK) return fdl_err_prefix(err, "%s", js->path);
  const json_t *m = json_object_get(doc, "model"), *added = json_object_get(doc, "added_tokens");
  if (!json_is_object(m)) s = fdl_fail(err, FDL_PARSE, W ": no model object");
  if (s == FDL_OK && added && !json_is_array(added))
    s = fdl_fail(err, FDL_PARSE, W ": added_tokens must be an array");
  if (s == FDL_OK) s = model_checks(m, err);
  /* the pre-tokenizer and decoder say whether the vocabulary is in the byte alphabet */
  if (s == FDL_OK) s = fdl_tk_parse_normalizer(t, json_object_get(doc, "normalizer"), err);
  if (s == FDL_OK) s = fdl_tk_parse_pretokenizer(t, json_object_get(doc, "pre_tokenizer"), err);
  if (s == FDL_OK) s = fdl_tk_parse_decoder(t, json_object_get(doc, "decoder"), err);
  if (s == FDL_OK && has_bytelevel_decoder(json_object_get(doc, "decoder"))) t->byte_level = true;
  t->byte_fallback = json_is_true(json_object_get(m, "byte_fallback"));
  if (s == FDL_OK) s = vocab(t, m, added, err);
  if (s == FDL_OK) s = fdl_tk_build_map(t, err);
  if (s == FDL_OK) s = added_tokens(t, added, err);
  if (s == FDL_OK) s = merges(t, m, err);
  if (s == FDL_OK) {
    t->model = TK_MODEL_BPE;
    t->fuse_unk = json_is_true(json_object_get(m, "fuse_unk"));
    t->ignore_merges = json_is_true(json_object_get(m, "ignore_merges"));
    const json_t *unk = json_object_get(m, "unk_token");
    if (json_is_string(unk))
      t->unk = fdl_tk_lookup(t, json_string_value(unk), json_string_length(unk));
    s = post_processor(t, json_object_get(doc, "post_processor"), err);
  }
  if (s == FDL_OK && cfg) s = config(t, cfg->path, cfg->text, cfg->len, err);
  if (s == FDL_OK && (t->bos >= (int32_t)t->n || t->eos >= (int32_t)t->n))
    s = fdl_fail(err, FDL_PARSE,
                 W ": the post_processor's %s id %d is outside the vocabulary of %zu",
                 t->bos >= (int32_t)t->n ? "BOS" : "EOS",
                 (int)(t->bos >= (int32_t)t->n ? t->bos : t->eos), t->n);
  if (s == FDL_OK)
    snprintf(t->kind, sizeof t->kind, "%s",
             t->byte_level      ? "byte-level BPE"
             : t->byte_fallback ? "BPE with byte fallback"
                                : "BPE");
  json_decref(doc);
  return s;
}
