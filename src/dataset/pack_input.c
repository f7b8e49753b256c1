/* pack_input.c - reading pack's inputs: the meta JSON and the panel JSONL (docs/PACK.md).
 *
 * Inputs are strict where the dataset format is lenient: an unknown key in the meta or in a
 * panel line is refused, because a misspelt field would otherwise vanish silently into a sealed
 * dataset that can never be fixed without a re-capture.
 *
 * Divisions: the meta; the panel; the tensor directory. */
#include <dirent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lines.h"
#include "fidelis/vocab.h"
#include "base/order.h"
#include "base/quote.h"
#include "base/refusal.h"
#include "dataset/pack.h"
#include "base/utc.h"
#include "json/json.h"
#include "base/sys.h"
#include "fidelis/digest.h"
#include "json/py.h"

/* Largest panel JSONL read (a 1M-context panel of 4k tokens is about 20 GiB; this is not that). */
#define PK_MAX_PANEL_BYTES ((size_t)4 << 30)
#define PK_MAX_META_BYTES ((size_t)16 << 20)

fdl_status fdl_pk_refuse(pk_ctx *c, fdl_err *err, fdl_refusal_code code, fdl_status status,
                         const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fdl_refusev(&c->res->refusal, err, status, code, FDL_GATE_PACK, NULL, fmt, ap);
  va_end(ap);
  return status;
}

/* ---- the meta ---------------------------------------------------------------------------- */

/* Refuses keys of o outside allowed. */
static fdl_status only_keys(pk_ctx *c, const json_t *o, const char *where,
                            const char *const *allowed, fdl_err *err) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    char q[FDL_QUOTE_CAP];
    if (fdl_vocab_find(allowed, key) < 0)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "meta %s: unknown key %s (see fidelis pack --help)", where,
                           fdl_quote_str(key, q, sizeof q));
  }
  return FDL_OK;
}

/* A string field: required (non-empty) or optional (absent/null allowed). */
static fdl_status want_str(pk_ctx *c, const json_t *o, const char *where, const char *key,
                           bool required, fdl_err *err) {
  const json_t *v = json_object_get(o, key);
  if (!v || json_is_null(v)) {
    if (required)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "meta %s.%s is required", where,
                           key);
    return FDL_OK;
  }
  if (!json_is_string(v) || (required && json_string_length(v) == 0))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "meta %s.%s must be a%s string",
                         where, key, required ? " non-empty" : "");
  /* Identifiers and labels are printed by validate, inspect and compare; a control byte sealed
   * into one would reach every terminal that shows the dataset. Free text is escaped instead. */
  bool free_text = !strcmp(key, "subset_detail") || !strcmp(key, "numeric_policy");
  if (!free_text && fdl_quote_has_control(json_string_value(v), json_string_length(v))) {
    char q[FDL_QUOTE_CAP];
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "meta %s.%s %s contains a control character (identifiers and labels "
                         "must be printable text)",
                         where, key,
                         fdl_quote(json_string_value(v), json_string_length(v), q, sizeof q));
  }
  return FDL_OK;
}

static fdl_status want_enum(pk_ctx *c, const json_t *o, const char *where, const char *key,
                            const char *const *vals, bool required, fdl_err *err) {
  fdl_status s = want_str(c, o, where, key, required, err);
  if (s != FDL_OK) return s;
  const char *v = fdl_json_str(o, key);
  if (v && fdl_vocab_find(vals, v) < 0) {
    char list[256] = "";
    for (size_t i = 0; vals[i]; i++) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", vals[i]);
    }
    char q[FDL_QUOTE_CAP];
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "meta %s.%s %s is not one of %s",
                         where, key, fdl_quote_str(v, q, sizeof q), list);
  }
  return FDL_OK;
}

static fdl_status want_obj(pk_ctx *c, const json_t *o, const char *key, bool required,
                           const json_t **out, fdl_err *err) {
  const json_t *v = json_object_get(o, key);
  *out = NULL;
  if (!v || json_is_null(v)) {
    if (required)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "meta.%s is required", key);
    return FDL_OK;
  }
  if (!json_is_object(v))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "meta.%s must be an object", key);
  *out = v;
  return FDL_OK;
}

