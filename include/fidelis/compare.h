/* fidelis/compare.h - `compare`: two sealed fidelity datasets in, one sealed
 * malaiwah.fidelity-comparison-receipt.v1 and its tokenwise-kld.npy out
 * (shared/spec/COMPARISON-RECEIPT.md). A synthetic pair to compare comes from synth.h.
 *
 * fdl_compare runs the reference gate ladder in its exact order. A gate either passes (maybe
 * with a recorded override), downgrades the result (advisory class, disclosures, bias), or
 * refuses: then nothing is written, the call returns FDL_REFUSED, and the result names the
 * refusal code, the gate and a remedy. Otherwise it classifies the pair, computes the
 * token-wise KL(reference || candidate) with the num core (or proves it is exactly zero by
 * hash), and writes both files through a staging directory, never overwriting.
 *
 * A first program:
 *
 *   fdl_compare_opts o;
 *   fdl_compare_opts_default(&o);
 *   o.reference = "ref-ds"; o.candidate = "cand-ds"; o.out_dir = "cmp-out";
 *   fdl_compare_result r;
 *   fdl_err err;
 *   fdl_status s = fdl_compare(&o, &r, &err);
 *   if (s == FDL_REFUSED) printf("REFUSED [%s]: gate %s: %s\n", r.code, r.gate, err.msg);
 *   fdl_compare_result_free(&r);
 *
 * Divisions: options; result; compare; receipt helpers. */
#ifndef FIDELIS_COMPARE_H
#define FIDELIS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "num.h"
#include "refusal.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDL_COMPARE_SCHEMA "malaiwah.fidelity-comparison-receipt.v1"
#define FDL_COMPARE_RECEIPT_NAME "comparison-receipt.json"
#define FDL_COMPARE_TOKENWISE_NAME "tokenwise-kld.npy"
/* Beside it, in the same row order, when the rows were computed (not for a hash proof): each
 * side's float64 log-probability of the token the row predicts, and 1 where the argmaxes agree.
 * Their digests are in the receipt's fidelis_extensions.llamacpp_compatible.arrays. */
#define FDL_COMPARE_LOGPROB_REF_NAME "tokenwise-logprob-ref.npy"
#define FDL_COMPARE_LOGPROB_CAND_NAME "tokenwise-logprob-cand.npy"
#define FDL_COMPARE_TOP1_NAME "tokenwise-top1.npy"
#define FDL_COMPARE_LLAMACPP_SCHEMA "fidelis.llamacpp-compatible.v1"
/* Positions gathered per estimator batch and thread when none is given (the reference's
 * --chunk-positions default). Memory and parallelism only: rows are always computed in fixed
 * FDL_NUM_TILE_ROWS blocks anchored at the start of their record, so no batch size changes a
 * number. */
#define FDL_COMPARE_POSITION_BLOCK_DEFAULT 128
/* The largest batch accepted; a larger one is refused (bad_position_block). */
#define FDL_COMPARE_POSITION_BLOCK_MAX 4096
/* Bytes of float32 input rows (both sides) one estimator window may hold. A window is at least
 * one block whatever this says. */
#define FDL_COMPARE_WINDOW_BYTES ((size_t)512 << 20)

/* ---- options ---------------------------------------------------------------------------- */

/* Progress of the estimator: rows done out of total. Called on the calling thread only. */
typedef void (*fdl_compare_progress)(void *arg, uint64_t done, uint64_t total);

typedef struct {
  const char *reference;       /* dataset directory (A) */
  const char *candidate;       /* dataset directory (B) */
  const char *out_dir;         /* must not exist: created with tokenwise-kld.npy and
                                  comparison-receipt.json in it, whole or not at all */
  const char *reference_label; /* NULL: "reference" */
  const char *candidate_label; /* NULL: "candidate" */
  const char *head_path;       /* --head: the head payload to apply (not with own_heads) */
  size_t position_block;       /* batch (see above); 0: FDL_COMPARE_POSITION_BLOCK_DEFAULT */
  unsigned threads;            /* 0: every online CPU; never changes a number */
  bool self_compare;           /* assert a reproduction; skips the decode gate */
  bool force_compute;          /* on a reproduction, compute too and require bitwise agreement */
  bool allow_cross_lane;
  bool allow_partial;
  bool disclose_head_substitution;
  bool own_heads;
  int js;                   /* Jensen-Shannon: 1 on, 0 off, -1 default (on for logit-only pairs) */
  bool bootstrap;           /* context-cluster bootstrap CI95 (default true) */
  size_t bootstrap_samples; /* 0: FDL_NUM_BOOTSTRAP_DEFAULT_B */
  uint64_t seed;            /* bootstrap seed, at most INT64_MAX (recorded in the receipt) */
  fdl_num_isa isa;          /* kernel choice (results are identical for every ISA) */
  const char *created_utc;  /* NULL: the wall clock at receipt build (YYYY-MM-DDTHH:MM:SSZ) */
  fdl_compare_progress progress;
  void *progress_arg;
  fdl_notice_fn notice; /* optional: told about stale staging directories removed */
  void *notice_arg;
  /* NULL: one process. The MPI build's program passes its group (docs/SCALE.md): every rank
   * calls fdl_compare with the same options, computes its share of the records, and rank 0
   * alone writes the output, the same bytes as one process. */
  const struct fdl_scale *scale;
} fdl_compare_opts;

