/* fidelis/dataset.h - malaiwah.fidelity-dataset.v1: the model, pack, validate, inspect.
 *
 * A fidelity dataset is a directory holding ONE capture of ONE artifact over ONE token panel,
 * sealed by a chain rooted in fidelity-dataset.json's dataset_sha256 (shared/spec/
 * FIDELITY-DATASET.md). This module reads such directories (fdl_dataset_load), checks them
 * (fdl_ds_validate: every rule of spec §12 with the spec's codes), produces them from any
 * engine's per-record dumps (fdl_ds_pack), and summarises them (fdl_ds_inspect).
 *
 * Documents stay parsed trees: unknown keys are kept (v1 readers must ignore, never drop them),
 * so a document that is re-serialised keeps every key it was read with. Typed views borrow
 * strings from those trees. The trees and the calls on them (fdl_dataset_load, fdl_ds_inspect,
 * the document writer, the pack panel reader) are the private tier: dataset/dataset_json.h.
 *
 * Divisions: names and constants; digests (§5); findings and the validation report (§12.3);
 * validate; the document model (its typed view); pack. */
#ifndef FIDELIS_DATASET_H
#define FIDELIS_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "digest.h"
#include "refusal.h"
#include "status.h"
#include "tensor.h"
#include "vocab.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- names and constants ---------------------------------------------------------------- */

#define FDL_DS_SCHEMA "malaiwah.fidelity-dataset.v1"
#define FDL_DS_CAPTURE_SCHEMA "malaiwah.fidelity-capture-manifest.v1"
#define FDL_DS_PANEL_SCHEMA "malaiwah.fidelity-panel-binding.v1"
#define FDL_DS_HEAD_SCHEMA "malaiwah.fidelity-head-identity.v1"
#define FDL_DS_RUNTIME_SCHEMA "malaiwah.fidelity-capture-runtime.v1"
#define FDL_DS_REMAP_SCHEMA "malaiwah.fidelity-path-remap.v1"
#define FDL_DS_VALIDATION_SCHEMA "malaiwah.fidelity-structural-validation.v1"
#define FDL_DS_STACK_SCHEMA "malaiwah.stack-fingerprint.v1"

#define FDL_DS_MANIFEST_NAME "fidelity-dataset.json"
#define FDL_DS_CHECKSUMS_NAME "checksums.txt"
#define FDL_DS_VALIDATION_FILE "validation/structural-validation.json"

/* Index files are named with %04d (more digits past 9999); this bounds the index itself. */
#define FDL_DS_MAX_INDEX ((int64_t)1 << 40)

/* ---- digests (§5.1, §5.2) --------------------------------------------------------------- */

/* Appends the id list as compact JSON "[1,2,3]" (legacy=false, the normative preimage) or with
 * ", " separators "[1, 2, 3]" (legacy=true). */
FDL_API fdl_status fdl_ds_token_ids_json(const int64_t *ids, size_t n, bool legacy, fdl_buf *out,
                                         fdl_err *err);
/* token_ids_json_sha256 (legacy=false) or token_ids_sha256_legacy (legacy=true) into
 * hex[FDL_SHA256_HEX_BUF]. */
FDL_API fdl_status fdl_ds_token_digest(const int64_t *ids, size_t n, bool legacy, char *hex,
                                       fdl_err *err);
/* suite_token_hash_sha256 over per-record hex digests already in ascending index order,
 * joined by "\n" (legacy=false) or by "" (legacy=true: panel_token_sha256_legacy). */
FDL_API fdl_status fdl_ds_suite_token_hash(const char *const *hexes, size_t n, bool legacy,
                                           char *hex, fdl_err *err);

typedef struct {
  int64_t index;
  const char *content_sha256; /* tensor_content_sha256; NULL or "" is refused */
} fdl_ds_content_item;

/* capture_content_digest over records in any order (sorted by index here). FDL_MISMATCH on a
 * duplicate index or an empty content digest; the message names the index. */
FDL_API fdl_status fdl_ds_capture_content_digest(const fdl_ds_content_item *items, size_t n,
                                                 char *hex, fdl_err *err);

