/* fidelis/compare.h - `compare`: two sealed fidelity datasets in, one sealed
 * malaiwah.fidelity-comparison-receipt.v1 and its tokenwise-kld.npy out
 * (shared/spec/COMPARISON-RECEIPT.md), plus `synth`, a synthetic dataset pair to compare.
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
 * Divisions: options; result; compare; receipt helpers; synth. */
#ifndef FIDELIS_COMPARE_H
#define FIDELIS_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "num.h"
#include "refusal.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDL_COMPARE_SCHEMA "malaiwah.fidelity-comparison-receipt.v1"
#define FDL_COMPARE_RECEIPT_NAME "comparison-receipt.json"
#define FDL_COMPARE_TOKENWISE_NAME "tokenwise-kld.npy"
/* Rows per estimator block when none is given. The reference's 128; it is recorded in the
 * receipt and (hidden form only) is the M of every replay tile. */
#define FDL_COMPARE_POSITION_BLOCK_DEFAULT 128
/* Bytes of float32 input rows (both sides) one estimator window may hold. A window is at least
 * one block whatever this says. */
#define FDL_COMPARE_WINDOW_BYTES ((size_t)512 << 20)

/* ---- options ---------------------------------------------------------------------------- */

/* Progress of the estimator: rows done out of total. Called on the calling thread only. */
typedef void (*fdl_compare_progress)(void *arg, uint64_t done, uint64_t total);

typedef struct {
  const char *reference;       /* dataset directory (A) */
  const char *candidate;       /* dataset directory (B) */
  const char *out_dir;         /* receives tokenwise-kld.npy and comparison-receipt.json */
  const char *reference_label; /* NULL: "reference" */
  const char *candidate_label; /* NULL: "candidate" */
  const char *head_path;       /* --head: the head payload to apply (not with own_heads) */
  size_t vocab_chunk;          /* 0: FDL_NUM_VOCAB_CHUNK_DEFAULT */
  size_t position_block;       /* 0: FDL_COMPARE_POSITION_BLOCK_DEFAULT */
  unsigned threads;            /* 0: every online CPU; never changes a number */
  bool self_compare;           /* assert a reproduction; skips the decode gate */
  bool force_compute;          /* on a reproduction, compute too and require bitwise agreement */
  bool allow_cross_lane;
  bool allow_partial;
  bool verify_tensors; /* recompute every tensor digest while validating (default true) */
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
} fdl_compare_opts;

/* The defaults: verify_tensors, bootstrap on, js -1, seed 0, everything else zero/NULL. */
FDL_API void fdl_compare_opts_default(fdl_compare_opts *o);

/* ---- result ----------------------------------------------------------------------------- */

typedef struct {
  int exit_code;        /* 0 strict receipt, 2 advisory receipt, 3 refused */
  fdl_refusal refusal;  /* why nothing was written: code ("panel_mismatch", ...), gate ("panel",
                         * "head", "compute", "cli", ...), remedy (the override flag(s) that
                         * would allow it, or why there is none) and the cause; code "" when a
                         * receipt was written */
  json_t *receipt;      /* owned: the sealed receipt as written; NULL when refused */
  char *receipt_path;   /* owned */
  char *tokenwise_path; /* owned */
} fdl_compare_result;

FDL_API void fdl_compare_result_free(fdl_compare_result *r);

/* ---- compare ---------------------------------------------------------------------------- */

/* Runs the whole comparison. FDL_OK: a receipt was written (r->exit_code 0 or 2). FDL_REFUSED:
 * nothing was written; r->code/gate/remedy and err->msg say why (every failure, including an
 * unreadable input or an output that cannot be written, is reported this way with a code).
 * FDL_INVALID: bad options (usage). r is always initialised; free it with
 * fdl_compare_result_free. */
FDL_API fdl_status fdl_compare(const fdl_compare_opts *o, fdl_compare_result *r, fdl_err *err);

/* ---- receipt helpers -------------------------------------------------------------------- */

#define FDL_COMPARE_KEY_LEN 21 /* "cmp--" + 16 hex */

/* The registry comparability key of a key_inputs object (section 11.7): "cmp--" and the first
 * 16 hex digits of SHA-256 over panel_id|reference_id|metric_name|direction|
 * accumulation_dtype|stack_relation|head_policy. A "note" key is ignored. FDL_INVALID when a
 * value is missing, not a string, or contains '|'. */
FDL_API fdl_status fdl_compare_key(const json_t *key_inputs, char *out /* [22] */, fdl_err *err);

/* The checks of section 10 on a receipt (schema string, required keys and the schema's
 * conditionals, seal, SC-1, SC-2, SC-3, BIAS-006, BIAS-001). FDL_OK when it passes; otherwise
 * FDL_MISMATCH with code (>= 32 bytes) set to the reference code (bad_schema, schema_invalid,
 * seal_failed, self_compare_invalid, not_submittable, bias_invalid) and err naming the field. */
FDL_API fdl_status fdl_compare_check_receipt(const json_t *receipt, char *code, fdl_err *err);

/* ---- synth ------------------------------------------------------------------------------ */

#define FDL_SYNTH_VOCAB_DEFAULT 32000
#define FDL_SYNTH_HIDDEN_DEFAULT 512
#define FDL_SYNTH_CONTEXTS_DEFAULT 8
#define FDL_SYNTH_TOKENS_DEFAULT 128
#define FDL_SYNTH_GROUP 32 /* int4 quantization group along the hidden axis */

typedef struct {
  const char *out_dir; /* must not exist; receives reference/ and candidate/ */
  uint64_t seed;
  size_t vocab, hidden, contexts, tokens_per_context; /* 0: the defaults above */
  unsigned threads;        /* for pack's validation; 0 = every online CPU */
  const char *created_utc; /* both datasets' created_utc (YYYY-MM-DDTHH:MM:SSZ); NULL: pack's
                            * default, the wall clock */
} fdl_synth_opts;

typedef struct {
  char reference_sha256[65]; /* dataset_sha256 of each side */
  char candidate_sha256[65];
  size_t rows; /* scored rows per side */
} fdl_synth_result;

FDL_API void fdl_synth_opts_default(fdl_synth_opts *o);

/* Writes a synthetic, honest dataset pair: a random BF16 head and random BF16 hidden states
 * over a built-in panel with domains (reference, role root), and a candidate whose head is the
 * reference head quantized to int4 (round to nearest, symmetric, groups of 32 along the hidden
 * axis) and decoded back to BF16, with the same hidden states: a head-only quantization, to be
 * compared with --own-heads. Both go through fdl_ds_pack. Deterministic in (seed, sizes). */
FDL_API fdl_status fdl_synth(const fdl_synth_opts *o, fdl_synth_result *r, fdl_err *err);

/* Symmetric int4 round-to-nearest (ties to even) of a [rows x cols] row-major matrix in groups
 * of `group` consecutive columns: scale = max|w| / 7 in float32, q = clamp(rint(w / scale), -7,
 * 7), out = q * scale (exact in float32). A zero group stays zero. in and out may alias. */
FDL_API void fdl_quant_int4_rtn(const float *in, size_t rows, size_t cols, size_t group,
                                float *out);

#ifdef __cplusplus
}
#endif
#endif
