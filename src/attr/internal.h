/* attr/internal.h - helpers shared by the attribution files (not installed). */
#ifndef FIDELIS_ATTR_INTERNAL_H
#define FIDELIS_ATTR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fidelis/attr.h"
#include "fidelis/digest.h"
#include "fidelis/status.h"
#include "attr/kiln_json.h"

/* FDL_NONFINITE naming the first NaN or infinity of v[0..n) ("WHAT element I is NaN, expected
 * a finite value"), by the tensor layer's bit test (fdl_tensor_first_nonfinite). */
fdl_status fdl_attr_finite(const float *v, size_t n, const char *what, fdl_err *err);

/* Kiln's cosine dot / (sqrt(aa) * sqrt(bb)) (spec §11), with fidelis's rule for the rounding
 * it leaves: vectors equal element by element (same: every |a - b| was 0) give exactly 1.0,
 * and any other result is clamped to [-1, 1]. Without it two equal vectors can come out as
 * 1.0000000000000002, which the record checkers refuse (docs/ATTRIBUTION.md, "Cosine"). */
double fdl_attr_cosine(double dot, double aa, double bb, bool same);

/* The spec's vector digest (§1): SHA-256 over the little-endian binary32 bytes of v[0..n). */
fdl_status fdl_attr_sha256_f32(const float *v, size_t n, fdl_sha256 *out, fdl_err *err);
/* d as the records write a digest: "sha256:" and its hex. */
void fdl_attr_sha_text(const fdl_sha256 *d, char out[FDL_SEAL_BUF]);

/* The blocks of fidelis.path-attribution.v1 (attribute.c writes them, kiln_fidelis.c rebuilds
 * them to recompute a record): a full path's comparison (r and its two candidates c) and the
 * reference block of a reference of n logits (its verdict included); NULL when out of memory. */
json_t *fdl_attr_comparison_json(const fdl_attr_logits *r, const fdl_attr_candidate *c);
json_t *fdl_attr_reference_json(const fdl_attr_logits *r, const fdl_attr_candidate *c, size_t n);

/* The four Kiln paths of kiln.rocm-hf-path-attribution-result.v2 in §12's precedence order:
 * the worker key, whether it is a full-logits path, and the label it earns when it diverges. */
typedef struct {
  const char *name, *label;
  bool full;
} fdl_kiln_v2_path;
extern const fdl_kiln_v2_path fdl_kiln_v2_paths[4];

/* A token id (§1): a JSON integer, not a bool, below FDL_KILN_VOCAB_SIZE. */
bool fdl_kiln_token_ok(const json_t *v);
/* v, an array of at most max token ids, into a new array *ids of *n that the caller frees, even
 * on failure. FDL_PARSE: *bad is the first element that is no token id, or SIZE_MAX (no array of
 * at most max values); the caller names the array. FDL_NOMEM. */
fdl_status fdl_kiln_token_ids(const json_t *v, size_t max, uint64_t **ids, size_t *n, size_t *bad);
/* A POSIX path of n bytes that is relative, has no ".." and is already normalised (no "./",
 * "//", trailing "/"). */
bool fdl_kiln_rel_path_ok(const char *s, size_t n);

/* The provenance a Kiln v2 writer copies (provenance.c), borrowed from the tree. */
typedef struct {
  const json_t *created_at_utc, *duration_seconds, *source, *binary, *implementation,
      *model_fingerprint, *request_path, *containment;
  const char *reference_key; /* "oracle_reference" (a path result) or "reference" (a layer's) */
  const json_t *reference;
  const json_t *model_identity; /* a layer result's, optional (NULL) */
  const json_t *evidence;       /* a layer result's reference.evidence */
} fdl_attr_provenance;

/* Checks pv as a path result's (rq NULL) or a layer result's (rq its request) provenance: an
 * object of exactly its keys, each block an object, duration_seconds > 0, created_at_utc a
 * string, request_path a nonempty string; for a layer, model_identity (when given) equal to the
 * request's and reference.evidence an object. FDL_INVALID / FDL_MISMATCH naming the field. */
fdl_status fdl_attr_provenance_read(const json_t *pv, const fdl_kiln_request *rq,
                                    fdl_attr_provenance *p, fdl_err *err);
/* The sealed result v2 (result_sha256) of schema around worker (taken): the provenance's blocks,
 * request {path, sha256} and the request's model_identity. */
fdl_status fdl_attr_result_v2(const char *schema, const fdl_attr_provenance *p,
                              const fdl_kiln_request *rq, json_t *worker, json_t **out,
                              fdl_err *err);
/* The HF evidence of a layer provenance describes these rows (their digest rows_sha, count and
 * width) and this request; FDL_MISMATCH naming the evidence field. */
fdl_status fdl_attr_evidence_check(const fdl_attr_provenance *p, const char *rows_sha, size_t rows,
                                   size_t hidden, const fdl_kiln_request *rq, fdl_err *err);

#endif