static fdl_status check_meta_blocks(pk_ctx *c, fdl_err *err) {
  static const char *const TOP[] = {"role",
                                    "form",
                                    "dataset",
                                    "weights",
                                    "scope",
                                    "lane",
                                    "engine",
                                    "device",
                                    "device_name",
                                    "dtypes",
                                    "tokenizer",
                                    "panel",
                                    "vocab_size",
                                    "semantic_point",
                                    "head",
                                    "head_separable",
                                    "head_not_separable_reason",
                                    "lossy_codec",
                                    "disclosures",
                                    "created_utc",
                                    "run_name",
                                    "runtime_source",
                                    "source_files",
                                    "subset_detail",
                                    "weights_decode",
                                    "numeric_policy",
                                    NULL};
  static const char *const DATASET[] = {"id",       "name",   "license",      "repository",
                                        "revision", "author", "base_capture", NULL};
  static const char *const WEIGHTS[] = {"repository",
                                        "revision",
                                        "model_revision",
                                        "quantized",
                                        "config_sha256",
                                        "index_sha256",
                                        "checkpoint_identity_sha256",
                                        "artifact_ref",
                                        "model_ref",
                                        "codec",
                                        "declared_bits",
                                        "declared_head_bits",
                                        NULL};
  static const char *const ENGINE[] = {"name", "version", NULL};
  static const char *const DT[] = {"forward", "weights", "compute", NULL};
  static const char *const TOK[] = {"id",       "vocab_size",         "repository",
                                    "revision", "add_special_tokens", "chat_template_applied",
                                    NULL};
  static const char *const PANEL[] = {"panel_id", "name",           "repository",
                                      "revision", "scoring_window", NULL};
  static const char *const HEAD[] = {"source",      "quantized", "bits",  "tensor_content_sha256",
                                     "file_sha256", "shape",     "dtype", NULL};
  const json_t *m = c->meta;
  fdl_status s = only_keys(c, m, "", TOP, err);
  const json_t *b;
  if (s == FDL_OK) s = want_enum(c, m, "meta", "role", fdl_role_names, true, err);
  if (s == FDL_OK) s = want_enum(c, m, "meta", "form", fdl_form_names, true, err);
  if (s == FDL_OK) s = want_enum(c, m, "meta", "lane", fdl_lane_names, true, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "device", true, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "device_name", false, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "created_utc", false, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "run_name", false, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "subset_detail", false, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "numeric_policy", false, err);
  if (s == FDL_OK) s = want_str(c, m, "meta", "runtime_source", false, err);
  if (s == FDL_OK) s = want_obj(c, m, "dataset", true, &b, err);
  if (s == FDL_OK) s = only_keys(c, b, "dataset", DATASET, err);
  if (s == FDL_OK) s = want_str(c, b, "dataset", "id", true, err);
  if (s == FDL_OK) s = want_str(c, b, "dataset", "name", false, err);
  if (s == FDL_OK) s = want_obj(c, m, "weights", true, &b, err);
  if (s == FDL_OK) s = only_keys(c, b, "weights", WEIGHTS, err);
  if (s == FDL_OK) s = want_str(c, b, "weights", "repository", true, err);
  if (s == FDL_OK && !json_object_get(b, "revision"))
    s = fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                      "meta weights.revision is required (a commit hash, or null when unknown)");
  if (s == FDL_OK) s = want_obj(c, m, "engine", true, &b, err);
  if (s == FDL_OK) s = only_keys(c, b, "engine", ENGINE, err);
  if (s == FDL_OK) s = want_str(c, b, "engine", "name", true, err);
  if (s == FDL_OK) s = want_str(c, b, "engine", "version", true, err);
  if (s == FDL_OK) s = want_obj(c, m, "dtypes", false, &b, err);
  if (s == FDL_OK && b) s = only_keys(c, b, "dtypes", DT, err);
  if (s == FDL_OK && b)
    s = want_enum(c, b, "dtypes", "forward", fdl_capture_dtype_names, false, err);
  if (s == FDL_OK) s = want_obj(c, m, "tokenizer", true, &b, err);
  if (s == FDL_OK) s = only_keys(c, b, "tokenizer", TOK, err);
  if (s == FDL_OK) s = want_str(c, b, "tokenizer", "id", true, err);
  if (s == FDL_OK) s = want_obj(c, m, "panel", false, &b, err);
  if (s == FDL_OK && b) s = only_keys(c, b, "panel", PANEL, err);
  if (s == FDL_OK) s = want_obj(c, m, "head", false, &b, err);
  if (s == FDL_OK && b) s = only_keys(c, b, "head", HEAD, err);
  return s;
}

