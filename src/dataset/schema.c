/* schema.c - the JSON-Schema layer of fidelity-dataset.json (§12.1 step 2, rule SCHEMA).
 *
 * The upstream schema (shared/vectors/schemas/fidelity/fidelity-dataset.schema.json) uses a
 * small keyword subset: type, required, properties, additionalProperties:false, enum, const,
 * minLength, minimum, minItems/maxItems, items, a handful of patterns, oneOf-with-null and
 * if/then conditionals. fidelis cannot rely on that file being present at run time, so its
 * constraints are written out here as code, block by block, one finding per violation. The
 * schema test (tests/test_dataset_schema.py) keeps the two in step: every manifest pack writes
 * is also checked by python3-jsonschema against the real file.
 *
 * Divisions: value checks; field checks; the blocks; the conditionals (allOf). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fidelis/vocab.h"
#include "base/quote.h"
#include "dataset/ds_internal.h"

enum { REQ = 1u, NUL = 2u, MIN1 = 4u };
typedef enum { P_NONE, P_SHA, P_REV, P_REL, P_ARTIFACT, P_MODEL, P_PANEL, P_DIV } pat;

typedef struct {
  fdl_ds_report *rep;
} sc;

#define PATH_CAP 256

static void bad(sc *c, const char *path, const char *fmt, ...) FDL_PRINTF(3, 4);
static void bad(sc *c, const char *path, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fdl_ds_report_error(c->rep, "schema_invalid", "SCHEMA", FDL_DS_MANIFEST_NAME, "%s: %s", path,
                      msg);
}

static const char *type_name(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "an object";
  case JSON_ARRAY:
    return "an array";
  case JSON_STRING:
    return "a string";
  case JSON_INTEGER:
    return "an integer";
  case JSON_REAL:
    return "a float";
  case JSON_TRUE:
  case JSON_FALSE:
    return "a boolean";
  case JSON_NULL:
    return "null";
  }
  return "a value";
}

/* ---- value checks ------------------------------------------------------------------------ */

static bool pattern_ok(pat p, const char *s, size_t n) {
  switch (p) {
  case P_NONE:
    return true;
  case P_SHA:
    return n == 64 && fdl_hex_lower(s, n);
  case P_REV:
    return n >= 7 && n <= 64 && fdl_hex_lower(s, n);
  case P_REL:
    return n >= 1 && s[0] != '/' && strlen(s) == n && !strstr(s, "://");
  case P_ARTIFACT:
    return n >= 10 && !memcmp(s, "artifact--", 10);
  case P_MODEL:
    return n >= 7 && !memcmp(s, "model--", 7);
  case P_PANEL:
    return n >= 7 && !memcmp(s, "panel--", 7);
  case P_DIV: {
    if (n < 3 || memcmp(s, "D-", 2)) return false;
    for (size_t i = 2; i < n; i++)
      if (s[i] < '0' || s[i] > '9') return false;
    return true;
  }
  }
  return false;
}

static const char *pattern_text(pat p) {
  switch (p) {
  case P_SHA:
    return "64 lowercase hex digits";
  case P_REV:
    return "7-64 lowercase hex digits";
  case P_REL:
    return "a relative path (no leading '/', no '://', no NUL)";
  case P_ARTIFACT:
    return "a string starting with 'artifact--'";
  case P_MODEL:
    return "a string starting with 'model--'";
  case P_PANEL:
    return "a string starting with 'panel--'";
  case P_DIV:
    return "'D-' followed by digits";
  case P_NONE:
    break;
  }
  return "the pattern";
}

static void v_str(sc *c, const json_t *v, const char *path, unsigned fl, pat p) {
  if (json_is_null(v) && (fl & NUL)) return;
  if (!json_is_string(v)) {
    bad(c, path, "is %s; expected a string%s", type_name(v), (fl & NUL) ? " or null" : "");
    return;
  }
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if ((fl & MIN1) && n == 0) bad(c, path, "is empty; expected a non-empty string");
  if (!pattern_ok(p, s, n)) {
    char shown[96];
    fdl_py_shown(v, shown, sizeof shown);
    bad(c, path, "%s is not %s", shown, pattern_text(p));
  }
}

static void v_int(sc *c, const json_t *v, const char *path, unsigned fl, int64_t min) {
  if (json_is_null(v) && (fl & NUL)) return;
  if (!json_is_integer(v)) {
    bad(c, path, "is %s; expected an integer%s", type_name(v), (fl & NUL) ? " or null" : "");
    return;
  }
  if ((int64_t)json_integer_value(v) < min)
    bad(c, path, "%lld is less than the minimum of %lld", (long long)json_integer_value(v),
        (long long)min);
}

