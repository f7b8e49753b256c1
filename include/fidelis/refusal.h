/* fidelis/refusal.h - the one refusal record shared by pack, validate and compare.
 *
 * A refusal says which rule stopped the work (code), at which stage (gate), and what the user
 * can do about it (remedy); the message travels in the fdl_err beside it, like every other
 * failure. status is the failure's cause, so a caller can tell a refused input (FDL_REFUSED,
 * FDL_MISMATCH, ...) from an I/O failure or exhausted memory (FDL_IO, FDL_NOMEM) without
 * parsing the code. */
#ifndef FIDELIS_REFUSAL_H
#define FIDELIS_REFUSAL_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The refusal codes, each once: X(ID, "name", "what it means"). The name is what a user sees
 * ("REFUSED [bad_input]: ...") and what receipts and --json summaries carry; README.md's
 * "Refusal codes" table is this one (tests/test_refusal_table.py checks it). The exit code
 * follows the refusal's status, its cause, not the code: a code such as io_error covers a read
 * that failed (exit 4) and a file that is not what it claims (exit 3). */
#define FDL_REFUSAL_MAP(X)                                                                         \
  X(NONE, "", "nothing was refused")                                                               \
  X(USAGE, "usage", "the options contradict each other or are out of range")                       \
  X(BAD_USAGE, "bad_usage", "an option names something the command cannot use")                    \
  X(BAD_INPUT, "bad_input", "an input file or field is malformed")                                 \
  X(BAD_TENSOR_FILE, "bad_tensor_file", "a tensor file is malformed or of the wrong dtype")        \
  X(BAD_POSITION_BLOCK, "bad_position_block", "a record's positions disagree with its panel")      \
  X(NON_FINITE, "non_finite", "a tensor holds an infinite value or a NaN")                         \
  X(SCHEMA_INVALID, "schema_invalid", "a document breaks the format's schema")                     \
  X(RECEIPT_INVALID, "receipt_invalid", "a receipt breaks the receipt format")                     \
  X(MISSING_FILE, "missing_file", "a file the dataset names is absent")                            \
  X(DIGEST_MISMATCH, "digest_mismatch", "bytes do not have the digest their record names")         \
  X(SEAL_FAILED, "seal_failed", "a dataset does not validate, or its seal is broken")              \
  X(DATASET_INVALID, "dataset_invalid", "the dataset pack made fails validation (a bug)")          \
  X(SAME_ROOT, "same_root", "the reference and the candidate are one directory")                   \
  X(UNREADABLE, "unreadable", "a dataset could not be read")                                       \
  X(IO_ERROR, "io_error", "a read or write failed, or a file is not what it claims")               \
  X(WRITE_FAILED, "write_failed", "the output could not be written")                               \
  X(OUT_OF_MEMORY, "out_of_memory", "the machine ran out of memory")                               \
  X(DESTINATION_EXISTS, "destination_exists", "the output already exists (never overwritten)")     \
  X(PANEL_BINDING, "panel_binding", "the records and the panel do not bind")                       \
  X(PANEL_MISMATCH, "panel_mismatch", "the two sides were captured on different panels")           \
  X(EMPTY_INTERSECTION, "empty_intersection", "the two sides share no scored position")            \
  X(COVERAGE_MISMATCH, "coverage_mismatch", "the two sides cover different positions")             \
  X(GEOMETRY_MISMATCH, "geometry_mismatch", "vocabulary or hidden width differ, or are invalid")   \
  X(LANE_MISMATCH, "lane_mismatch", "the two sides ran on lanes that are not interchangeable")     \
  X(HEAD_MISMATCH, "head_mismatch", "the head is not the one the gate chose or the record names")  \
  X(HEAD_MISSING, "head_missing", "no head payload with the needed digest is available")           \
  X(HEAD_SUBSTITUTION_VACUOUS, "head_substitution_vacuous",                                        \
    "equal hidden states through two heads: only --own-heads measures that")                       \
  X(NOT_A_SELF_COMPARE, "not_a_self_compare", "--self-compare on two different datasets")          \
  X(SELF_COMPARE_DISAGREEMENT, "self_compare_disagreement",                                        \
    "a dataset compared with itself did not give zero")                                            \
  X(MODEL_INIT_FAILED, "model_init_failed", "a model directory could not be made")                 \
  X(QUANTIZE_REFUSED, "quantize_refused", "a checkpoint could not be quantized")                   \
  X(CAPTURE_FAILED, "capture_failed", "the engine could not capture the panel")                    \
  X(SYNTH_FAILED, "synth_failed", "the synthetic pair could not be made")                          \
  X(ESTIMATOR_FAILED, "estimator_failed", "the replay could not run (resources)")                  \
  X(INTERNAL_ERROR, "internal_error", "a failure fidelis did not expect (a bug: please report)")

#define FDL_REFUSAL_ID_(id, name, meaning) FDL_REF_##id,
typedef enum { FDL_REFUSAL_MAP(FDL_REFUSAL_ID_) FDL_REF_COUNT } fdl_refusal_code;

/* The gates, the stages that refuse: first the nine every comparison receipt reports (its
 * "gates" object, in the receipt's order), then decode (reported when a side declares a weights
 * decode), then the stages before and after them. X(ID, "name"). */
#define FDL_RECEIPT_GATES(X)                                                                       \
  X(SEAL, "seal")                                                                                  \
  X(FORM, "form")                                                                                  \
  X(PANEL, "panel")                                                                                \
  X(HEAD, "head")                                                                                  \
  X(LANE, "lane")                                                                                  \
  X(STACK, "stack") X(GEOMETRY, "geometry") X(COVERAGE, "coverage") X(LOSSY, "lossy")
#define FDL_GATES(X)                                                                               \
  X(NONE, "")                                                                                      \
  FDL_RECEIPT_GATES(X)                                                                             \
  X(DECODE, "decode")                                                                              \
  X(CLI, "cli")                                                                                    \
  X(PACK, "pack") X(COMPUTE, "compute") X(SELF_COMPARE, "self-compare") X(PUBLISH, "publish")

#define FDL_GATE_ID_(id, name) FDL_GATE_##id,
typedef enum { FDL_GATES(FDL_GATE_ID_) FDL_GATE_COUNT } fdl_gate;
#define FDL_GATE_NAME_(id, name) +1
enum { FDL_RECEIPT_GATE_COUNT = 0 FDL_RECEIPT_GATES(FDL_GATE_NAME_) };

/* Remedies name override flags or say why there is none, in one or two sentences. */
#define FDL_REFUSAL_REMEDY_MAX 640

typedef struct {
  fdl_status status;                   /* the cause; FDL_OK while nothing was refused */
  fdl_refusal_code code;               /* FDL_REF_NONE when none */
  fdl_gate gate;                       /* the stage that refused; FDL_GATE_NONE when none */
  char remedy[FDL_REFUSAL_REMEDY_MAX]; /* "" when there is nothing to suggest */
} fdl_refusal;

/* A gate's name ("" for FDL_GATE_NONE and anything out of range). */
FDL_API const char *fdl_gate_name(fdl_gate g);
/* The code's name ("" for FDL_REF_NONE and anything out of range) and its meaning. */
FDL_API const char *fdl_refusal_name(fdl_refusal_code c);
FDL_API const char *fdl_refusal_meaning(fdl_refusal_code c);

#ifdef __cplusplus
}
#endif
#endif
