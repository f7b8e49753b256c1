/* schema.c - the JSON-Schema layer of fidelity-dataset.json (§12.1 step 2, rule SCHEMA).
 *
 * The upstream schema (shared/vectors/schemas/fidelity/fidelity-dataset.schema.json) uses a
 * small keyword subset: type, required, properties, additionalProperties:false, enum, const,
 * minLength, minimum, minItems/maxItems, items, a handful of patterns, oneOf-with-null and
 * if/then conditionals. fidelis cannot rely on that file being present at run time, so its
 * constraints are written out here as tables for the schema interpreter (json/schema.h), block
 * by block, one finding per violation; the conditionals (allOf) are C that applies small tables.
 * The schema test (tests/test_dataset_schema.py) keeps the two in step: every manifest pack
 * writes is also checked by python3-jsonschema against the real file.
 *
 * Divisions: patterns; the blocks; the conditionals (allOf); the document. */
#include <string.h>

#include "fidelis/vocab.h"
#include "dataset/ds_internal.h"
#include "json/schema.h"

enum { REQ = FDL_SCHEMA_REQ, NUL = FDL_SCHEMA_NUL, MIN1 = FDL_SCHEMA_MIN1 };
#define T(fields, closed) FDL_SCHEMA_TABLE(fields, closed, NULL)

/* ---- patterns ---------------------------------------------------------------------------- */