/* ---- field checks ------------------------------------------------------------------------ */

/* out = a + sep + b, cut to PATH_CAP (a path only labels a finding). */
static void join3(char *out, const char *a, const char *sep, const char *b) {
  size_t n = 0;
  const char *parts[3] = {a, sep, b};
  for (int i = 0; i < 3; i++)
    for (const char *q = parts[i]; *q && n + 1 < PATH_CAP; q++) out[n++] = *q;
  out[n] = '\0';
}

/* out = parent + "[" + i + "]". */
static void item_path(char *out, const char *parent, size_t i) {
  char idx[32];
  snprintf(idx, sizeof idx, "[%zu]", i);
  join3(out, parent, "", idx);
}

/* Element i of the array at parent: its path into ip, and a finding unless it is an object. */
static bool item_object(sc *c, const json_t *item, const char *parent, size_t i, char *ip) {
  item_path(ip, parent, i);
  if (json_is_object(item)) return true;
  bad(c, ip, "is %s; expected an object", type_name(item));
  return false;
}

/* o[key] with its dotted path in full; a missing required key is one finding. */
static const json_t *fld(sc *c, const json_t *o, const char *path, const char *key, unsigned fl,
                         char *full) {
  join3(full, path, path[0] ? "." : "", key);
  const json_t *v = json_object_get(o, key);
  if (!v && (fl & REQ)) bad(c, full, "is required");
  return v;
}

static void f_str(sc *c, const json_t *o, const char *path, const char *key, unsigned fl, pat p) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (v) v_str(c, v, full, fl, p);
}

static void f_int(sc *c, const json_t *o, const char *path, const char *key, unsigned fl,
                  int64_t min) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (v) v_int(c, v, full, fl, min);
}

static void f_num(sc *c, const json_t *o, const char *path, const char *key, unsigned fl) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (!v || (json_is_null(v) && (fl & NUL))) return;
  if (!json_is_number(v))
    bad(c, full, "is %s; expected a number%s", type_name(v), (fl & NUL) ? " or null" : "");
}

static void f_bool(sc *c, const json_t *o, const char *path, const char *key, unsigned fl) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (!v || (json_is_null(v) && (fl & NUL))) return;
  if (!json_is_boolean(v))
    bad(c, full, "is %s; expected a boolean%s", type_name(v), (fl & NUL) ? " or null" : "");
}

static void f_null(sc *c, const json_t *o, const char *path, const char *key) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, 0, full);
  if (v && !json_is_null(v)) bad(c, full, "is %s; expected null", type_name(v));
}

static void f_enum(sc *c, const json_t *o, const char *path, const char *key, unsigned fl,
                   const char *const *vals) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (!v) return;
  if (json_is_string(v))
    for (size_t i = 0; vals[i]; i++)
      if (!strcmp(json_string_value(v), vals[i])) return;
  char shown[96], list[512] = "";
  fdl_py_shown(v, shown, sizeof shown);
  for (size_t i = 0; vals[i]; i++) {
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", i ? ", " : "", vals[i]);
  }
  bad(c, full, "%s is not one of [%s]", shown, list);
}

static void f_const(sc *c, const json_t *o, const char *path, const char *key, unsigned fl,
                    const char *want) {
  const char *one[2] = {want, NULL};
  f_enum(c, o, path, key, fl, one);
}

static void f_const_bool(sc *c, const json_t *o, const char *path, const char *key, bool want) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, 0, full);
  if (v && !(json_is_boolean(v) && json_is_true(v) == want))
    bad(c, full, "must be %s", want ? "true" : "false");
}

/* An object-valued field: returns the object, or NULL (after a finding when mistyped). */
static const json_t *f_obj(sc *c, const json_t *o, const char *path, const char *key, unsigned fl) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (!v || (json_is_null(v) && (fl & NUL))) return NULL;
  if (!json_is_object(v)) {
    bad(c, full, "is %s; expected an object%s", type_name(v), (fl & NUL) ? " or null" : "");
    return NULL;
  }
  return v;
}

static const json_t *f_arr(sc *c, const json_t *o, const char *path, const char *key, unsigned fl,
                           size_t min_items, size_t max_items) {
  char full[PATH_CAP];
  const json_t *v = fld(c, o, path, key, fl, full);
  if (!v || (json_is_null(v) && (fl & NUL))) return NULL;
  if (!json_is_array(v)) {
    bad(c, full, "is %s; expected an array", type_name(v));
    return NULL;
  }
  size_t n = json_array_size(v);
  if (n < min_items) bad(c, full, "has %zu items; at least %zu required", n, min_items);
  if (max_items && n > max_items) bad(c, full, "has %zu items; at most %zu allowed", n, max_items);
  return v;
}

