/* cmp.h - internal to src/compare: the two sides, the gate findings, the estimate, and the
 * refusal record that every stage shares.
 *
 * Lifecycle of one fdl_compare: load both sides (fdl_cmp_side_load) -> run the ladder
 * (fdl_cmp_gates_run, then fdl_cmp_classify) -> estimate (fdl_cmp_estimate_run) or hash proof ->
 * statistics (fdl_cmp_stats_build) -> receipt (fdl_cmp_receipt_build) -> check and write
 * (cmp_output_write). Every stage that can refuse takes an fdl_refusal and returns FDL_REFUSED
 * with it filled. */
#ifndef FDL_COMPARE_CMP_H
#define FDL_COMPARE_CMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fidelis/compare.h"
#include "fidelis/dataset.h"
#include "json/get.h"
#include "json/json.h"
#include "fidelis/num.h"
#include "base/fs.h"
#include "json/py.h"
#include "fidelis/refusal.h"
#include "dataset/dataset_json.h"

/* ---- refusals --------------------------------------------------------------------------- */

/* Fills r and err ("message") and returns FDL_REFUSED (fdl_refuse with the status every gate
 * refusal has). remedy may be NULL (no remedy line). */
fdl_status fdl_cmp_refuse(fdl_refusal *r, fdl_err *err, fdl_refusal_code code, fdl_gate gate,
                          const char *remedy, const char *fmt, ...) FDL_PRINTF(6, 7);

/* Remedy text of refusals that have no override by design. */
#define CMP_NO_OVERRIDE_PANEL                                                                      \
  "none: the panel is part of the measurement's identity, so there is deliberately no "            \
  "override; capture both sides over the same sealed panel"
#define CMP_NO_OVERRIDE_DATA "none: fix or re-fetch the dataset; there is no override"
#define CMP_REMEDY_BUG                                                                             \
  "none: this is a fidelis bug; please report it with the command line and both datasets"
/* Remedies name options by what they are, not by a CLI flag: the library has no command line. */
#define CMP_REMEDY_RESOURCES                                                                       \
  "free memory, or lower the thread count or the position block, then retry"
#define CMP_REMEDY_WRITE                                                                           \
  "make the parent of the output directory writable, with free space, then retry"

/* ---- small JSON helpers (json_util.c) --------------------------------------------------- */

/* The getters are json/get.h's; Python ==, str() and truthiness are json/py.h's. */
/* s, or "" when s is NULL. */
const char *fdl_cmp_str0(const char *s);
/* Sets key to a new real / integer / string / bool (string NULL gives null). */
int fdl_cmp_set_real(json_t *o, const char *k, double v);
int fdl_cmp_set_int(json_t *o, const char *k, int64_t v);
int fdl_cmp_set_str(json_t *o, const char *k, const char *v);
/* A JSON string for s; s that is not UTF-8 becomes its fdl_quote_text spelling. NULL only when
 * out of memory. */
json_t *fdl_cmp_json_text(const char *s);
int fdl_cmp_set_bool(json_t *o, const char *k, bool v);
/* A deep copy of v, or null when v is NULL (an absent key, as dict.get gives None). */
json_t *fdl_cmp_copy(const json_t *v);
/* True when s is NULL or "". */
bool fdl_cmp_empty(const char *s);
/* strcmp that treats NULL as "". */
bool fdl_cmp_streq(const char *a, const char *b);
/* First 12 hex digits of a digest for messages ("" stays ""). */
void fdl_cmp_short(const char *hex, char out[13]);

/* ---- sides (load.c) --------------------------------------------------------------------- */

/* panel.tokenizer's fields that PANEL-D6 compares, in the order the panel gate names them, and
 * the manifest's head keys a receipt's side block copies (load.c). */
enum { CMP_N_TOKENIZER = 6, CMP_N_HEAD_SHOWN = 5 };
extern const char *const fdl_cmp_tokenizer_fields[CMP_N_TOKENIZER],
    *const fdl_cmp_head_keys[CMP_N_HEAD_SHOWN];

