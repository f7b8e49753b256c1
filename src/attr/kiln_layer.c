/* kiln_layer.c - Kiln's layer-attribution results v1 and v2 (KILN-ATTRIBUTION.md §13, §14.3): the
 * boundaries, the largest relative-error growth recomputed, the reference evidence bound. */
#include <stdio.h>
#include <stdlib.h>

#include "attr/kiln_check.h"
#include "fidelis/attr.h"
#include "base/sys.h"

static const fdl_schema_obj BOUNDARY =
    FDL_SCHEMA_KEYS("cosine_similarity", "hf_sha256", "index", "kiln_sha256", "max_abs_error",
                    "mean_abs_error", "name", "reference_root_mean_square",
                    "relative_root_mean_square_error", "root_mean_square_error");
static const fdl_schema_field BOUNDARY_SHAS_F[] = {FDL_KF_SHA("hf_sha256"),
                                                   FDL_KF_SHA("kiln_sha256")};
static const fdl_schema_obj BOUNDARY_SHAS = FDL_SCHEMA_OPEN(BOUNDARY_SHAS_F);
static const fdl_schema_obj GROWTH =
    FDL_SCHEMA_KEYS("index", "name", "relative_root_mean_square_error_delta");
static const fdl_schema_field WORKER_TAIL_F[] = {
    FDL_KF_RULE("observed_next_tokens", fdl_kiln_observed), FDL_KF_SHA("final_logits_sha256"),
    FDL_KF_SHA("hf_layer_last_rows_sha256"), FDL_KF_SHA("input_token_ids_sha256"),
    FDL_KF_NONEMPTY("request_id")};
static const fdl_schema_obj WORKER_TAIL = FDL_SCHEMA_OPEN(WORKER_TAIL_F);

/* A layer worker's boundaries, growth, observed ids, shas and request id; v2 also wants the 34
 * boundaries by §13's names. */