/* additionalProperties: false. */
static void closed(sc *c, const json_t *o, const char *path, const char *const *allowed) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)o, key, v) {
    bool ok = false;
    for (size_t i = 0; allowed[i] && !ok; i++) ok = !strcmp(key, allowed[i]);
    char q[FDL_QUOTE_CAP];
    if (!ok) bad(c, path, "additional property %s is not allowed", fdl_quote_str(key, q, sizeof q));
  }
}

static void sha_or_null(sc *c, const json_t *o, const char *path, const char *key) {
  f_str(c, o, path, key, NUL, P_SHA);
}

static void str_or_null(sc *c, const json_t *o, const char *path, const char *key) {
  f_str(c, o, path, key, NUL, P_NONE);
}

static void relpath_or_null(sc *c, const json_t *o, const char *path, const char *key) {
  f_str(c, o, path, key, NUL | MIN1, P_REL);
}

/* ---- the blocks -------------------------------------------------------------------------- */

static const char *const STATUSES[] = {"draft", "structural", "sealed", NULL};
static const char *const CLAIMS[] = {"replay_fidelity", "determinism", "both", NULL};
static const char *const POLICIES[] = {"native", "uniform", "mixed", "unknown", NULL};
static const char *const HEAD_POLICIES[] = {"native", "quantized", "unknown", NULL};
static const char *const TREATMENTS[] = {"native", "quantized", "unknown", NULL};
static const char *const POINTS[] = {"after_final_rmsnorm_before_lm_head",
                                     "lm_head_output_before_sampling",
                                     "live_lm_head_output_before_sampling", NULL};
static const char *const KEYS[] = {"hidden_states", "logits", NULL};
static const char *const SOURCES[] = {"native", "artifact_dequantized", "shared_reference_head",
                                      "unknown", NULL};
static const char *const SEVERITIES[] = {"info", "caveat", "blocking", NULL};
static const char *const SOURCE_FORMATS[] = {
    "k3v1", "k3v0-window", "llamacpp-kld", "malaiwah-serving-v2", "other", NULL};

static void dataset_block(sc *c, const json_t *d) {
  const char *p = "dataset";
  f_str(c, d, p, "id", REQ | MIN1, P_NONE);
  f_str(c, d, p, "name", REQ | MIN1, P_NONE);
  f_enum(c, d, p, "role", REQ, fdl_role_names);
  f_enum(c, d, p, "structural_status", REQ, STATUSES);
  const json_t *q = f_obj(c, d, p, "qualification", NUL);
  if (q) {
    static const char *const K[] = {"claimed", "receipt", "receipt_sha256", NULL};
    closed(c, q, "dataset.qualification", K);
    f_enum(c, q, "dataset.qualification", "claimed", REQ, CLAIMS);
    f_str(c, q, "dataset.qualification", "receipt", REQ | MIN1, P_REL);
    f_str(c, q, "dataset.qualification", "receipt_sha256", REQ, P_SHA);
  }
  const json_t *a = f_obj(c, d, p, "author", 0);
  if (a) {
    f_str(c, a, "dataset.author", "name", REQ | MIN1, P_NONE);
    f_str(c, a, "dataset.author", "role", REQ | MIN1, P_NONE);
    str_or_null(c, a, "dataset.author", "handle");
    str_or_null(c, a, "dataset.author", "url");
    f_bool(c, a, "dataset.author", "is_registry_maintainer", NUL);
  }
  str_or_null(c, d, p, "license");
  str_or_null(c, d, p, "repository");
  str_or_null(c, d, p, "revision");
  const json_t *b = f_obj(c, d, p, "base_capture", NUL);
  if (b) {
    static const char *const K[] = {
        "dataset_sha256", "capture_content_digest", "repository", "revision", "note", NULL};
    const char *bp = "dataset.base_capture";
    closed(c, b, bp, K);
    f_str(c, b, bp, "dataset_sha256", REQ | NUL, P_SHA);
    sha_or_null(c, b, bp, "capture_content_digest");
    str_or_null(c, b, bp, "repository");
    str_or_null(c, b, bp, "revision");
    f_str(c, b, bp, "note", 0, P_NONE);
  }
}

