/* fidelis/attr.h - Kiln-style attribution diffs: full-vocabulary logits and per-boundary hidden
 * rows, computed with the exact formulas of the Kiln attribution spec (KILN-ATTRIBUTION.md §11).
 *
 * Every metric is computed in float64 after exact widening of each float32, with one
 * accumulator per sum, in ascending index order (no reordering, no FMA: the library is built
 * with -std=c17, which implies -ffp-contract=off). Inputs must be finite; the functions refuse
 * a non-finite value (FDL_NONFINITE) and name its index, so a caller that already scanned its
 * inputs gets the same answer either way. docs/ATTRIBUTION.md describes the commands. */
#ifndef FIDELIS_ATTR_H
#define FIDELIS_ATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "status.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* top10_overlap compares the 10 largest indices of each vector. */
#define FDL_ATTR_TOPK 10

/* ---- logits (spec §11 compare_logits) ---------------------------------------------------- */

typedef struct {
  uint64_t token_id; /* the requested index */
  float logit;       /* actual[token_id] */
  uint64_t rank;     /* 1 + #{j: A[j] > A[c] or (A[j] == A[c] and j < c)}, ordinary float order */
} fdl_attr_candidate;

typedef struct {
  uint64_t n;                            /* vector length */
  uint64_t argmax;                       /* of actual, totalOrder, lowest index on ties */
  uint64_t reference_argmax;             /* of reference, same rule */
  bool argmax_equal;                     /* argmax == reference_argmax */
  double cosine_similarity;              /* dot / (sqrt(an) * sqrt(rn)) */
  double max_abs_error;                  /* max |a - r|, starting at 0.0 */
  double mean_abs_error;                 /* sum |a - r| / n */
  unsigned top10_overlap;                /* |top_k(A,10) ∩ top_k(R,10)| */
  uint64_t top_actual[FDL_ATTR_TOPK];    /* top-k indices of actual, best first (k = min(10, n)) */
  uint64_t top_reference[FDL_ATTR_TOPK]; /* the same for reference */
  unsigned k;                            /* entries used in the two lists */
  fdl_sha256 logits_sha256;              /* SHA-256 of actual as float32 little-endian bytes */
} fdl_attr_logits;

/* Compares actual A (the candidate) with reference R, both n floats (n >= 1), and fills *out;
 * cand[i] (i < ncand, each < n) fills cand_out[i]. Refuses n == 0 (FDL_BOUNDS), a candidate id
 * >= n (FDL_BOUNDS), a non-finite value (FDL_NONFINITE, naming "actual"/"reference" and the
 * index) and an all-zero vector (FDL_REFUSED: the cosine would be 0/0). On error *out and cand_out
 * are unspecified. */
FDL_API fdl_status fdl_attr_compare_logits(const float *actual, const float *reference, size_t n,
                                           const uint64_t *cand, size_t ncand, fdl_attr_logits *out,
                                           fdl_attr_candidate *cand_out, fdl_err *err);

/* Top-k indices of v (n elements) under IEEE totalOrder, descending, ties by ascending index;
 * writes min(k, n) indices (k <= FDL_ATTR_TOPK) to idx and returns that count. */
FDL_API unsigned fdl_attr_topk(const float *v, size_t n, unsigned k, uint64_t *idx);

/* The double that Kiln's JSON holds for a float32 logit: f formatted with the shortest decimal
 * that reads back as f (as serde writes an f32), then read as a double. Finite f only. */
FDL_API double fdl_attr_f32_json_value(float f);
/* That shortest decimal ("%.{p}g" for the least p in 1..9 that round-trips through strtof) into
 * buf (cap >= 32). Returns its length. */
FDL_API size_t fdl_attr_f32_shortest(float f, char *buf, size_t cap);

/* ---- boundaries (spec §11 compare_boundary, largest_relative_error_growth) ---------------- */

