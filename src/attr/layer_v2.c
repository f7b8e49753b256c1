/* layer_v2.c - Kiln's layer attribution from the two row matrices (KILN-ATTRIBUTION.md §8, §11,
 * §13): the writer of kiln.rocm-hf-layer-attribution-result.v2, and the recomputation of a layer
 * record (v1 or v2) from its rows. The writer refuses, before anything is written, what the
 * checker would refuse, with a message naming the input; the record then passes
 * fdl_kiln_check_doc, so the writer and `fidelis check` share one set of rules. The 34 names and
 * the kernel-policy enum are written here once. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "base/check.h"
#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "fidelis/attr.h"
#include "json/json.h"
#include "fidelis/kiln.h"
#include "attr/layer_json.h"
#include "attr/kiln_json.h"

/* Qwen3.5's 32 layers come in blocks of four: three linear-attention layers, then one full. */
#define BLOCK_OF_FOUR(a, b, c, d)                                                                  \
  "layer_" #a "_linear_attention", "layer_" #b "_linear_attention",                                \
      "layer_" #c "_linear_attention", "layer_" #d "_full_attention"
static const char *const NAMES[FDL_ATTR_LAYER_BOUNDARIES] = {
    "embedding",
    BLOCK_OF_FOUR(00, 01, 02, 03),
    BLOCK_OF_FOUR(04, 05, 06, 07),
    BLOCK_OF_FOUR(08, 09, 10, 11),
    BLOCK_OF_FOUR(12, 13, 14, 15),
    BLOCK_OF_FOUR(16, 17, 18, 19),
    BLOCK_OF_FOUR(20, 21, 22, 23),
    BLOCK_OF_FOUR(24, 25, 26, 27),
    BLOCK_OF_FOUR(28, 29, 30, 31),
    "final_norm",
};

static const char *const POLICIES[] = {"qualified",
                                       "portable_fallback",
                                       "model_fallback",
                                       "tensor_fallback",
                                       "fused_norm_mlp_fallback",
                                       "fused_norm_mlp_only",
                                       "fused_rmsnorm_fallback",
                                       "fused_mlp_silu_mul_fallback",
                                       "fused_mlp_gate_up_prefill_fallback",
                                       "gdn_fallback",
                                       "non_gdn_fallback",
                                       "split_q_gate_fallback",
                                       "split_q_gate_only"};
#define NPOLICIES (sizeof POLICIES / sizeof POLICIES[0])

const char *fdl_attr_layer_boundary_name(size_t i) {
  return i < FDL_ATTR_LAYER_BOUNDARIES ? NAMES[i] : NULL;
}

const char *const *fdl_attr_layer_kernel_policies(size_t *n) {
  *n = NPOLICIES;
  return POLICIES;
}

fdl_status fdl_attr_layer_names_check(const char *const *names, size_t n, const char *what,
                                      fdl_err *err) {
  if (n != FDL_ATTR_LAYER_BOUNDARIES)
    return fdl_fail(err, FDL_MISMATCH,
                    "%s: %zu boundary names, expected the %u of §13 (embedding, "
                    "layer_00_linear_attention .. layer_31_full_attention, final_norm)",
                    what, n, FDL_ATTR_LAYER_BOUNDARIES);
  for (size_t i = 0; i < FDL_ATTR_LAYER_BOUNDARIES; i++)
    if (!names[i] || strcmp(names[i], NAMES[i]) != 0)
      return fdl_fail(err, FDL_MISMATCH, "%s: boundary name %zu is %s%.80s%s, expected \"%s\"",
                      what, i, names[i] ? "\"" : "", names[i] ? names[i] : "not a string",
                      names[i] ? "\"" : "", NAMES[i]);
  return FDL_OK;
}

static fdl_status digest_text(const float *v, size_t n, char out[FDL_SEAL_BUF], fdl_err *err) {
  fdl_sha256 d;
  fdl_status s = fdl_attr_sha256_f32(v, n, &d, err);
  if (s == FDL_OK) fdl_attr_sha_text(&d, out);
  return s;
}

/* ---- the boundaries (§11) ------------------------------------------------------------------ */