/* The defaults: bootstrap on, js -1, seed 0, everything else zero/NULL. */
FDL_API void fdl_compare_opts_default(fdl_compare_opts *o);

/* ---- result ----------------------------------------------------------------------------- */

/* How a compare ended. The CLI maps it to its exit codes (0, 2, 3, 4); the library has none of
 * its own. */
typedef enum {
  FDL_COMPARE_STRICT = 0,   /* a receipt of class strict was written */
  FDL_COMPARE_ADVISORY = 1, /* a receipt of class advisory was written */
  FDL_COMPARE_REFUSED = 2,  /* refused: nothing was written */
  FDL_COMPARE_BAD_OPTS = 3, /* the options were unusable (FDL_INVALID) */
} fdl_compare_outcome;

/* A value and its standard error. */
typedef struct {
  double value, se;
} fdl_compare_pm;

/* The comparability key's inputs (section 11.7) in the order it hashes them: X(ID, "name"). */
#define FDL_COMPARE_KEY_INPUTS(X)                                                                  \
  X(PANEL_ID, "panel_id")                                                                          \
  X(REFERENCE_ID, "reference_id")                                                                  \
  X(METRIC_NAME, "metric_name")                                                                    \
  X(DIRECTION, "direction")                                                                        \
  X(ACCUMULATION_DTYPE, "accumulation_dtype")                                                      \
  X(STACK_RELATION, "stack_relation")                                                              \
  X(HEAD_POLICY, "head_policy")
#define FDL_COMPARE_KI_ID_(id, name) FDL_COMPARE_KI_##id,
typedef enum {
  FDL_COMPARE_KEY_INPUTS(FDL_COMPARE_KI_ID_) FDL_COMPARE_KI_COUNT
} fdl_compare_key_input;
#define FDL_COMPARE_KI_NAME_(id, name) name,

/* The receipt's decoded fields read as these when absent or of another type: a string NULL, a
 * number NaN, an integer FDL_COMPARE_NO_INT, a boolean -1. */
#define FDL_COMPARE_NO_INT INT64_MIN

typedef struct {
  const char *severity, *code, *detail;
  int affects_comparability; /* 1 true, 0 false, -1 null */
} fdl_compare_disclosure;

/* An element of per_context or high_kld_contexts. */
typedef struct {
  int64_t index, scored_rows;
  const char *window_id, *domain;
  double mean, max, ci95_low, ci95_high;
} fdl_compare_context;

/* The percentile keys of the llama.cpp block's kld and delta_p, in their arrays' order. */
#define FDL_COMPARE_KLD_PERCENTILES                                                                \
  { "99.9", "99", "95", "90", "50", "10", "5", "1", "0.1" }
#define FDL_COMPARE_DP_PERCENTILES                                                                 \
  { "99.9", "99", "95", "90", "75", "50", "25", "10", "5", "1", "0.1" }

/* fidelis_extensions.llamacpp_compatible */
typedef struct {
  bool present; /* the key is there (a block that is not an object has no schema) */
  const char *schema, *definitions;
  int64_t n;
  const char *arrays[3]; /* the SHA-256 of FDL_COMPARE_LOGPROB_REF_NAME, _CAND_NAME, TOP1_NAME */
  fdl_compare_pm ppl_candidate, ppl_reference, ln_ppl_ratio, ppl_ratio, same_top;
  double logprob_correlation;
  struct {
    double mean, se, max, min, percentiles[9]; /* FDL_COMPARE_KLD_PERCENTILES */
  } kld;
  struct {
    double mean, mean_se, rms, rms_se, max, min, percentiles[11]; /* FDL_COMPARE_DP_PERCENTILES */
  } delta_p;
} fdl_compare_llamacpp;