/* --panel and --meta are files the user named: they may be links (a Hugging Face cache
 * snapshot), resolved once; the target is then opened without following anything further. */
static fdl_status read_named(const char *path, size_t max, char **text, size_t *len, fdl_err *err) {
  char *real = NULL;
  fdl_status s = fdl_resolve_named(path, &real, err);
  if (s == FDL_OK) s = fdl_read_file(real, max, text, len, err);
  free(real);
  return s;
}

fdl_status fdl_pk_read_meta(pk_ctx *c, fdl_err *err) {
  char *text;
  size_t len;
  if (read_named(c->o->meta_path, PK_MAX_META_BYTES, &text, &len, err) != FDL_OK)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_IO, "meta: %s", fdl_err_msg(err));
  fdl_status s = fdl_json_parse(text, len, NULL, &c->meta, err);
  free(text);
  if (s != FDL_OK)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_PARSE, "meta %s: %s", c->o->meta_path,
                         fdl_err_msg(err));
  if (!json_is_object(c->meta))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_PARSE, "meta %s: not a JSON object",
                         c->o->meta_path);
  s = check_meta_blocks(c, err);
  if (s != FDL_OK) return s;
  c->role = fdl_json_str(c->meta, "role");
  c->form = fdl_json_str(c->meta, "form");
  c->lane = fdl_json_str(c->meta, "lane");
  c->dataset_id = fdl_json_path_str(c->meta, "dataset.id");
  c->engine_name = fdl_json_path_str(c->meta, "engine.name");
  c->engine_version = fdl_json_path_str(c->meta, "engine.version");
  c->panel_id = fdl_json_path_str(c->meta, "panel.panel_id");
  c->panel_name = fdl_json_path_str(c->meta, "panel.name");
  c->run_name = fdl_json_str(c->meta, "run_name");
  c->semantic_point = fdl_json_str(c->meta, "semantic_point");
  c->device = fdl_json_str(c->meta, "device");
  c->device_name = fdl_json_str(c->meta, "device_name");
  const char *fwd = fdl_json_path_str(c->meta, "dtypes.forward");
  c->forward = FDL_DTYPE_COUNT;
  if (fwd) (void)fdl_dtype_parse(fwd, &c->forward);
  const json_t *h = fdl_json_obj(c->meta, "head"), *shape = fdl_json_arr(h, "shape");
  c->decl.content = fdl_json_str(h, "tensor_content_sha256");
  c->decl.file = fdl_json_str(h, "file_sha256");
  c->decl.dtype = fdl_json_str(h, "dtype");
  c->decl.shaped = json_array_size(shape) == 2 && json_is_integer(json_array_get(shape, 0)) &&
                   json_is_integer(json_array_get(shape, 1));
  for (size_t i = 0; c->decl.shaped && i < 2; i++)
    c->decl.shape[i] = (int64_t)json_integer_value(json_array_get(shape, i));

  const json_t *q = fdl_json_path(c->meta, "weights.quantized");
  if (q && !json_is_boolean(q))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "meta weights.quantized must be a boolean");
  if (!strcmp(c->role, "root") && json_is_true(q))
    return fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_REFUSED,
                         "role root captures unquantized weights (ROOT-1); use role quant");
  if (strcmp(c->role, "root") && !fdl_json_obj(c->meta, "scope"))
    return fdl_pk_refuse(
        c, err, FDL_REF_SCHEMA_INVALID, FDL_REFUSED,
        "role %s needs an explicit meta.scope (what is quantized, what is native); "
        "only a root may default to the native scope",
        c->role);
  const json_t *bc = json_object_get(fdl_json_obj(c->meta, "dataset"), "base_capture");
  if (!strcmp(c->role, "derived") && (!bc || json_is_null(bc)))
    return fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_REFUSED,
                         "role derived must name its base_capture (meta dataset.base_capture)");
  if (!strcmp(c->role, "root") && bc && !json_is_null(bc))
    return fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_REFUSED,
                         "a root's base_capture must be null");
  if (!strcmp(c->role, "root") && json_object_get(c->meta, "lossy_codec") &&
      !json_is_null(json_object_get(c->meta, "lossy_codec")))
    return fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_REFUSED,
                         "a root's lossy_codec must be null");

  const json_t *sw = fdl_json_obj(fdl_json_obj(c->meta, "panel"), "scoring_window");
  c->score_from = 0;
  if (sw && json_object_get(sw, "score_from") &&
      (!fdl_json_int(sw, "score_from", &c->score_from) || c->score_from < 0))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "meta panel.scoring_window.score_from must be an integer >= 0");
  if (c->score_from > 0 && !fdl_json_str(sw, "policy"))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "a scoring window with score_from > 0 needs its own policy string (it is "
                         "part of the panel's identity)");
  int64_t vocab;
  const json_t *vv = json_object_get(c->meta, "vocab_size");
  c->vocab = -1;
  if (vv && !json_is_null(vv)) {
    if (!fdl_json_int(c->meta, "vocab_size", &vocab) || vocab < 1)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "meta vocab_size must be an integer >= 1");
    c->vocab = vocab;
  }
  const char *created = fdl_json_str(c->meta, "created_utc");
  if (created) {
    if (!fdl_utc_valid(created))
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "meta created_utc '%s' is not a real UTC time written "
                           "YYYY-MM-DDTHH:MM:SSZ",
                           created);
    snprintf(c->created, sizeof c->created, "%s", created);
  }
  return FDL_OK;
}

