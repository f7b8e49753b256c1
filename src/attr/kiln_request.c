/* kiln_request.c - the kiln.hf-next-token-request.v1 rules (KILN-ATTRIBUTION.md §5) and the model
 * identity every record carries (§6), as tables; the hashes and the cross-field rules as C. */
#include <stdio.h>
#include <string.h>

#include "attr/kiln_check.h"
#include "json/get.h"
#include "fidelis/kiln.h"

/* A request's source (§5): {source_commit (40 hex), kiln_receipt, vllm_receipt}. */
static const fdl_schema_field RECEIPT_REF_F[] = {
    FDL_KF_PAT("path", 0, &fdl_kiln_norm_rel_pattern,
               "expected a nonempty normalised relative POSIX path without \"..\""),
    FDL_KF_SHA("file_sha256"), FDL_KF_SHA("content_sha256")};
static const fdl_schema_obj RECEIPT_REF =
    FDL_SCHEMA_CLOSED(RECEIPT_REF_F, "path", "file_sha256", "content_sha256");
static const fdl_schema_field SOURCE_PAIR_F[] = {FDL_KF_HEX40("source_commit"),
                                                 FDL_KF_OBJ("kiln_receipt", &RECEIPT_REF),
                                                 FDL_KF_OBJ("vllm_receipt", &RECEIPT_REF)};
const fdl_schema_obj fdl_kiln_schema_source_pair =
    FDL_SCHEMA_CLOSED(SOURCE_PAIR_F, "source_commit", "kiln_receipt", "vllm_receipt");

/* ---- the model identity (§6) ----------------------------------------------------------------- */

static bool weight_path_ok(const char *s, size_t n) {
  return n && s[0] != '/' && !fdl_kiln_has_dotdot(s);
}
static const fdl_schema_pattern WEIGHT_PATH = {weight_path_ok, NULL};
static const fdl_schema_field WEIGHT_FILE_F[] = {
    FDL_KF_PAT("path", FDL_SCHEMA_KEYMSG, &WEIGHT_PATH,
               "expected a nonempty relative path without \"..\""),
    FDL_KF("bytes", FDL_SCHEMA_INT, FDL_SCHEMA_KEYMSG, 1, 0, "expected an integer greater than 0"),
    FDL_KF_SHA("sha256")};
static const fdl_schema_obj WEIGHT_FILE =
    FDL_SCHEMA_CLOSED(WEIGHT_FILE_F, "path", "bytes", "sha256");

/* Each weight file, and their paths sorted by code point without duplicates. */
static void weight_files(fdl_schema_run *r, const fdl_schema_field *f, const json_t *w,
                         const char *path) {
  (void)f;
  if (!json_is_array(w) || !json_array_size(w)) {
    fdl_schema_bad(r, path, "expected a nonempty array");
    return;
  }
  for (size_t i = 0; i < json_array_size(w) && !r->stop; i++) {
    char p[FDL_SCHEMA_PATH_CAP];
    snprintf(p, sizeof p, "%s[%zu]", path, i);
    fdl_schema_check(r, json_array_get(w, i), p, &WEIGHT_FILE);
    if (r->stop || !i) continue;
    const json_t *a = json_object_get(json_array_get(w, i - 1), "path"),
                 *b = json_object_get(json_array_get(w, i), "path");
    size_t an = json_string_length(a), bn = json_string_length(b);
    int cmp = memcmp(json_string_value(a), json_string_value(b), an < bn ? an : bn);
    if (cmp > 0 || (cmp == 0 && an >= bn))
      fdl_schema_bad(r, p, "path: weight files must be sorted by code point, without duplicates");
  }
}

/* content_sha256 = canonical hash of the identity without content_sha256 (§6). */
static void identity_hash(fdl_schema_run *r, const fdl_schema_field *f, const json_t *m,
                          const char *path) {
  (void)f;
  const fdl_kiln_ctx *c = r->user;
  json_t *body = json_copy((json_t *)m);
  if (!body) {
    fdl_kiln_rule(r, fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name));
    return;
  }
  json_object_del(body, "content_sha256");
  char want[FDL_SEAL_BUF];
  fdl_status s = fdl_kiln_canonical_sha256(body, want, c->err);
  json_decref(body);
  const char *stored = json_string_value(json_object_get(m, "content_sha256"));
  if (s == FDL_OK && strcmp(want, stored) != 0)
    s = fdl_fail(c->err, FDL_MISMATCH, "%s: %s.content_sha256: stored %s, recomputed %s", c->name,
                 path, stored, want);
  fdl_kiln_rule(r, s);
}

