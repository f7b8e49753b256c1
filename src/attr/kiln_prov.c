/* kiln_prov.c - provenance blocks shared by the v2 results, as tables: process evidence and
 * contained arms (§10), source and model fingerprint, the example binary and request reference
 * (§12-§14). */

#include "attr/kiln_check.h"

/* processEvidence (§10): {elapsed_seconds >= 0, schema, timeout_seconds > 0, worker_exit_code 0}.
 */
static const fdl_schema_field PROCESS_F[] = {
    FDL_KF("elapsed_seconds", FDL_SCHEMA_NUM, FDL_SCHEMA_MIN, 0, 0,
           "expected a finite number >= 0"),
    FDL_KF_CONST("schema", "kiln.hf-process-containment.v1"), FDL_KF_POSITIVE("timeout_seconds"),
    FDL_KF_INT("worker_exit_code", 0, 0, "expected 0")};
const fdl_schema_obj fdl_kiln_schema_process = FDL_SCHEMA_CLOSED(
    PROCESS_F, "elapsed_seconds", "schema", "timeout_seconds", "worker_exit_code");

/* A contained arm: {host_available_before_gib >= 1, network "forbidden", the process evidence
 * ("process", or the oracle's "service")}. */
#define ARM_F(proc)                                                                                \
  {                                                                                                \
    FDL_KF_INT_MIN("host_available_before_gib", 1), FDL_KF_CONST("network", "forbidden"),          \
        FDL_KF_OBJ(proc, &fdl_kiln_schema_process)                                                 \
  }
static const fdl_schema_field ARM_PROCESS_F[] = ARM_F("process"),
                              ARM_SERVICE_F[] = ARM_F("service");
const fdl_schema_obj fdl_kiln_schema_arm_process = FDL_SCHEMA_CLOSED(
                         ARM_PROCESS_F, "host_available_before_gib", "network", "process"),
                     fdl_kiln_schema_arm_service = FDL_SCHEMA_CLOSED(
                         ARM_SERVICE_F, "host_available_before_gib", "network", "service");

/* What every v2 result has: duration, created_at_utc, source, model_fingerprint. */
static void same_commit(fdl_schema_run *r, const fdl_schema_field *f, const json_t *src,
                        const char *path) {
  (void)f, (void)path;
  if (!json_equal(json_object_get(src, "commit"), json_object_get(src, "origin_main")))
    fdl_schema_bad(r, "$.source.origin_main", "expected equal to $.source.commit");
}
static const fdl_schema_field SOURCE_F[] = {FDL_KF_HEX40("commit"), FDL_KF_HEX40("origin_main"),
                                            FDL_KF_HEX40("tree"), FDL_KF_RULE(NULL, same_commit)};
static const fdl_schema_obj SOURCE = FDL_SCHEMA_CLOSED(SOURCE_F, "commit", "origin_main", "tree");
static const fdl_schema_field FINGERPRINT_F[] = {FDL_KF_SHA("implementation_sha256"),
                                                 FDL_KF_SHA("python_sha256"),
                                                 FDL_KF_OBJ("process", &fdl_kiln_schema_process)};
static const fdl_schema_obj FINGERPRINT =
    FDL_SCHEMA_CLOSED(FINGERPRINT_F, "implementation_sha256", "process", "python_sha256");
static const fdl_schema_field V2_COMMON_F[] = {
    FDL_KF_POSITIVE("duration_seconds"),
    FDL_KF("created_at_utc", FDL_SCHEMA_STR, 0, 0, 0, "expected a UTC time string"),
    FDL_KF_OBJ("source", &SOURCE), FDL_KF_OBJ("model_fingerprint", &FINGERPRINT)};
const fdl_schema_obj fdl_kiln_schema_v2_common = FDL_SCHEMA_OPEN(V2_COMMON_F);

/* The path and layer results' binary (both name the same example binary) and request. */
static const fdl_schema_field BINARY_F[] = {
    FDL_KF_POSITIVE("build_duration_seconds"), FDL_KF_SHA("sha256"),
    FDL_KF_CONST("build_environment_policy", "closed-source-build-v1"),
    FDL_KF_CONST("path", "target/release/examples/rocm_hf_path_attribution")};
static const fdl_schema_obj BINARY = FDL_SCHEMA_CLOSED(
    BINARY_F, "build_duration_seconds", "build_environment_policy", "path", "sha256");
static const fdl_schema_field REQUEST_REF_F[] = {FDL_KF_REL("path"), FDL_KF_SHA("sha256")};
static const fdl_schema_obj REQUEST_REF = FDL_SCHEMA_CLOSED(REQUEST_REF_F, "path", "sha256");
static const fdl_schema_field BINARY_REQUEST_F[] = {FDL_KF_OBJ("binary", &BINARY),
                                                    FDL_KF_OBJ("request", &REQUEST_REF)};
const fdl_schema_obj fdl_kiln_schema_binary_request = FDL_SCHEMA_OPEN(BINARY_REQUEST_F);
