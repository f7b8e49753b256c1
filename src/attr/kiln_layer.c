/* kiln_layer.c - Kiln's layer-attribution results v1 and v2 (KILN-ATTRIBUTION.md §13, §14.3): the
 * boundaries, the largest relative-error growth recomputed, the reference evidence bound. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "fidelis/attr.h"
#include "base/sys.h"

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
    s = FDL_CLOSED(c, p, b, "cosine_similarity", "hf_sha256", "index", "kiln_sha256",
                   "max_abs_error", "mean_abs_error", "name", "reference_root_mean_square",
                   "relative_root_mean_square_error", "root_mean_square_error");
    if (s != FDL_OK) break;
    const json_t *ix = json_object_get(b, "index");
    if (!fdl_kiln_is_int(ix) || json_integer_value(ix) != (json_int_t)i) {
      s = fdl_kiln_bad(c, p, "index: expected %zu (its position)", i);
      break;
    }
    if (!fdl_kiln_nonempty_str(json_object_get(b, "name"))) {
      s = fdl_kiln_bad(c, p, "name: expected a nonempty string");
      break;
    }
    const char *bname = v2 ? fdl_attr_layer_boundary_name(i) : NULL; /* v2: n is 34 */
    if (bname && !fdl_kiln_str_eq(json_object_get(b, "name"), bname)) {
      s = fdl_kiln_bad(c, p, "name: expected \"%s\" (§13's boundary %zu)", bname, i);
      break;
    }
    static const char *const shas[] = {"hf_sha256", "kiln_sha256"};
    for (size_t k = 0; k < 2 && s == FDL_OK; k++) {
      char q[160];
      snprintf(q, sizeof q, "%s.%s", p, shas[k]);
      s = fdl_kiln_want_sha(c, q, json_object_get(b, shas[k]));
    }
    if (s != FDL_OK) break;
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
    if (fdl_kiln_num(cs) < -1 || fdl_kiln_num(cs) > 1)
      s = fdl_kiln_bad(c, p, "cosine_similarity: expected a value in [-1, 1]");
    else if (fdl_kiln_num(mn) < 0 || fdl_kiln_num(mn) > fdl_kiln_num(mx))
      s = fdl_kiln_bad(c, p, "mean_abs_error: expected 0 <= mean <= max_abs_error");
    else if (!(fdl_kiln_num(rr) > 0))
      s = fdl_kiln_bad(c, p, "reference_root_mean_square: expected > 0");
    else if (fdl_kiln_num(re) < 0 || fdl_kiln_num(rm) < 0)
      s = fdl_kiln_bad(c, p, "expected errors >= 0");
    else {
      double want = fdl_kiln_num(rm) / fdl_kiln_num(rr), got = fdl_kiln_num(re);
      double tol = fmax(1e-12 * fmax(fabs(want), fabs(got)), 1e-12);
      if (!(fabs(got - want) <= tol))
        s = fdl_kiln_bad(c, p,
                         "relative_root_mean_square_error %.17g is not root_mean_square_error / "
                         "reference_root_mean_square = %.17g",
                         got, want);
    }
    rel[i] = fdl_kiln_num(re);
  }
  if (s == FDL_OK) {
    size_t idx;
    double delta;
    fdl_attr_largest_growth(rel, n, &idx, &delta);
    const json_t *g = json_object_get(w, "largest_relative_error_growth");
    s = FDL_CLOSED(c, "$.worker.largest_relative_error_growth", g, "index", "name",
                   "relative_root_mean_square_error_delta");
    if (s == FDL_OK) {
      const json_t *gi = json_object_get(g, "index"),
                   *gd = json_object_get(g, "relative_root_mean_square_error_delta");
      const json_t *want_name = json_object_get(json_array_get(bs, idx), "name");
      if (!fdl_kiln_is_int(gi) || json_integer_value(gi) != (json_int_t)idx)
        s = fdl_kiln_bad(c, "$.worker.largest_relative_error_growth.index",
                         "expected %zu, recomputed from the boundaries", idx);
      else if (!json_equal(json_object_get(g, "name"), want_name))
        s = fdl_kiln_bad(c, "$.worker.largest_relative_error_growth.name",
                         "expected \"%s\" (boundary %zu)", json_string_value(want_name), idx);
      else if (!fdl_kiln_finite_num(gd) ||
               !(fabs(fdl_kiln_num(gd) - delta) <=
                 fmax(1e-12 * fmax(fabs(fdl_kiln_num(gd)), fabs(delta)), 1e-12)))
        s = fdl_kiln_bad(
            c, "$.worker.largest_relative_error_growth.relative_root_mean_square_error_delta",
            "expected %.17g, recomputed from the boundaries", delta);
    }
  }
  free(rel);
  if (s != FDL_OK) return s;
  if ((s = fdl_kiln_check_observed(c, "$.worker.observed_next_tokens",
                                   json_object_get(w, "observed_next_tokens"))) != FDL_OK)
    return s;
  static const char *const shas[] = {"final_logits_sha256", "hf_layer_last_rows_sha256",
                                     "input_token_ids_sha256"};
  for (size_t k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "$.worker.%s", shas[k]);
    if ((s = fdl_kiln_want_sha(c, p, json_object_get(w, shas[k]))) != FDL_OK) return s;
  }
  if (!fdl_kiln_nonempty_str(json_object_get(w, "request_id")))
    return fdl_kiln_bad(c, "$.worker.request_id", "expected a nonempty string");
  return FDL_OK;
}

