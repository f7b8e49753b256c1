/* kiln.c - Kiln canonical identities, the checker's shared primitives and the dispatch of
 * `check` by schema (KILN-ATTRIBUTION.md §2, §14). The rules of each kind live in kiln_request.c,
 * kiln_oracle.c, kiln_path.c, kiln_layer.c and kiln_fidelis.c; the model fingerprint is
 * kiln_model.c, the first-divergence request kiln_divergence.c. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "json/json.h"
#include "fidelis/kiln.h"
#include "digest/seal_json.h"

fdl_status fdl_kiln_canonical_sha256(const json_t *v, char *out, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = fdl_json_dump(v, FDL_JSON_ASCII, &b, err);
  fdl_sha256 d;
  if (s == FDL_OK) s = fdl_sha256_buf(b.data ? b.data : "", b.len, &d, err);
  fdl_buf_free(&b);
  if (s == FDL_OK) fdl_attr_sha_text(&d, out);
  return s;
}

fdl_status fdl_kiln_bad(const fdl_kiln_ctx *c, const char *path, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fdl_fail(c->err, FDL_INVALID, "%s: %s: %s", c->name, path, msg);
}

static void kiln_sink(void *user, const char *path, const char *msg) {
  fdl_kiln_bad(user, path, "%s", msg);
}

fdl_status fdl_kiln_walk(const fdl_kiln_ctx *c, const json_t *o, const char *path,
                         const fdl_schema_obj *t) {
  fdl_schema_run r = {kiln_sink, (void *)c, true, false, FDL_OK};
  fdl_schema_check(&r, o, path, t);
  return r.status;
}

static bool sha_ok(const char *s, size_t n) {
  size_t p = sizeof FDL_SEAL_KILN_PREFIX - 1;
  return n == p + 64 && memcmp(s, FDL_SEAL_KILN_PREFIX, p) == 0 && fdl_hex_lower(s + p, 64);
}
static bool hex40_ok(const char *s, size_t n) {
  return n == 40 && fdl_hex_lower(s, 40);
}
/* §14: Kiln's _path_from_repository: nonempty, no NUL, not absolute, no ".." component. */
static bool repo_rel_ok(const char *s, size_t n) {
  return n && strlen(s) == n && s[0] != '/' && !fdl_kiln_has_dotdot(s);
}
const fdl_schema_pattern fdl_kiln_sha_pattern = {sha_ok, NULL},
                         fdl_kiln_hex40_pattern = {hex40_ok, NULL},
                         fdl_kiln_repo_rel_pattern = {repo_rel_ok, NULL},
                         fdl_kiln_norm_rel_pattern = {fdl_kiln_rel_path_ok, NULL};

bool fdl_kiln_token_ok(const json_t *v) {
  return json_is_integer(v) && json_integer_value(v) >= 0 &&
         json_integer_value(v) < (json_int_t)FDL_KILN_VOCAB_SIZE;
}

static fdl_status want_tokens(const fdl_kiln_ctx *c, const char *path, const json_t *v, size_t lo,
                              size_t hi) {
  if (!json_is_array(v)) return fdl_kiln_bad(c, path, "expected an array of token ids");
  size_t n = json_array_size(v);
  if (n < lo || n > hi)
    return fdl_kiln_bad(c, path, "expected %zu..%zu token ids, found %zu", lo, hi, n);
  for (size_t i = 0; i < n; i++)
    if (!fdl_kiln_token_ok(json_array_get(v, i))) {
      char p[96];
      snprintf(p, sizeof p, "%s[%zu]", path, i);
      return fdl_kiln_bad(c, p, "expected a token id, an integer in 0..%u",
                          FDL_KILN_VOCAB_SIZE - 1);
    }
  return FDL_OK;
}

void fdl_kiln_tokens_rule(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                          const char *path) {
  fdl_kiln_rule(r, want_tokens(r->user, path, v, (size_t)f->min, (size_t)f->max));
}

bool fdl_kiln_rel_path_ok(const char *s, size_t n) {
  if (!n || s[0] == '/' || s[n - 1] == '/' || strlen(s) != n) return false;
  if (n == 1 && s[0] == '.') return false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && s[j] != '/') j++;
    size_t len = j - i;
    if (len == 0) return false;
    if (len == 1 && s[i] == '.') return false;
    if (len == 2 && s[i] == '.' && s[i + 1] == '.') return false;
    i = j + 1;
  }
  return true;
}

/* A ".." component anywhere ("..", "../a", "a/..", "a/../b"); "a..b" is a plain name. */
bool fdl_kiln_has_dotdot(const char *s) {
  for (const char *p = s; (p = strstr(p, "..")) != NULL; p += 2)
    if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return true;
  return false;
}

