/* attr/kiln_json.h - the calls of fidelis/kiln.h on parsed documents (json_t) and their input
 * structs, the private tier (docs/layers.tsv): jansson stays out of the installed headers;
 * fdl_kiln_check_file is the public door. */
#ifndef FIDELIS_KILN_JSON_H
#define FIDELIS_KILN_JSON_H

#include <jansson.h>

#include "fidelis/kiln.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "sha256:" + hex of SHA-256 over Python's
 * json.dumps(v, allow_nan=False, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
 * into out (FDL_SEAL_BUF bytes). The one canonical writer (fdl_json_dump, FDL_JSON_ASCII). */
fdl_status fdl_kiln_canonical_sha256(const json_t *v, char *out, fdl_err *err);

/* Checks one parsed Kiln document (read Kiln-strict) by its schema: a request (§5, without the
 * receipt files), a v1 oracle/path/layer result (§14.4: closed top-level keys, self-hash,
 * invariants, the largest growth recomputed), a v2 oracle, path or layer result (§14.1-§14.3 as
 * far as the record alone allows: closed keys, self-hash, provenance blocks, HF evidence, the
 * verdict, worker and graph rules, the attribution and the largest growth recomputed) or
 * fidelis' own
 * fidelis.path-attribution.v1
 * (record_sha256; the verdict, the attribution and the graph counters recomputed). Unknown schema:
 * FDL_UNSUPPORTED. A broken rule: FDL_MISMATCH (hash) or FDL_INVALID, the message naming `name` and
 * the JSON path. */
fdl_status fdl_kiln_check_doc(const json_t *doc, const char *name, fdl_kiln_checked *res,
                              fdl_err *err);

/* The same, handing back the parsed document in *doc (when doc is not NULL and it passes; the
 * caller decrefs it). */
fdl_status fdl_kiln_check_file_doc(const char *path, fdl_kiln_checked *res, json_t **doc,
                                   fdl_err *err);

/* A request (§5) that passed its check, as the writers use it; strings and model_identity are
 * borrowed from the tree. Token ids are below FDL_KILN_VOCAB_SIZE, so they fit uint32_t. */
typedef struct {
  char identity[FDL_SEAL_BUF]; /* canonical_sha256(request) */
  const char *id, *input_token_ids_sha256;
  size_t input_count;                   /* len(input_token_ids) */
  uint32_t input[FDL_KILN_MAX_INPUT];   /* input_token_ids */
  size_t prompt_count;                  /* len(prompt.token_ids) */
  uint32_t candidates[2];               /* the kiln, then the vllm candidate's token id */
  uint32_t prefix[FDL_KILN_MAX_PREFIX]; /* continuation_prefix token ids */
  size_t nprefix;
  const json_t *model_identity; /* copied verbatim into the records */
} fdl_kiln_request;

/* Checks doc as fdl_kiln_check_doc does (messages naming "request"), refuses another schema
 * (FDL_REFUSED), and decodes it into *rq. */
fdl_status fdl_kiln_request_read(const json_t *doc, fdl_kiln_request *rq, fdl_err *err);
/* Decodes a request that fdl_kiln_check_doc passed (chk: what it found) into *rq. */
void fdl_kiln_request_decode(const json_t *doc, const fdl_kiln_checked *chk, fdl_kiln_request *rq);

/* What the commands print of a record fidelis wrote (fidelis.path-attribution.v1, Kiln's path
 * or layer result v2), borrowed from the tree; a field the kind lacks is NULL or 0. */
typedef struct {
  const char *label, *path; /* the attribution's label and path (fidelis'), or worker.attribution */
  const char *sha256;       /* record_sha256 or result_sha256 */
  size_t growth_index;      /* a layer result's largest_relative_error_growth */
  const char *growth_name;
  double growth_delta;
} fdl_kiln_summary;
void fdl_kiln_summary_read(const json_t *rec, fdl_kiln_summary *sum);

/* How fdl_kiln_check_file_opts reads a record. */
typedef struct {
  /* The Kiln repository root the records' repo-relative paths resolve against. When set, a
   * request's source receipts are validated (§5), and an oracle, path or layer result (v1 or v2)
   * loads the request it names, validates it (receipts too) and binds every field §14.1-§14.3
   * lists; a path result also loads the oracle result of oracle_reference, checks it fully with
   * the same root and binds it (§14.2 step 6). A named file must be relative without "..",
   * resolve inside the root, and be a regular file, not a symbolic link. NULL: those rules are
   * skipped (fdl_kiln_checked.refs_checked false). */
  const char *root;
} fdl_kiln_check_opts;

/* fdl_kiln_check_file_doc with options (opts may be NULL). A referenced file that is missing, a
 * symlink, outside the root, too large or malformed, or that breaks a rule or a binding, fails
 * the record (FDL_INVALID, FDL_PATH, FDL_TOO_LARGE, FDL_MISMATCH...), the message naming the
 * record, its field, the referenced file and what is wrong there; FDL_IO only when an existing
 * file cannot be read. */
fdl_status fdl_kiln_check_file_opts(const char *path, const fdl_kiln_check_opts *opts,
                                    fdl_kiln_checked *res, json_t **doc, fdl_err *err);

/* Kiln's model_fingerprint recipe (§6) over directory dir: {id, content_sha256, config_hash,
 * tokenizer_hash, chat_template_hash, weight_files}. Symlinks anywhere are refused. */
fdl_status fdl_kiln_model_identity(const char *dir, const char *id, json_t **out, fdl_err *err);

/* Inputs of the first-divergence request; every json_t is borrowed. */
typedef struct {
  const json_t *prompt_ids;      /* array of token ids */
  const json_t *reference_ids;   /* generated by the reference (vllm) */
  const json_t *candidate_ids;   /* generated by the candidate (kiln) */
  const json_t *reference_texts; /* optional: array of strings, one per reference token */
  const json_t *candidate_texts; /* optional: the same for the candidate */
  const char *prompt_text;       /* messages[0].content, nonempty UTF-8 */
  const char *id, *source_commit, *run_id, *phase;
  const json_t *kiln_receipt, *vllm_receipt; /* {path, file_sha256, content_sha256} */
  const json_t *model_identity;
} fdl_kiln_divergence_in;

/* Finds the first index where the two streams differ and builds the request. Identical
 * streams (or one a prefix of the other): FDL_REFUSED "nothing diverges". A divergence at step
 * 0 or past 64 steps: FDL_REFUSED (the request needs a 1..64-token common prefix). The result
 * passes fdl_kiln_check_doc. *step is the divergence index. */
fdl_status fdl_kiln_divergence(const fdl_kiln_divergence_in *in, json_t **out, size_t *step,
                               fdl_err *err);

/* One path, in evaluation order; every pointer is borrowed. */
typedef struct {
  const char *name;  /* nonempty, unique */
  bool full;         /* full logits (true) or greedy token ids (false) */
  const float *rows; /* full: nrows x n floats, one row per forced step, row-major */
  size_t nrows;      /* full: at least 1; the last row is compared with the reference */
  const json_t *ids; /* greedy: array of 1..FDL_KILN_MAX_INPUT token ids */
} fdl_kiln_path_in;

/* Builds the sealed fidelis.path-attribution.v1 record: request identity (the request must pass
 * fdl_kiln_check_doc), the reference block (argmax, candidate logits and ranks, verdict), each
 * path's observed tokens and comparison, the optional graph counters (Kiln's rules, §12) and
 * the attribution: the first path that diverges (full: its last row's argmax differs from the
 * reference argmax; greedy: its final token differs from it), else
 * serving_only_or_not_reproduced. reference holds n floats; candidate ids must be < n. A broken
 * rule is FDL_REFUSED or FDL_INVALID naming the input; the record passes fdl_kiln_check_doc.
 *
 * With provenance (not NULL), *out is instead Kiln's kiln.rocm-hf-path-attribution-result.v2
 * (§12) of the same values: exactly the four Kiln paths (eager_full and graph_full full,
 * eager_greedy and graph_greedy greedy, any order; 4 observed tokens each, the first 3 the
 * request's continuation ids) with counters, and the provenance fidelis cannot know: an object
 * of exactly {created_at_utc, duration_seconds (> 0), source, binary, implementation,
 * request_path, model_fingerprint, oracle_reference, containment}, copied. fidelis computes the
 * worker block (attribution by §12's precedence), request {path, sha256}, model_identity (the
 * request's) and result_sha256. Refusals: FDL_REFUSED / FDL_INVALID naming the field. */
fdl_status fdl_kiln_attribute(const json_t *request, const float *reference, size_t n,
                              const fdl_kiln_path_in *paths, size_t npaths, const json_t *counters,
                              const json_t *provenance, json_t **out, fdl_err *err);

/* One full path's logits for fdl_kiln_recompute_paths: the row its comparison was made from
 * (the last forced step), n floats; borrowed. */
typedef struct {
  const char *name;
  const float *row;
} fdl_kiln_logits_row;

/* Recomputes, from the logits, the comparison blocks of a path record that passed
 * fdl_kiln_check_doc: fidelis.path-attribution.v1 (the reference block and each named full
 * path's comparison) or Kiln's path result v1/v2 (hf_argmax and worker.<name>.comparison, name
 * eager_full or graph_full), with fdl_attr_compare_logits over reference (n floats) and the
 * record's own candidate ids. Every value must equal the record's bit for bit: a difference is
 * FDL_MISMATCH naming the JSON path, the stored and the recomputed value. Another kind of record,
 * a name that is no full path of the record, or a candidate id >= n: FDL_REFUSED. */
fdl_status fdl_kiln_recompute_paths(const json_t *doc, const char *name, const float *reference,
                                    size_t n, const fdl_kiln_logits_row *paths, size_t npaths,
                                    fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