/* The sealed receipt as a parsed tree, or one of its values: opaque here, so the installed
 * headers need no JSON library; compare/compare_json.h (the private tier) reads it:
 * fdl_compare_receipt_json. */
struct fdl_compare_doc;

/* One side (reference, candidate) of a receipt. */
typedef struct {
  const char *label, *dataset_id, *dataset_sha256, *capture_content_digest, *role, *form, *lane,
      *repository, *revision, *stack_fingerprint_sha256;
  const char *weights_repository, *weights_revision, *weights_checkpoint_identity_sha256;
  const char *head_tensor_content_sha256;
} fdl_compare_side;

/* The receipt's fields that a summary or a report shows, decoded from the receipt as written
 * (absent or mistyped: see FDL_COMPARE_NO_INT). Strings and docs are borrowed from the parsed
 * receipt; the arrays are owned. */
typedef struct {
  const char *schema, *comparison_kind, *comparability_class, *receipt_sha256, *created_utc;
  fdl_compare_side side[2]; /* reference, candidate */
  struct {
    const char *key, *bias_kind;
    const char *key_inputs[FDL_COMPARE_KI_COUNT]; /* by fdl_compare_key_input */
    int usable_as_floor, same_lane;               /* 1 true, 0 false, -1 */
  } comparability;
  fdl_compare_disclosure *disclosures;
  size_t n_disclosures;
  double metric_value;
  struct {
    double mean, median, p95, p99, p99_9, max;
  } kl;
  int64_t scored_positions, contexts; /* measurement_scope */
  struct {
    const char *panel_id, *suite_token_hash_sha256, *tokenizer_id;
    int64_t scored_positions, contexts, context_length;
  } panel;
  struct {
    const char *path, *sha256;
  } tokenwise;
  const char *stack_relation; /* estimator.stack_relation */
  struct {
    const char *tool_name, *tool_version, *tool_entrypoint, *estimator_backend, *replay_backend,
        *replay_library, *device;
  } comparator;
  struct {
    const char *method, *cluster_unit;
    double ci95_low, ci95_high;
    int64_t samples, clusters, seed;
  } uncertainty;
  bool has_js; /* js is an object */
  double top1_agreement, js_mean;
  fdl_compare_llamacpp llamacpp;
  fdl_compare_context *per_context, *high_kld_contexts;
  size_t n_per_context, n_high_kld_contexts;
  /* Values passed on verbatim (the CLI's --json), NULL when absent. */
  const struct fdl_compare_doc *kl_doc, *uncertainty_doc, *js_doc, *high_kld_contexts_doc;
} fdl_compare_receipt;

typedef struct {
  fdl_refusal refusal; /* why nothing was written: code ("panel_mismatch", ...), gate ("panel",
                        * "head", "compute", "cli", ...), remedy (the override flag(s) that
                        * would allow it, or why there is none) and the cause (never FDL_OK
                        * after a failure); code "" when a receipt was written */
  struct fdl_compare_doc *receipt; /* owned: the sealed receipt as written; NULL when refused */
  fdl_compare_receipt fields;      /* its decoded fields (owned arrays); zero when refused */
  char *receipt_path;              /* owned */
  char *tokenwise_path;            /* owned */
} fdl_compare_result;

FDL_API void fdl_compare_result_free(fdl_compare_result *r);
/* How the compare ended, read from the result itself: its receipt's class, or its refusal. */
FDL_API fdl_compare_outcome fdl_compare_outcome_of(const fdl_compare_result *r);

/* ---- compare ---------------------------------------------------------------------------- */

/* Runs the whole comparison. FDL_OK: a receipt was written (outcome strict or advisory).
 * FDL_REFUSED: nothing was written; r->code/gate/remedy and err->msg say why (every failure,
 * including an unreadable input or an output that cannot be written, is reported this way with a
 * code). FDL_INVALID: bad options (usage). r is always initialised; free it with
 * fdl_compare_result_free. */
FDL_API fdl_status fdl_compare(const fdl_compare_opts *o, fdl_compare_result *r, fdl_err *err);

/* ---- receipt helpers -------------------------------------------------------------------- */

#define FDL_COMPARE_KEY_LEN 21 /* "cmp--" + 16 hex */

#ifdef __cplusplus
}
#endif
#endif
