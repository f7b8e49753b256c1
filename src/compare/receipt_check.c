/* receipt_check.c - the receipt checks of section 10, run on every receipt before it is
 * written (a failure refuses receipt_invalid and writes nothing) and available to readers.
 * The JSON Schema itself is checked by the tests with jsonschema; here are its required keys,
 * the types the seal and the registry depend on, its conditionals, and the rules the schema
 * cannot express (seal, exact zeros, BIAS-001/006, SC-1..3). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "compare/cmp.h"
#include "digest/seal_json.h"
#include "compare/compare_json.h"

#define CODE_NAME_(id, name) name,
static const char *const CODE_NAMES[] = {FDL_COMPARE_CHECK_CODES(CODE_NAME_)};

const char *fdl_compare_check_code_name(fdl_compare_check_code c) {
  return (unsigned)c < FDL_RCC_COUNT ? CODE_NAMES[c] : "";
}

/* The registry's key recipe: the preimage is the seven values joined by '|' with no escaping,
 * which is why a value containing '|' is refused. */
static const char *const KEY_FIELDS[] = {FDL_COMPARE_KEY_INPUTS(FDL_COMPARE_KI_NAME_)};

fdl_status fdl_compare_key(const json_t *key_inputs, char *out, fdl_err *err) {
  if (!json_is_object(key_inputs))
    return fdl_fail(err, FDL_INVALID, "comparability key_inputs is not an object");
  fdl_buf pre;
  fdl_buf_init(&pre, 0);
  for (int i = 0; i < FDL_COMPARE_KI_COUNT; i++) {
    const json_t *v = json_object_get(key_inputs, KEY_FIELDS[i]);
    if (!json_is_string(v)) {
      fdl_buf_free(&pre);
      return fdl_fail(err, FDL_INVALID, "comparability key_inputs.%s is missing or not a string",
                      KEY_FIELDS[i]);
    }
    const char *s = json_string_value(v);
    if (strchr(s, '|') || strlen(s) != json_string_length(v)) {
      fdl_buf_free(&pre);
      return fdl_fail(err, FDL_INVALID,
                      "comparability key_inputs.%s contains '|' (or NUL), which the '|'-joined "
                      "preimage cannot carry",
                      KEY_FIELDS[i]);
    }
    if (i) fdl_buf_putc(&pre, '|');
    fdl_buf_puts(&pre, s);
  }
  fdl_status st = fdl_buf_status(&pre);
  if (st != FDL_OK) {
    fdl_buf_free(&pre);
    return fdl_fail(err, st, "out of memory for the comparability preimage");
  }
  char hex[FDL_SHA256_HEX_BUF];
  st = fdl_sha256_buf_hex(pre.data, pre.len, hex, err);
  fdl_buf_free(&pre);
  if (st != FDL_OK) return st;
  snprintf(out, FDL_COMPARE_KEY_LEN + 1, "cmp--%.16s", hex);
  return FDL_OK;
}

typedef fdl_compare_check_code code_t;

static fdl_status bad(code_t *code, code_t c, fdl_err *err, const char *msg, const char *what) {
  *code = c;
  return fdl_fail(err, FDL_MISMATCH, "%s%s", msg, what ? what : "");
}

static const char *const REQUIRED[] = {"schema",        "format_version",  "receipt_sha256",
                                       "created_utc",   "comparison_kind", "reference",
                                       "candidate",     "panel",           "gates",
                                       "comparator",    "metric",          "kl",
                                       "estimator",     "determinism",     "measurement_scope",
                                       "comparability", "disclosures"};

/* The gates every receipt reports: FDL_RECEIPT_GATES, which start the gate enum. */
#define RECEIPT_GATE(i) fdl_gate_name((fdl_gate)(FDL_GATE_SEAL + (i)))

static bool is_hex64(const json_t *v) {
  return json_is_string(v) && fdl_sha256_hex_ok(json_string_value(v), json_string_length(v));
}

/* A float +0.0 exactly (not an int 0, not -0.0). */
static bool exact_zero(const json_t *v) {
  return json_is_real(v) && json_real_value(v) == 0.0 && !signbit(json_real_value(v));
}