/* ---- the panel --------------------------------------------------------------------------- */

static const char *const LINE_KEYS[] = {"index",          "tokens",
                                        "mask",           "domain",
                                        "window_id",      "allocation_stratum",
                                        "document_id",    "role",
                                        "semantic_class", "source_cluster_id",
                                        "partition",      NULL};

static fdl_status parse_line(pk_ctx *c, pk_record *r, size_t lineno, fdl_err *err) {
  const json_t *o = r->line;
  if (!json_is_object(o))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_PARSE, "panel line %zu: not a JSON object",
                         lineno);
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    char q[FDL_QUOTE_CAP];
    if (fdl_vocab_find(LINE_KEYS, key) < 0)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "panel line %zu: unknown key %s (expected index, tokens, mask, domain, "
                           "window_id, allocation_stratum, document_id, role, semantic_class, "
                           "source_cluster_id, partition)",
                           lineno, fdl_quote_str(key, q, sizeof q));
    if (strcmp(key, "index") && strcmp(key, "tokens") && strcmp(key, "mask") &&
        !json_is_string(v) && !json_is_null(v))
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "panel line %zu: '%s' must be a string or null", lineno, key);
    if (json_is_string(v) && fdl_quote_has_control(json_string_value(v), json_string_length(v)))
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "panel line %zu: '%s' %s contains a control character (domains, "
                           "window ids and labels must be printable text)",
                           lineno, key,
                           fdl_quote(json_string_value(v), json_string_length(v), q, sizeof q));
  }
  r->window_id = fdl_json_str(o, "window_id");
  if (!fdl_json_int(o, "index", &r->index) || r->index < 0 || r->index >= FDL_DS_MAX_INDEX)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "panel line %zu: 'index' must be an integer >= 0", lineno);
  const json_t *toks = fdl_json_arr(o, "tokens");
  if (!toks || json_array_size(toks) < 2)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "panel line %zu (index %" PRId64
                         "): 'tokens' must be an array of at least "
                         "2 token ids",
                         lineno, r->index);
  r->ntok = json_array_size(toks);
  r->tokens = fdl_malloc(r->ntok * sizeof *r->tokens);
  if (!r->tokens) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "panel: out of memory");
  for (size_t i = 0; i < r->ntok; i++) {
    const json_t *t = json_array_get(toks, i);
    if (!json_is_integer(t) || json_integer_value(t) < 0)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "panel line %zu (index %" PRId64
                           "): token %zu is not an integer id >= 0",
                           lineno, r->index, i);
    r->tokens[i] = (int64_t)json_integer_value(t);
  }
  const json_t *mask = json_object_get(o, "mask");
  if (mask && !json_is_null(mask)) {
    if (!json_is_array(mask) || json_array_size(mask) != r->ntok)
      return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_INVALID,
                           "panel line %zu (index %" PRId64 "): 'mask' must be an array of %zu "
                           "entries (one per token), got %zu",
                           lineno, r->index, r->ntok,
                           json_is_array(mask) ? json_array_size(mask) : 0);
    r->mask = fdl_malloc(r->ntok);
    if (!r->mask) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "panel: out of memory");
    for (size_t i = 0; i < r->ntok; i++) {
      const json_t *m = json_array_get(mask, i);
      if (json_is_boolean(m))
        r->mask[i] = json_is_true(m) ? 1 : 0;
      else if (json_is_integer(m) && (json_integer_value(m) == 0 || json_integer_value(m) == 1))
        r->mask[i] = (uint8_t)json_integer_value(m);
      else
        return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                             "panel line %zu (index %" PRId64 "): mask entry %zu is not 0, 1, true "
                             "or false",
                             lineno, r->index, i);
    }
  }
  return FDL_OK;
}

