/* attr/kiln_check.h - the Kiln checker's shared walker (kiln*.c only, not installed): a context
 * that names the file, messages that name the JSON path, and the rules more than one record kind
 * uses (KILN-ATTRIBUTION.md §1, §5, §6, §8, §10, §14). */
#ifndef FIDELIS_ATTR_KILN_CHECK_H
#define FIDELIS_ATTR_KILN_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <jansson.h>

#include "fidelis/digest.h"
#include "fidelis/kiln.h"
#include "fidelis/status.h"
#include "json/schema.h"
#include "attr/kiln_json.h"

/* Records a check is inside, outermost first: a path result names an oracle result, which names
 * a request, which names two receipts. Only result records enter the chain (requests and receipts
 * name no record), so it stays short; a record met again is a loop. */
#define FDL_KILN_MAX_REF_DEPTH 4
/* A receipt (kiln.serving-benchmark.v1) is ~20 KiB; a result record is at most a few hundred. */
#define FDL_KILN_RECEIPT_MAX_BYTES (16u * 1024u * 1024u)
#define FDL_KILN_RESULT_MAX_BYTES (16u * 1024u * 1024u)

typedef struct {
  const char *root; /* the repository root, resolved (realpath) */
  size_t depth;
  const char *chain[FDL_KILN_MAX_REF_DEPTH]; /* resolved paths of the records being checked */
} fdl_kiln_refs;

typedef struct {
  const char *name; /* the file, as messages show it */
  fdl_err *err;
  fdl_kiln_refs *refs; /* NULL: no root, so the rules that need another file are skipped */
} fdl_kiln_ctx;

/* FDL_INVALID "NAME: PATH: message". */
fdl_status fdl_kiln_bad(const fdl_kiln_ctx *c, const char *path, const char *fmt, ...)
    FDL_PRINTF(3, 4);

/* Kiln's tables (json/schema.h, first-violation dialect): o at path against t, stopping at the
 * first violation, reported as fdl_kiln_bad does. A rule reads the context as r->user. */
fdl_status fdl_kiln_walk(const fdl_kiln_ctx *c, const json_t *o, const char *path,
                         const fdl_schema_obj *t);
/* A rule's status: stops the walk unless FDL_OK. */
static inline void fdl_kiln_rule(fdl_schema_run *r, fdl_status s) {
  if (s != FDL_OK) fdl_schema_stop(r, s);
}
extern const fdl_schema_pattern fdl_kiln_sha_pattern, fdl_kiln_hex40_pattern,
    fdl_kiln_repo_rel_pattern, fdl_kiln_norm_rel_pattern;
/* Kiln's fields, each with the words its violation says (positional: key, type, flags, pattern,
 * vals, min, max, items, msg). */
#define FDL_KF(k, t, fl, lo, hi, m) FDL_SF_P(k, t, fl, NULL, NULL, lo, hi, NULL, m)
#define FDL_KF_PAT(k, fl, pat, m) FDL_SF_P(k, FDL_SCHEMA_STR, fl, pat, NULL, 0, 0, NULL, m)
#define FDL_KF_ARR(k, lo, hi, it, m) FDL_SF_P(k, FDL_SCHEMA_ARR, 0, NULL, NULL, lo, hi, it, m)
/* Exactly the kiln and the vllm candidate, in order, as tables kiln and vllm. */
#define FDL_KF_CANDIDATES(k, kiln, vllm)                                                           \
  FDL_SF_P(k, FDL_SCHEMA_ARR, FDL_SCHEMA_TUPLE, NULL, NULL, 2, 2,                                  \
           ((const fdl_schema_field[]){FDL_KF_OBJ(NULL, kiln), FDL_KF_OBJ(NULL, vllm)}),           \
           "expected exactly 2 candidates")
#define FDL_KF_ONE(k, fl, s, m)                                                                    \
  FDL_SF_P(k, FDL_SCHEMA_ENUM, fl, NULL, ((const char *const[]){s, NULL}), 0, 0, NULL, m)
#define FDL_KF_CONST(k, s) FDL_KF_ONE(k, 0, s, "expected \"" s "\"")
#define FDL_KF_SHA(k)                                                                              \
  FDL_KF_PAT(k, 0, &fdl_kiln_sha_pattern, "expected \"sha256:\" and 64 lowercase hex digits")