static const fdl_schema_field IDENTITY_F[] = {FDL_KF_NONEMPTY("id"),
                                              FDL_KF_SHA("content_sha256"),
                                              FDL_KF_SHA("config_hash"),
                                              FDL_KF_SHA("tokenizer_hash"),
                                              FDL_KF_SHA("chat_template_hash"),
                                              FDL_KF_RULE("weight_files", weight_files),
                                              FDL_KF_RULE(NULL, identity_hash)};
const fdl_schema_obj fdl_kiln_schema_model_identity =
    FDL_SCHEMA_CLOSED(IDENTITY_F, "id", "content_sha256", "config_hash", "tokenizer_hash",
                      "chat_template_hash", "weight_files");

/* ---- the prompt ------------------------------------------------------------------------------ */

static const fdl_schema_field GENERATOR_F[] = {
    FDL_KF_NONEMPTY("run_id"), FDL_KF_NONEMPTY("phase"),
    FDL_KF("request_index", FDL_SCHEMA_NUM, FDL_SCHEMA_MIN | FDL_SCHEMA_MAX, 0, 0, "expected 0"),
    FDL_KF_CONST("profile", "short"),
    FDL_KF_CONST("template_version", "fixed-serving-profiles-v1")};
static const fdl_schema_obj GENERATOR = FDL_SCHEMA_CLOSED(
    GENERATOR_F, "run_id", "phase", "request_index", "profile", "template_version");
static const fdl_schema_field KWARGS_F[] = {FDL_KF_FALSE("enable_thinking")};
static const fdl_schema_obj KWARGS = FDL_SCHEMA_CLOSED(KWARGS_F, "enable_thinking");
static const fdl_schema_field MESSAGE_F[] = {FDL_KF_CONST("role", "user"),
                                             FDL_KF_NONEMPTY("content")};
static const fdl_schema_obj MESSAGE = FDL_SCHEMA_CLOSED(MESSAGE_F, "role", "content");
static const fdl_schema_field MESSAGE_ITEM = FDL_KF_OBJ(NULL, &MESSAGE);

/* utf8_sha256 is the SHA-256 of messages[0].content's UTF-8 bytes. */
static void utf8_hash(fdl_schema_run *r, const fdl_schema_field *f, const json_t *p,
                      const char *path) {
  (void)f, (void)path;
  const fdl_kiln_ctx *c = r->user;
  const json_t *content =
      json_object_get(json_array_get(json_object_get(p, "messages"), 0), "content");
  const char *stored = json_string_value(json_object_get(p, "utf8_sha256"));
  char hex[FDL_SHA256_HEX_BUF];
  fdl_status s =
      fdl_sha256_buf_hex(json_string_value(content), json_string_length(content), hex, c->err);
  if (s == FDL_OK && strcmp(stored + 7, hex) != 0)
    s = fdl_fail(c->err, FDL_MISMATCH,
                 "%s: $.prompt.utf8_sha256: stored %s, but the UTF-8 bytes of "
                 "messages[0].content hash to sha256:%s",
                 c->name, stored, hex);
  fdl_kiln_rule(r, s);
}

static void token_count(fdl_schema_run *r, const fdl_schema_field *f, const json_t *p,
                        const char *path) {
  (void)f, (void)path;
  const json_t *tc = json_object_get(p, "token_count");
  size_t n = json_array_size(json_object_get(p, "token_ids"));
  if (!json_is_integer(tc) || (size_t)json_integer_value(tc) != n)
    fdl_schema_bad(r, "$.prompt.token_count", "expected an integer equal to len(token_ids) = %zu",
                   n);
}