fdl_status fdl_kiln_check_layer_v1(const fdl_kiln_ctx *c, const json_t *doc) {
  const json_t *w = json_object_get(doc, "worker");
  if (!json_is_object(w)) return fdl_kiln_bad(c, "$.worker", "expected an object");
  if (!fdl_kiln_str_eq(json_object_get(w, "schema"), "kiln.rocm-hf-layer-attribution.v1"))
    return fdl_kiln_bad(c, "$.worker.schema", "expected \"kiln.rocm-hf-layer-attribution.v1\"");
  return check_layer_worker(c, w, false);
}

fdl_status fdl_kiln_check_layer_v2(const fdl_kiln_ctx *c, const json_t *doc) {
  fdl_status s =
      FDL_CLOSED(c, "$", doc, "schema", "result_sha256", "created_at_utc", "duration_seconds",
                 "source", "binary", "implementation", "request", "model_identity",
                 "model_fingerprint", "reference", "containment", "worker");
  if (s != FDL_OK) return s;
  if ((s = fdl_kiln_walk(c, doc, "$", &fdl_kiln_schema_v2_common)) != FDL_OK ||
      (s = fdl_kiln_walk(c, doc, "$", &fdl_kiln_schema_binary_request)) != FDL_OK)
    return s;
  const json_t *im = json_object_get(doc, "implementation");
  if ((s = FDL_DIGESTS(c, "$.implementation", im, "guarded_exec_sha256", "hf_worker_sha256",
                       "process_runner_sha256", "python_sha256", "runner_sha256")) != FDL_OK)
    return s;
  if (!json_equal(json_object_get(json_object_get(doc, "model_fingerprint"), "python_sha256"),
                  json_object_get(im, "python_sha256")))
    return fdl_kiln_bad(c, "$.model_fingerprint.python_sha256",
                        "expected $.implementation.python_sha256");
  const json_t *ct = json_object_get(doc, "containment");
  if ((s = FDL_CLOSED(c, "$.containment", ct, "hf", "kiln")) != FDL_OK ||
      (s = fdl_kiln_walk(c, json_object_get(ct, "hf"), "$.containment.hf",
                         &fdl_kiln_schema_arm_process)) != FDL_OK ||
      (s = fdl_kiln_walk(c, json_object_get(ct, "kiln"), "$.containment.kiln",
                         &fdl_kiln_schema_arm_process)) != FDL_OK)
    return s;
  const json_t *w = json_object_get(doc, "worker");
  if ((s = FDL_CLOSED(c, "$.worker", w, "boundaries", "final_logits_sha256",
                      "hf_layer_last_rows_sha256", "input_token_count", "input_token_ids_sha256",
                      "kernel_policy", "largest_relative_error_growth", "observed_next_tokens",
                      "request_id", "schema")) != FDL_OK)
    return s;
  if ((s = fdl_kiln_want_const_str(c, "$.worker", w, "schema",
                                   "kiln.rocm-hf-layer-attribution.v2")) ||
      (s = check_layer_worker(c, w, true)) ||
      (s = fdl_kiln_want_int_in(c, "$.worker", w, "input_token_count", FDL_KILN_INPUT_TOKENS,
                                FDL_KILN_INPUT_TOKENS)))
    return s;
  bool known = false;
  size_t npol = 0;
  const char *const *pol = fdl_attr_layer_kernel_policies(&npol);
  for (size_t i = 0; i < npol && !known; i++)
    known = fdl_kiln_str_eq(json_object_get(w, "kernel_policy"), pol[i]);
  if (!known)
    return fdl_kiln_bad(c, "$.worker.kernel_policy", "expected one of §13's kernel profiles");
  const json_t *ref = json_object_get(doc, "reference"), *ev = json_object_get(ref, "evidence");
  if ((s = FDL_CLOSED(c, "$.reference", ref, "bytes", "evidence", "location", "sha256")) ||
      (s = fdl_kiln_want_const_str(c, "$.reference", ref, "location", "local_ignored")) ||
      (s = fdl_kiln_want_sha(c, "$.reference.sha256", json_object_get(ref, "sha256"))) ||
      (s = fdl_kiln_walk(c, ev, "$.reference.evidence", &fdl_kiln_schema_hf_layer)))
    return s;
  if (!json_equal(json_object_get(ref, "bytes"), json_object_get(ev, "output_bytes")))
    return fdl_kiln_bad(c, "$.reference.bytes", "expected $.reference.evidence.output_bytes");
  const json_t *rq = json_object_get(doc, "request");
  if (!json_equal(json_object_get(ev, "request_sha256"), json_object_get(rq, "sha256")))
    return fdl_kiln_bad(c, "$.reference.evidence.request_sha256", "expected $.request.sha256");
  if (!json_equal(json_object_get(ev, "request_id"), json_object_get(w, "request_id")))
    return fdl_kiln_bad(c, "$.reference.evidence.request_id", "expected $.worker.request_id");
  if (!json_equal(json_object_get(ev, "input_token_ids_sha256"),
                  json_object_get(w, "input_token_ids_sha256")))
    return fdl_kiln_bad(c, "$.reference.evidence.input_token_ids_sha256",
                        "expected $.worker.input_token_ids_sha256");
  if (!json_equal(json_object_get(w, "hf_layer_last_rows_sha256"),
                  json_object_get(ev, "layer_last_rows_sha256")))
    return fdl_kiln_bad(c, "$.worker.hf_layer_last_rows_sha256",
                        "expected $.reference.evidence.layer_last_rows_sha256");
  return FDL_OK;
}