#define FDL_KF_HEX40(k)                                                                            \
  FDL_KF_PAT(k, 0, &fdl_kiln_hex40_pattern, "expected 40 lowercase hex digits")
#define FDL_KF_REL(k)                                                                              \
  FDL_KF_PAT(k, 0, &fdl_kiln_repo_rel_pattern,                                                     \
             "expected a nonempty repo-relative path, not absolute, without \"..\"")
#define FDL_KF_NONEMPTY(k) FDL_KF_PAT(k, FDL_SCHEMA_MIN1, NULL, "expected a nonempty string")
#define FDL_KF_STRING(k) FDL_KF_PAT(k, 0, NULL, "expected a string")
#define FDL_KF_TRUE(k) FDL_KF(k, FDL_SCHEMA_TRUE, 0, 0, 0, "expected true")
#define FDL_KF_FALSE(k) FDL_KF(k, FDL_SCHEMA_FALSE, 0, 0, 0, "expected false")
#define FDL_KF_BOOL(k) FDL_KF(k, FDL_SCHEMA_BOOL, 0, 0, 0, "expected a bool")
#define FDL_KF_INT(k, lo, hi, m) FDL_KF(k, FDL_SCHEMA_INT, FDL_SCHEMA_MAX, lo, hi, m)
#define FDL_KF_INT_MIN(k, lo) FDL_KF(k, FDL_SCHEMA_INT, 0, lo, 0, "expected an integer >= %lld")
#define FDL_KF_TOKEN(k)                                                                            \
  FDL_KF_INT(k, 0, FDL_KILN_VOCAB_SIZE - 1, "expected a token id, an integer in %lld..%lld")
#define FDL_KF_POSITIVE(k)                                                                         \
  FDL_KF(k, FDL_SCHEMA_NUM, FDL_SCHEMA_XMIN, 0, 0, "expected a finite number > 0")
/* A candidate's entries, named in its object's message ("logit: expected ..."). */
#define FDL_KF_ENGINE(e)                                                                           \
  FDL_KF_ONE("engine", FDL_SCHEMA_KEYMSG, e, "expected \"" e "\" (request order kiln, vllm)")
#define FDL_KF_LOGIT                                                                               \
  FDL_KF("logit", FDL_SCHEMA_NUM, FDL_SCHEMA_KEYMSG, 0, 0, "expected a finite number")
#define FDL_KF_RANK                                                                                \
  FDL_KF("rank", FDL_SCHEMA_INT, FDL_SCHEMA_KEYMSG | FDL_SCHEMA_MAX, 1, FDL_KILN_VOCAB_SIZE,       \
         "expected an integer in %lld..%lld")
#define FDL_KF_TOKEN_ID                                                                            \
  FDL_KF("token_id", FDL_SCHEMA_INT, FDL_SCHEMA_KEYMSG | FDL_SCHEMA_MAX, 0,                        \
         FDL_KILN_VOCAB_SIZE - 1, "expected a token id")
#define FDL_KF_OBJ(k, t) FDL_SF_OBJ(k, 0, t)
/* A rule at its place in the order: over the field k's value, or over the object (k NULL). */
#define FDL_KF_RULE(k, fn) FDL_SF_RULE(k, 0, fn)
/* An array of lo..hi token ids (kiln.c words its violations). */
#define FDL_KF_TOKENS(k, lo, hi)                                                                   \
  FDL_SF_FULL(k, FDL_SCHEMA_RULE, 0, NULL, NULL, lo, hi, NULL, NULL, fdl_kiln_tokens_rule, NULL)
void fdl_kiln_tokens_rule(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                          const char *path);
/* The tables more than one kind uses (kiln_prov.c, kiln_request.c). */
extern const fdl_schema_obj fdl_kiln_schema_process, fdl_kiln_schema_arm_process,
    fdl_kiln_schema_arm_service, fdl_kiln_schema_v2_common, fdl_kiln_schema_binary_request,
    fdl_kiln_schema_source_pair, fdl_kiln_schema_model_identity;

/* Kiln's "int, not bool" (§1) is json_is_integer (jansson never reads a bool as an integer), a
 * number's value json_number_value. v is the string want, its whole length: */