fdl_status fdl_attr_compare_rows(const float *reference, const float *actual, size_t rows,
                                 size_t hidden, const char *const *names, fdl_attr_boundary *bs,
                                 size_t *gi, double *gd, fdl_err *err) {
  double *rel = fdl_malloc(rows * sizeof *rel);
  if (!rel) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = FDL_OK;
  for (size_t i = 0; s == FDL_OK && i < rows; i++) {
    s = fdl_attr_compare_boundary(actual + i * hidden, reference + i * hidden, hidden, &bs[i], err);
    if (s != FDL_OK) {
      const char *nm = names ? names[i] : fdl_attr_layer_boundary_name(i);
      fdl_err_prefix(err, "row %zu (%s)", i, nm ? nm : "beyond the 34 boundaries");
    }
    rel[i] = bs[i].relative_root_mean_square_error;
  }
  if (s == FDL_OK) fdl_attr_largest_growth(rel, rows, gi, gd);
  free(rel);
  return s;
}

json_t *fdl_attr_boundary_json(size_t i, const char *name, const fdl_attr_boundary *b) {
  char h[FDL_SEAL_BUF], k[FDL_SEAL_BUF];
  fdl_attr_sha_text(&b->hf_sha256, h);
  fdl_attr_sha_text(&b->kiln_sha256, k);
  return json_pack("{s:f, s:s, s:I, s:s, s:f, s:f, s:s, s:f, s:f, s:f}", "cosine_similarity",
                   b->cosine_similarity, "hf_sha256", h, "index", (json_int_t)i, "kiln_sha256", k,
                   "max_abs_error", b->max_abs_error, "mean_abs_error", b->mean_abs_error, "name",
                   name, "reference_root_mean_square", b->reference_root_mean_square,
                   "relative_root_mean_square_error", b->relative_root_mean_square_error,
                   "root_mean_square_error", b->root_mean_square_error);
}

/* ---- the writer (§13) ---------------------------------------------------------------------- */

/* observed: 4 token ids, the request's 3 continuation ids then argmax(final logits). */
static fdl_status check_observed(const json_t *obs, const fdl_kiln_request *rq, const float *logits,
                                 size_t vocab, fdl_err *err) {
  if (rq->nprefix != 3)
    return fdl_fail(err, FDL_REFUSED,
                    "request: %zu continuation tokens, expected 3 (Kiln's layer worker forces "
                    "exactly 3)",
                    rq->nprefix);
  if (!json_is_array(obs) || json_array_size(obs) != 4)
    return fdl_fail(err, FDL_INVALID,
                    "observed: expected 4 token ids (after the prompt and after each of the 3 "
                    "forced continuation tokens), found %zu",
                    json_array_size(obs));
  for (size_t i = 0; i < 4; i++)
    if (!fdl_kiln_token_ok(json_array_get(obs, i)))
      return fdl_fail(err, FDL_INVALID, "observed[%zu]: expected a token id, an integer in 0..%u",
                      i, FDL_KILN_VOCAB_SIZE - 1);
  for (size_t i = 0; i < 3; i++)
    if (json_integer_value(json_array_get(obs, i)) != rq->prefix[i])
      return fdl_fail(err, FDL_MISMATCH,
                      "observed[%zu] is %lld, expected the continuation token %lld (the worker "
                      "forces the continuation)",
                      i, (long long)json_integer_value(json_array_get(obs, i)),
                      (long long)rq->prefix[i]);
  uint64_t am = 0;
  fdl_attr_topk(logits, vocab, 1, &am);
  if (json_integer_value(json_array_get(obs, 3)) != (json_int_t)am)
    return fdl_fail(err, FDL_MISMATCH,
                    "observed[3] is %lld, but the final logits' argmax is %llu (the last observed "
                    "token is the argmax after the third forced token, the state of the final "
                    "logits)",
                    (long long)json_integer_value(json_array_get(obs, 3)), (unsigned long long)am);
  return FDL_OK;
}