/* The three tensor-file digests of §5.1 plus what the safetensors header declares for key. */
typedef struct {
  char file_sha256[FDL_SHA256_HEX_LEN + 1];    /* every byte of the file */
  char payload_sha256[FDL_SHA256_HEX_LEN + 1]; /* the data section */
  char content_sha256[FDL_SHA256_HEX_LEN + 1]; /* the named tensor's bytes */
  uint64_t size_bytes;
  fdl_dtype dtype;
  int ndim;
  int64_t shape[FDL_MAX_DIMS];
} fdl_ds_tensor_digests;

/* Computes all three digests of a safetensors file in one read. A missing key or a truncated
 * file is FDL_PARSE/FDL_BOUNDS (bad_tensor_file). */
FDL_API fdl_status fdl_ds_tensor_file_digests(const char *path, const char *key,
                                              fdl_ds_tensor_digests *out, fdl_err *err);

/* ---- findings and the validation report (§12.2, §12.3) --------------------------------- */

/* The codes of validation findings, each once: X(ID, "name"). The name is what reports and the
 * CLI print; docs/DATASET.md's "Codes, rules and where they are tested" table names every one
 * (tests/test_refusal_table.py checks the two agree). */
#define FDL_DS_CODES(X)                                                                            \
  X(BAD_SCHEMA, "bad_schema")                                                                      \
  X(SCHEMA_INVALID, "schema_invalid")                                                              \
  X(SEAL_FAILED, "seal_failed")                                                                    \
  X(PATH_ESCAPE, "path_escape")                                                                    \
  X(SYMLINK, "symlink")                                                                            \
  X(CREDENTIAL_IN_TREE, "credential_in_tree")                                                      \
  X(MISSING_FILE, "missing_file")                                                                  \
  X(UNLISTED_FILE, "unlisted_file")                                                                \
  X(TENSOR_MISMATCH, "tensor_mismatch")                                                            \
  X(SIZE_MISMATCH, "size_mismatch")                                                                \
  X(NON_FINITE, "non_finite")                                                                      \
  X(TREE_UNREADABLE, "tree_unreadable")                                                            \
  X(HEADERLESS_MASK, "headerless_mask")                                                            \
  X(BAD_TIMESTAMP, "bad_timestamp")                                                                \
  X(DIGEST_MISMATCH, "digest_mismatch")                                                            \
  X(BAD_TENSOR_FILE, "bad_tensor_file")                                                            \
  X(PANEL_DIGEST_MISMATCH, "panel_digest_mismatch")                                                \
  X(PANEL_BINDING, "panel_binding")                                                                \
  X(INCOMPLETE, "incomplete")                                                                      \
  X(HEAD_MISMATCH, "head_mismatch")                                                                \
  X(REMAP_INVALID, "remap_invalid")                                                                \
  X(SCOPE_DUPLICATE_ASSIGNMENT, "scope_duplicate_assignment")                                      \
  X(SCOPE_ASSIGNMENT_KEYS, "scope_assignment_keys")                                                \
  X(SCOPE_COVERAGE, "scope_coverage")                                                              \
  X(REDUCED_RUN_COUNT, "reduced_run_count")

#define FDL_DS_CODE_ID_(id, name) FDL_DSC_##id,
typedef enum { FDL_DS_CODES(FDL_DS_CODE_ID_) FDL_DSC_COUNT } fdl_ds_code;

/* A code's name ("" for anything out of range). */
FDL_API const char *fdl_ds_code_name(fdl_ds_code c);

typedef struct {
  fdl_ds_code code;
  char *rule;    /* e.g. "SEAL-1(a)" */
  char *message; /* what failed and what was expected */
  char *where;   /* dataset-relative file or file:key; "" when global */
} fdl_ds_finding;

typedef struct {
  fdl_ds_finding *items;
  size_t count;
  size_t cap_;
} fdl_ds_findings;

/* Conformance level reached by one validate run (§1.2). */
typedef enum {
  FDL_DS_LEVEL_INVALID = 0,    /* at least one error */
  FDL_DS_LEVEL_MANIFESTS = 1,  /* the manifests are consistent; listed files were not hashed */
  FDL_DS_LEVEL_STRUCTURAL = 2, /* every check except tensor content passed, every listed file
                                  hashed */
  FDL_DS_LEVEL_SEALED = 3,     /* structural, and every tensor byte re-hashed and matched */
} fdl_ds_level;