static fdl_status structure(const json_t *rc, code_t *code, fdl_err *err) {
  for (size_t i = 0; i < sizeof REQUIRED / sizeof *REQUIRED; i++)
    if (!json_object_get(rc, REQUIRED[i]))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err, "required key missing: ", REQUIRED[i]);
  if (fdl_json_path_int(rc, "format_version", 0) != 1)
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "format_version must be the integer 1", NULL);
  const char *kind = fdl_json_str(rc, "comparison_kind");
  if (!kind || (strcmp(kind, "measurement") && strcmp(kind, "reproduction_confirmation") &&
                strcmp(kind, "run_to_run_floor")))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "comparison_kind is not one of the three kinds",
               NULL);
  const json_t *gates = json_object_get(rc, "gates");
  for (int i = 0; i < FDL_RECEIPT_GATE_COUNT; i++)
    if (!json_is_boolean(fdl_json_path(json_object_get(gates, RECEIPT_GATE(i)), "passed")))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err,
                 "gate missing or without a boolean passed: ", RECEIPT_GATE(i));
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)gates, k, v) {
    bool known =
        !strcmp(k, fdl_gate_name(FDL_GATE_DECODE)); /* documented relaxation (section 10) */
    for (int i = 0; i < FDL_RECEIPT_GATE_COUNT; i++) known |= !strcmp(k, RECEIPT_GATE(i));
    if (!known) return bad(code, FDL_RCC_SCHEMA_INVALID, err, "unknown gate: ", k);
  }
  static const char *const stats[] = {"mean", "median", "p95", "p99", "p99_9", "max"};
  for (size_t i = 0; i < 6; i++)
    if (!json_is_number(fdl_json_path(json_object_get(rc, "kl"), stats[i])))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err,
                 "kl statistic missing or not a number: ", stats[i]);
  const json_t *value = fdl_json_path(rc, "metric.value");
  if (!json_is_number(value) || json_number_value(value) < -1e-9)
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "metric.value must be a number >= -1e-9", NULL);
  const json_t *disc = json_object_get(rc, "disclosures");
  if (!json_is_array(disc) || !json_array_size(disc))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "disclosures must be a non-empty array", NULL);
  const char *sides[2] = {"reference", "candidate"};
  for (int i = 0; i < 2; i++) {
    const json_t *s = json_object_get(rc, sides[i]);
    if (!is_hex64(json_object_get(s, "dataset_sha256")) ||
        !is_hex64(json_object_get(s, "capture_content_digest")))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err,
                 "side block lacks a 64-hex dataset_sha256 or capture_content_digest: ", sides[i]);
  }
  if (fdl_json_path_int(rc, "measurement_scope.scored_positions", 0) < 1)
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "measurement_scope.scored_positions must be >= 1",
               NULL);
  return FDL_OK;
}

static fdl_status conditionals(const json_t *rc, code_t *code, fdl_err *err) {
  const char *kind = fdl_json_str(rc, "comparison_kind");
  const json_t *sc = json_object_get(rc, "self_compare");
  if (!strcmp(kind, "reproduction_confirmation")) {
    if (!exact_zero(fdl_json_path(rc, "metric.value")))
      return bad(code, FDL_RCC_SELF_COMPARE_INVALID, err, "SC-1: metric.value must be exactly 0.0",
                 NULL);
    const json_t *t1 = json_object_get(rc, "top1_agreement");
    if (!json_is_real(t1) || json_real_value(t1) != 1.0)
      return bad(code, FDL_RCC_SELF_COMPARE_INVALID, err,
                 "SC-1: top1_agreement must be exactly 1.0", NULL);
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)json_object_get(rc, "kl"), k, v) {
      if (!exact_zero(v))
        return bad(code, FDL_RCC_SELF_COMPARE_INVALID, err,
                   "SC-1: every kl value must be +0.0: ", k);
    }
    if (!json_is_true(fdl_json_path(sc, "capture_content_digest_equal")) ||
        !json_is_true(fdl_json_path(sc, "asserted_exact_zero")))
      return bad(code, FDL_RCC_SELF_COMPARE_INVALID, err,
                 "SC-1: self_compare must assert equal capture digests and an exact zero", NULL);
  }
  if (!strcmp(kind, "run_to_run_floor")) {
    if (!json_is_object(sc) || !json_is_false(fdl_json_path(sc, "capture_content_digest_equal")) ||
        !json_is_true(fdl_json_path(sc, "weights_identity_equal")))
      return bad(code, FDL_RCC_SELF_COMPARE_INVALID, err,
                 "SC-2: a run-to-run floor needs different capture digests and equal weights "
                 "identity",
                 NULL);
  }
  if (strcmp(kind, "measurement") && json_is_true(fdl_json_path(rc, "submission.emitted")))
    return bad(code, FDL_RCC_NOT_SUBMITTABLE, err, "SC-3: only a measurement may be submitted",
               NULL);
  const json_t *cmpb = json_object_get(rc, "comparability");
  const char *cls = fdl_json_str(cmpb, "class");
  if (!cls || (strcmp(cls, "strict") && strcmp(cls, "advisory")))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "comparability.class must be strict or advisory",
               NULL);
  if (!json_is_boolean(json_object_get(cmpb, "usable_as_floor")) || !json_object_get(cmpb, "bias"))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "comparability needs usable_as_floor and bias",
               NULL);
  if (json_is_false(json_object_get(cmpb, "same_lane")) &&
      (json_is_true(json_object_get(cmpb, "usable_as_floor")) || strcmp(cls, "advisory")))
    return bad(code, FDL_RCC_BIAS_INVALID, err,
               "BIAS-006: a cross-lane receipt must be advisory and never a floor", NULL);
  if (fdl_cmp_streq(fdl_json_path_str(rc, "estimator.stack_relation"), "cross_stack") &&
      (!json_is_object(json_object_get(cmpb, "bias")) || strcmp(cls, "advisory")))
    return bad(code, FDL_RCC_BIAS_INVALID, err,
               "BIAS-001: a cross_stack receipt needs a bias block and the advisory class", NULL);
  if (fdl_cmp_streq(fdl_json_path_str(rc, "estimator.head_policy"), "shared_reference_head") &&
      !is_hex64(fdl_json_path(rc, "comparator.head_applied_tensor_content_sha256")))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err,
               "shared_reference_head needs a 64-hex comparator.head_applied_tensor_content_sha256",
               NULL);
  const json_t *key = json_object_get(cmpb, "key");
  if (json_is_string(key)) {
    char want[FDL_COMPARE_KEY_LEN + 1];
    if (fdl_compare_key(json_object_get(cmpb, "key_inputs"), want, NULL) != FDL_OK ||
        strcmp(want, json_string_value(key)))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err,
                 "comparability.key does not recompute from key_inputs", NULL);
  }
  return FDL_OK;
}