static fdl_status check_layer_worker(const fdl_kiln_ctx *c, const json_t *w, bool v2) {
  const json_t *bs = json_object_get(w, "boundaries");
  if (!json_is_array(bs) || json_array_size(bs) == 0)
    return fdl_kiln_bad(c, "$.worker.boundaries", "expected a nonempty array");
  size_t n = json_array_size(bs);
  if (v2 && n != FDL_ATTR_LAYER_BOUNDARIES)
    return fdl_kiln_bad(c, "$.worker.boundaries", "expected %u boundaries, found %zu",
                        FDL_ATTR_LAYER_BOUNDARIES, n);
  double *rel = fdl_malloc(n * sizeof *rel);
  if (!rel) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  fdl_status s = FDL_OK;
  char p[128];
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    const json_t *b = json_array_get(bs, i);
    snprintf(p, sizeof p, "$.worker.boundaries[%zu]", i);
    s = fdl_kiln_walk(c, b, p, &BOUNDARY);
    if (s != FDL_OK) break;
    const json_t *ix = json_object_get(b, "index");
    if (!json_is_integer(ix) || json_integer_value(ix) != (json_int_t)i) {
      s = fdl_kiln_bad(c, p, "index: expected %zu (its position)", i);
      break;
    }
    const json_t *nm = json_object_get(b, "name");
    if (!json_is_string(nm) || !json_string_length(nm)) {
      s = fdl_kiln_bad(c, p, "name: expected a nonempty string");
      break;
    }
    const char *bname = v2 ? fdl_attr_layer_boundary_name(i) : NULL; /* v2: n is 34 */
    if (bname && !fdl_kiln_str_eq(json_object_get(b, "name"), bname)) {
      s = fdl_kiln_bad(c, p, "name: expected \"%s\" (§13's boundary %zu)", bname, i);
      break;
    }
    if ((s = fdl_kiln_walk(c, b, p, &BOUNDARY_SHAS)) != FDL_OK) break;
    const json_t *cs = json_object_get(b, "cosine_similarity"),
                 *mx = json_object_get(b, "max_abs_error"),
                 *mn = json_object_get(b, "mean_abs_error"),
                 *rr = json_object_get(b, "reference_root_mean_square"),
                 *re = json_object_get(b, "relative_root_mean_square_error"),
                 *rm = json_object_get(b, "root_mean_square_error");
    if (!fdl_kiln_finite_num(cs) || !fdl_kiln_finite_num(mx) || !fdl_kiln_finite_num(mn) ||
        !fdl_kiln_finite_num(rr) || !fdl_kiln_finite_num(re) || !fdl_kiln_finite_num(rm)) {
      s = fdl_kiln_bad(c, p, "expected finite numbers");
      break;
    }
    if (json_number_value(cs) < -1 || json_number_value(cs) > 1)
      s = fdl_kiln_bad(c, p, "cosine_similarity: expected a value in [-1, 1]");
    else if (json_number_value(mn) < 0 || json_number_value(mn) > json_number_value(mx))
      s = fdl_kiln_bad(c, p, "mean_abs_error: expected 0 <= mean <= max_abs_error");
    else if (!(json_number_value(rr) > 0))
      s = fdl_kiln_bad(c, p, "reference_root_mean_square: expected > 0");
    else if (json_number_value(re) < 0 || json_number_value(rm) < 0)
      s = fdl_kiln_bad(c, p, "expected errors >= 0");
    else {
      double want = json_number_value(rm) / json_number_value(rr), got = json_number_value(re);
      double tol = fmax(1e-12 * fmax(fabs(want), fabs(got)), 1e-12);
      if (!(fabs(got - want) <= tol))
        s = fdl_kiln_bad(c, p,
                         "relative_root_mean_square_error %.17g is not root_mean_square_error / "
                         "reference_root_mean_square = %.17g",
                         got, want);
    }
    rel[i] = json_number_value(re);
  }
  if (s == FDL_OK) {
    size_t idx;
    double delta;
    fdl_attr_largest_growth(rel, n, &idx, &delta);
    const json_t *g = json_object_get(w, "largest_relative_error_growth");
    s = fdl_kiln_walk(c, g, "$.worker.largest_relative_error_growth", &GROWTH);
    if (s == FDL_OK) {
      const json_t *gi = json_object_get(g, "index"),
                   *gd = json_object_get(g, "relative_root_mean_square_error_delta");
      const json_t *want_name = json_object_get(json_array_get(bs, idx), "name");
      if (!json_is_integer(gi) || json_integer_value(gi) != (json_int_t)idx)
        s = fdl_kiln_bad(c, "$.worker.largest_relative_error_growth.index",
                         "expected %zu, recomputed from the boundaries", idx);
      else if (!json_equal(json_object_get(g, "name"), want_name))
        s = fdl_kiln_bad(c, "$.worker.largest_relative_error_growth.name",
                         "expected \"%s\" (boundary %zu)", json_string_value(want_name), idx);
      else if (!fdl_kiln_finite_num(gd) ||
               !(fabs(json_number_value(gd) - delta) <=
                 fmax(1e-12 * fmax(fabs(json_number_value(gd)), fabs(delta)), 1e-12)))
        s = fdl_kiln_bad(
            c, "$.worker.largest_relative_error_growth.relative_root_mean_square_error_delta",
            "expected %.17g, recomputed from the boundaries", delta);
    }
  }
  free(rel);
  return s != FDL_OK ? s : fdl_kiln_walk(c, w, "$.worker", &WORKER_TAIL);
}

static void worker_v1(fdl_schema_run *r, const fdl_schema_field *f, const json_t *w,
                      const char *path) {
  (void)f, (void)path;
  fdl_kiln_rule(r, check_layer_worker(r->user, w, false));
}
static const fdl_schema_field WORKER_V1_F[] = {
    FDL_KF_CONST("schema", "kiln.rocm-hf-layer-attribution.v1"), FDL_KF_RULE(NULL, worker_v1)};
static const fdl_schema_obj WORKER_V1 = FDL_SCHEMA_OPEN(WORKER_V1_F);
static const fdl_schema_field LAYER_V1_F[] = {FDL_KF_OBJ("worker", &WORKER_V1)};
const fdl_schema_obj fdl_kiln_schema_layer_v1 = FDL_SCHEMA_OPEN(LAYER_V1_F);

static void worker_v2(fdl_schema_run *r, const fdl_schema_field *f, const json_t *w,
                      const char *path) {
  (void)f, (void)path;
  fdl_kiln_rule(r, check_layer_worker(r->user, w, true));
}

/* One of §13's kernel profiles. */
static void kernel_policy(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                          const char *path) {
  (void)f;
  size_t npol = 0;
  const char *const *pol = fdl_attr_layer_kernel_policies(&npol);
  for (size_t i = 0; i < npol; i++)
    if (fdl_kiln_str_eq(v, pol[i])) return;
  fdl_schema_bad(r, path, "expected one of §13's kernel profiles");
}