static int cmp_rec(const void *a, const void *b) {
  return fdl_order_cmp_i64(((const pk_record *)a)->index, ((const pk_record *)b)->index);
}

/* The optional first line {"header": {...}} that `fidelis panel` writes: the tokenizer that made
 * the ids and the scoring window they were cut for. Its window decides the scored rows unless
 * the meta gives the same one; a meta naming another tokenizer is refused. */
static fdl_status parse_header(pk_ctx *c, json_t *line, fdl_err *err) {
  const json_t *h = json_object_get(line, "header");
  const json_t *tok = json_object_get(h, "tokenizer"), *sw = json_object_get(h, "scoring_window");
  const char *schema = fdl_json_str(h, "schema");
  if (json_object_size(line) != 1 || !json_is_object(h) || !schema ||
      strcmp(schema, PK_PANEL_HEADER_SCHEMA))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "panel line 1: a header line is {\"header\": {\"schema\": \"%s\", ...}}",
                         PK_PANEL_HEADER_SCHEMA);
  int64_t from = 0;
  if (sw && (!json_is_object(sw) || !fdl_json_int(sw, "score_from", &from) || from < 0 ||
             !fdl_json_str(sw, "policy")))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "panel header: scoring_window needs score_from (an integer >= 0) and a "
                         "policy string");
  const char *id = fdl_json_str(tok, "id");
  if (tok && (!json_is_object(tok) || !id || fdl_quote_has_control(id, strlen(id))))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "panel header: tokenizer needs an id string of printable text");
  size_t i;
  const json_t *f, *files = json_object_get(tok, "files");
  if (files && !json_is_array(files))
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                         "panel header: tokenizer.files must be an array");
  json_array_foreach(files, i, f) {
    const char *name = fdl_json_str(f, "name"), *sha = fdl_json_str(f, "sha256");
    int64_t bytes;
    if (json_object_size(f) != 3 || !name || !*name || fdl_quote_has_control(name, strlen(name)) ||
        !sha || !fdl_sha256_hex_ok(sha, strlen(sha)) || !fdl_json_int(f, "bytes", &bytes) ||
        bytes < 0)
      return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID,
                           "panel header: tokenizer.files[%zu] must be {bytes, name, sha256}", i);
  }
  const json_t *msw = fdl_json_obj(fdl_json_obj(c->meta, "panel"), "scoring_window");
  if (sw && msw && !fdl_py_equal(sw, msw))
    return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                         "the panel was cut for another scoring window than meta "
                         "panel.scoring_window (score_from %" PRId64 " in the panel header)",
                         from);
  const char *mid = fdl_json_path_str(c->meta, "tokenizer.id");
  char q1[FDL_QUOTE_CAP], q2[FDL_QUOTE_CAP];
  if (id && mid && strcmp(id, mid))
    return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                         "the panel's ids come from tokenizer %s but meta tokenizer.id is %s",
                         fdl_quote_str(id, q1, sizeof q1), fdl_quote_str(mid, q2, sizeof q2));
  if (sw && !msw) c->score_from = from;
  c->header = json_incref(line);
  return FDL_OK;
}