static void weights_block(sc *c, const json_t *w) {
  const char *p = "weights";
  f_str(c, w, p, "repository", REQ | MIN1, P_NONE);
  f_str(c, w, p, "revision", REQ | NUL, P_REV);
  f_str(c, w, p, "model_revision", REQ | NUL, P_REV);
  f_bool(c, w, p, "quantized", REQ);
  sha_or_null(c, w, p, "config_sha256");
  sha_or_null(c, w, p, "index_sha256");
  sha_or_null(c, w, p, "checkpoint_identity_sha256");
  f_str(c, w, p, "artifact_ref", NUL, P_ARTIFACT);
  f_str(c, w, p, "model_ref", NUL, P_MODEL);
  str_or_null(c, w, p, "codec");
  f_num(c, w, p, "declared_bits", NUL);
  f_int(c, w, p, "declared_head_bits", NUL, INT64_MIN);
}

static void scope_block(sc *c, const json_t *s) {
  static const char *const K[] = {"policy",         "scope_digest", "head_policy",
                                  "kv_cache_dtype", "assignments",  NULL};
  const char *p = "scope";
  closed(c, s, p, K);
  f_enum(c, s, p, "policy", REQ, POLICIES);
  f_str(c, s, p, "scope_digest", REQ | MIN1, P_NONE);
  f_enum(c, s, p, "head_policy", REQ, HEAD_POLICIES);
  f_str(c, s, p, "kv_cache_dtype", REQ | MIN1, P_NONE);
  const json_t *a = f_arr(c, s, p, "assignments", REQ, 1, 0);
  size_t i;
  const json_t *item;
  json_array_foreach(a, i, item) {
    char ip[PATH_CAP];
    if (!item_object(c, item, "scope.assignments", i, ip)) continue;
    f_str(c, item, ip, "tensor_class", REQ | MIN1, P_NONE);
    f_enum(c, item, ip, "treatment", REQ, TREATMENTS);
    f_str(c, item, ip, "format", REQ | MIN1, P_NONE);
    f_num(c, item, ip, "bits_per_weight", NUL);
    str_or_null(c, item, ip, "layer_range");
    f_str(c, item, ip, "note", 0, P_NONE);
  }
}

static void panel_block(sc *c, const json_t *pn) {
  const char *p = "panel";
  f_str(c, pn, p, "panel_id", NUL, P_PANEL);
  f_str(c, pn, p, "panel_file", REQ | MIN1, P_REL);
  f_str(c, pn, p, "panel_file_sha256", REQ, P_SHA);
  f_str(c, pn, p, "suite_token_hash_sha256", REQ, P_SHA);
  sha_or_null(c, pn, p, "panel_token_sha256_legacy");
  sha_or_null(c, pn, p, "panel_receipt_sha256");
  str_or_null(c, pn, p, "repository");
  str_or_null(c, pn, p, "revision");
  f_int(c, pn, p, "contexts", REQ, 1);
  f_int(c, pn, p, "context_length", REQ, 1);
  f_int(c, pn, p, "scored_positions_total", REQ, 1);
  const json_t *w = f_obj(c, pn, p, "scoring_window", REQ);
  if (w) {
    static const char *const K[] = {
        "score_from", "windowed", "min_left_context_tokens", "dropped_positions_total",
        "policy",     NULL};
    const char *wp = "panel.scoring_window";
    closed(c, w, wp, K);
    f_int(c, w, wp, "score_from", REQ, 0);
    f_bool(c, w, wp, "windowed", REQ);
    f_int(c, w, wp, "min_left_context_tokens", REQ, 0);
    f_int(c, w, wp, "dropped_positions_total", NUL, 0);
    f_str(c, w, wp, "policy", REQ | MIN1, P_NONE);
  }
  const json_t *t = f_obj(c, pn, p, "tokenizer", REQ);
  if (t) {
    const char *tp = "panel.tokenizer";
    f_str(c, t, tp, "id", REQ | MIN1, P_NONE);
    str_or_null(c, t, tp, "repository");
    str_or_null(c, t, tp, "revision");
    f_int(c, t, tp, "vocab_size", REQ, 1);
    f_bool(c, t, tp, "add_special_tokens", NUL);
    f_bool(c, t, tp, "chat_template_applied", NUL);
  }
  relpath_or_null(c, pn, p, "remap_file");
  const json_t *k = f_obj(c, pn, p, "contamination", 0);
  if (k) {
    const char *kp = "panel.contamination";
    f_bool(c, k, kp, "checked", REQ);
    str_or_null(c, k, kp, "method");
    f_int(c, k, kp, "hits", NUL, 0);
    str_or_null(c, k, kp, "receipt");
  }
}