/* The self-hash rule (§2) under key `key` ("result_sha256", or fidelis' "record_sha256"). */
static fdl_status self_hash(const fdl_kiln_ctx *c, const json_t *doc, const char *key,
                            fdl_kiln_checked *res) {
  static const fdl_schema_field seal_f[] = {FDL_KF_SHA("result_sha256"),
                                            FDL_KF_SHA("record_sha256")};
  const fdl_schema_obj seal = {&seal_f[strcmp(key, "result_sha256") != 0], 1, false, NULL, NULL};
  const json_t *stored = json_object_get(doc, key);
  char p[40];
  snprintf(p, sizeof p, "$.%s", key);
  fdl_status s = fdl_kiln_walk(c, doc, "$", &seal);
  if (s != FDL_OK) return s;
  s = fdl_seal_compute(doc, FDL_SEAL_KILN_REMOVE, key, res->identity, c->err);
  if (s != FDL_OK) return s;
  if (strcmp(res->identity, json_string_value(stored)) != 0)
    return fdl_fail(c->err, FDL_MISMATCH,
                    "%s: %s: stored %s, but the record without it hashes to %s "
                    "(a value was changed)",
                    c->name, p, json_string_value(stored), res->identity);
  return FDL_OK;
}

static fdl_status check_request_ref(const fdl_kiln_ctx *c, const json_t *doc) {
  const json_t *rq = json_object_get(doc, "request");
  if (!json_is_object(rq)) return fdl_kiln_bad(c, "$.request", "expected an object");
  static const fdl_schema_field sha_f[] = {FDL_KF_SHA("sha256")};
  static const fdl_schema_obj sha = FDL_SCHEMA_OPEN(sha_f);
  return json_object_get(rq, "sha256") ? fdl_kiln_walk(c, rq, "$.request", &sha) : FDL_OK;
}

typedef struct {
  const char *schema;
  const fdl_schema_obj *table;                               /* the kind's rules as a table, or */
  fdl_status (*check)(const fdl_kiln_ctx *, const json_t *); /* as C */
  fdl_status (*refs)(const fdl_kiln_ctx *, const json_t *);  /* the rules that need other files */
} kind;

static const kind KINDS[] = {
    {"kiln.rocm-hf-next-token-oracle.v1", NULL, fdl_kiln_check_oracle_v1, fdl_kiln_refs_oracle},
    {"kiln.rocm-hf-path-attribution-result.v1", &fdl_kiln_schema_path_v1, NULL,
     fdl_kiln_refs_path_v1},
    {"kiln.rocm-hf-layer-attribution-result.v1", &fdl_kiln_schema_layer_v1, NULL,
     fdl_kiln_refs_layer},
    {FDL_KILN_PATH_V2_SCHEMA, &fdl_kiln_schema_path_v2, NULL, fdl_kiln_refs_path_v2},
    {"kiln.rocm-hf-layer-attribution-result.v2", &fdl_kiln_schema_layer_v2, NULL,
     fdl_kiln_refs_layer},
    {"kiln.rocm-hf-next-token-oracle.v2", &fdl_kiln_schema_oracle_v2, NULL, fdl_kiln_refs_oracle},
};

fdl_status fdl_kiln_check_doc_ctx(const fdl_kiln_ctx *c, const json_t *doc, fdl_kiln_checked *res) {
  memset(res, 0, sizeof *res);
  if (!json_is_object(doc)) return fdl_kiln_bad(c, "$", "expected an object");
  const json_t *sv = json_object_get(doc, "schema");
  if (!json_is_string(sv)) return fdl_kiln_bad(c, "$.schema", "expected a string naming the kind");
  const char *schema = json_string_value(sv);
  if (strcmp(schema, FDL_KILN_REQUEST_SCHEMA) == 0) {
    res->schema = FDL_KILN_REQUEST_SCHEMA;
    res->has_refs = true;
    fdl_status s = fdl_kiln_check_request(c, doc);
    if (s == FDL_OK) s = fdl_kiln_canonical_sha256(doc, res->identity, c->err);
    if (s == FDL_OK && c->refs) {
      s = fdl_kiln_refs_request(c, doc);
      res->refs_checked = s == FDL_OK;
    }
    return s;
  }
  if (strcmp(schema, FDL_KILN_RECEIPT_SCHEMA) == 0) {
    res->schema = FDL_KILN_RECEIPT_SCHEMA;
    fdl_status s = fdl_kiln_check_receipt_alone(c, doc);
    if (s == FDL_OK)
      snprintf(res->identity, sizeof res->identity, "%s",
               json_string_value(json_object_get(doc, "receipt_sha256")));
    return s;
  }
  if (strcmp(schema, FDL_KILN_PATH_ATTR_SCHEMA) == 0) {
    res->schema = FDL_KILN_PATH_ATTR_SCHEMA;
    fdl_status s = self_hash(c, doc, "record_sha256", res);
    if (s == FDL_OK) s = fdl_kiln_check_fidelis_attr(c, doc);
    return s;
  }
  for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
    if (strcmp(schema, KINDS[i].schema) != 0) continue;
    res->schema = KINDS[i].schema;
    res->has_refs = true;
    fdl_status s = self_hash(c, doc, "result_sha256", res);
    if (s == FDL_OK) s = check_request_ref(c, doc);
    if (s == FDL_OK)
      s = fdl_kiln_walk(c, json_object_get(doc, "model_identity"), "$.model_identity",
                        &fdl_kiln_schema_model_identity);
    if (s == FDL_OK)
      s = KINDS[i].table ? fdl_kiln_walk(c, doc, "$", KINDS[i].table) : KINDS[i].check(c, doc);
    if (s == FDL_OK && c->refs) {
      s = KINDS[i].refs(c, doc);
      res->refs_checked = s == FDL_OK;
    }
    return s;
  }
  char shown[80];
  snprintf(shown, sizeof shown, "%s", schema);
  return fdl_fail(c->err, FDL_UNSUPPORTED, "%s: unsupported schema %s", c->name, shown);
}