static fdl_status check_inputs(const fdl_attr_layer_v2_in *in, fdl_err *err) {
  if (in->rows != FDL_ATTR_LAYER_BOUNDARIES)
    return fdl_fail(err, FDL_REFUSED,
                    "rows: %zu boundaries, expected the %u of §13 (embedding, 32 layers, "
                    "final_norm)",
                    in->rows, FDL_ATTR_LAYER_BOUNDARIES);
  size_t t;
  if (in->hidden == 0 || !fdl_size_mul(in->hidden, sizeof(float) * FDL_ATTR_LAYER_BOUNDARIES, &t))
    return fdl_fail(err, FDL_BOUNDS, "rows: width %zu, expected 1..%zu", in->hidden,
                    SIZE_MAX / sizeof(float) / FDL_ATTR_LAYER_BOUNDARIES);
  bool known = false;
  for (size_t i = 0; in->kernel_policy && i < NPOLICIES && !known; i++)
    known = strcmp(in->kernel_policy, POLICIES[i]) == 0;
  if (!known) {
    char list[512] = "";
    for (size_t i = 0, used = 0; i < NPOLICIES && used < sizeof list; i++) {
      int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", POLICIES[i]);
      used += w > 0 ? (size_t)w : 0;
    }
    return fdl_fail(err, FDL_INVALID,
                    "kernel_policy \"%.80s\": expected one of §13's profiles (%s)",
                    in->kernel_policy ? in->kernel_policy : "", list);
  }
  if (in->vocab != FDL_KILN_VOCAB_SIZE)
    return fdl_fail(err, FDL_REFUSED,
                    "final logits: %zu values, expected Kiln's full vocabulary of %u", in->vocab,
                    FDL_KILN_VOCAB_SIZE);
  fdl_status s = fdl_attr_finite(in->final_logits, in->vocab, "final logits:", err);
  if (s == FDL_OK)
    s = fdl_attr_finite(in->reference, in->rows * in->hidden, "REF rows (flat):", err);
  if (s == FDL_OK) s = fdl_attr_finite(in->actual, in->rows * in->hidden, "CAND rows (flat):", err);
  return s;
}

