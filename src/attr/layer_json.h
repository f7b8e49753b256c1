/* attr/layer_json.h - the Kiln layer attribution v2 calls of fidelis/attr.h on parsed documents
 * (json_t), the private tier (docs/layers.tsv): jansson stays out of the installed headers. */
#ifndef FIDELIS_LAYER_JSON_H
#define FIDELIS_LAYER_JSON_H

#include <jansson.h>

#include "fidelis/attr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* names[0..n) (an entry NULL: not a string) equals the 34 names in order; otherwise
 * FDL_MISMATCH naming `what` and the first position that differs. */
fdl_status fdl_attr_layer_names_check(const char *const *names, size_t n, const char *what,
                                      fdl_err *err);

/* The names of a boundary matrix's n rows: the comma-separated list when list is not NULL, else
 * the JSON list of strings meta (safetensors __metadata__ boundary_names; anything else is
 * FDL_PARSE), else boundary_<i>. Another count is FDL_MISMATCH naming `what` (the list's
 * source). *names holds the n entries in one block (free(*names)). */
fdl_status fdl_attr_row_names(const char *list, const char *meta, size_t n, const char *what,
                              char ***names, fdl_err *err);

/* Boundary i's object as the records hold it (§11: the six metrics, the two row digests, index
 * and name), or NULL when out of memory. */
json_t *fdl_attr_boundary_json(size_t i, const char *name, const fdl_attr_boundary *b);

/* Every row's compare_boundary (§11) into bs[rows], and the largest growth (*gi, *gd); a failure
 * is prefixed "row I (NAME)", NAME names[i] or, names NULL, §13's. */
fdl_status fdl_attr_compare_rows(const float *reference, const float *actual, size_t rows,
                                 size_t hidden, const char *const *names, fdl_attr_boundary *bs,
                                 size_t *gi, double *gd, fdl_err *err);

/* What the layer v2 writer is given; everything is borrowed. */
typedef struct {
  const json_t *request;    /* kiln.hf-next-token-request.v1 (3 continuation tokens) */
  const json_t *provenance; /* what fidelis cannot know, copied: {created_at_utc,
                               duration_seconds (> 0), source, binary, implementation,
                               model_fingerprint, request_path, reference {bytes, evidence,
                               location, sha256}, containment {hf, kiln}} and, optionally,
                               model_identity (then equal to the request's) */
  const float *reference;   /* the HF rows, rows x hidden, row-major */
  const float *actual;      /* the Kiln rows, the same shape */
  size_t rows, hidden;
  const float *final_logits; /* Kiln's final logits, vocab floats (248320) */
  size_t vocab;
  const json_t *observed;    /* 4 token ids: the continuation, then argmax(final_logits) */
  const char *kernel_policy; /* one of fdl_attr_layer_kernel_policies */
} fdl_attr_layer_v2_in;

/* Builds the sealed kiln.rocm-hf-layer-attribution-result.v2: the worker block (34 boundaries by
 * §11's compare_boundary, the largest growth, final_logits_sha256 and hf_layer_last_rows_sha256
 * as f32 digests, the request's id, input count and input digest, the kernel policy, the observed
 * ids), request {path, sha256} with the request's canonical identity, model_identity (the
 * request's) and result_sha256; the rest is copied from the provenance. Refuses (FDL_REFUSED,
 * FDL_MISMATCH, FDL_INVALID, FDL_NONFINITE), naming the input and field, anything `fidelis
 * check` would refuse: rows other than 34, an evidence rows digest, hidden size, boundary list
 * or request binding that differs from the inputs, a kernel policy outside the enum, observed
 * ids that are not the continuation then the final logits' argmax, a non-finite value. The
 * record passes fdl_kiln_check_doc before it is handed back. */
fdl_status fdl_attr_layer_v2(const fdl_attr_layer_v2_in *in, json_t **out, fdl_err *err);

/* Recomputes from the rows every number of a layer record (Kiln's result v1 or v2, as
 * fdl_kiln_check_doc accepted it): each boundary's six metrics and two row digests, its index
 * (and, in v2, its name), the largest growth, hf_layer_last_rows_sha256 and, when present,
 * reference.evidence.layer_last_rows_sha256 and hidden_size, and, when final_logits is not NULL,
 * final_logits_sha256 over its vocab floats. Numbers are compared as the record prints them
 * (Python repr of the double), so a match is bit for bit. A difference is FDL_MISMATCH naming
 * `name`, the JSON path, the recorded and the recomputed value; another record or a row count
 * that is not the record's boundary count is FDL_REFUSED. */
fdl_status fdl_attr_layer_recompute(const json_t *doc, const char *name, const float *reference,
                                    const float *actual, size_t rows, size_t hidden,
                                    const float *final_logits, size_t vocab, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