static void capture_block(sc *c, const json_t *cp) {
  const char *p = "capture";
  f_str(c, cp, p, "manifest_file", REQ | MIN1, P_REL);
  f_str(c, cp, p, "manifest_file_sha256", REQ, P_SHA);
  f_str(c, cp, p, "capture_content_digest", REQ, P_SHA);
  f_enum(c, cp, p, "form", REQ, fdl_form_names);
  f_enum(c, cp, p, "semantic_point", REQ, POINTS);
  f_enum(c, cp, p, "tensor_key", REQ, KEYS);
  f_enum(c, cp, p, "dtype", REQ, fdl_capture_dtype_names);
  f_bool(c, cp, p, "dtype_lossless", REQ);
  f_int(c, cp, p, "hidden_width", NUL, 1);
  f_int(c, cp, p, "vocab_size", REQ, 1);
  f_bool(c, cp, p, "head_separable", REQ);
  str_or_null(c, cp, p, "head_not_separable_reason");
  f_int(c, cp, p, "records_count", REQ, 0);
  f_int(c, cp, p, "scored_rows_total", NUL, 0);
  f_int(c, cp, p, "total_size_bytes", REQ, 0);
  char full[PATH_CAP];
  if (!fld(c, cp, p, "lossy_codec", REQ, full)) return;
  const json_t *l = f_obj(c, cp, p, "lossy_codec", NUL);
  if (l) {
    const char *lp = "capture.lossy_codec";
    f_str(c, l, lp, "kind", REQ | MIN1, P_NONE);
    f_int(c, l, lp, "bits", REQ | NUL, 1);
    str_or_null(c, l, lp, "clamp");
    f_str(c, l, lp, "description", REQ | MIN1, P_NONE);
  }
}

static void head_block(sc *c, const json_t *h) {
  const char *p = "head";
  f_bool(c, h, p, "present", REQ);
  relpath_or_null(c, h, p, "file");
  relpath_or_null(c, h, p, "head_json");
  f_str(c, h, p, "tensor_key", REQ | MIN1, P_NONE);
  str_or_null(c, h, p, "compat_tensor_key");
  const json_t *shape = f_arr(c, h, p, "shape", REQ, 2, 2);
  size_t i;
  const json_t *d;
  json_array_foreach(shape, i, d) {
    char ip[PATH_CAP];
    item_path(ip, "head.shape", i);
    v_int(c, d, ip, 0, 1);
  }
  f_enum(c, h, p, "dtype", REQ, fdl_head_dtype_names);
  f_null(c, h, p, "bias");
  f_str(c, h, p, "file_sha256", REQ | NUL, P_SHA);
  f_str(c, h, p, "raw_tensor_sha256", REQ | NUL, P_SHA);
  f_str(c, h, p, "tensor_content_sha256", REQ | NUL, P_SHA);
  f_bool(c, h, p, "quantized", REQ | NUL);
  f_int(c, h, p, "bits", NUL, 1);
  f_enum(c, h, p, "source", REQ, SOURCES);
  f_bool(c, h, p, "applied_in_capture", REQ);
  const json_t *fn = f_obj(c, h, p, "final_norm", NUL);
  if (fn) {
    const char *np = "head.final_norm";
    relpath_or_null(c, fn, np, "file");
    str_or_null(c, fn, np, "tensor_key");
    char full[PATH_CAP];
    const json_t *s = fld(c, fn, np, "shape", 0, full);
    if (s && !json_is_null(s)) {
      if (!json_is_array(s)) {
        bad(c, full, "is %s; expected an array or null", type_name(s));
      } else {
        json_array_foreach(s, i, d) {
          char ip[PATH_CAP];
          item_path(ip, "head.final_norm.shape", i);
          v_int(c, d, ip, 0, INT64_MIN);
        }
      }
    }
    str_or_null(c, fn, np, "dtype");
    sha_or_null(c, fn, np, "file_sha256");
    sha_or_null(c, fn, np, "tensor_content_sha256");
    f_bool(c, fn, np, "applied_in_capture", REQ);
    f_bool(c, fn, np, "applied_at_replay", REQ);
  }
  const json_t *eq = f_obj(c, h, p, "equality_receipt", NUL);
  if (eq) {
    const char *ep = "head.equality_receipt";
    str_or_null(c, eq, ep, "schema");
    str_or_null(c, eq, ep, "file");
    sha_or_null(c, eq, ep, "sha256");
    f_str(c, eq, ep, "claim", REQ | MIN1, P_NONE);
  }
}

static void runtime_block(sc *c, const json_t *r) {
  const char *p = "runtime";
  f_str(c, r, p, "file", REQ | MIN1, P_REL);
  f_str(c, r, p, "file_sha256", REQ, P_SHA);
  f_enum(c, r, p, "lane", REQ, fdl_lane_names);
  f_bool(c, r, p, "lane_inferred", NUL);
  sha_or_null(c, r, p, "lane_identity_sha256");
  f_str(c, r, p, "stack_fingerprint_sha256", REQ | NUL, P_SHA);
  sha_or_null(c, r, p, "backend_identity_sha256");
  sha_or_null(c, r, p, "runtime_reader_sha256");
  str_or_null(c, r, p, "source");
}

