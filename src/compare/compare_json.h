/* compare/compare_json.h - the calls of fidelis/compare.h on parsed documents (json_t), the private
 * tier (docs/layers.tsv): jansson stays out of the installed headers. */
#ifndef FIDELIS_COMPARE_JSON_H
#define FIDELIS_COMPARE_JSON_H

#include <jansson.h>

#include "fidelis/compare.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The registry comparability key of a key_inputs object (section 11.7): "cmp--" and the first
 * 16 hex digits of SHA-256 over panel_id|reference_id|metric_name|direction|
 * accumulation_dtype|stack_relation|head_policy. A "note" key is ignored. FDL_INVALID when a
 * value is missing, not a string, or contains '|'. */
fdl_status fdl_compare_key(const json_t *key_inputs, char *out /* [22] */, fdl_err *err);

/* The llama.cpp block's arrays, in the order of fdl_compare_llamacpp.arrays. */
#define FDL_COMPARE_LLAMACPP_ARRAYS                                                                \
  { FDL_COMPARE_LOGPROB_REF_NAME, FDL_COMPARE_LOGPROB_CAND_NAME, FDL_COMPARE_TOP1_NAME }

/* The reference codes of the receipt checks (section 10), each once: X(ID, "name"). NONE is a
 * receipt that passes. */
#define FDL_COMPARE_CHECK_CODES(X)                                                                 \
  X(NONE, "")                                                                                      \
  X(BAD_SCHEMA, "bad_schema")                                                                      \
  X(SCHEMA_INVALID, "schema_invalid")                                                              \
  X(SEAL_FAILED, "seal_failed")                                                                    \
  X(SELF_COMPARE_INVALID, "self_compare_invalid")                                                  \
  X(NOT_SUBMITTABLE, "not_submittable")                                                            \
  X(BIAS_INVALID, "bias_invalid")

#define FDL_RCC_ID_(id, name) FDL_RCC_##id,
typedef enum { FDL_COMPARE_CHECK_CODES(FDL_RCC_ID_) FDL_RCC_COUNT } fdl_compare_check_code;

/* A code's name ("" for NONE and anything out of range). */
const char *fdl_compare_check_code_name(fdl_compare_check_code c);

/* The checks of section 10 on a receipt (schema string, required keys and the schema's
 * conditionals, seal, SC-1, SC-2, SC-3, BIAS-006, BIAS-001). FDL_OK with *code FDL_RCC_NONE
 * when it passes; otherwise FDL_MISMATCH with *code the reference code and err naming the
 * field. */
fdl_status fdl_compare_check_receipt(const json_t *receipt, fdl_compare_check_code *code,
                                     fdl_err *err);

/* Decodes a receipt into its fields (decode.c): the one reader of its keys for a summary or a
 * report; strings and docs stay borrowed from rc. On failure (out of memory) d is empty. */
fdl_status fdl_cmp_receipt_decode(const json_t *rc, fdl_compare_receipt *d, fdl_err *err);
void fdl_cmp_receipt_free(fdl_compare_receipt *d);

/* r->receipt: the json_t * behind the opaque struct fdl_compare_doc (both casts: compare.c). */
json_t *fdl_compare_receipt_json(const fdl_compare_result *r);

#ifdef __cplusplus
}
#endif
#endif