/* A capture record's panel record (or NULL) and labels for per_context: [0] its own, [1] that
 * `or` the panel record's (Python's `or`), which a computed comparison shows. The receipt copies
 * each label as written (borrowed; NULL: absent, shown null); the groups take its string. */
typedef struct {
  const fdl_ds_panel_record *panel;
  const char *window_id; /* for messages */
  const json_t *window_id_v, *domain_v[2], *stratum_v[2];
  const char *domain[2], *allocation_stratum[2];
} cmp_record;

/* One side, decoded by fdl_cmp_side_load: its readers never read a document's keys. A value the
 * receipt copies verbatim or a gate compares whole (Python ==) stays a borrowed tree, or NULL. */
typedef struct {
  const char *root;  /* as given */
  const char *label; /* side block label */
  const char *who;   /* "reference" / "candidate" */
  fdl_dataset ds;
  const fdl_ds_manifest *m; /* &ds.m: the manifest's fields */
  bool head_payload;        /* head.file exists as a regular file */
  bool hidden;              /* capture.form is hidden */
  const char *capture_dir;  /* directory of capture.manifest_file, root-relative */
  struct {                  /* runtime capture_tool.weights_decode (section 5.9) */
    const char *method, *scope, *output_dtype;
    bool activation_quantized; /* declared by a quantization_config or activation_quantization */
  } wd;
  const json_t *source_files; /* runtime source_files when a non-empty object, else NULL */
  const json_t *weights, *context_length, *scoring_window, *tokenizer; /* weights, panel.* */
  const json_t *tokenizer_field[CMP_N_TOKENIZER]; /* NULL when absent or null */
  const char *tokenizer_id;                       /* panel.tokenizer.id when a string */
  const json_t *head_shown[CMP_N_HEAD_SHOWN]; /* fdl_cmp_head_keys of the manifest's head block */
  cmp_record *recs;                           /* per ds.records entry */
} cmp_side;

/* Validates the dataset (refusal seal_failed with the validator's first error) and loads it. */
fdl_status fdl_cmp_side_load(cmp_side *s, const char *root, const char *who, const char *label,
                             const fdl_compare_opts *o, fdl_refusal *r, fdl_err *err);
void fdl_cmp_side_free(cmp_side *s);
/* root + "/" + rel (+ "/" + rel2 when non-NULL), malloc'd; NULL on OOM. */
char *fdl_cmp_path_join(const char *root, const char *rel, const char *rel2);

/* ---- verified reads (vread.c) --------------------------------------------------------- */

/* One tensor file being read for compute; its digests come from the very bytes widened. */
typedef struct {
  const fdl_tensor *t;
  const fdl_safetensors *st;
  const uint8_t *base; /* file byte 0 in the mapping */
  uint64_t size, data_start, pos;
  uint64_t released; /* file bytes before this went back to the kernel (fdl_safetensors_release) */
  bool payload_is_content;
  fdl_sha256_ctx *file, *payload, *content; /* payload NULL when it is the content */
} cmp_vread;

typedef struct {
  char file[FDL_SHA256_HEX_LEN + 1], payload[FDL_SHA256_HEX_LEN + 1],
      content[FDL_SHA256_HEX_LEN + 1];
} cmp_vread_digests;

fdl_status fdl_cmp_vread_begin(cmp_vread *v, const fdl_safetensors *st, const fdl_tensor *t,
                               fdl_err *err);
/* Widens tensor elements [first, first + n) into out, hashing them in the same read; calls go
 * forward through the tensor. */
fdl_status fdl_cmp_vread_rows(cmp_vread *v, size_t first, size_t n, float *out, fdl_err *err);
/* The same, keeping the elements as stored (in host byte order) instead of widening them. */
fdl_status fdl_cmp_vread_raw(cmp_vread *v, size_t first, size_t n, void *out, fdl_err *err);
/* Hashes the rest of the file and gives the three digests. */
fdl_status fdl_cmp_vread_end(cmp_vread *v, cmp_vread_digests *d, fdl_err *err);
void fdl_cmp_vread_free(cmp_vread *v);