static fdl_status fdl_pk_parse_panel(pk_ctx *c, const char *text, size_t len, fdl_err *err) {
  size_t cap = 0;
  fdl_status s = FDL_OK;
  fdl_lines it = fdl_lines_of(text, len);
  while (s == FDL_OK && fdl_lines_next(&it)) {
    if (!FDL_GROW(c->recs, c->n, cap, 64)) {
      s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "panel: out of memory");
      break;
    }
    pk_record *r = &c->recs[c->n++];
    memset(r, 0, sizeof *r);
    if (fdl_json_parse(it.line, it.n, NULL, &r->line, err) != FDL_OK) {
      s = fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_PARSE, "panel line %zu: %s", it.lineno,
                        fdl_err_msg(err));
      break;
    }
    if (c->n == 1 && !c->header && json_object_get(r->line, "header")) {
      s = parse_header(c, r->line, err);
      json_decref(r->line);
      c->n--;
      continue;
    }
    s = parse_line(c, r, it.lineno, err);
  }
  if (s != FDL_OK) return s;
  if (c->n == 0)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "the panel holds no context");
  qsort(c->recs, c->n, sizeof *c->recs, cmp_rec);
  for (size_t i = 0; i < c->n; i++) {
    if (i && c->recs[i].index == c->recs[i - 1].index)
      return fdl_pk_refuse(c, err, FDL_REF_DIGEST_MISMATCH, FDL_REFUSED,
                           "panel: duplicate record index %" PRId64 " (REC-1)", c->recs[i].index);
    if (c->recs[i].index != (int64_t)i)
      return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                           "panel: indices must be exactly 0..%zu; index %zu is missing", c->n - 1,
                           i);
  }
  c->context_length = (int64_t)c->recs[0].ntok;
  for (size_t i = 0; i < c->n; i++) {
    pk_record *r = &c->recs[i];
    if ((int64_t)r->ntok != c->context_length)
      return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                           "panel: record %" PRId64 " has %zu tokens but record 0 has %" PRId64
                           "; a panel is not ragged (pad it and pass a mask)",
                           r->index, r->ntok, c->context_length);
    if (r->mask) c->masks = true;
  }
  for (size_t i = 0; i < c->n; i++) {
    pk_record *r = &c->recs[i];
    r->scored = fdl_ds_scored_rows(r->mask, (int64_t)r->ntok, c->score_from, NULL);
    if (r->scored == 0)
      return fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                           "panel: record %" PRId64 " scores no position (its mask leaves no two "
                           "adjacent attended tokens)",
                           r->index);
  }
  return FDL_OK;
}

fdl_status fdl_pk_read_panel(pk_ctx *c, fdl_err *err) {
  char *text;
  size_t len;
  if (read_named(c->o->panel_path, PK_MAX_PANEL_BYTES, &text, &len, err) != FDL_OK)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_IO, "panel: %s", fdl_err_msg(err));
  fdl_status s = fdl_pk_parse_panel(c, text, len, err);
  free(text);
  if (s != FDL_OK) fdl_err_prefix(err, "%s", c->o->panel_path);
  return s;
}

void fdl_pk_free_panel(pk_ctx *c) {
  for (size_t i = 0; i < c->n; i++) {
    free(c->recs[i].tokens);
    free(c->recs[i].mask);
    json_decref(c->recs[i].line);
  }
  free(c->recs);
  c->recs = NULL;
  c->n = 0;
  json_decref(c->header);
  c->header = NULL;
}

fdl_status fdl_ds_panel_check(const char *text, size_t len, size_t *records,
                              int64_t *scored_positions, fdl_err *err) {
  fdl_ds_pack_opts o;
  fdl_ds_pack_result r;
  pk_ctx c;
  memset(&o, 0, sizeof o);
  memset(&r, 0, sizeof r);
  memset(&c, 0, sizeof c);
  c.o = &o;
  c.res = &r;
  fdl_status s = fdl_pk_parse_panel(&c, text, len, err);
  if (s == FDL_OK) {
    int64_t total = 0;
    for (size_t i = 0; i < c.n; i++) total += c.recs[i].scored;
    if (records) *records = c.n;
    if (scored_positions) *scored_positions = total;
  } else if (r.refusal.code != FDL_REF_NONE) {
    fdl_err_prefix(err, "%s", fdl_refusal_name(r.refusal.code));
  }
  fdl_pk_free_panel(&c);
  return s;
}