static void determinism_block(sc *c, const json_t *d) {
  const char *p = "determinism";
  f_int(c, d, p, "run_count", REQ, 1);
  f_bool(c, d, p, "cold_start_per_run", NUL);
  f_enum(c, d, p, "evidence_kind", REQ, fdl_evidence_names);
  const json_t *h = f_arr(c, d, p, "evidence_hashes", 0, 0, 0);
  size_t i;
  const json_t *v;
  json_array_foreach(h, i, v) {
    char ip[PATH_CAP];
    item_path(ip, "determinism.evidence_hashes", i);
    v_str(c, v, ip, 0, P_SHA);
  }
  f_int(c, d, p, "distinct_evidence_hash_count", NUL, 0);
  f_bool(c, d, p, "identical_across_runs", REQ | NUL);
  const json_t *reps = f_arr(c, d, p, "repeats", 0, 0, 0);
  json_array_foreach(reps, i, v) {
    char ip[PATH_CAP];
    if (!item_object(c, v, "determinism.repeats", i, ip)) continue;
    f_str(c, v, ip, "name", REQ | MIN1, P_NONE);
    f_str(c, v, ip, "dir", REQ | MIN1, P_REL);
    f_str(c, v, ip, "capture_content_digest", REQ, P_SHA);
  }
  const json_t *rn = f_obj(c, d, p, "repeat_noise", NUL);
  if (rn) {
    const char *np = "determinism.repeat_noise";
    f_num(c, rn, np, "kl_canonical_to_repeat_mean", NUL);
    f_num(c, rn, np, "kl_repeat_to_canonical_mean", NUL);
    f_num(c, rn, np, "js_mean", NUL);
    f_str(c, rn, np, "interpretation", REQ | MIN1, P_NONE);
  }
  f_str(c, d, p, "note", 0, P_NONE);
  /* DET-D1 as the schema states it. */
  if (json_is_true(json_object_get(d, "identical_across_runs"))) {
    f_enum(c, d, p, "evidence_kind", 0, fdl_content_evidence_names);
    const json_t *rc = json_object_get(d, "run_count");
    if (json_is_integer(rc) && json_integer_value(rc) < 2)
      bad(c, "determinism.run_count", "must be at least 2 when identical_across_runs is true");
    char full[PATH_CAP];
    const json_t *dc = fld(c, d, p, "distinct_evidence_hash_count", REQ, full);
    if (dc && !(json_is_integer(dc) && json_integer_value(dc) == 1))
      bad(c, full, "must be 1 when identical_across_runs is true");
  }
}

static void coverage_block(sc *c, const json_t *cv) {
  const char *p = "coverage";
  f_int(c, cv, p, "declared_records", REQ, 1);
  f_int(c, cv, p, "present_records", REQ, 0);
  f_bool(c, cv, p, "complete", REQ);
  const json_t *r = f_arr(c, cv, p, "index_range", REQ, 2, 2);
  size_t i;
  const json_t *v;
  json_array_foreach(r, i, v) {
    char ip[PATH_CAP];
    item_path(ip, "coverage.index_range", i);
    v_int(c, v, ip, 0, 0);
  }
  const json_t *sh = f_obj(c, cv, p, "shard_of", NUL);
  if (sh) {
    f_int(c, sh, "coverage.shard_of", "index", REQ, 0);
    f_int(c, sh, "coverage.shard_of", "total", REQ, 1);
    f_int(c, sh, "coverage.shard_of", "stride", NUL, 1);
  }
  str_or_null(c, cv, p, "subset_detail");
  const json_t *m = f_arr(c, cv, p, "missing_indices_sample", 0, 0, 0);
  json_array_foreach(m, i, v) {
    char ip[PATH_CAP];
    item_path(ip, "coverage.missing_indices_sample", i);
    v_int(c, v, ip, 0, 0);
  }
}

static void seal_block(sc *c, const json_t *s) {
  static const char *const K[] = {"method",           "seal_field",       "checksums_file",
                                  "checksums_sha256", "checksums_format", "covers",
                                  "excludes",         "external_anchor",  NULL};
  const char *p = "seal";
  closed(c, s, p, K);
  f_const(c, s, p, "method", REQ, "self_blanked_canonical_json_sha256");
  f_const(c, s, p, "seal_field", 0, "dataset_sha256");
  f_const(c, s, p, "checksums_file", REQ, "checksums.txt");
  f_str(c, s, p, "checksums_sha256", REQ, P_SHA);
  f_const(c, s, p, "checksums_format", 0, "sha256sum");
  const json_t *cov = f_arr(c, s, p, "covers", REQ, 1, 0);
  const json_t *exc = f_arr(c, s, p, "excludes", REQ, 0, 0);
  size_t i;
  const json_t *v;
  json_array_foreach(cov, i, v) {
    char ip[PATH_CAP];
    item_path(ip, "seal.covers", i);
    v_str(c, v, ip, 0, P_NONE);
  }
  json_array_foreach(exc, i, v) {
    char ip[PATH_CAP];
    item_path(ip, "seal.excludes", i);
    v_str(c, v, ip, 0, P_NONE);
  }
  str_or_null(c, s, p, "external_anchor");
}