/* ---- the digests of what was read (verify.c) -------------------------------------------- */

/* A record's file, payload and content digests against its manifest entry (seal_failed). */
fdl_status fdl_cmp_check_record(const cmp_side *s, size_t at, const cmp_vread_digests *d,
                                fdl_refusal *r, fdl_err *err);
/* A side's head payload: content digest and file digest. */
fdl_status fdl_cmp_check_head(const cmp_side *s, const cmp_vread_digests *d, fdl_refusal *r,
                              fdl_err *err);
/* Hashes and checks every capture file and head payload of both sides that compute did not
 * read (read[i] NULL: none was). */
fdl_status fdl_cmp_verify_rest(const cmp_side *sides[2], const bool *const read[2],
                               const bool head_read[2], unsigned threads, fdl_refusal *r,
                               fdl_err *err);

/* ---- findings (gates_*.c, classify.c) -------------------------------------------------- */

typedef struct {
  json_t *gates;       /* object: gate name -> {passed, detail, overridden_by} */
  json_t *disclosures; /* array, in gate order */
  json_t *bias;        /* object or NULL */
  bool advisory;       /* class advisory */
  bool not_floor;      /* some gate forbids use as a floor */
  bool same_lane;
  bool cross_stack;
  bool preview;
  bool head_substituted;
  const char *head_policy;               /* "native_head" / "shared_reference_head" */
  bool own_heads;                        /* HEAD-1d: each hidden side through its own head */
  char applied_head[FDL_SHA256_HEX_BUF]; /* single applied head ("" under HEAD-1d and HEAD-2) */
  char applied_ref[FDL_SHA256_HEX_BUF],
      applied_cand[FDL_SHA256_HEX_BUF]; /* per-side applied heads ("" under HEAD-2) */
  /* shared records, ascending index; positions into each side's ds.records */
  int64_t *shared;
  size_t *ref_at, *cand_at;
  size_t n_shared;
  bool sets_differ;
  bool covers_full_panel;
  /* classification */
  const char *kind; /* measurement / reproduction_confirmation / run_to_run_floor */
  bool capture_equal, weights_identity_equal, head_digest_equal;
  double kl_mean; /* the receipt's kl.mean (stats.c), for the determinism block */
} cmp_findings;

void fdl_cmp_findings_init(cmp_findings *f);
void fdl_cmp_findings_free(cmp_findings *f);
/* Records a gate result; overridden_by may be NULL. */
fdl_status fdl_cmp_gate(cmp_findings *f, fdl_gate gate, bool passed, const char *overridden_by,
                        fdl_err *err, const char *fmt, ...) FDL_PRINTF(6, 7);
/* Appends a disclosure; affects < 0 writes null. */
fdl_status fdl_cmp_disclose(cmp_findings *f, const char *code, const char *severity, int affects,
                            fdl_err *err, const char *fmt, ...) FDL_PRINTF(6, 7);
/* Replaces the bias block (kind, direction unknown, no magnitude, no floor ref, detail). */
fdl_status fdl_cmp_set_bias(cmp_findings *f, const char *kind, const char *detail, fdl_err *err);

/* The gates of section 4 in order: form, provenance, panel, head, lane, stack, geometry,
 * coverage, lossy, decode (gates_data.c), then seal. */
fdl_status fdl_cmp_gate_provenance(const cmp_side *a, const cmp_side *b, cmp_findings *f,
                                   fdl_err *err);
fdl_status fdl_cmp_gate_panel(const cmp_side *a, const cmp_side *b, cmp_findings *f, fdl_refusal *r,
                              fdl_err *err);