fdl_status fdl_attr_layer_v2(const fdl_attr_layer_v2_in *in, json_t **out, fdl_err *err) {
  *out = NULL;
  fdl_kiln_request rq;
  fdl_status s = fdl_kiln_request_read(in->request, &rq, err);
  if (s != FDL_OK) return s;
  fdl_attr_provenance pv;
  if ((s = fdl_attr_provenance_read(in->provenance, &rq, &pv, err)) != FDL_OK ||
      (s = check_inputs(in, err)) != FDL_OK ||
      (s = check_observed(in->observed, &rq, in->final_logits, in->vocab, err)) != FDL_OK)
    return s;
  char rows_sha[FDL_SEAL_BUF], logits_sha[FDL_SEAL_BUF];
  if ((s = digest_text(in->reference, in->rows * in->hidden, rows_sha, err)) != FDL_OK ||
      (s = digest_text(in->final_logits, in->vocab, logits_sha, err)) != FDL_OK)
    return s;
  if ((s = fdl_attr_evidence_check(&pv, rows_sha, in->rows, in->hidden, &rq, err)) != FDL_OK)
    return s;
  fdl_attr_boundary *bs = fdl_calloc(in->rows, sizeof *bs);
  if (!bs) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t gi = 0;
  double gd = 0.0;
  s = fdl_attr_compare_rows(in->reference, in->actual, in->rows, in->hidden, NULL, bs, &gi, &gd,
                            err);
  json_t *list = s == FDL_OK ? json_array() : NULL;
  if (s == FDL_OK && !list) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < in->rows; i++)
    if (json_array_append_new(list, fdl_attr_boundary_json(i, NAMES[i], &bs[i])) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
  free(bs);
  json_t *worker = NULL, *rec = NULL;
  if (s == FDL_OK) {
    worker =
        json_pack("{s:O, s:s, s:s, s:I, s:s, s:s, s:{s:I, s:s, s:f}, s:O, s:s, s:s}", "boundaries",
                  list, "final_logits_sha256", logits_sha, "hf_layer_last_rows_sha256", rows_sha,
                  "input_token_count", (json_int_t)rq.input_count, "input_token_ids_sha256",
                  rq.input_token_ids_sha256, "kernel_policy", in->kernel_policy,
                  "largest_relative_error_growth", "index", (json_int_t)gi, "name", NAMES[gi],
                  "relative_root_mean_square_error_delta", gd, "observed_next_tokens", in->observed,
                  "request_id", rq.id, "schema", FDL_ATTR_LAYER_V2_WORKER);
    if (!worker) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  json_decref(list);
  if (s == FDL_OK)
    s = fdl_attr_result_v2(FDL_ATTR_LAYER_V2_SCHEMA, &pv, &rq, worker, &rec, err);
  else
    json_decref(worker);
  fdl_kiln_checked chk;
  if (s == FDL_OK) s = fdl_kiln_check_doc(rec, "layer-attribution record", &chk, err);
  return fdl_json_hand_over(s, rec, out);
}

/* ---- recomputation from the rows ----------------------------------------------------------- */

/* The text the record holds for a number: Python repr of a real, the decimal of an integer. */
static void number_text(const json_t *v, char out[FDL_FLOAT_REPR_MAX]) {
  if (json_is_real(v))
    fdl_float_repr(json_real_value(v), out);
  else if (json_is_integer(v))
    snprintf(out, FDL_FLOAT_REPR_MAX, "%lld", (long long)json_integer_value(v));
  else
    snprintf(out, FDL_FLOAT_REPR_MAX, "%s", v ? "(not a number)" : "(absent)");
}

static fdl_status same_number(const char *name, const char *path, const json_t *stored, double want,
                              fdl_err *err) {
  char a[FDL_FLOAT_REPR_MAX], b[FDL_FLOAT_REPR_MAX];
  number_text(stored, a);
  fdl_float_repr(want, b);
  if (strcmp(a, b) == 0) return FDL_OK;
  return fdl_fail(err, FDL_MISMATCH, "%s: %s: recorded %s, recomputed from the rows %s", name, path,
                  a, b);
}

static fdl_status same_text(const char *name, const char *path, const json_t *stored,
                            const char *want, fdl_err *err) {
  if (fdl_kiln_str_eq(stored, want)) return FDL_OK;
  return fdl_fail(err, FDL_MISMATCH, "%s: %s: recorded %.100s, recomputed from the rows %s", name,
                  path, json_is_string(stored) ? json_string_value(stored) : "(not a string)",
                  want);
}

fdl_status fdl_attr_layer_recompute(const json_t *doc, const char *name, const float *reference,
                                    const float *actual, size_t rows, size_t hidden,
                                    const float *final_logits, size_t vocab, fdl_err *err) {
  const json_t *sv = json_object_get(doc, "schema");
  bool v2 = fdl_kiln_str_eq(sv, FDL_ATTR_LAYER_V2_SCHEMA);
  if (!v2 && !fdl_kiln_str_eq(sv, "kiln.rocm-hf-layer-attribution-result.v1"))
    return fdl_fail(err, FDL_REFUSED,
                    "%s: a %.80s has no boundaries to recompute (--check goes with Kiln's "
                    "layer-attribution results, v1 or v2)",
                    name, json_is_string(sv) ? json_string_value(sv) : "record without a schema");
  const json_t *w = json_object_get(doc, "worker");
  const json_t *bl = json_object_get(w, "boundaries");
  if (!json_is_array(bl) || json_array_size(bl) != rows)
    return fdl_fail(err, FDL_REFUSED,
                    "%s: $.worker.boundaries holds %zu boundaries, but the rows are %zu", name,
                    json_array_size(bl), rows);
  size_t t;
  if (rows == 0 || hidden == 0 || !fdl_size_mul(rows, hidden, &t) ||
      !fdl_size_mul(t, sizeof(float), &t))
    return fdl_fail(err, FDL_BOUNDS, "%s: %zu rows of %zu, expected a nonempty matrix", name, rows,
                    hidden);
  char rows_sha[FDL_SEAL_BUF], p[160];
  fdl_status s = digest_text(reference, rows * hidden, rows_sha, err);
  if (s != FDL_OK) return s;
  if ((s = same_text(name, "$.worker.hf_layer_last_rows_sha256",
                     json_object_get(w, "hf_layer_last_rows_sha256"), rows_sha, err)) != FDL_OK)
    return s;
  const json_t *ev = json_object_get(json_object_get(doc, "reference"), "evidence");
  const json_t *ls = json_object_get(ev, "layer_last_rows_sha256");
  if (ls && (s = same_text(name, "$.reference.evidence.layer_last_rows_sha256", ls, rows_sha,
                           err)) != FDL_OK)
    return s;
  const json_t *hs = json_object_get(ev, "hidden_size");
  if (hs && (!json_is_integer(hs) || json_integer_value(hs) != (json_int_t)hidden))
    return fdl_fail(err, FDL_MISMATCH,
                    "%s: $.reference.evidence.hidden_size: recorded %lld, the rows are %zu wide",
                    name, (long long)json_integer_value(hs), hidden);
  if (final_logits) {
    char lsha[FDL_SEAL_BUF];
    if ((s = digest_text(final_logits, vocab, lsha, err)) != FDL_OK ||
        (s = same_text(name, "$.worker.final_logits_sha256",
                       json_object_get(w, "final_logits_sha256"), lsha, err)) != FDL_OK)
      return s;
  }
  fdl_attr_boundary *bs = fdl_calloc(rows, sizeof *bs);
  if (!bs) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t gi = 0;
  double gd = 0.0;
  s = fdl_attr_compare_rows(reference, actual, rows, hidden, NULL, bs, &gi, &gd, err);
  if (s != FDL_OK) fdl_err_prefix(err, "%s", name);
  for (size_t i = 0; s == FDL_OK && i < rows; i++) {
    const json_t *b = json_array_get(bl, i);
    const fdl_attr_boundary *r = &bs[i];
    const json_t *nm = json_object_get(b, "name");
    const char *shown = json_is_string(nm) ? json_string_value(nm) : "?";
    const json_t *ix = json_object_get(b, "index");
    if (!json_is_integer(ix) || json_integer_value(ix) != (json_int_t)i) {
      s = fdl_fail(err, FDL_MISMATCH, "%s: $.worker.boundaries[%zu].index: expected %zu", name, i,
                   i);
      break;
    }
    snprintf(p, sizeof p, "$.worker.boundaries[%zu].name", i);
    if (v2 && (s = same_text(name, p, nm, NAMES[i], err)) != FDL_OK) break;
    char h[FDL_SEAL_BUF], k[FDL_SEAL_BUF];
    fdl_attr_sha_text(&r->hf_sha256, h);
    fdl_attr_sha_text(&r->kiln_sha256, k);
    const struct {
      const char *key;
      double v;
    } nums[] = {{"cosine_similarity", r->cosine_similarity},
                {"max_abs_error", r->max_abs_error},
                {"mean_abs_error", r->mean_abs_error},
                {"reference_root_mean_square", r->reference_root_mean_square},
                {"relative_root_mean_square_error", r->relative_root_mean_square_error},
                {"root_mean_square_error", r->root_mean_square_error}};
    const char *shas[2][2] = {{"hf_sha256", h}, {"kiln_sha256", k}};
    for (size_t j = 0; s == FDL_OK && j < 2; j++) {
      snprintf(p, sizeof p, "$.worker.boundaries[%zu].%s (%.64s)", i, shas[j][0], shown);
      s = same_text(name, p, json_object_get(b, shas[j][0]), shas[j][1], err);
    }
    for (size_t j = 0; s == FDL_OK && j < sizeof nums / sizeof nums[0]; j++) {
      snprintf(p, sizeof p, "$.worker.boundaries[%zu].%s (%.64s)", i, nums[j].key, shown);
      s = same_number(name, p, json_object_get(b, nums[j].key), nums[j].v, err);
    }
  }
  if (s == FDL_OK) {
    const json_t *g = json_object_get(w, "largest_relative_error_growth");
    const json_t *gx = json_object_get(g, "index");
    const json_t *want_name = json_object_get(json_array_get(bl, gi), "name");
    if (!json_is_integer(gx) || json_integer_value(gx) != (json_int_t)gi)
      s = fdl_fail(err, FDL_MISMATCH,
                   "%s: $.worker.largest_relative_error_growth.index: recorded %lld, recomputed "
                   "from the rows %zu",
                   name, (long long)json_integer_value(gx), gi);
    else if (!json_equal(json_object_get(g, "name"), want_name))
      s = fdl_fail(err, FDL_MISMATCH,
                   "%s: $.worker.largest_relative_error_growth.name: expected boundary %zu's name",
                   name, gi);
    else
      s = same_number(name,
                      "$.worker.largest_relative_error_growth."
                      "relative_root_mean_square_error_delta",
                      json_object_get(g, "relative_root_mean_square_error_delta"), gd, err);
  }
  free(bs);
  return s;
}