static const fdl_schema_field PROMPT_F[] = {
    FDL_KF_OBJ("generator", &GENERATOR),
    FDL_KF_TRUE("add_generation_prompt"),
    FDL_KF_OBJ("template_kwargs", &KWARGS),
    FDL_KF_ARR("messages", 1, 1, &MESSAGE_ITEM, "expected exactly one message"),
    FDL_KF_SHA("utf8_sha256"),
    FDL_KF_RULE(NULL, utf8_hash),
    FDL_KF_TOKENS("token_ids", 1, FDL_KILN_MAX_INPUT),
    FDL_KF_RULE(NULL, token_count)};
static const fdl_schema_obj PROMPT =
    FDL_SCHEMA_CLOSED(PROMPT_F, "generator", "messages", "add_generation_prompt", "template_kwargs",
                      "utf8_sha256", "token_count", "token_ids");

/* ---- the request ----------------------------------------------------------------------------- */

/* [a-z0-9][a-z0-9._-]{2,127} */
static bool request_id_ok(const char *v, size_t n) {
  bool ok = n >= 3 && n <= 128 && strlen(v) == n;
  for (size_t i = 0; ok && i < n; i++) {
    char ch = v[i];
    bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
    ok = alnum || (i > 0 && (ch == '.' || ch == '_' || ch == '-'));
  }
  return ok;
}
static const fdl_schema_pattern REQUEST_ID = {request_id_ok, NULL};

static const fdl_schema_field PREFIX_F[] = {FDL_KF_TOKEN("token_id"), FDL_KF_STRING("text")};
static const fdl_schema_obj PREFIX = FDL_SCHEMA_CLOSED(PREFIX_F, "token_id", "text");
static const fdl_schema_field PREFIX_ITEM = FDL_KF_OBJ(NULL, &PREFIX);

/* input_token_ids is prompt.token_ids followed by the prefix's ids. */
static void input_ids(fdl_schema_run *r, const fdl_schema_field *f, const json_t *q,
                      const char *path) {
  (void)f, (void)path;
  const json_t *in = json_object_get(q, "input_token_ids"),
               *pids = json_object_get(json_object_get(q, "prompt"), "token_ids"),
               *cp = json_object_get(q, "continuation_prefix");
  size_t np = json_array_size(pids), nc = json_array_size(cp);
  bool eq = json_array_size(in) == np + nc;
  for (size_t i = 0; eq && i < np + nc; i++) {
    const json_t *want =
        i < np ? json_array_get(pids, i) : json_object_get(json_array_get(cp, i - np), "token_id");
    eq = json_integer_value(json_array_get(in, i)) == json_integer_value(want);
  }
  if (!eq)
    fdl_schema_bad(
        r, "$.input_token_ids",
        "expected prompt.token_ids followed by the continuation_prefix token ids (%zu ids)",
        np + nc);
}

static void input_hash(fdl_schema_run *r, const fdl_schema_field *f, const json_t *q,
                       const char *path) {
  (void)f, (void)path;
  const fdl_kiln_ctx *c = r->user;
  const char *stored = json_string_value(json_object_get(q, "input_token_ids_sha256"));
  char h[FDL_SEAL_BUF];
  fdl_status s = fdl_kiln_canonical_sha256(json_object_get(q, "input_token_ids"), h, c->err);
  if (s == FDL_OK && strcmp(h, stored) != 0)
    s = fdl_fail(c->err, FDL_MISMATCH, "%s: $.input_token_ids_sha256: stored %s, recomputed %s",
                 c->name, stored, h);
  fdl_kiln_rule(r, s);
}

#define CANDIDATE_F(engine)                                                                        \
  {                                                                                                \
    FDL_KF_ONE("engine", 0, engine,                                                                \
               "expected \"" engine "\" (the engines are [\"kiln\",\"vllm\"] in order)"),          \
        FDL_KF_TOKEN("token_id"), FDL_KF_STRING("text")                                            \
  }
static const fdl_schema_field KILN_F[] = CANDIDATE_F("kiln"), VLLM_F[] = CANDIDATE_F("vllm");
static const fdl_schema_obj CANDIDATES[2] = {
    FDL_SCHEMA_CLOSED(KILN_F, "engine", "token_id", "text"),
    FDL_SCHEMA_CLOSED(VLLM_F, "engine", "token_id", "text")};

