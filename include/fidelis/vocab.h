/* fidelis/vocab.h - the dataset format's enumerations, each written once.
 *
 * Every list is an X-macro of X(ID, "name"), the names being the spec's words
 * (../shared/spec/; docs/DATASET.md). From each come an enum (FDL_<LIST>_<ID>, then a count)
 * and a NULL-terminated array of the names in the same order, which the schema checks, the
 * pack-input checks, validate's rules and the writers all read: a list that grows grows here.
 * fdl_vocab_find maps a name back to its enum. */
#ifndef FIDELIS_VOCAB_H
#define FIDELIS_VOCAB_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* manifest.role */
#define FDL_ROLES(X) X(ROOT, "root") X(QUANT, "quant") X(DERIVED, "derived")
/* manifest.form */
#define FDL_FORMS(X) X(HIDDEN, "hidden") X(LOGIT, "logit")
/* runtime.lane: the lane registry (spec §9.1) */
#define FDL_LANES(X)                                                                               \
  X(SEALED_EP8, "sealed-ep8")                                                                      \
  X(STREAMING, "streaming")                                                                        \
  X(LOCAL_MPS, "local-mps") X(LOCAL_CUDA_BUDGET, "local-cuda-budget") X(OTHER, "other")
/* capture.dtype; a head's dtype is one of the first three */
#define FDL_CAPTURE_DTYPES(X) X(BF16, "BF16") X(F16, "F16") X(F32, "F32") X(F64, "F64")
#define FDL_HEAD_DTYPES(X) X(BF16, "BF16") X(F16, "F16") X(F32, "F32")
/* determinism.evidence_kind: the content-level kinds first (they alone may claim
 * identical_across_runs), then the others */
#define FDL_CONTENT_EVIDENCE(X)                                                                    \
  X(HIDDEN, "hidden_state_tensor_sha256")                                                          \
  X(LOGITS, "logits_tensor_sha256")                                                                \
  X(KLD, "tokenwise_kld_sha256") X(SEALED, "sealed_tokenwise_digest")
#define FDL_EVIDENCE(X)                                                                            \
  FDL_CONTENT_EVIDENCE(X) X(RUN_MEAN, "run_mean_equality_only") X(NONE, "none")
/* scope.assignments[].tensor_class, in the order a scope lists them; MOE_EXPERTS only in the
 * scopes that name it (a packed native scope), the others list the eight dense classes */
#define FDL_TENSOR_CLASSES(X)                                                                      \
  X(EMBED, "embed_tokens")                                                                         \
  X(ATTN_QKV, "attn.qkv")                                                                          \
  X(ATTN_O, "attn.o")                                                                              \
  X(MLP_GATE, "mlp.gate")                                                                          \
  X(MLP_UP, "mlp.up")                                                                              \
  X(MLP_DOWN, "mlp.down") X(MOE_EXPERTS, "moe.experts") X(NORM, "norm") X(LM_HEAD, "lm_head")

#define FDL_VOCAB_NAME_(id, name) name,
#define FDL_ROLE_ID_(id, name) FDL_ROLE_##id,
#define FDL_FORM_ID_(id, name) FDL_FORM_##id,
#define FDL_LANE_ID_(id, name) FDL_LANE_##id,
#define FDL_EVIDENCE_ID_(id, name) FDL_EVIDENCE_##id,
#define FDL_TCLASS_ID_(id, name) FDL_TCLASS_##id,
#define FDL_COUNT_(id, name) +1

typedef enum { FDL_ROLES(FDL_ROLE_ID_) FDL_ROLE_COUNT } fdl_role;
typedef enum { FDL_FORMS(FDL_FORM_ID_) FDL_FORM_COUNT } fdl_form;
typedef enum { FDL_LANES(FDL_LANE_ID_) FDL_LANE_COUNT } fdl_lane;
typedef enum { FDL_EVIDENCE(FDL_EVIDENCE_ID_) FDL_EVIDENCE_COUNT } fdl_evidence;
typedef enum { FDL_TENSOR_CLASSES(FDL_TCLASS_ID_) FDL_TCLASS_COUNT } fdl_tensor_class;
enum { FDL_CONTENT_EVIDENCE_COUNT = 0 FDL_CONTENT_EVIDENCE(FDL_COUNT_) };

/* The names, NULL-terminated, in enum order. */
FDL_API extern const char *const fdl_role_names[];
FDL_API extern const char *const fdl_form_names[];
FDL_API extern const char *const fdl_lane_names[];
FDL_API extern const char *const fdl_capture_dtype_names[];
FDL_API extern const char *const fdl_head_dtype_names[];
FDL_API extern const char *const fdl_evidence_names[];
FDL_API extern const char *const fdl_content_evidence_names[];
FDL_API extern const char *const fdl_tensor_class_names[];

/* The index of s in a NULL-terminated name list, or -1 (s NULL or not there). */
FDL_API int fdl_vocab_find(const char *const *names, const char *s);

#ifdef __cplusplus
}
#endif
#endif