FDL_API const char *fdl_ds_level_name(fdl_ds_level l);

typedef struct {
  char *subject; /* "dataset:<id>", or the path as given when the id is unknown */
  fdl_ds_findings errors;
  fdl_ds_findings warnings;
  char **checks; /* names of the checks that ran, in run order (sorted on output) */
  size_t n_checks;
  size_t cap_checks_;
  fdl_ds_level level; /* set by fdl_ds_validate */
  fdl_status oom;     /* sticky: FDL_NOMEM if a finding could not be recorded */
} fdl_ds_report;

FDL_API void fdl_ds_report_init(fdl_ds_report *r);
FDL_API void fdl_ds_report_free(fdl_ds_report *r);
FDL_API void fdl_ds_report_error(fdl_ds_report *r, fdl_ds_code code, const char *rule,
                                 const char *where, const char *fmt, ...) FDL_PRINTF(5, 6);
FDL_API void fdl_ds_report_warn(fdl_ds_report *r, fdl_ds_code code, const char *rule,
                                const char *where, const char *fmt, ...) FDL_PRINTF(5, 6);
FDL_API void fdl_ds_report_check(fdl_ds_report *r, const char *fmt, ...) FDL_PRINTF(2, 3);
FDL_API void fdl_ds_report_set_subject(fdl_ds_report *r, const char *subject);
/* True when some finding (error or warning) carries this code. */
FDL_API bool fdl_ds_report_has(const fdl_ds_report *r, fdl_ds_code code);

/* The report's verdict (§12.2). The CLI maps it to its exit codes (0, 2, 3); the library has
 * none of its own. */
typedef enum {
  FDL_DS_VERDICT_OK = 0,       /* no finding */
  FDL_DS_VERDICT_WARNINGS = 1, /* warnings only */
  FDL_DS_VERDICT_ERRORS = 2,   /* at least one error */
} fdl_ds_verdict;
FDL_API fdl_ds_verdict fdl_ds_report_verdict(const fdl_ds_report *r);

/* ---- validate (§12.1) ------------------------------------------------------------------- */

typedef struct {
  bool verify_tensors;      /* also recompute every tensor's content and payload digest and look
                               for non-finite values (sealed) */
  bool skip_hashing;        /* check checksums.txt's listing and every file's size, hash no listed
                               file: the run reaches the manifests level at most */
  bool defer_tensor_hashes; /* leave the capture tensors and the head payload unhashed because
                               the caller hashes them as it reads them (compare); their listed
                               digests must still agree with the manifest's */
  bool allow_partial;       /* tolerate absent capture/ files and an incomplete coverage (COV-3) */
  bool manifest_only;       /* the reference --manifest-only: stop after the top manifest's paths */
  bool manifests_only;      /* every check that needs only the manifests: no checksums.txt, token,
                               mask or tensor bytes; absent payload files are not findings */
  bool strict;              /* warnings become errors */
  unsigned threads;         /* hashing threads; 0 = one per online CPU */
} fdl_ds_validate_opts;

/* Runs every check against the dataset directory root and collects every finding in rep (which
 * the caller has initialised). Returns FDL_OK when the checks ran, whatever they found; an error
 * status only for a fault of the run itself (out of memory, root not a directory). */
FDL_API fdl_status fdl_ds_validate(const char *root, const fdl_ds_validate_opts *opts,
                                   fdl_ds_report *rep, fdl_err *err);

/* ---- the document model ----------------------------------------------------------------- */

/* A boolean field that may be absent: FDL_DS_UNSET when absent or not a boolean. */
typedef enum { FDL_DS_UNSET = -1, FDL_DS_FALSE, FDL_DS_TRUE } fdl_ds_bool;

/* The top manifest's fields (§3-§11), decoded once by fdl_dataset_load: its loader, inspect and
 * compare's gates read these, never the tree. Members mirror the document's keys
 * (capture.vocab_size is capture.vocab_size). Strings are borrowed from the manifest tree; a
 * field that is absent or mistyped reads as NULL, -1, false or FDL_DS_UNSET, an enum as its
 * _COUNT. */
