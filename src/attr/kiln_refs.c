/* kiln_refs.c - the `check` rules that need another file under the Kiln repository root
 * (KILN-ATTRIBUTION.md §14): the request an oracle, path or layer result names, loaded and
 * validated with its receipts, every field §14.1-§14.3 binds to it, and a path result's oracle
 * result, checked in full and bound (§14.2 step 6). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"
#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "base/fs.h"
#include "json/json.h"
#include "json/py.h"

/* lstat's view of joined (r as the record names it) as the rule it breaks. A missing or
 * unresolvable name is the record's fault (exit 3); a file that is there but cannot be read
 * (EACCES, EIO) is the machine's (FDL_IO, exit 4). */
static fdl_status stat_ref(const fdl_kiln_ctx *c, const char *jpath, const char *what,
                           const char *r, const char *joined, size_t max) {
  struct stat st;
  if (lstat(joined, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return fdl_fail(c->err, FDL_INVALID,
                      "%s: %s: %s missing: %s (no such file under the root %s)", c->name, jpath,
                      what, r, c->refs->root);
    if (errno == ELOOP || errno == ENAMETOOLONG)
      return fdl_fail(c->err, FDL_PATH, "%s: %s: %s %s cannot be resolved: %s", c->name, jpath,
                      what, r, strerror(errno));
    return fdl_fail(c->err, FDL_IO, "%s: %s: %s %s: cannot stat: %s", c->name, jpath, what, r,
                    strerror(errno));
  }
  if (S_ISLNK(st.st_mode))
    return fdl_fail(c->err, FDL_PATH, "%s: %s: %s %s is a symbolic link, expected a regular file",
                    c->name, jpath, what, r);
  if (!S_ISREG(st.st_mode))
    return fdl_fail(c->err, FDL_PATH, "%s: %s: %s %s is not a regular file", c->name, jpath, what,
                    r);
  if ((uint64_t)st.st_size > max)
    return fdl_fail(c->err, FDL_TOO_LARGE, "%s: %s: %s %s is %llu bytes, at most %zu allowed",
                    c->name, jpath, what, r, (unsigned long long)st.st_size, max);
  return FDL_OK;
}

fdl_status fdl_kiln_read_ref(const fdl_kiln_ctx *c, const char *jpath, const json_t *rel,
                             const char *what, size_t max, char **real, char **text, size_t *len) {
  *real = NULL;
  *text = NULL;
  *len = 0;
  const char *r = json_string_value(rel);
  if (!r || !json_string_length(rel) || strlen(r) != json_string_length(rel) || r[0] == '/' ||
      fdl_kiln_has_dotdot(r))
    return fdl_fail(c->err, FDL_PATH,
                    "%s: %s: expected a nonempty repository-relative path without NUL, not "
                    "absolute, without \"..\"",
                    c->name, jpath);
  const char *root = c->refs->root;
  char *joined = fdl_path_join(root, r);
  if (!joined) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  fdl_status s = stat_ref(c, jpath, what, r, joined, max);
  if (s == FDL_OK) {
    /* A link in a directory component may still lead out of the root; the resolved path shows. */
    *real = realpath(joined, NULL);
    size_t rn = strlen(root);
    if (!*real)
      s = fdl_fail(c->err, FDL_IO, "%s: %s: %s %s: cannot resolve: %s", c->name, jpath, what, r,
                   strerror(errno));
    else if (strncmp(*real, root, rn) != 0 || (rn > 1 && (*real)[rn] != '/'))
      s = fdl_fail(c->err, FDL_PATH, "%s: %s: %s %s resolves to %s, outside the root %s", c->name,
                   jpath, what, r, *real, root);
  }
  int fd = -1;
  if (s == FDL_OK && (s = fdl_open_regular(joined, false, &fd, NULL, c->err)) == FDL_OK) {
    s = fdl_read_fd(fd, r, max, text, len, c->err);
    close(fd);
  }
  free(joined);
  if (s != FDL_OK) {
    if (s == FDL_IO) fdl_err_prefix(c->err, "%s: %s", c->name, jpath);
    free(*real);
    free(*text);
    *real = NULL;
    *text = NULL;
  }
  return s;
}

static void show(const json_t *v, char *out, size_t cap) {
  char *t = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  if (!t) {
    snprintf(out, cap, "%s", v ? "(unprintable)" : "(missing)");
    return;
  }
  if (strlen(t) >= cap && cap > 4)
    snprintf(out, cap, "%.*s...", (int)(cap - 4), t);
  else
    snprintf(out, cap, "%s", t);
  free(t);
}

fdl_status fdl_kiln_bind(const fdl_kiln_ctx *c, const char *jpath, const json_t *got,
                         const json_t *want, const char *why) {
  /* Kiln's checkers compare with Python's == (1.0 == 1); a missing key is a KeyError there. */
  if (got && want && fdl_py_equal(got, want)) return FDL_OK;
  char g[160], w[160];
  show(got, g, sizeof g);
  show(want, w, sizeof w);
  return fdl_fail(c->err, FDL_MISMATCH, "%s: %s: %s, expected %s (%s)", c->name, jpath, g, w, why);
}

/* One fdl_kiln_bind of a list; a record's bindings are checked in the order §14 lists them. */
typedef struct {
  const char *jpath;
  const json_t *got, *want;
  const char *why;
} kiln_binding;

/* Each binding in turn; the first that differs is the failure. */
static fdl_status bind_all(const fdl_kiln_ctx *c, const kiln_binding *b, size_t n) {
  fdl_status s = FDL_OK;
  for (size_t i = 0; i < n && !s; i++)
    s = fdl_kiln_bind(c, b[i].jpath, b[i].got, b[i].want, b[i].why);
  return s;
}

/* Parses a referenced file Kiln-strict; a malformed one fails the referring field. */
static fdl_status parse_ref(const fdl_kiln_ctx *c, const char *jpath, const char *what,
                            const char *rel, const char *text, size_t len, json_t **doc) {
  const fdl_json_read_opts kiln = {.max_depth = 0, .kiln_strict = true};
  fdl_status s = fdl_json_parse(text, len, &kiln, doc, c->err);
  if (s != FDL_OK) fdl_err_prefix(c->err, "%s: %s: %s %s", c->name, jpath, what, rel);
  return s;
}

/* Loads the request a record names at jpath and checks it in full, receipts included (a nested
 * check whose messages name the request, under the record's field). */
static fdl_status load_request(const fdl_kiln_ctx *c, const char *jpath, const json_t *rel,
                               json_t **req, fdl_kiln_checked *res) {
  char *real = NULL, *text = NULL;
  size_t len = 0;
  *req = NULL;
  fdl_status s =
      fdl_kiln_read_ref(c, jpath, rel, "request", FDL_KILN_REQUEST_MAX_BYTES, &real, &text, &len);
  if (s == FDL_OK) s = parse_ref(c, jpath, "request", json_string_value(rel), text, len, req);
  free(real);
  free(text);
  if (s != FDL_OK) return s;
  if (!fdl_kiln_str_eq(json_object_get(*req, "schema"), FDL_KILN_REQUEST_SCHEMA))
    s = fdl_fail(c->err, FDL_INVALID, "%s: %s: %s is not a " FDL_KILN_REQUEST_SCHEMA, c->name,
                 jpath, json_string_value(rel));
  if (s == FDL_OK) {
    fdl_kiln_ctx n = {json_string_value(rel), c->err, c->refs};
    s = fdl_kiln_check_doc_ctx(&n, *req, res);
    if (s != FDL_OK) fdl_err_prefix(c->err, "%s: %s", c->name, jpath);
  }
  if (s != FDL_OK) {
    json_decref(*req);
    *req = NULL;
  }
  return s;
}

/* Loads the result record a record names at jpath, which must have one of the schemas, and
 * checks it in full under the same root; a record already in the chain is a loop. */
static fdl_status load_record(const fdl_kiln_ctx *c, const char *jpath, const json_t *rel,
                              const char *const *schemas, size_t nschemas, json_t **doc,
                              fdl_kiln_checked *res) {
  char *real = NULL, *text = NULL;
  size_t len = 0;
  *doc = NULL;
  fdl_kiln_refs *refs = c->refs;
  fdl_status s = fdl_kiln_read_ref(c, jpath, rel, "oracle result", FDL_KILN_RESULT_MAX_BYTES, &real,
                                   &text, &len);
  const char *r = json_string_value(rel);
  for (size_t i = 0; s == FDL_OK && i < refs->depth; i++)
    if (strcmp(real, refs->chain[i]) == 0)
      s = fdl_fail(c->err, FDL_INVALID,
                   "%s: %s: reference loop: %s is %s, which is already being checked", c->name,
                   jpath, r, real);
  if (s == FDL_OK && refs->depth >= FDL_KILN_MAX_REF_DEPTH)
    s = fdl_fail(c->err, FDL_INVALID, "%s: %s: references nest deeper than %d records", c->name,
                 jpath, FDL_KILN_MAX_REF_DEPTH);
  if (s == FDL_OK) s = parse_ref(c, jpath, "oracle result", r, text, len, doc);
  free(text);
  if (s == FDL_OK) {
    bool known = false;
    for (size_t i = 0; i < nschemas && !known; i++)
      known = fdl_kiln_str_eq(json_object_get(*doc, "schema"), schemas[i]);
    if (!known)
      s = fdl_fail(c->err, FDL_INVALID, "%s: %s: %s is not a %s", c->name, jpath, r,
                   nschemas == 1 ? schemas[0] : "Kiln oracle result (v1 or v2)");
  }
  if (s == FDL_OK) {
    refs->chain[refs->depth++] = real;
    fdl_kiln_ctx n = {r, c->err, refs};
    s = fdl_kiln_check_doc_ctx(&n, *doc, res);
    refs->depth--;
    if (s != FDL_OK) fdl_err_prefix(c->err, "%s: %s", c->name, jpath);
  }
  free(real);
  if (s != FDL_OK) {
    json_decref(*doc);
    *doc = NULL;
  }
  return s;
}

#define ORACLE_V1 "kiln.rocm-hf-next-token-oracle.v1"
#define ORACLE_V2 "kiln.rocm-hf-next-token-oracle.v2"

/* The request's identity as a JSON string, for binding. */
static json_t *ident_of(const fdl_kiln_checked *res) {
  return json_string(res->identity);
}

/* §14.1 steps 2, 4, 5: the request's id, identity, source and model identity, and the HF
 * evidence's request id, request sha, input sha and candidates. */
fdl_status fdl_kiln_refs_oracle(const fdl_kiln_ctx *c, const json_t *doc) {
  const json_t *rq = json_object_get(doc, "request"), *o = json_object_get(doc, "oracle");
  json_t *req = NULL;
  fdl_kiln_checked res;
  fdl_status s =
      load_request(c, "$.request.contract_path", json_object_get(rq, "contract_path"), &req, &res);
  if (s != FDL_OK) return s;
  json_t *ident = ident_of(&res);
  const json_t *id = json_object_get(req, "id");
  const kiln_binding binds[] = {
      {"$.request.id", json_object_get(rq, "id"), id, "the request's id"},
      {"$.request.sha256", json_object_get(rq, "sha256"), ident,
       "the request's canonical identity"},
      {"$.request.source", json_object_get(rq, "source"), json_object_get(req, "source"),
       "the request's source"},
      {"$.model_identity", json_object_get(doc, "model_identity"),
       json_object_get(req, "model_identity"), "the request's model_identity"},
      {"$.oracle.request_id", json_object_get(o, "request_id"), id, "the request's id"},
      {"$.oracle.request_sha256", json_object_get(o, "request_sha256"), ident,
       "the request's canonical identity"},
      {"$.oracle.input_token_ids_sha256", json_object_get(o, "input_token_ids_sha256"),
       json_object_get(req, "input_token_ids_sha256"), "the request's input_token_ids_sha256"}};
  s = ident ? bind_all(c, binds, sizeof binds / sizeof *binds)
            : fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  static const char *const keys[] = {"engine", "text", "token_id"};
  for (size_t i = 0; i < 2 && !s; i++)
    for (size_t k = 0; k < 3 && !s; k++) {
      char p[96];
      snprintf(p, sizeof p, "$.oracle.candidate_tokens[%zu].%s", i, keys[k]);
      s = fdl_kiln_bind(
          c, p, json_object_get(json_array_get(json_object_get(o, "candidate_tokens"), i), keys[k]),
          json_object_get(json_array_get(json_object_get(req, "candidates"), i), keys[k]),
          "the request's candidate");
    }
  json_decref(ident);
  json_decref(req);
  return s;
}

/* The request a path or layer result names ($.request {path, sha256}) with the bindings both
 * share: the identity, the model identity, the worker's request id and input sha. */
static fdl_status bind_request(const fdl_kiln_ctx *c, const json_t *doc, json_t **req,
                               json_t **ident) {
  const json_t *rq = json_object_get(doc, "request"), *w = json_object_get(doc, "worker");
  fdl_kiln_checked res;
  *ident = NULL;
  fdl_status s = load_request(c, "$.request.path", json_object_get(rq, "path"), req, &res);
  if (s != FDL_OK) return s;
  if (!(*ident = ident_of(&res))) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  const kiln_binding binds[] = {
      {"$.request.sha256", json_object_get(rq, "sha256"), *ident,
       "the request's canonical identity"},
      {"$.model_identity", json_object_get(doc, "model_identity"),
       json_object_get(*req, "model_identity"), "the request's model_identity"},
      {"$.worker.request_id", json_object_get(w, "request_id"), json_object_get(*req, "id"),
       "the request's id"},
      {"$.worker.input_token_ids_sha256", json_object_get(w, "input_token_ids_sha256"),
       json_object_get(*req, "input_token_ids_sha256"), "the request's input_token_ids_sha256"}};
  return bind_all(c, binds, sizeof binds / sizeof *binds);
}

/* §14.2 steps 4-6. v2 accepts only a v2 oracle (Kiln's v2 checker runs the v2 oracle validator);
 * v1 accepts either, as the retained v1 path result names a v1 oracle. */
static fdl_status refs_path(const fdl_kiln_ctx *c, const json_t *doc, bool v2) {
  const json_t *w = json_object_get(doc, "worker");
  json_t *req = NULL, *ident = NULL, *odoc = NULL;
  fdl_status s = bind_request(c, doc, &req, &ident);
  if (!s) {
    json_t *n = json_integer((json_int_t)json_array_size(json_object_get(req, "input_token_ids")));
    s = n ? fdl_kiln_bind(c, "$.worker.input_token_count", json_object_get(w, "input_token_count"),
                          n, "the length of the request's input_token_ids")
          : fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
    json_decref(n);
  }
  /* observed[:-1] must be the continuation ids: Kiln's 4 observed tokens are the argmax after
   * the prompt and after each forced continuation token. */
  json_t *cont = json_array();
  const json_t *cp = json_object_get(req, "continuation_prefix");
  for (size_t i = 0; cont && !s && i < json_array_size(cp); i++)
    json_array_append(cont, json_object_get(json_array_get(cp, i), "token_id"));
  if (!cont && !s) s = fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  for (size_t i = 0; i < 4 && !s; i++) {
    const fdl_kiln_v2_path *p = &fdl_kiln_v2_paths[i];
    const json_t *e = json_object_get(w, p->name);
    const json_t *obs = json_object_get(e, "observed_next_tokens");
    char jp[128];
    snprintf(jp, sizeof jp, "$.worker.%s.observed_next_tokens", p->name);
    json_t *head = json_array();
    for (size_t k = 0; head && k + 1 < json_array_size(obs); k++)
      json_array_append(head, json_array_get(obs, k));
    s = head ? fdl_kiln_bind(c, jp, head, cont,
                             "without its last token, the request's continuation_prefix ids")
             : fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
    json_decref(head);
    for (size_t j = 0; j < 2 && !s && p->full; j++) {
      snprintf(jp, sizeof jp, "$.worker.%s.comparison.candidate_tokens[%zu].token_id", p->name, j);
      s = fdl_kiln_bind(
          c, jp,
          json_object_get(
              json_array_get(json_object_get(json_object_get(e, "comparison"), "candidate_tokens"),
                             j),
              "token_id"),
          json_object_get(json_array_get(json_object_get(req, "candidates"), j), "token_id"),
          "the request's candidate token id");
    }
  }
  json_decref(cont);
  const json_t *orf = json_object_get(doc, "oracle_reference");
  static const char *const oracles[] = {ORACLE_V2, ORACLE_V1};
  fdl_kiln_checked ores;
  if (!s)
    s = load_record(c, "$.oracle_reference.oracle_result_path",
                    json_object_get(orf, "oracle_result_path"), oracles, v2 ? 1 : 2, &odoc, &ores);
  const json_t *ra = json_object_get(odoc, "reference_artifact"),
               *orq = json_object_get(odoc, "request");
  const kiln_binding binds[] = {
      {"$.oracle_reference.oracle_result_sha256", json_object_get(orf, "oracle_result_sha256"),
       json_object_get(odoc, "result_sha256"), "the oracle result's result_sha256"},
      {"$.oracle_reference.raw_sha256", json_object_get(orf, "raw_sha256"),
       json_object_get(ra, "sha256"), "the oracle's reference_artifact.sha256"},
      {"$.oracle_reference.bytes", json_object_get(orf, "bytes"), json_object_get(ra, "bytes"),
       "the oracle's reference_artifact.bytes"},
      {"$.worker.hf_argmax", json_object_get(w, "hf_argmax"),
       json_object_get(json_object_get(odoc, "oracle"), "argmax"), "the oracle's HF argmax"},
      {"$.oracle_reference.oracle_result_path (its request.id)", json_object_get(orq, "id"),
       json_object_get(req, "id"), "this record's request id"},
      {"$.oracle_reference.oracle_result_path (its request.sha256)", json_object_get(orq, "sha256"),
       ident, "this record's request identity"}};
  if (!s) s = bind_all(c, binds, sizeof binds / sizeof *binds);
  json_decref(odoc);
  json_decref(ident);
  json_decref(req);
  return s;
}

fdl_status fdl_kiln_refs_path_v1(const fdl_kiln_ctx *c, const json_t *doc) {
  return refs_path(c, doc, false);
}

fdl_status fdl_kiln_refs_path_v2(const fdl_kiln_ctx *c, const json_t *doc) {
  return refs_path(c, doc, true);
}

/* §14.3 steps 3-4: the request, and the HF layer evidence's request id, sha and input sha. */
fdl_status fdl_kiln_refs_layer(const fdl_kiln_ctx *c, const json_t *doc) {
  json_t *req = NULL, *ident = NULL;
  fdl_status s = bind_request(c, doc, &req, &ident);
  const json_t *ev = json_object_get(json_object_get(doc, "reference"), "evidence");
  const kiln_binding binds[] = {
      {"$.reference.evidence.request_id", json_object_get(ev, "request_id"),
       json_object_get(req, "id"), "the request's id"},
      {"$.reference.evidence.request_sha256", json_object_get(ev, "request_sha256"), ident,
       "the request's canonical identity"},
      {"$.reference.evidence.input_token_ids_sha256", json_object_get(ev, "input_token_ids_sha256"),
       json_object_get(req, "input_token_ids_sha256"), "the request's input_token_ids_sha256"}};
  if (!s) s = bind_all(c, binds, sizeof binds / sizeof *binds);
  json_decref(ident);
  json_decref(req);
  return s;
}