typedef struct {
  double cosine_similarity;               /* dot / (sqrt(kk) * sqrt(hh)) */
  double max_abs_error;                   /* max |k - h| */
  double mean_abs_error;                  /* sum |k - h| / n */
  double root_mean_square_error;          /* sqrt(sq / n) */
  double reference_root_mean_square;      /* sqrt(hh / n) */
  double relative_root_mean_square_error; /* rmse / ref_rms */
  fdl_sha256 hf_sha256;                   /* of the reference row, float32 LE */
  fdl_sha256 kiln_sha256;                 /* of the actual row, float32 LE */
} fdl_attr_boundary;

/* Compares one boundary row: actual K (candidate) against reference H, n >= 1 floats each.
 * Refuses n == 0 (FDL_BOUNDS), a non-finite value (FDL_NONFINITE), a reference whose sum of
 * squares is 0 (ref_rms == 0) or an actual whose sum of squares is 0 (FDL_REFUSED). */
FDL_API fdl_status fdl_attr_compare_boundary(const float *actual, const float *reference, size_t n,
                                             fdl_attr_boundary *out, fdl_err *err);

/* The spec's largest_relative_error_growth over rel[0..n): delta[i] = rel[i] - rel[i-1]
 * (delta[0] = rel[0]); the first strict maximum wins. n >= 1. */
FDL_API void fdl_attr_largest_growth(const double *rel, size_t n, size_t *index, double *delta);

/* ---- inputs --------------------------------------------------------------------------------- */

/* A float32 matrix read from a file, widened exactly. rows x cols, row-major, owned. */
typedef struct {
  float *data;
  uint64_t rows, cols;
  fdl_dtype dtype;      /* the stored dtype: F32, BF16 or F16 */
  int ndim;             /* the stored rank (1 for a raw file) */
  char *boundary_names; /* safetensors __metadata__["boundary_names"], copied, or NULL */
} fdl_attr_matrix;

/* Reads path as one of:
 *   - a .npy file (first bytes "\x93NUMPY"),
 *   - a raw float32 little-endian file, when the name ends in ".f32" (one row),
 *   - otherwise a safetensors file: the tensor named `tensor`, or, when tensor is NULL, the one
 *     tensor it holds (several: FDL_INVALID, naming them).
 * The dtype must be F32, BF16 or F16 (widened exactly); rank 1 gives one row, rank 2 gives
 * [rows, cols]; any other rank is refused. Every value must be finite (FDL_NONFINITE names the
 * file, the flat index and the row/column). An empty tensor is refused (FDL_BOUNDS). Errors
 * name path. On error *m is zeroed. */
FDL_API fdl_status fdl_attr_matrix_read(const char *path, const char *tensor, fdl_attr_matrix *m,
                                        fdl_err *err);
/* Reinterprets a one-row matrix as rows of `cols` (a raw file and --hidden); refuses a length
 * that is not a multiple (FDL_BOUNDS). */
FDL_API fdl_status fdl_attr_matrix_reshape(fdl_attr_matrix *m, uint64_t cols, const char *path,
                                           fdl_err *err);
FDL_API void fdl_attr_matrix_free(fdl_attr_matrix *m);

/* ==== Kiln layer attribution v2 (KILN-ATTRIBUTION.md §8, §11, §13, §14.3) ====================
 * src/attr/layer_v2.c: the writer of kiln.rocm-hf-layer-attribution-result.v2 from the two row
 * matrices, and the recomputation of a layer record's numbers from them. Both take parsed trees:
 * they are the private tier, attr/layer_json.h; the names below are public. */

#define FDL_ATTR_LAYER_BOUNDARIES 34u
#define FDL_ATTR_LAYER_V2_SCHEMA "kiln.rocm-hf-layer-attribution-result.v2"
#define FDL_ATTR_LAYER_V2_WORKER "kiln.rocm-hf-layer-attribution.v2"

/* §13's name of boundary i: embedding, layer_NN_{linear,full}_attention (full when
 * (NN+1) % 4 == 0), final_norm; NULL when i >= FDL_ATTR_LAYER_BOUNDARIES. */
FDL_API const char *fdl_attr_layer_boundary_name(size_t i);
/* §13's kernel_policy enum: *n entries, "qualified" first. */
FDL_API const char *const *fdl_attr_layer_kernel_policies(size_t *n);

#ifdef __cplusplus
}
#endif
#endif