static void interop_block(sc *c, const json_t *io) {
  const char *p = "interop";
  const json_t *cw = f_arr(c, io, p, "compatible_with", REQ, 0, 0);
  size_t i;
  const json_t *v;
  json_array_foreach(cw, i, v) {
    char ip[PATH_CAP];
    item_path(ip, "interop.compatible_with", i);
    v_str(c, v, ip, 0, P_NONE);
  }
  f_bool(c, io, p, "k3_compat_emitted", NUL);
  const json_t *af = f_obj(c, io, p, "adapted_from", NUL);
  if (af) {
    const char *ap = "interop.adapted_from";
    f_enum(c, af, ap, "source_format", REQ, SOURCE_FORMATS);
    f_str(c, af, ap, "adapter", REQ | MIN1, P_NONE);
    const json_t *inf = f_arr(c, af, ap, "inferred_fields", REQ, 0, 0);
    json_array_foreach(inf, i, v) {
      char ip[PATH_CAP];
      item_path(ip, "interop.adapted_from.inferred_fields", i);
      v_str(c, v, ip, 0, P_NONE);
    }
  }
  const json_t *dv = f_arr(c, io, p, "divergences", REQ, 0, 0);
  json_array_foreach(dv, i, v) {
    static const char *const K[] = {"id", "field", "reason", NULL};
    char ip[PATH_CAP];
    if (!item_object(c, v, "interop.divergences", i, ip)) continue;
    closed(c, v, ip, K);
    f_str(c, v, ip, "id", REQ, P_DIV);
    f_str(c, v, ip, "field", REQ | MIN1, P_NONE);
    f_str(c, v, ip, "reason", REQ | MIN1, P_NONE);
  }
}

static void upstream_block(sc *c, const json_t *m) {
  const json_t *u = f_arr(c, m, "", "upstream_receipts", 0, 0, 0);
  size_t i;
  const json_t *v;
  json_array_foreach(u, i, v) {
    char ip[PATH_CAP];
    if (!item_object(c, v, "upstream_receipts", i, ip)) continue;
    f_str(c, v, ip, "file", REQ | MIN1, P_REL);
    f_str(c, v, ip, "schema", REQ | MIN1, P_NONE);
    f_str(c, v, ip, "sha256", REQ, P_SHA);
    const json_t *sf = f_arr(c, v, ip, "stripped_fields", REQ, 0, 0);
    size_t k;
    const json_t *x;
    json_array_foreach(sf, k, x) {
      char kp[PATH_CAP];
      char sf_path[PATH_CAP];
      join3(sf_path, ip, ".", "stripped_fields");
      item_path(kp, sf_path, k);
      v_str(c, x, kp, 0, P_NONE);
    }
  }
}

static void disclosures_block(sc *c, const json_t *m) {
  const json_t *d = f_arr(c, m, "", "disclosures", REQ, 1, 0);
  size_t i;
  const json_t *v;
  json_array_foreach(d, i, v) {
    char ip[PATH_CAP];
    if (!item_object(c, v, "disclosures", i, ip)) continue;
    f_str(c, v, ip, "code", REQ | MIN1, P_NONE);
    f_enum(c, v, ip, "severity", REQ, SEVERITIES);
    f_bool(c, v, ip, "affects_comparability", NUL);
    f_str(c, v, ip, "detail", REQ | MIN1, P_NONE);
  }
}

/* ---- the conditionals (allOf) ------------------------------------------------------------ */

static bool str_is(const json_t *o, const char *key, const char *want) {
  const char *s = fdl_ds_str(o, key);
  return s && !strcmp(s, want);
}