fdl_status fdl_cmp_gate_head(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                             cmp_findings *f, fdl_refusal *r, fdl_err *err);
fdl_status fdl_cmp_gate_lane_stack(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                   cmp_findings *f, fdl_refusal *r, fdl_err *err);
/* The whole ladder (section 4 steps 1-11). */
fdl_status fdl_cmp_gates_run(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                             cmp_findings *f, fdl_refusal *r, fdl_err *err);
/* Classification with HEAD-1c and the --self-compare assertion (steps 12-13). */
fdl_status fdl_cmp_classify(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                            cmp_findings *f, fdl_refusal *r, fdl_err *err);

/* Widening tensor bytes to float32 rows is the tensor layer's (fdl_tensor_widen_f32); a dtype
 * it cannot read is bad_tensor_file for the estimator. */

/* ---- heads (heads.c) --------------------------------------------------------------------- */

typedef struct {
  void *ref;  /* [vocab x hidden] as stored, or NULL when the reference side is logit form */
  void *cand; /* may equal ref (one copy when the digests are identical) */
  fdl_gemm_type ref_type, cand_type;
  size_t vocab, hidden_ref, hidden_cand;
  bool read[2]; /* the side's own head payload was read for compute and its digests matched */
} cmp_heads;

/* Resolves and loads the heads the head gate decided (section 5.4, head resolution). */
fdl_status fdl_cmp_heads_load(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                              cmp_findings *f, cmp_heads *h, fdl_refusal *r, fdl_err *err);
void fdl_cmp_heads_free(cmp_heads *h);

/* ---- estimate (estimate.c) -------------------------------------------------------------- */

typedef struct {
  size_t n_rows;   /* tokenwise length */
  size_t *ctx_off; /* [n_shared + 1]: context c owns rows [ctx_off[c], ctx_off[c+1]) */
  double *kl;      /* [n_rows] */
  double *js;      /* [n_rows] or NULL when JS was not computed */
  uint64_t top1_matches;
  /* Per row, from the same pass as kl (NULL for the hash proof): the token the row predicts
   * (only during the run), each side's float64 log-probability of it, and 1 where the argmaxes
   * agree. */
  int64_t *target;
  double *lp_ref, *lp_cand;
  uint8_t *top1;
  double abs_err_sum; /* sum over rows, in row order, of sum_v |t - s| (Neumaier) */
  double abs_err_max;
  double *abs_row_sum, *abs_row_max; /* per row: sum_v |t - s| and max_v |t - s| */
  /* With more than one rank (docs/SCALE.md) a rank computes only the contexts it owns, into
   * rows [0, n_local) of the arrays above in context order; fdl_cmp_estimate_finish moves them
   * to their slots on rank 0. One process: n_local == n_rows and the two layouts agree. */
  size_t n_local;
  bool computed;   /* false for the hash proof */
  const char *isa; /* kernel that ran */
  bool *read[2];   /* per record of each side: read for compute and its digests matched */
} cmp_estimate;

/* Sizes the tokenwise layout from the reference's scored_rows over the shared records. */
fdl_status fdl_cmp_estimate_layout(const cmp_side *a, const cmp_findings *f, cmp_estimate *e,
                                   fdl_err *err);
/* The hash proof: every value +0.0, top-1 all agree. */
fdl_status fdl_cmp_estimate_zero(cmp_estimate *e, fdl_err *err);
/* The full computation (section 6.2), streaming records through fdl_num_run. */
fdl_status fdl_cmp_estimate_run(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                cmp_findings *f, const cmp_heads *h, bool want_js, cmp_estimate *e,
                                fdl_refusal *r, fdl_err *err);
/* Collective: rank 0 gathers every rank's rows into their slots (a no-op for one process),
 * then takes the row-order reductions (top-1 matches, the absolute error's compensated sum and
 * maximum). Every rank returns the same status. */
fdl_status fdl_cmp_estimate_finish(const struct fdl_scale *sc, const cmp_findings *f,
                                   cmp_estimate *e, fdl_refusal *r, fdl_err *err);
void fdl_cmp_estimate_free(cmp_estimate *e);

/* ---- statistics, receipt, output -------------------------------------------------------- */