/* The panel parser's context outlives the call: the lines borrow its records. */
typedef struct {
  fdl_ds_pack_opts o;
  fdl_ds_pack_result r;
  pk_ctx c;
} panel_hold;

fdl_status fdl_ds_panel_load(const char *path, fdl_ds_panel *p, fdl_err *err) {
  memset(p, 0, sizeof *p);
  panel_hold *h = fdl_calloc(1, sizeof *h);
  if (!h) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  h->o.panel_path = path;
  h->c.o = &h->o;
  h->c.res = &h->r;
  fdl_status s = fdl_pk_read_panel(&h->c, err);
  if (s == FDL_OK) {
    p->lines = fdl_calloc(h->c.n, sizeof *p->lines);
    if (!p->lines) s = fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  } else if (h->r.refusal.code != FDL_REF_NONE) {
    fdl_err_prefix(err, "%s", fdl_refusal_name(h->r.refusal.code));
  }
  if (s != FDL_OK) {
    fdl_pk_free_panel(&h->c);
    free(h);
    return s;
  }
  for (size_t i = 0; i < h->c.n; i++) {
    const pk_record *r = &h->c.recs[i];
    p->lines[i] = (fdl_ds_panel_line){.index = r->index,
                                      .tokens = r->tokens,
                                      .ntok = r->ntok,
                                      .mask = r->mask,
                                      .scored = r->scored};
  }
  p->n = h->c.n;
  p->score_from = h->c.score_from;
  const json_t *tok = fdl_json_obj(fdl_json_obj(h->c.header, "header"), "tokenizer");
  bool ast;
  p->tokenizer.id = fdl_json_str(tok, "id");
  p->tokenizer.repository = fdl_json_str(tok, "repository");
  p->tokenizer.revision = fdl_json_str(tok, "revision");
  p->tokenizer.add_special_tokens =
      fdl_json_bool(tok, "add_special_tokens", &ast) ? (fdl_ds_bool)ast : FDL_DS_UNSET;
  p->priv_ = h;
  return FDL_OK;
}

void fdl_ds_panel_free(fdl_ds_panel *p) {
  if (!p) return;
  panel_hold *h = p->priv_;
  if (h) {
    fdl_pk_free_panel(&h->c);
    free(h);
  }
  free(p->lines);
  memset(p, 0, sizeof *p);
}

/* ---- the tensor directory ---------------------------------------------------------------- */

fdl_status fdl_pk_check_tensor_dir(pk_ctx *c, fdl_err *err) {
  DIR *d = opendir(c->o->tensor_dir);
  if (!d)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_IO, "tensor directory %s cannot be read",
                         c->o->tensor_dir);
  fdl_status s = FDL_OK;
  struct dirent *e;
  while (s == FDL_OK && (e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    size_t digits = strspn(name, "0123456789");
    if (!digits || digits > 13) continue;
    const char *ext = name + digits;
    if (strcmp(ext, ".safetensors") && strcmp(ext, ".npy")) continue;
    int64_t idx = strtoll(name, NULL, 10);
    if (idx >= (int64_t)c->n)
      s = fdl_pk_refuse(c, err, FDL_REF_PANEL_BINDING, FDL_REFUSED,
                        "%s/%s: index %" PRId64 " has no panel record (the panel holds 0..%zu)",
                        c->o->tensor_dir, name, idx, c->n - 1);
  }
  closedir(d);
  return s;
}

json_t *fdl_ds_panel_tokenizer_json(const fdl_tok_info *ti, bool add_special_tokens) {
  json_t *files = json_array();
  for (size_t i = 0; files && i < ti->n_files; i++) {
    const fdl_tok_file *f = &ti->files[i];
    if (json_array_append_new(files, json_pack("{s:I, s:s, s:s}", "bytes", (json_int_t)f->bytes,
                                               "name", f->name, "sha256", f->sha256))) {
      json_decref(files);
      files = NULL;
    }
  }
  return files ? json_pack("{s:s, s:I, s:o, s:b, s:b}", "id", ti->id, "vocab_size",
                           (json_int_t)ti->vocab, "files", files, "add_special_tokens",
                           add_special_tokens, "chat_template_applied", 0)
               : NULL;
}