/* The two candidates' tokens differ. */
static void distinct(fdl_schema_run *r, const fdl_schema_field *f, const json_t *q,
                     const char *path) {
  (void)f, (void)path;
  const json_t *cands = json_object_get(q, "candidates");
  if (json_integer_value(json_object_get(json_array_get(cands, 0), "token_id")) ==
      json_integer_value(json_object_get(json_array_get(cands, 1), "token_id")))
    fdl_schema_bad(r, "$.candidates[1].token_id",
                   "expected a token id different from the kiln candidate's");
}

static const fdl_schema_field REQUEST_F[] = {
    FDL_KF_PAT("id", 0, &REQUEST_ID, "expected a string matching [a-z0-9][a-z0-9._-]{2,127}"),
    FDL_KF_OBJ("source", &fdl_kiln_schema_source_pair),
    FDL_KF_OBJ("model_identity", &fdl_kiln_schema_model_identity),
    FDL_KF_OBJ("prompt", &PROMPT),
    FDL_KF_ARR("continuation_prefix", 1, FDL_KILN_MAX_PREFIX, &PREFIX_ITEM,
               "expected %lld..%lld tokens"),
    FDL_KF_TOKENS("input_token_ids", 1, FDL_KILN_MAX_INPUT),
    FDL_KF_RULE(NULL, input_ids),
    FDL_KF_SHA("input_token_ids_sha256"),
    FDL_KF_RULE(NULL, input_hash),
    FDL_KF_CANDIDATES("candidates", &CANDIDATES[0], &CANDIDATES[1]),
    FDL_KF_RULE(NULL, distinct)};
static const fdl_schema_obj REQUEST = FDL_SCHEMA_CLOSED(
    REQUEST_F, "schema", "id", "source", "model_identity", "prompt", "continuation_prefix",
    "input_token_ids", "input_token_ids_sha256", "candidates");

fdl_status fdl_kiln_check_request(const fdl_kiln_ctx *c, const json_t *r) {
  return fdl_kiln_walk(c, r, "$", &REQUEST);
}

fdl_status fdl_kiln_request_read(const json_t *doc, fdl_kiln_request *rq, fdl_err *err) {
  fdl_kiln_checked chk;
  fdl_status s = fdl_kiln_check_doc(doc, "request", &chk, err);
  if (s != FDL_OK) return s;
  if (strcmp(chk.schema, FDL_KILN_REQUEST_SCHEMA) != 0)
    return fdl_fail(err, FDL_REFUSED, "request: schema %s, expected %s", chk.schema,
                    FDL_KILN_REQUEST_SCHEMA);
  fdl_kiln_request_decode(doc, &chk, rq);
  return FDL_OK;
}

void fdl_kiln_request_decode(const json_t *doc, const fdl_kiln_checked *chk, fdl_kiln_request *rq) {
  memcpy(rq->identity, chk->identity, sizeof rq->identity);
  rq->id = json_string_value(json_object_get(doc, "id"));
  rq->input_token_ids_sha256 = json_string_value(json_object_get(doc, "input_token_ids_sha256"));
  const json_t *in = json_object_get(doc, "input_token_ids");
  rq->input_count = json_array_size(in);
  for (size_t i = 0; i < rq->input_count; i++)
    rq->input[i] = (uint32_t)json_integer_value(json_array_get(in, i));
  rq->prompt_count = json_array_size(fdl_json_path(doc, "prompt.token_ids"));
  const json_t *cands = json_object_get(doc, "candidates"),
               *cp = json_object_get(doc, "continuation_prefix");
  for (size_t i = 0; i < 2; i++)
    rq->candidates[i] =
        (uint32_t)json_integer_value(json_object_get(json_array_get(cands, i), "token_id"));
  rq->nprefix = json_array_size(cp);
  for (size_t i = 0; i < rq->nprefix; i++)
    rq->prefix[i] =
        (uint32_t)json_integer_value(json_object_get(json_array_get(cp, i), "token_id"));
  rq->model_identity = json_object_get(doc, "model_identity");
}