typedef struct {
  struct {
    const char *id, *name, *license, *repository, *revision, *structural_status;
    fdl_role role;
  } dataset;
  const char *dataset_sha256;
  struct {
    const char *checksums_sha256;
  } seal;
  bool not_submittable; /* not_submittable is true */
  bool preview;         /* preview is a non-empty object */
  struct {
    const char *repository, *revision, *model_revision, *checkpoint_identity_sha256;
  } weights;
  struct {
    const char *scope_digest, *policy;
  } scope;
  struct {
    const char *panel_id, *panel_file, *panel_file_sha256, *suite_token_hash_sha256,
        *panel_token_sha256_legacy, *panel_receipt_file, *panel_receipt_sha256, *remap_file;
    int64_t context_length, contexts, scored_positions_total;
    struct {
      int64_t score_from; /* 0 when absent */
    } scoring_window;
    struct {
      int64_t vocab_size;
    } tokenizer;
  } panel;
  struct {
    fdl_form form;
    const char *manifest_file, *manifest_file_sha256, *capture_content_digest, *dtype,
        *semantic_point;
    fdl_ds_bool dtype_lossless;
    bool lossy_codec; /* lossy_codec is set (not null) */
    int64_t vocab_size, hidden_width, records_count;
  } capture;
  struct {
    const char *head_json, *file, *file_sha256, *tensor_key, *tensor_content_sha256,
        *raw_tensor_sha256, *source, *dtype;
    fdl_ds_bool present;
    int64_t shape[2]; /* both -1 unless shape is two integers */
  } head;
  struct {
    fdl_lane lane;
    const char *file, *file_sha256, *lane_identity_sha256, *stack_fingerprint_sha256;
  } runtime;
  struct {
    fdl_ds_bool complete;
    int64_t declared_records;
  } coverage;
} fdl_ds_manifest;

/* ---- pack ------------------------------------------------------------------------------- */

/* The scoring-window policy of a panel that scores every position: the reference capture's
 * exact string (comparisons require the policy of the panel one compares with). */
#define FDL_DS_WINDOW_POLICY_ALL                                                                   \
  "every causal prediction position of every window is scored; nothing is dropped"

typedef struct {
  const char *panel_path; /* JSONL: one context per line (docs/PACK.md) */
  const char *tensor_dir; /* NNNN.safetensors or NNNN.npy per panel record */
  const char *head_path;  /* optional [vocab, hidden] head weight (.safetensors or .npy) */
  const char *meta_path;  /* JSON describing the artifact and its runtime */
  const char *out_dir;    /* must not exist */
  bool allow_partial;     /* records without a tensor file make an incomplete dataset */
  unsigned threads;       /* for the final validation; 0 = one per online CPU */
  fdl_notice_fn notice;   /* optional: told about stale staging directories removed */
  void *notice_arg;
  /* created_utc to record ("YYYY-MM-DDTHH:MM:SSZ") when meta gives none; NULL: the wall clock.
   * The library reads no environment: the CLI passes SOURCE_DATE_EPOCH's time here. */
  const char *created_utc;
  /* Hidden form: store F32 inputs as F32 (lossless, docs/PACK.md) instead of rounding them to
   * BF16; every input must then be F32. */
  bool hidden_f32;
} fdl_ds_pack_opts;

typedef struct {
  char dataset_sha256[FDL_SHA256_HEX_LEN + 1];
  char capture_content_digest[FDL_SHA256_HEX_LEN + 1];
  size_t records;
  uint64_t scored_rows;
  fdl_refusal refusal; /* on failure: code (e.g. "panel_binding", "non_finite"), gate "pack" and
                        * the cause; the message is in err */
} fdl_ds_pack_result;

/* Builds a sealed dataset at out_dir from the inputs, validates it, and moves it into place
 * with a no-replace rename: the dataset appears whole or not at all. On failure nothing is left
 * behind, res->code names the refusal and err says what, on which record/row/field. */
FDL_API fdl_status fdl_ds_pack(const fdl_ds_pack_opts *opts, fdl_ds_pack_result *res, fdl_err *err);

/* Parses a pack panel (JSONL, docs/PACK.md) from memory and checks it as pack does: keys and
 * types, unique indices 0..N-1, equal lengths, masks, at least one scored row per record. On
 * failure the message starts with the refusal code ("panel_binding: ..."). */
FDL_API fdl_status fdl_ds_panel_check(const char *text, size_t len, size_t *records,
                                      int64_t *scored_positions, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