static bool rev_ok(const char *s, size_t n) {
  return n >= 7 && n <= 64 && fdl_hex_lower(s, n);
}
static bool rel_ok(const char *s, size_t n) {
  return n >= 1 && s[0] != '/' && strlen(s) == n && !strstr(s, "://");
}
static bool artifact_ok(const char *s, size_t n) {
  return n >= 10 && !memcmp(s, "artifact--", 10);
}
static bool model_ok(const char *s, size_t n) {
  return n >= 7 && !memcmp(s, "model--", 7);
}
static bool panel_ok(const char *s, size_t n) {
  return n >= 7 && !memcmp(s, "panel--", 7);
}
static bool div_ok(const char *s, size_t n) {
  if (n < 3 || memcmp(s, "D-", 2)) return false;
  for (size_t i = 2; i < n; i++)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

static const fdl_schema_pattern SHA = {fdl_sha256_hex_ok, "64 lowercase hex digits"};
static const fdl_schema_pattern REV = {rev_ok, "7-64 lowercase hex digits"};
static const fdl_schema_pattern REL = {rel_ok,
                                       "a relative path (no leading '/', no '://', no NUL)"};
static const fdl_schema_pattern ARTIFACT = {artifact_ok, "a string starting with 'artifact--'"};
static const fdl_schema_pattern MODEL = {model_ok, "a string starting with 'model--'"};
static const fdl_schema_pattern PANEL = {panel_ok, "a string starting with 'panel--'"};
static const fdl_schema_pattern DIV = {div_ok, "'D-' followed by digits"};

#define STR(k, fl) FDL_SF_STR(k, fl, NULL)
#define STR_NULL(k) FDL_SF_STR(k, NUL, NULL)
#define SHA_NULL(k) FDL_SF_STR(k, NUL, &SHA)
#define REL_NULL(k) FDL_SF_STR(k, NUL | MIN1, &REL)
#define INT FDL_SF_INT
#define NUM FDL_SF_NUM
#define BOOL FDL_SF_BOOL
#define ENUM FDL_SF_ENUM
#define OBJ FDL_SF_OBJ
#define ARR FDL_SF_ARR

/* Array items. */
static const fdl_schema_field ANY_STR = FDL_SF_STR(NULL, 0, NULL);
static const fdl_schema_field SHA_STR = FDL_SF_STR(NULL, 0, &SHA);
static const fdl_schema_field INT_0 = FDL_SF_INT(NULL, 0, 0);
static const fdl_schema_field INT_1 = FDL_SF_INT(NULL, 0, 1);
static const fdl_schema_field INT_ANY = FDL_SF_INT(NULL, 0, INT64_MIN);

/* ---- the blocks -------------------------------------------------------------------------- */

static const char *const STATUSES[] = {"draft", "structural", "sealed", NULL};
static const char *const CLAIMS[] = {"replay_fidelity", "determinism", "both", NULL};
static const char *const POLICIES[] = {"native", "uniform", "mixed", "unknown", NULL};
static const char *const HEAD_POLICIES[] = {"native", "quantized", "unknown", NULL};
static const char *const TREATMENTS[] = {"native", "quantized", "unknown", NULL};
static const char *const POINTS[] = {"after_final_rmsnorm_before_lm_head",
                                     "lm_head_output_before_sampling",
                                     "live_lm_head_output_before_sampling", NULL};
static const char *const KEYS[] = {"hidden_states", "logits", NULL};
static const char *const SOURCES[] = {"native", "artifact_dequantized", "shared_reference_head",
                                      "unknown", NULL};
static const char *const SEVERITIES[] = {"info", "caveat", "blocking", NULL};
static const char *const SOURCE_FORMATS[] = {
    "k3v1", "k3v0-window", "llamacpp-kld", "malaiwah-serving-v2", "other", NULL};

static const fdl_schema_field QUALIFICATION_F[] = {ENUM("claimed", REQ, CLAIMS),
                                                   FDL_SF_STR("receipt", REQ | MIN1, &REL),
                                                   FDL_SF_STR("receipt_sha256", REQ, &SHA)};
static const fdl_schema_obj QUALIFICATION = T(QUALIFICATION_F, true);
static const fdl_schema_field AUTHOR_F[] = {STR("name", REQ | MIN1), STR("role", REQ | MIN1),
                                            STR_NULL("handle"), STR_NULL("url"),
                                            BOOL("is_registry_maintainer", NUL)};
static const fdl_schema_obj AUTHOR = T(AUTHOR_F, false);
static const fdl_schema_field BASE_CAPTURE_F[] = {
    FDL_SF_STR("dataset_sha256", REQ | NUL, &SHA), SHA_NULL("capture_content_digest"),
    STR_NULL("repository"), STR_NULL("revision"), STR("note", 0)};
static const fdl_schema_obj BASE_CAPTURE = T(BASE_CAPTURE_F, true);
static const fdl_schema_field DATASET_F[] = {STR("id", REQ | MIN1),
                                             STR("name", REQ | MIN1),
                                             ENUM("role", REQ, fdl_role_names),
                                             ENUM("structural_status", REQ, STATUSES),
                                             OBJ("qualification", NUL, &QUALIFICATION),
                                             OBJ("author", 0, &AUTHOR),
                                             STR_NULL("license"),
                                             STR_NULL("repository"),
                                             STR_NULL("revision"),
                                             OBJ("base_capture", NUL, &BASE_CAPTURE)};
static const fdl_schema_obj DATASET = T(DATASET_F, false);

static const fdl_schema_field WEIGHTS_F[] = {STR("repository", REQ | MIN1),
                                             FDL_SF_STR("revision", REQ | NUL, &REV),
                                             FDL_SF_STR("model_revision", REQ | NUL, &REV),
                                             BOOL("quantized", REQ),
                                             SHA_NULL("config_sha256"),
                                             SHA_NULL("index_sha256"),
                                             SHA_NULL("checkpoint_identity_sha256"),
                                             FDL_SF_STR("artifact_ref", NUL, &ARTIFACT),
                                             FDL_SF_STR("model_ref", NUL, &MODEL),
                                             STR_NULL("codec"),
                                             NUM("declared_bits", NUL),
                                             INT("declared_head_bits", NUL, INT64_MIN)};
static const fdl_schema_obj WEIGHTS = T(WEIGHTS_F, false);

static const fdl_schema_field ASSIGNMENT_F[] = {
    STR("tensor_class", REQ | MIN1), ENUM("treatment", REQ, TREATMENTS),
    STR("format", REQ | MIN1),       NUM("bits_per_weight", NUL),
    STR_NULL("layer_range"),         STR("note", 0)};
static const fdl_schema_obj ASSIGNMENT = T(ASSIGNMENT_F, false);
static const fdl_schema_field ASSIGNMENT_ITEM = OBJ(NULL, 0, &ASSIGNMENT);
static const fdl_schema_field SCOPE_F[] = {
    ENUM("policy", REQ, POLICIES), STR("scope_digest", REQ | MIN1),
    ENUM("head_policy", REQ, HEAD_POLICIES), STR("kv_cache_dtype", REQ | MIN1),
    ARR("assignments", REQ, 1, 0, &ASSIGNMENT_ITEM)};
static const fdl_schema_obj SCOPE = T(SCOPE_F, true);

static const fdl_schema_field WINDOW_F[] = {
    INT("score_from", REQ, 0), BOOL("windowed", REQ), INT("min_left_context_tokens", REQ, 0),
    INT("dropped_positions_total", NUL, 0), STR("policy", REQ | MIN1)};
static const fdl_schema_obj WINDOW = T(WINDOW_F, true);
static const fdl_schema_field TOKENIZER_F[] = {
    STR("id", REQ | MIN1),     STR_NULL("repository"),          STR_NULL("revision"),
    INT("vocab_size", REQ, 1), BOOL("add_special_tokens", NUL), BOOL("chat_template_applied", NUL)};
static const fdl_schema_obj TOKENIZER = T(TOKENIZER_F, false);
static const fdl_schema_field CONTAMINATION_F[] = {BOOL("checked", REQ), STR_NULL("method"),
                                                   INT("hits", NUL, 0), STR_NULL("receipt")};
static const fdl_schema_obj CONTAMINATION = T(CONTAMINATION_F, false);
static const fdl_schema_field PANEL_F[] = {FDL_SF_STR("panel_id", NUL, &PANEL),
                                           FDL_SF_STR("panel_file", REQ | MIN1, &REL),
                                           FDL_SF_STR("panel_file_sha256", REQ, &SHA),
                                           FDL_SF_STR("suite_token_hash_sha256", REQ, &SHA),
                                           SHA_NULL("panel_token_sha256_legacy"),
                                           SHA_NULL("panel_receipt_sha256"),
                                           STR_NULL("repository"),
                                           STR_NULL("revision"),
                                           INT("contexts", REQ, 1),
                                           INT("context_length", REQ, 1),
                                           INT("scored_positions_total", REQ, 1),
                                           OBJ("scoring_window", REQ, &WINDOW),
                                           OBJ("tokenizer", REQ, &TOKENIZER),
                                           REL_NULL("remap_file"),
                                           OBJ("contamination", 0, &CONTAMINATION)};
static const fdl_schema_obj PANEL_T = T(PANEL_F, false);

static const fdl_schema_field LOSSY_F[] = {STR("kind", REQ | MIN1), INT("bits", REQ | NUL, 1),
                                           STR_NULL("clamp"), STR("description", REQ | MIN1)};
static const fdl_schema_obj LOSSY = T(LOSSY_F, false);
static const fdl_schema_field CAPTURE_F[] = {FDL_SF_STR("manifest_file", REQ | MIN1, &REL),
                                             FDL_SF_STR("manifest_file_sha256", REQ, &SHA),
                                             FDL_SF_STR("capture_content_digest", REQ, &SHA),
                                             ENUM("form", REQ, fdl_form_names),
                                             ENUM("semantic_point", REQ, POINTS),
                                             ENUM("tensor_key", REQ, KEYS),
                                             ENUM("dtype", REQ, fdl_capture_dtype_names),
                                             BOOL("dtype_lossless", REQ),
                                             INT("hidden_width", NUL, 1),
                                             INT("vocab_size", REQ, 1),
                                             BOOL("head_separable", REQ),
                                             STR_NULL("head_not_separable_reason"),
                                             INT("records_count", REQ, 0),
                                             INT("scored_rows_total", NUL, 0),
                                             INT("total_size_bytes", REQ, 0),
                                             OBJ("lossy_codec", REQ | NUL, &LOSSY)};
static const fdl_schema_obj CAPTURE = T(CAPTURE_F, false);

static const fdl_schema_field FINAL_NORM_F[] = {REL_NULL("file"),
                                                STR_NULL("tensor_key"),
                                                ARR("shape", NUL, 0, 0, &INT_ANY),
                                                STR_NULL("dtype"),
                                                SHA_NULL("file_sha256"),
                                                SHA_NULL("tensor_content_sha256"),
                                                BOOL("applied_in_capture", REQ),
                                                BOOL("applied_at_replay", REQ)};
static const fdl_schema_obj FINAL_NORM = T(FINAL_NORM_F, false);
static const fdl_schema_field EQUALITY_F[] = {STR_NULL("schema"), STR_NULL("file"),
                                              SHA_NULL("sha256"), STR("claim", REQ | MIN1)};
static const fdl_schema_obj EQUALITY = T(EQUALITY_F, false);
static const fdl_schema_field HEAD_F[] = {BOOL("present", REQ),
                                          REL_NULL("file"),
                                          REL_NULL("head_json"),
                                          STR("tensor_key", REQ | MIN1),
                                          STR_NULL("compat_tensor_key"),
                                          ARR("shape", REQ, 2, 2, &INT_1),
                                          ENUM("dtype", REQ, fdl_head_dtype_names),
                                          FDL_SF_NULL("bias"),
                                          FDL_SF_STR("file_sha256", REQ | NUL, &SHA),
                                          FDL_SF_STR("raw_tensor_sha256", REQ | NUL, &SHA),
                                          FDL_SF_STR("tensor_content_sha256", REQ | NUL, &SHA),
                                          BOOL("quantized", REQ | NUL),
                                          INT("bits", NUL, 1),
                                          ENUM("source", REQ, SOURCES),
                                          BOOL("applied_in_capture", REQ),
                                          OBJ("final_norm", NUL, &FINAL_NORM),
                                          OBJ("equality_receipt", NUL, &EQUALITY)};
static const fdl_schema_obj HEAD = T(HEAD_F, false);

static const fdl_schema_field RUNTIME_F[] = {
    FDL_SF_STR("file", REQ | MIN1, &REL),
    FDL_SF_STR("file_sha256", REQ, &SHA),
    ENUM("lane", REQ, fdl_lane_names),
    BOOL("lane_inferred", NUL),
    SHA_NULL("lane_identity_sha256"),
    FDL_SF_STR("stack_fingerprint_sha256", REQ | NUL, &SHA),
    SHA_NULL("backend_identity_sha256"),
    SHA_NULL("runtime_reader_sha256"),
    STR_NULL("source")};
static const fdl_schema_obj RUNTIME = T(RUNTIME_F, false);

/* DET-D1 as the schema states it: identical runs are content evidence of two or more runs. */
static void det_run_count(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                          const char *path) {
  (void)f;
  if (json_is_integer(v) && json_integer_value(v) < 2)
    fdl_schema_bad(r, path, "must be at least 2 when identical_across_runs is true");
}
static void det_distinct(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                         const char *path) {
  (void)f;
  if (!(json_is_integer(v) && json_integer_value(v) == 1))
    fdl_schema_bad(r, path, "must be 1 when identical_across_runs is true");
}
static const fdl_schema_field DET_D1_F[] = {
    ENUM("evidence_kind", 0, fdl_content_evidence_names),
    FDL_SF_RULE("run_count", 0, det_run_count),
    FDL_SF_RULE("distinct_evidence_hash_count", REQ, det_distinct)};
static const fdl_schema_obj DET_D1 = T(DET_D1_F, false);
static void det_d1(fdl_schema_run *r, const json_t *d, const char *path) {
  if (json_is_true(json_object_get(d, "identical_across_runs")))
    fdl_schema_check(r, d, path, &DET_D1);
}
static const fdl_schema_field REPEAT_F[] = {STR("name", REQ | MIN1),
                                            FDL_SF_STR("dir", REQ | MIN1, &REL),
                                            FDL_SF_STR("capture_content_digest", REQ, &SHA)};
static const fdl_schema_obj REPEAT = T(REPEAT_F, false);
static const fdl_schema_field REPEAT_ITEM = OBJ(NULL, 0, &REPEAT);
static const fdl_schema_field NOISE_F[] = {NUM("kl_canonical_to_repeat_mean", NUL),
                                           NUM("kl_repeat_to_canonical_mean", NUL),
                                           NUM("js_mean", NUL), STR("interpretation", REQ | MIN1)};
static const fdl_schema_obj NOISE = T(NOISE_F, false);
static const fdl_schema_field DETERMINISM_F[] = {INT("run_count", REQ, 1),
                                                 BOOL("cold_start_per_run", NUL),
                                                 ENUM("evidence_kind", REQ, fdl_evidence_names),
                                                 ARR("evidence_hashes", 0, 0, 0, &SHA_STR),
                                                 INT("distinct_evidence_hash_count", NUL, 0),
                                                 BOOL("identical_across_runs", REQ | NUL),
                                                 ARR("repeats", 0, 0, 0, &REPEAT_ITEM),
                                                 OBJ("repeat_noise", NUL, &NOISE),
                                                 STR("note", 0)};
static const fdl_schema_obj DETERMINISM = FDL_SCHEMA_TABLE(DETERMINISM_F, false, det_d1);

static const fdl_schema_field SHARD_F[] = {INT("index", REQ, 0), INT("total", REQ, 1),
                                           INT("stride", NUL, 1)};
static const fdl_schema_obj SHARD = T(SHARD_F, false);
static const fdl_schema_field COVERAGE_F[] = {INT("declared_records", REQ, 1),
                                              INT("present_records", REQ, 0),
                                              BOOL("complete", REQ),
                                              ARR("index_range", REQ, 2, 2, &INT_0),
                                              OBJ("shard_of", NUL, &SHARD),
                                              STR_NULL("subset_detail"),
                                              ARR("missing_indices_sample", 0, 0, 0, &INT_0)};
static const fdl_schema_obj COVERAGE = T(COVERAGE_F, false);

static const fdl_schema_field SEAL_F[] = {
    FDL_SF_CONST("method", REQ, "self_blanked_canonical_json_sha256"),
    FDL_SF_CONST("seal_field", 0, "dataset_sha256"),
    FDL_SF_CONST("checksums_file", REQ, "checksums.txt"),
    FDL_SF_STR("checksums_sha256", REQ, &SHA),
    FDL_SF_CONST("checksums_format", 0, "sha256sum"),
    ARR("covers", REQ, 1, 0, NULL),
    ARR("excludes", REQ, 0, 0, NULL),
    FDL_SF_EACH("covers", &ANY_STR),
    FDL_SF_EACH("excludes", &ANY_STR),
    STR_NULL("external_anchor")};
static const fdl_schema_obj SEAL = T(SEAL_F, true);

static const fdl_schema_field ADAPTED_F[] = {ENUM("source_format", REQ, SOURCE_FORMATS),
                                             STR("adapter", REQ | MIN1),
                                             ARR("inferred_fields", REQ, 0, 0, &ANY_STR)};
static const fdl_schema_obj ADAPTED = T(ADAPTED_F, false);
static const fdl_schema_field DIVERGENCE_F[] = {
    FDL_SF_STR("id", REQ, &DIV), STR("field", REQ | MIN1), STR("reason", REQ | MIN1)};
static const fdl_schema_obj DIVERGENCE = T(DIVERGENCE_F, true);
static const fdl_schema_field DIVERGENCE_ITEM = OBJ(NULL, 0, &DIVERGENCE);
static const fdl_schema_field INTEROP_F[] = {
    ARR("compatible_with", REQ, 0, 0, &ANY_STR), BOOL("k3_compat_emitted", NUL),
    OBJ("adapted_from", NUL, &ADAPTED), ARR("divergences", REQ, 0, 0, &DIVERGENCE_ITEM)};
static const fdl_schema_obj INTEROP = T(INTEROP_F, false);

static const fdl_schema_field UPSTREAM_F[] = {
    FDL_SF_STR("file", REQ | MIN1, &REL), STR("schema", REQ | MIN1),
    FDL_SF_STR("sha256", REQ, &SHA), ARR("stripped_fields", REQ, 0, 0, &ANY_STR)};
static const fdl_schema_obj UPSTREAM = T(UPSTREAM_F, false);
static const fdl_schema_field UPSTREAM_ITEM = OBJ(NULL, 0, &UPSTREAM);
static const fdl_schema_field DISCLOSURE_F[] = {
    STR("code", REQ | MIN1), ENUM("severity", REQ, SEVERITIES), BOOL("affects_comparability", NUL),
    STR("detail", REQ | MIN1)};
static const fdl_schema_obj DISCLOSURE = T(DISCLOSURE_F, false);
static const fdl_schema_field DISCLOSURE_ITEM = OBJ(NULL, 0, &DISCLOSURE);

/* ---- the conditionals (allOf) ------------------------------------------------------------ */

static bool str_is(const json_t *o, const char *key, const char *want) {
  const char *s = fdl_json_str(o, key);
  return s && !strcmp(s, want);
}

static void root_unquantized(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                             const char *path) {
  (void)f;
  if (!json_is_false(v)) fdl_schema_bad(r, path, "must be false for role root (ROOT-1)");
}
/* ROOT-1, by block. */
static const fdl_schema_field ROOT_WEIGHTS_F[] = {FDL_SF_RULE("quantized", REQ, root_unquantized)};
static const fdl_schema_field ROOT_SCOPE_F[] = {FDL_SF_CONST("policy", 0, "native"),
                                                FDL_SF_CONST("head_policy", 0, "native")};
static const fdl_schema_field ROOT_HEAD_F[] = {FDL_SF_IS("present", true),
                                               FDL_SF_IS("quantized", false)};
static const fdl_schema_field ROOT_DATASET_F[] = {FDL_SF_NULL("base_capture")};
static const fdl_schema_field ROOT_CAPTURE_F[] = {FDL_SF_NULL("lossy_codec")};
static const fdl_schema_obj ROOT_WEIGHTS = T(ROOT_WEIGHTS_F, false),
                            ROOT_SCOPE = T(ROOT_SCOPE_F, false), ROOT_HEAD = T(ROOT_HEAD_F, false),
                            ROOT_DATASET = T(ROOT_DATASET_F, false),
                            ROOT_CAPTURE = T(ROOT_CAPTURE_F, false);
/* The hidden and the logit forms. */
static const fdl_schema_field HIDDEN_CAPTURE_F[] = {
    FDL_SF_CONST("semantic_point", 0, "after_final_rmsnorm_before_lm_head"),
    FDL_SF_CONST("tensor_key", 0, "hidden_states"), INT("hidden_width", REQ, 1),
    FDL_SF_IS("head_separable", true)};
static const fdl_schema_field HIDDEN_HEAD_F[] = {FDL_SF_IS("applied_in_capture", false),
                                                 FDL_SF_STR("tensor_content_sha256", 0, &SHA)};
static const fdl_schema_field LOGIT_CAPTURE_F[] = {FDL_SF_CONST("tensor_key", 0, "logits"),
                                                   FDL_SF_NULL("hidden_width")};
static const fdl_schema_field LOGIT_HEAD_F[] = {FDL_SF_IS("applied_in_capture", true)};
static const fdl_schema_field NOT_SEPARABLE_F[] = {STR("head_not_separable_reason", REQ | MIN1)};
static const fdl_schema_field SUBSET_F[] = {STR("subset_detail", REQ | MIN1)};
static const fdl_schema_obj HIDDEN_CAPTURE = T(HIDDEN_CAPTURE_F, false),
                            HIDDEN_HEAD = T(HIDDEN_HEAD_F, false),
                            LOGIT_CAPTURE = T(LOGIT_CAPTURE_F, false),
                            LOGIT_HEAD = T(LOGIT_HEAD_F, false),
                            NOT_SEPARABLE = T(NOT_SEPARABLE_F, false), SUBSET = T(SUBSET_F, false);

/* t over block o (at path) when o is there. */
static void on(fdl_schema_run *r, const json_t *o, const char *path, const fdl_schema_obj *t) {
  if (o) fdl_schema_check(r, o, path, t);
}

static void conditionals(fdl_schema_run *r, const json_t *m, const char *path) {
  (void)path;
  const json_t *dataset = fdl_json_obj(m, "dataset"), *weights = fdl_json_obj(m, "weights"),
               *scope = fdl_json_obj(m, "scope"), *head = fdl_json_obj(m, "head"),
               *capture = fdl_json_obj(m, "capture"), *coverage = fdl_json_obj(m, "coverage"),
               *panel = fdl_json_obj(m, "panel");
  if (str_is(dataset, "role", "root")) { /* ROOT-1 */
    on(r, weights, "weights", &ROOT_WEIGHTS);
    on(r, scope, "scope", &ROOT_SCOPE);
    on(r, head, "head", &ROOT_HEAD);
    on(r, dataset, "dataset", &ROOT_DATASET);
    on(r, capture, "capture", &ROOT_CAPTURE);
  }
  if (capture && str_is(capture, "form", "hidden")) {
    on(r, capture, "capture", &HIDDEN_CAPTURE);
    on(r, head, "head", &HIDDEN_HEAD);
  }
  if (capture && str_is(capture, "form", "logit")) {
    on(r, capture, "capture", &LOGIT_CAPTURE);
    on(r, head, "head", &LOGIT_HEAD);
  }
  if (capture && json_is_false(json_object_get(capture, "head_separable")))
    on(r, capture, "capture", &NOT_SEPARABLE);
  /* COV-2 */
  if (coverage && json_is_false(json_object_get(coverage, "complete"))) {
    const json_t *sh = json_object_get(coverage, "shard_of");
    if (!sh || json_is_null(sh)) on(r, coverage, "coverage", &SUBSET);
  }
  /* A sealed panel receipt must ship with a remap key (its value may be null). */
  if (panel) {
    const char *d = fdl_json_str(panel, "panel_receipt_sha256");
    if (d && fdl_sha256_hex_ok(d, strlen(d)) && !json_object_get(panel, "remap_file"))
      fdl_schema_bad(r, "panel.remap_file", "is required when panel_receipt_sha256 is a digest");
  }
}

/* ---- the document ------------------------------------------------------------------------ */

static void format_version(fdl_schema_run *r, const fdl_schema_field *f, const json_t *v,
                           const char *path) {
  (void)f;
  if (!(json_is_integer(v) && json_integer_value(v) == 1)) fdl_schema_bad(r, path, "must be 1");
}

static const fdl_schema_field TOP_F[] = {FDL_SF_CONST("schema", 0, FDL_DS_SCHEMA),
                                         FDL_SF_RULE("format_version", 0, format_version),
                                         FDL_SF_STR("dataset_sha256", 0, &SHA),
                                         STR("created_utc", 0),
                                         OBJ("dataset", 0, &DATASET),
                                         OBJ("weights", 0, &WEIGHTS),
                                         OBJ("scope", 0, &SCOPE),
                                         OBJ("panel", 0, &PANEL_T),
                                         OBJ("capture", 0, &CAPTURE),
                                         OBJ("head", 0, &HEAD),
                                         OBJ("runtime", 0, &RUNTIME),
                                         OBJ("determinism", 0, &DETERMINISM),
                                         OBJ("coverage", 0, &COVERAGE),
                                         OBJ("seal", 0, &SEAL),
                                         OBJ("interop", 0, &INTEROP),
                                         ARR("upstream_receipts", 0, 0, 0, &UPSTREAM_ITEM),
                                         ARR("disclosures", REQ, 1, 0, &DISCLOSURE_ITEM)};
static const fdl_schema_obj TOP = FDL_SCHEMA_TABLE(TOP_F, false, conditionals);

static void report(void *user, const char *path, const char *msg) {
  fdl_ds_report_error(user, FDL_DSC_SCHEMA_INVALID, "SCHEMA", FDL_DS_MANIFEST_NAME, "%s: %s", path,
                      msg);
}

void fdl_ds_check_manifest_schema(const json_t *m, fdl_ds_report *rep) {
  fdl_schema_run r = {report, rep, false, false, FDL_OK};
  static const char *const top_required[] = {
      "schema", "format_version", "dataset_sha256", "created_utc", "dataset", "weights",
      "scope",  "panel",          "capture",        "head",        "runtime", "determinism",
      "seal",   "coverage",       "interop",        "disclosures"};
  for (size_t i = 0; i < FDL_SCHEMA_N(top_required); i++)
    if (!json_object_get(m, top_required[i])) fdl_schema_bad(&r, top_required[i], "is required");
  fdl_schema_check(&r, m, "", &TOP);
}