/* The reference evidence is the request's and the worker's. */
static void bindings(fdl_schema_run *r, const fdl_schema_field *f, const json_t *doc,
                     const char *path) {
  (void)f, (void)path;
  const json_t *ref = json_object_get(doc, "reference"), *ev = json_object_get(ref, "evidence"),
               *w = json_object_get(doc, "worker"), *rq = json_object_get(doc, "request");
  if (!json_equal(json_object_get(ref, "bytes"), json_object_get(ev, "output_bytes")))
    fdl_schema_bad(r, "$.reference.bytes", "expected $.reference.evidence.output_bytes");
  else if (!json_equal(json_object_get(ev, "request_sha256"), json_object_get(rq, "sha256")))
    fdl_schema_bad(r, "$.reference.evidence.request_sha256", "expected $.request.sha256");
  else if (!json_equal(json_object_get(ev, "request_id"), json_object_get(w, "request_id")))
    fdl_schema_bad(r, "$.reference.evidence.request_id", "expected $.worker.request_id");
  else if (!json_equal(json_object_get(ev, "input_token_ids_sha256"),
                       json_object_get(w, "input_token_ids_sha256")))
    fdl_schema_bad(r, "$.reference.evidence.input_token_ids_sha256",
                   "expected $.worker.input_token_ids_sha256");
  else if (!json_equal(json_object_get(w, "hf_layer_last_rows_sha256"),
                       json_object_get(ev, "layer_last_rows_sha256")))
    fdl_schema_bad(r, "$.worker.hf_layer_last_rows_sha256",
                   "expected $.reference.evidence.layer_last_rows_sha256");
}

static const fdl_schema_field IMPLEMENTATION_F[] = {
    FDL_KF_SHA("guarded_exec_sha256"), FDL_KF_SHA("hf_worker_sha256"),
    FDL_KF_SHA("process_runner_sha256"), FDL_KF_SHA("python_sha256"), FDL_KF_SHA("runner_sha256")};
static const fdl_schema_obj IMPLEMENTATION =
    FDL_SCHEMA_CLOSED(IMPLEMENTATION_F, "guarded_exec_sha256", "hf_worker_sha256",
                      "process_runner_sha256", "python_sha256", "runner_sha256");
static const fdl_schema_field CONTAINMENT_F[] = {FDL_KF_OBJ("hf", &fdl_kiln_schema_arm_process),
                                                 FDL_KF_OBJ("kiln", &fdl_kiln_schema_arm_process)};
static const fdl_schema_obj CONTAINMENT = FDL_SCHEMA_CLOSED(CONTAINMENT_F, "hf", "kiln");
static const fdl_schema_field WORKER_V2_F[] = {
    FDL_KF_CONST("schema", FDL_ATTR_LAYER_V2_WORKER), FDL_KF_RULE(NULL, worker_v2),
    FDL_KF_INT("input_token_count", FDL_KILN_INPUT_TOKENS, FDL_KILN_INPUT_TOKENS, "expected %lld"),
    FDL_KF_RULE("kernel_policy", kernel_policy)};
static const fdl_schema_obj WORKER_V2 = FDL_SCHEMA_CLOSED(
    WORKER_V2_F, "boundaries", "final_logits_sha256", "hf_layer_last_rows_sha256",
    "input_token_count", "input_token_ids_sha256", "kernel_policy", "largest_relative_error_growth",
    "observed_next_tokens", "request_id", "schema");
static const fdl_schema_field REFERENCE_F[] = {FDL_KF_CONST("location", "local_ignored"),
                                               FDL_KF_SHA("sha256"),
                                               FDL_KF_OBJ("evidence", &fdl_kiln_schema_hf_layer)};
static const fdl_schema_obj REFERENCE =
    FDL_SCHEMA_CLOSED(REFERENCE_F, "bytes", "evidence", "location", "sha256");
static const fdl_schema_field LAYER_V2_F[] = {FDL_KF_OBJ(NULL, &fdl_kiln_schema_v2_common),
                                              FDL_KF_OBJ(NULL, &fdl_kiln_schema_binary_request),
                                              FDL_KF_OBJ("implementation", &IMPLEMENTATION),
                                              FDL_KF_RULE(NULL, fdl_kiln_same_python),
                                              FDL_KF_OBJ("containment", &CONTAINMENT),
                                              FDL_KF_OBJ("worker", &WORKER_V2),
                                              FDL_KF_OBJ("reference", &REFERENCE),
                                              FDL_KF_RULE(NULL, bindings)};
const fdl_schema_obj fdl_kiln_schema_layer_v2 =
    FDL_SCHEMA_CLOSED(LAYER_V2_F, "schema", "result_sha256", "created_at_utc", "duration_seconds",
                      "source", "binary", "implementation", "request", "model_identity",
                      "model_fingerprint", "reference", "containment", "worker");