static void conditionals(sc *c, const json_t *m) {
  const json_t *dataset = fdl_ds_obj(m, "dataset"), *weights = fdl_ds_obj(m, "weights"),
               *scope = fdl_ds_obj(m, "scope"), *head = fdl_ds_obj(m, "head"),
               *capture = fdl_ds_obj(m, "capture"), *coverage = fdl_ds_obj(m, "coverage"),
               *panel = fdl_ds_obj(m, "panel");
  /* ROOT-1 */
  if (str_is(dataset, "role", "root")) {
    if (weights) {
      char full[PATH_CAP];
      const json_t *q = fld(c, weights, "weights", "quantized", REQ, full);
      if (q && !json_is_false(q)) bad(c, full, "must be false for role root (ROOT-1)");
    }
    if (scope) {
      f_const(c, scope, "scope", "policy", 0, "native");
      f_const(c, scope, "scope", "head_policy", 0, "native");
    }
    if (head) {
      f_const_bool(c, head, "head", "present", true);
      f_const_bool(c, head, "head", "quantized", false);
    }
    if (dataset) f_null(c, dataset, "dataset", "base_capture");
    if (capture) f_null(c, capture, "capture", "lossy_codec");
  }
  if (capture && str_is(capture, "form", "hidden")) {
    f_const(c, capture, "capture", "semantic_point", 0, "after_final_rmsnorm_before_lm_head");
    f_const(c, capture, "capture", "tensor_key", 0, "hidden_states");
    f_int(c, capture, "capture", "hidden_width", REQ, 1);
    f_const_bool(c, capture, "capture", "head_separable", true);
    if (head) {
      f_const_bool(c, head, "head", "applied_in_capture", false);
      f_str(c, head, "head", "tensor_content_sha256", 0, P_SHA);
    }
  }
  if (capture && str_is(capture, "form", "logit")) {
    f_const(c, capture, "capture", "tensor_key", 0, "logits");
    f_null(c, capture, "capture", "hidden_width");
    if (head) f_const_bool(c, head, "head", "applied_in_capture", true);
  }
  if (capture && json_is_false(json_object_get(capture, "head_separable")))
    f_str(c, capture, "capture", "head_not_separable_reason", REQ | MIN1, P_NONE);
  /* COV-2 */
  if (coverage && json_is_false(json_object_get(coverage, "complete"))) {
    const json_t *sh = json_object_get(coverage, "shard_of");
    if (!sh || json_is_null(sh))
      f_str(c, coverage, "coverage", "subset_detail", REQ | MIN1, P_NONE);
  }
  /* A sealed panel receipt must ship with a remap key (its value may be null). */
  if (panel) {
    const char *r = fdl_ds_str(panel, "panel_receipt_sha256");
    if (r && pattern_ok(P_SHA, r, strlen(r)) && !json_object_get(panel, "remap_file"))
      bad(c, "panel.remap_file", "is required when panel_receipt_sha256 is a digest");
  }
}

void fdl_ds_check_manifest_schema(const json_t *m, fdl_ds_report *rep) {
  sc c = {rep};
  static const char *const top_required[] = {
      "schema", "format_version", "dataset_sha256", "created_utc", "dataset", "weights",
      "scope",  "panel",          "capture",        "head",        "runtime", "determinism",
      "seal",   "coverage",       "interop",        "disclosures", NULL};
  char full[PATH_CAP];
  for (size_t i = 0; top_required[i]; i++) fld(&c, m, "", top_required[i], REQ, full);
  f_const(&c, m, "", "schema", 0, FDL_DS_SCHEMA);
  const json_t *fv = json_object_get(m, "format_version");
  if (fv && !(json_is_integer(fv) && json_integer_value(fv) == 1))
    bad(&c, "format_version", "must be 1");
  f_str(&c, m, "", "dataset_sha256", 0, P_SHA);
  f_str(&c, m, "", "created_utc", 0, P_NONE);
  const json_t *b;
  if ((b = f_obj(&c, m, "", "dataset", 0))) dataset_block(&c, b);
  if ((b = f_obj(&c, m, "", "weights", 0))) weights_block(&c, b);
  if ((b = f_obj(&c, m, "", "scope", 0))) scope_block(&c, b);
  if ((b = f_obj(&c, m, "", "panel", 0))) panel_block(&c, b);
  if ((b = f_obj(&c, m, "", "capture", 0))) capture_block(&c, b);
  if ((b = f_obj(&c, m, "", "head", 0))) head_block(&c, b);
  if ((b = f_obj(&c, m, "", "runtime", 0))) runtime_block(&c, b);
  if ((b = f_obj(&c, m, "", "determinism", 0))) determinism_block(&c, b);
  if ((b = f_obj(&c, m, "", "coverage", 0))) coverage_block(&c, b);
  if ((b = f_obj(&c, m, "", "seal", 0))) seal_block(&c, b);
  if ((b = f_obj(&c, m, "", "interop", 0))) interop_block(&c, b);
  upstream_block(&c, m);
  disclosures_block(&c, m);
  conditionals(&c, m);
}