/* fidelis_extensions (beyond the reference schema, which admits extra members): when the
 * llama.cpp block is present its shape is the one readers code against, its n is the scope's,
 * and a reproduction's block says what SC-1 says of the kl block. */
static fdl_status extensions(const json_t *rc, code_t *code, fdl_err *err) {
  const json_t *x = json_object_get(rc, "fidelis_extensions");
  if (!x) return FDL_OK;
  if (!json_is_object(x))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err, "fidelis_extensions must be an object", NULL);
  const json_t *l = json_object_get(x, "llamacpp_compatible");
  if (!l) return FDL_OK;
  if (!fdl_cmp_streq(fdl_json_str(l, "schema"), FDL_COMPARE_LLAMACPP_SCHEMA))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err,
               "fidelis_extensions.llamacpp_compatible.schema is not " FDL_COMPARE_LLAMACPP_SCHEMA,
               NULL);
  const json_t *n = json_object_get(l, "n"),
               *sp = fdl_json_path(rc, "measurement_scope.scored_positions");
  if (!json_is_integer(n) || !json_is_integer(sp) ||
      json_integer_value(n) != json_integer_value(sp))
    return bad(code, FDL_RCC_SCHEMA_INVALID, err,
               "fidelis_extensions.llamacpp_compatible.n must equal "
               "measurement_scope.scored_positions",
               NULL);
  static const char *const arrays[] = FDL_COMPARE_LLAMACPP_ARRAYS;
  for (size_t i = 0; i < 3; i++)
    if (!is_hex64(json_object_get(json_object_get(l, "arrays"), arrays[i])))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err,
                 "fidelis_extensions.llamacpp_compatible.arrays lacks a 64-hex digest of ",
                 arrays[i]);
  static const char *const nums[] = {"ppl_reference.value", "ppl_reference.stderr",
                                     "ppl_candidate.value", "ppl_candidate.stderr",
                                     "ln_ppl_ratio.value",  "ln_ppl_ratio.stderr",
                                     "ppl_ratio.value",     "ppl_ratio.stderr",
                                     "logprob_correlation", "delta_p.mean",
                                     "delta_p.rms",         "same_top.value",
                                     "same_top.stderr",     "kld.mean",
                                     "kld.stderr",          "kld.max"};
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    if (!json_is_real(fdl_json_path(l, nums[i])))
      return bad(code, FDL_RCC_SCHEMA_INVALID, err,
                 "fidelis_extensions.llamacpp_compatible lacks the float ", nums[i]);
  if (fdl_cmp_streq(fdl_json_str(rc, "comparison_kind"), "reproduction_confirmation") &&
      (!exact_zero(fdl_json_path(l, "kld.mean")) ||
       !exact_zero(fdl_json_path(l, "ln_ppl_ratio.value")) ||
       json_real_value(fdl_json_path(l, "same_top.value")) != 1.0))
    return bad(code, FDL_RCC_SELF_COMPARE_INVALID, err,
               "SC-1: a reproduction's llama.cpp block must have kld.mean and ln_ppl_ratio +0.0 "
               "and same_top 1.0",
               NULL);
  return FDL_OK;
}

fdl_status fdl_compare_check_receipt(const json_t *rc, code_t *code, fdl_err *err) {
  *code = FDL_RCC_NONE;
  if (!json_is_object(rc) || !fdl_cmp_streq(fdl_json_str(rc, "schema"), FDL_COMPARE_SCHEMA))
    return bad(code, FDL_RCC_BAD_SCHEMA, err, "schema is not " FDL_COMPARE_SCHEMA, NULL);
  fdl_status s = structure(rc, code, err);
  if (s != FDL_OK) return s;
  fdl_seal_check chk;
  if (fdl_seal_verify(rc, &chk, err) != FDL_OK)
    return bad(code, FDL_RCC_SEAL_FAILED, err, "SEAL-1: ", fdl_err_msg(err));
  if (!chk.ok)
    return bad(code, FDL_RCC_SEAL_FAILED, err, "SEAL-1: receipt_sha256 does not recompute", NULL);
  if ((s = conditionals(rc, code, err)) != FDL_OK) return s;
  return extensions(rc, code, err);
}