void fdl_kiln_summary_read(const json_t *rec, fdl_kiln_summary *sum) {
  const json_t *at = json_object_get(rec, "attribution"), *w = json_object_get(rec, "worker"),
               *g = json_object_get(w, "largest_relative_error_growth");
  sum->label =
      json_string_value(at ? json_object_get(at, "label") : json_object_get(w, "attribution"));
  sum->path = json_string_value(json_object_get(at, "path"));
  sum->sha256 = json_string_value(json_object_get(rec, at ? "record_sha256" : "result_sha256"));
  sum->growth_index = (size_t)json_integer_value(json_object_get(g, "index"));
  sum->growth_name = json_string_value(json_object_get(g, "name"));
  sum->growth_delta = json_real_value(json_object_get(g, "relative_root_mean_square_error_delta"));
}

fdl_status fdl_kiln_check_doc(const json_t *doc, const char *name, fdl_kiln_checked *res,
                              fdl_err *err) {
  fdl_kiln_ctx c = {name ? name : "(document)", err, NULL};
  return fdl_kiln_check_doc_ctx(&c, doc, res);
}

fdl_status fdl_kiln_check_file(const char *path, fdl_kiln_checked *res, fdl_err *err) {
  return fdl_kiln_check_file_opts(path, NULL, res, NULL, err);
}

fdl_status fdl_kiln_check_file_doc(const char *path, fdl_kiln_checked *res, json_t **out,
                                   fdl_err *err) {
  return fdl_kiln_check_file_opts(path, NULL, res, out, err);
}

fdl_status fdl_kiln_check_file_opts(const char *path, const fdl_kiln_check_opts *opts,
                                    fdl_kiln_checked *res, json_t **out, fdl_err *err) {
  if (out) *out = NULL;
  memset(res, 0, sizeof *res);
  const fdl_json_read_opts kiln = {.max_depth = 0, .kiln_strict = true};
  json_t *doc = NULL;
  fdl_status s = fdl_json_load_file(path, &kiln, &doc, err);
  if (s != FDL_OK) return s;
  fdl_kiln_refs refs = {0};
  char *root = NULL, *self = NULL;
  fdl_kiln_ctx c = {path, err, NULL};
  if (opts && opts->root) {
    /* Resolved once, so "inside the root" compares real paths, and the file itself seeds the
     * chain a reference loop would come back to. */
    root = realpath(opts->root, NULL);
    self = realpath(path, NULL);
    if (!root || !self)
      s = fdl_fail(err, FDL_IO, "%s: cannot resolve %s: %s", path, root ? path : opts->root,
                   strerror(errno));
    refs.root = root;
    refs.chain[0] = self;
    refs.depth = 1;
    c.refs = &refs;
  }
  if (s == FDL_OK) s = fdl_kiln_check_doc_ctx(&c, doc, res);
  if (s == FDL_OK && res->schema && strcmp(res->schema, FDL_KILN_REQUEST_SCHEMA) == 0) {
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size > FDL_KILN_REQUEST_MAX_BYTES)
      s = fdl_fail(err, FDL_TOO_LARGE, "%s: a request file is at most %u bytes, this one is %llu",
                   path, FDL_KILN_REQUEST_MAX_BYTES, (unsigned long long)st.st_size);
  }
  free(root);
  free(self);
  if (s == FDL_OK && out)
    *out = doc;
  else
    json_decref(doc);
  return s;
}