static inline bool fdl_kiln_str_eq(const json_t *v, const char *want) {
  return json_is_string(v) && json_string_length(v) == strlen(want) &&
         strcmp(json_string_value(v), want) == 0;
}

static inline bool fdl_kiln_finite_num(const json_t *v) {
  if (json_is_integer(v)) return true;
  return json_is_real(v) && isfinite(json_real_value(v));
}

/* A ".." component anywhere ("..", "../a", "a/..", "a/../b"); "a..b" is a plain name. */
bool fdl_kiln_has_dotdot(const char *s);

/* ---- the request (kiln_request.c, §5, §6) ---------------------------------------------------- */
fdl_status fdl_kiln_check_request(const fdl_kiln_ctx *c, const json_t *r);

/* ---- the record kinds ------------------------------------------------------------------------ */
/* kiln_oracle.c: the HF evidence of a layer result (§8 and §14.3's four boundary keys); the model
 * fingerprint's python_sha256 is the implementation's. */
extern const fdl_schema_obj fdl_kiln_schema_hf_layer;
void fdl_kiln_same_python(fdl_schema_run *r, const fdl_schema_field *f, const json_t *doc,
                          const char *path);
fdl_status fdl_kiln_check_oracle_v1(const fdl_kiln_ctx *c, const json_t *doc);
/* The result kinds checked by a table alone (kiln_oracle.c, kiln_path.c, kiln_layer.c). */
extern const fdl_schema_obj fdl_kiln_schema_oracle_v2, fdl_kiln_schema_path_v1,
    fdl_kiln_schema_path_v2, fdl_kiln_schema_layer_v1, fdl_kiln_schema_layer_v2;
/* kiln_path.c */
/* 4 token ids starting with the continuation prefix (a rule). */
void fdl_kiln_observed(fdl_schema_run *r, const fdl_schema_field *f, const json_t *obs,
                       const char *path);
fdl_status fdl_kiln_check_comparison(const fdl_kiln_ctx *c, const char *path, const json_t *cmp,
                                     json_int_t hf_argmax);
extern const fdl_schema_obj fdl_kiln_schema_graph;
/* kiln_refs.c: the rules that need another file under the root (§5's source receipts, §14.1-§14.3's
 * request and oracle bindings), by kind; each is called only with c->refs set. */
/* Reads the file a record names at field jpath (rel, a JSON string) under c->refs->root, as
 * Kiln's _path_from_repository and load_request do: nonempty, no NUL, not absolute, no "..",
 * resolving inside the root, a regular file and not a symbolic link, at most max bytes. what
 * ("request", "receipt") names it in messages. *real: the resolved path (free()); *text, *len:
 * the bytes (free()). */
fdl_status fdl_kiln_read_ref(const fdl_kiln_ctx *c, const char *jpath, const json_t *rel,
                             const char *what, size_t max, char **real, char **text, size_t *len);
/* A field bound to a value of another file, compared as Python's == (fdl_py_equal): FDL_MISMATCH
 * "NAME: JPATH: GOT, expected WANT (why)", both values shown as compact JSON. */
fdl_status fdl_kiln_bind(const fdl_kiln_ctx *c, const char *jpath, const json_t *got,
                         const json_t *want, const char *why);
fdl_status fdl_kiln_refs_request(const fdl_kiln_ctx *c, const json_t *req);
fdl_status fdl_kiln_refs_oracle(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_refs_path_v1(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_refs_path_v2(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_refs_layer(const fdl_kiln_ctx *c, const json_t *doc);
/* The dispatch of fdl_kiln_check_doc under an existing context (nested checks keep c->refs). */
fdl_status fdl_kiln_check_doc_ctx(const fdl_kiln_ctx *c, const json_t *doc, fdl_kiln_checked *res);
/* kiln_fidelis.c */
fdl_status fdl_kiln_check_fidelis_attr(const fdl_kiln_ctx *c, const json_t *doc);

/* A kiln.serving-benchmark.v1 receipt given alone: its seal and every rule that needs no
 * request (kiln_receipt.c). */
#define FDL_KILN_RECEIPT_SCHEMA "kiln.serving-benchmark.v1"
fdl_status fdl_kiln_check_receipt_alone(const fdl_kiln_ctx *c, const json_t *doc);

#endif
