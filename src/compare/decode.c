/* decode.c - the comparison receipt's decoder: the one place the keys of a receipt are read for
 * what a summary or a report shows (fdl_compare_receipt). A missing or mistyped value reads as
 * NULL, NaN, FDL_COMPARE_NO_INT or -1 (fidelis/compare.h), so a page can tell "absent" from 0. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "compare/cmp.h"
#include "compare/compare_json.h"

/* A member of a decoded struct and the dotted path it is read from; its type says how: a
 * const char * (STR), a double (NUM), an int64_t (INT) or an int that is 1, 0 or -1 (BOOL). */
typedef enum { STR, NUM, INT, BOOL } kind;
typedef struct {
  const char *path;
  kind kind;
  size_t at; /* offsetof the member */
} field;
#define FIELD(type, path, member)                                                                  \
  { path, KIND(((type *)0)->member), offsetof(type, member) }
#define KIND(m) _Generic(m, const char * : STR, double : NUM, int64_t : INT, int : BOOL)

static int boolean(const json_t *o, const char *path) {
  const json_t *v = fdl_json_path(o, path);
  return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* Sets every member listed in f from o, each read as absent when it is not there. */
static void decode(const json_t *o, const field *f, size_t n, void *out) {
  for (size_t i = 0; i < n; i++) {
    void *m = (char *)out + f[i].at;
    if (f[i].kind == STR) *(const char **)m = fdl_json_path_str(o, f[i].path);
    if (f[i].kind == NUM) *(double *)m = fdl_json_path_num(o, f[i].path, NAN);
    if (f[i].kind == INT) *(int64_t *)m = fdl_json_path_int(o, f[i].path, FDL_COMPARE_NO_INT);
    if (f[i].kind == BOOL) *(int *)m = boolean(o, f[i].path);
  }
}
#define N(table) (sizeof table / sizeof *table)
#define DECODE(o, table, out) decode(o, table, N(table), out)

/* X(member) is read from the path its name spells, X_AT(path, member) from another path. */
#define R(member) FIELD(fdl_compare_receipt, #member, member)
#define R_AT(path, member) FIELD(fdl_compare_receipt, path, member)
static const field RECEIPT[] = {R(schema),
                                R(comparison_kind),
                                R(receipt_sha256),
                                R(created_utc),
                                R(comparability.key),
                                R(comparability.usable_as_floor),
                                R(comparability.same_lane),
                                R(comparator.estimator_backend),
                                R(comparator.replay_backend),
                                R(comparator.device),
                                R(kl.mean),
                                R(kl.median),
                                R(kl.p95),
                                R(kl.p99),
                                R(kl.p99_9),
                                R(kl.max),
                                R(panel.panel_id),
                                R(panel.suite_token_hash_sha256),
                                R(panel.scored_positions),
                                R(panel.contexts),
                                R(panel.context_length),
                                R(uncertainty.method),
                                R(uncertainty.cluster_unit),
                                R(uncertainty.ci95_low),
                                R(uncertainty.ci95_high),
                                R(uncertainty.samples),
                                R(uncertainty.clusters),
                                R(uncertainty.seed),
                                R(top1_agreement),
                                R(tokenwise.path),
                                R(tokenwise.sha256),
                                R_AT("comparability.class", comparability_class),
                                R_AT("comparability.bias.kind", comparability.bias_kind),
                                R_AT("comparator.tool.name", comparator.tool_name),
                                R_AT("comparator.tool.version", comparator.tool_version),
                                R_AT("comparator.tool.entrypoint", comparator.tool_entrypoint),
                                R_AT("comparator.replay_env.library", comparator.replay_library),
                                R_AT("metric.value", metric_value),
                                R_AT("measurement_scope.scored_positions", scored_positions),
                                R_AT("measurement_scope.contexts", contexts),
                                R_AT("panel.tokenizer.id", panel.tokenizer_id),
                                R_AT("js.mean", js_mean),
                                R_AT("estimator.stack_relation", stack_relation)};

#define S(member) FIELD(fdl_compare_side, #member, member)
#define S_AT(path, member) FIELD(fdl_compare_side, path, member)
static const field SIDE[] = {
    S(label), S(dataset_id), S(dataset_sha256), S(capture_content_digest),  S(role), S(form),
    S(lane),  S(repository), S(revision),       S(stack_fingerprint_sha256)};
static const field SIDE_AT[] = {
    S_AT("weights.repository", weights_repository), S_AT("weights.revision", weights_revision),
    S_AT("weights.checkpoint_identity_sha256", weights_checkpoint_identity_sha256),
    S_AT("head.tensor_content_sha256", head_tensor_content_sha256)};

#define L(member) FIELD(fdl_compare_llamacpp, #member, member)
#define L_AT(path, member) FIELD(fdl_compare_llamacpp, path, member)
static const field LLAMACPP[] = {L(schema),
                                 L(definitions),
                                 L(n),
                                 L(ppl_candidate.value),
                                 L(ppl_reference.value),
                                 L(ln_ppl_ratio.value),
                                 L(ppl_ratio.value),
                                 L(same_top.value),
                                 L(logprob_correlation),
                                 L(kld.mean),
                                 L(kld.max),
                                 L(kld.min),
                                 L(delta_p.mean),
                                 L(delta_p.rms),
                                 L(delta_p.max),
                                 L(delta_p.min)};
static const field LLAMACPP_AT[] = {
    L_AT("ppl_candidate.stderr", ppl_candidate.se), L_AT("ppl_reference.stderr", ppl_reference.se),
    L_AT("ln_ppl_ratio.stderr", ln_ppl_ratio.se),   L_AT("ppl_ratio.stderr", ppl_ratio.se),
    L_AT("same_top.stderr", same_top.se),           L_AT("kld.stderr", kld.se),
    L_AT("delta_p.mean_stderr", delta_p.mean_se),   L_AT("delta_p.rms_stderr", delta_p.rms_se)};

#define C(member) FIELD(fdl_compare_context, #member, member)
static const field CONTEXT[] = {C(index), C(scored_rows), C(window_id), C(domain),
                                C(mean),  C(max),         C(ci95_low),  C(ci95_high)};
#define D(member) FIELD(fdl_compare_disclosure, #member, member)
static const field DISCLOSURE[] = {D(severity), D(code), D(detail), D(affects_comparability)};

static void llamacpp(const json_t *x, fdl_compare_llamacpp *l) {
  l->present = x != NULL;
  DECODE(x, LLAMACPP, l);
  DECODE(x, LLAMACPP_AT, l);
  /* The array names and the percentile keys hold dots: looked up one level at a time, never as
   * a dotted path. */
  static const char *const ARRAYS[3] = FDL_COMPARE_LLAMACPP_ARRAYS;
  static const char *const KLD_P[9] = FDL_COMPARE_KLD_PERCENTILES;
  static const char *const DP_P[11] = FDL_COMPARE_DP_PERCENTILES;
  const json_t *klp = fdl_json_path(x, "kld.percentiles");
  const json_t *dpp = fdl_json_path(x, "delta_p.percentiles");
  for (size_t i = 0; i < 3; i++) l->arrays[i] = fdl_json_str(fdl_json_obj(x, "arrays"), ARRAYS[i]);
  for (size_t i = 0; i < 9; i++)
    l->kld.percentiles[i] = fdl_json_path_num(json_object_get(klp, KLD_P[i]), "", NAN);
  for (size_t i = 0; i < 11; i++)
    l->delta_p.percentiles[i] = fdl_json_path_num(json_object_get(dpp, DP_P[i]), "", NAN);
}

/* The elements of rc[key], an array, each of size sz decoded by the n fields of f; NULL when
 * out of memory. */
static void *elements(const json_t *rc, const char *key, const field *f, size_t n, size_t sz,
                      size_t *count) {
  const json_t *a = json_object_get(rc, key);
  *count = json_array_size(a);
  char *out = fdl_calloc(*count ? *count : 1, sz);
  for (size_t i = 0; out && i < *count; i++) decode(json_array_get(a, i), f, n, out + i * sz);
  return out;
}

fdl_status fdl_cmp_receipt_decode(const json_t *rc, fdl_compare_receipt *d, fdl_err *err) {
  memset(d, 0, sizeof *d);
  d->disclosures = elements(rc, "disclosures", DISCLOSURE, N(DISCLOSURE), sizeof *d->disclosures,
                            &d->n_disclosures);
  d->per_context =
      elements(rc, "per_context", CONTEXT, N(CONTEXT), sizeof *d->per_context, &d->n_per_context);
  d->high_kld_contexts = elements(rc, "high_kld_contexts", CONTEXT, N(CONTEXT),
                                  sizeof *d->high_kld_contexts, &d->n_high_kld_contexts);
  if (!d->disclosures || !d->per_context || !d->high_kld_contexts) {
    fdl_cmp_receipt_free(d);
    return fdl_fail(err, FDL_NOMEM, "out of memory decoding the receipt");
  }
  DECODE(rc, RECEIPT, d);
  for (int i = 0; i < 2; i++) {
    const json_t *side = json_object_get(rc, i ? "candidate" : "reference");
    DECODE(side, SIDE, &d->side[i]);
    DECODE(side, SIDE_AT, &d->side[i]);
  }
  static const char *const KEY_INPUTS[] = {FDL_COMPARE_KEY_INPUTS(FDL_COMPARE_KI_NAME_)};
  for (size_t i = 0; i < FDL_COMPARE_KI_COUNT; i++)
    d->comparability.key_inputs[i] =
        fdl_json_str(fdl_json_path(rc, "comparability.key_inputs"), KEY_INPUTS[i]);
  d->has_js = json_is_object(json_object_get(rc, "js"));
  llamacpp(fdl_json_path(rc, "fidelis_extensions.llamacpp_compatible"), &d->llamacpp);
  d->kl_doc = (const struct fdl_compare_doc *)json_object_get(rc, "kl");
  d->uncertainty_doc = (const struct fdl_compare_doc *)json_object_get(rc, "uncertainty");
  d->js_doc = (const struct fdl_compare_doc *)json_object_get(rc, "js");
  d->high_kld_contexts_doc =
      (const struct fdl_compare_doc *)json_object_get(rc, "high_kld_contexts");
  return FDL_OK;
}

void fdl_cmp_receipt_free(fdl_compare_receipt *d) {
  free(d->disclosures);
  free(d->per_context);
  free(d->high_kld_contexts);
  memset(d, 0, sizeof *d);
}