/* Adds kl, top1_agreement, kl_micro_token_mean, kl_macro_stratum_mean, per_stratum,
 * per_domain, context_depth_buckets, per_context, high_kld_contexts, top1_discordant_contexts,
 * uncertainty, js, logit_absolute_error_mean/max and metric to the receipt. Appends the
 * uncertainty_not_estimated disclosure when a bootstrap was wanted but cannot run. */
fdl_status fdl_cmp_stats_build(const cmp_side *a, cmp_findings *f, const cmp_estimate *e,
                               const fdl_compare_opts *o, bool reproduction, json_t *receipt,
                               fdl_err *err);

typedef struct {
  uint64_t bytes;
  char sha256[FDL_SHA256_HEX_BUF];
  bool extra; /* the three arrays below were written (rows computed) */
  char lp_ref_sha256[FDL_SHA256_HEX_BUF], lp_cand_sha256[FDL_SHA256_HEX_BUF],
      top1_sha256[FDL_SHA256_HEX_BUF];
} cmp_tokenwise_info;

/* Adds fidelis_extensions.llamacpp_compatible (llamacpp.c): llama.cpp's statistics computed
 * exactly from e's per-row arrays, with the extra arrays' digests from tw. Nothing is added for
 * a hash proof (no row was computed). Refuses non_finite when a statistic overflows. */
fdl_status fdl_cmp_llamacpp_add(const cmp_estimate *e, const cmp_tokenwise_info *tw, json_t *rc,
                                fdl_refusal *r, fdl_err *err);

/* Builds every other block of the receipt (sides, panel, gates, comparator, estimator,
 * determinism, measurement_scope, comparability, tokenwise, self_compare, submission,
 * disclosures) and seals it. */
fdl_status fdl_cmp_receipt_build(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                 cmp_findings *f, const cmp_estimate *e, bool force_agreed,
                                 const cmp_tokenwise_info *tw, json_t *receipt, fdl_refusal *r,
                                 fdl_err *err);

/* The comparability block (section 11.7): class, floor, lane, bias, and for a measurement the
 * key and its inputs. Refuses receipt_invalid when a key input contains '|'. */
fdl_status fdl_cmp_comparability(const cmp_side *a, const cmp_findings *f, json_t **out,
                                 fdl_refusal *r, fdl_err *err);

/* The comparator block's description of fidelis and its environment (env.c). */
json_t *fdl_cmp_env_replay(void);
json_t *fdl_cmp_env_tool(void);

typedef struct {
  fdl_stage st;   /* becomes --out */
  char *npy;      /* staged tokenwise-kld.npy */
  char *extra[3]; /* staged log-probability (ref, cand) and top-1 arrays */
  char *receipt;  /* staged comparison-receipt.json */
} cmp_stage;

/* Before any work: refuses destination_exists when --out exists as anything (an empty
 * directory, a dangling symlink), creates its parent if needed and the staging directory beside
 * it (write_failed when it cannot: a read-only parent). */
fdl_status fdl_cmp_stage_open(const fdl_compare_opts *o, cmp_stage *st, fdl_refusal *r,
                              fdl_err *err);
/* Writes the np.save bytes of the token-wise array (and, when the rows were computed, of the
 * log-probability and top-1 arrays) and digests them. */
fdl_status fdl_cmp_stage_tokenwise(cmp_stage *st, const cmp_estimate *e, cmp_tokenwise_info *tw,
                                   fdl_refusal *r, fdl_err *err);
/* Writes the receipt (indent-2 file form) and publishes the staging directory as out_dir with
 * one no-replace rename. */
fdl_status fdl_cmp_stage_commit(cmp_stage *st, const json_t *receipt, const char *out_dir,
                                char **receipt_path, char **tokenwise_path, fdl_refusal *r,
                                fdl_err *err);
/* Removes whatever is left in the staging directory, and the directory. */
void fdl_cmp_stage_cleanup(cmp_stage *st);

#endif
