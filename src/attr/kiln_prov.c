/* kiln_prov.c - provenance blocks shared by the v2 results: process evidence and contained arms
 * (§10), source and model fingerprint, the example binary and request reference (§12-§14). */
#include <stdio.h>
#include <string.h>

#include "attr/kiln_check.h"

/* processEvidence (§10): {elapsed_seconds >= 0, schema, timeout_seconds > 0, worker_exit_code 0}.
 */
fdl_status fdl_kiln_check_process(const fdl_kiln_ctx *c, const char *path, const json_t *pr) {
  fdl_status s =
      FDL_CLOSED(c, path, pr, "elapsed_seconds", "schema", "timeout_seconds", "worker_exit_code");
  if (s != FDL_OK) return s;
  char p[128];
  const json_t *el = json_object_get(pr, "elapsed_seconds");
  snprintf(p, sizeof p, "%s.elapsed_seconds", path);
  if (!fdl_kiln_finite_num(el) || fdl_kiln_num(el) < 0)
    return fdl_kiln_bad(c, p, "expected a finite number >= 0");
  snprintf(p, sizeof p, "%s.schema", path);
  if (!fdl_kiln_str_eq(json_object_get(pr, "schema"), "kiln.hf-process-containment.v1"))
    return fdl_kiln_bad(c, p, "expected \"kiln.hf-process-containment.v1\"");
  snprintf(p, sizeof p, "%s.timeout_seconds", path);
  if ((s = fdl_kiln_want_positive(c, p, json_object_get(pr, "timeout_seconds"))) != FDL_OK)
    return s;
  const json_t *x = json_object_get(pr, "worker_exit_code");
  snprintf(p, sizeof p, "%s.worker_exit_code", path);
  if (!fdl_kiln_is_int(x) || json_integer_value(x) != 0) return fdl_kiln_bad(c, p, "expected 0");
  return FDL_OK;
}

/* A contained arm: {host_available_before_gib >= 1, network "forbidden", `proc` (the process
 * evidence: "process", or the oracle's "service")}. */
fdl_status fdl_kiln_check_arm(const fdl_kiln_ctx *c, const char *path, const json_t *a,
                              const char *proc) {
  fdl_status s = fdl_kiln_closed(
      c, path, a, (const char *const[]){"host_available_before_gib", "network", proc}, 3);
  if (s != FDL_OK) return s;
  char p[128];
  const json_t *g = json_object_get(a, "host_available_before_gib");
  snprintf(p, sizeof p, "%s.host_available_before_gib", path);
  if (!fdl_kiln_is_int(g) || json_integer_value(g) < 1)
    return fdl_kiln_bad(c, p, "expected an integer >= 1");
  snprintf(p, sizeof p, "%s.network", path);
  if (!fdl_kiln_str_eq(json_object_get(a, "network"), "forbidden"))
    return fdl_kiln_bad(c, p, "expected \"forbidden\"");
  snprintf(p, sizeof p, "%s.%s", path, proc);
  return fdl_kiln_check_process(c, p, json_object_get(a, proc));
}

/* What every v2 result has: duration, created_at_utc, source, model_fingerprint. */
fdl_status fdl_kiln_check_v2_common(const fdl_kiln_ctx *c, const json_t *doc) {
  fdl_status s =
      fdl_kiln_want_positive(c, "$.duration_seconds", json_object_get(doc, "duration_seconds"));
  if (s != FDL_OK) return s;
  if (!json_is_string(json_object_get(doc, "created_at_utc")))
    return fdl_kiln_bad(c, "$.created_at_utc", "expected a UTC time string");
  const json_t *src = json_object_get(doc, "source");
  if ((s = FDL_CLOSED(c, "$.source", src, "commit", "origin_main", "tree")) != FDL_OK) return s;
  static const char *const git[] = {"commit", "origin_main", "tree"};
  for (size_t i = 0; i < 3; i++) {
    const json_t *v = json_object_get(src, git[i]);
    if (!json_is_string(v) || json_string_length(v) != 40 ||
        !fdl_hex_lower(json_string_value(v), 40)) {
      char p[64];
      snprintf(p, sizeof p, "$.source.%s", git[i]);
      return fdl_kiln_bad(c, p, "expected 40 lowercase hex digits");
    }
  }
  if (!json_equal(json_object_get(src, "commit"), json_object_get(src, "origin_main")))
    return fdl_kiln_bad(c, "$.source.origin_main", "expected equal to $.source.commit");
  const json_t *fp = json_object_get(doc, "model_fingerprint");
  if ((s = FDL_CLOSED(c, "$.model_fingerprint", fp, "implementation_sha256", "process",
                      "python_sha256")) != FDL_OK ||
      (s = fdl_kiln_want_sha(c, "$.model_fingerprint.implementation_sha256",
                             json_object_get(fp, "implementation_sha256"))) != FDL_OK ||
      (s = fdl_kiln_want_sha(c, "$.model_fingerprint.python_sha256",
                             json_object_get(fp, "python_sha256"))) != FDL_OK)
    return s;
  return fdl_kiln_check_process(c, "$.model_fingerprint.process", json_object_get(fp, "process"));
}

/* The path and layer results' binary (both name the same example binary) and request. */
fdl_status fdl_kiln_check_binary_request(const fdl_kiln_ctx *c, const json_t *doc) {
  static const char binary_path[] = "target/release/examples/rocm_hf_path_attribution";
  fdl_status s;
  const json_t *bin = json_object_get(doc, "binary");
  if ((s = FDL_CLOSED(c, "$.binary", bin, "build_duration_seconds", "build_environment_policy",
                      "path", "sha256")) != FDL_OK ||
      (s = fdl_kiln_want_positive(c, "$.binary.build_duration_seconds",
                                  json_object_get(bin, "build_duration_seconds"))) != FDL_OK ||
      (s = fdl_kiln_want_sha(c, "$.binary.sha256", json_object_get(bin, "sha256"))) != FDL_OK)
    return s;
  if (!fdl_kiln_str_eq(json_object_get(bin, "build_environment_policy"), "closed-source-build-v1"))
    return fdl_kiln_bad(c, "$.binary.build_environment_policy",
                        "expected \"closed-source-build-v1\"");
  if (!fdl_kiln_str_eq(json_object_get(bin, "path"), binary_path))
    return fdl_kiln_bad(c, "$.binary.path", "expected \"%s\"", binary_path);
  const json_t *rq = json_object_get(doc, "request");
  if ((s = FDL_CLOSED(c, "$.request", rq, "path", "sha256")) != FDL_OK ||
      (s = fdl_kiln_want_rel_path(c, "$.request.path", json_object_get(rq, "path"))) != FDL_OK ||
      (s = fdl_kiln_want_sha(c, "$.request.sha256", json_object_get(rq, "sha256"))) != FDL_OK)
    return s;
  return FDL_OK;
}
