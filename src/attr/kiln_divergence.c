/* kiln_divergence.c - the first step where two token streams differ, written as a Kiln
 * first-divergence request (KILN-ATTRIBUTION.md §5). */
#include <stdio.h>
#include <string.h>

#include "attr/internal.h"
#include "fidelis/attr.h"
#include "json/json.h"
#include "fidelis/kiln.h"
#include "attr/kiln_json.h"

/* ---- first divergence (§5) ------------------------------------------------------------------- */

static fdl_status ids_ok(const json_t *v, const char *what, fdl_err *err) {
  if (!json_is_array(v))
    return fdl_fail(err, FDL_INVALID, "%s: expected a JSON array of token ids", what);
  for (size_t i = 0; i < json_array_size(v); i++)
    if (!fdl_kiln_token_ok(json_array_get(v, i)))
      return fdl_fail(err, FDL_INVALID, "%s[%zu]: expected a token id, an integer in 0..%u", what,
                      i, FDL_KILN_VOCAB_SIZE - 1);
  return FDL_OK;
}

static fdl_status texts_ok(const json_t *t, const json_t *ids, const char *what, fdl_err *err) {
  if (!t) return FDL_OK;
  if (!json_is_array(t) || json_array_size(t) != json_array_size(ids))
    return fdl_fail(err, FDL_INVALID, "%s: expected an array of %zu strings, one per token", what,
                    json_array_size(ids));
  for (size_t i = 0; i < json_array_size(t); i++)
    if (!json_is_string(json_array_get(t, i)))
      return fdl_fail(err, FDL_INVALID, "%s[%zu]: expected a string", what, i);
  return FDL_OK;
}

static const char *text_at(const json_t *t, size_t i) {
  return t ? json_string_value(json_array_get(t, i)) : "";
}

fdl_status fdl_kiln_divergence(const fdl_kiln_divergence_in *in, json_t **out, size_t *step,
                               fdl_err *err) {
  *out = NULL;
  fdl_status s = ids_ok(in->prompt_ids, "prompt ids", err);
  if (s == FDL_OK) s = ids_ok(in->reference_ids, "reference ids", err);
  if (s == FDL_OK) s = ids_ok(in->candidate_ids, "candidate ids", err);
  if (s == FDL_OK) s = texts_ok(in->reference_texts, in->reference_ids, "reference texts", err);
  if (s == FDL_OK) s = texts_ok(in->candidate_texts, in->candidate_ids, "candidate texts", err);
  if (s != FDL_OK) return s;
  size_t nr = json_array_size(in->reference_ids), nc = json_array_size(in->candidate_ids);
  size_t np = json_array_size(in->prompt_ids), k = 0;
  while (k < nr && k < nc &&
         json_integer_value(json_array_get(in->reference_ids, k)) ==
             json_integer_value(json_array_get(in->candidate_ids, k)))
    k++;
  if (k == nr || k == nc)
    return fdl_fail(err, FDL_REFUSED,
                    "nothing diverges: the streams agree on all %zu common steps (%s)", k,
                    nr == nc ? "identical" : "one is a prefix of the other");
  *step = k;
  if (k == 0)
    return fdl_fail(err, FDL_REFUSED,
                    "the streams diverge at step 0; a request needs a common "
                    "continuation prefix of 1..%u tokens",
                    FDL_KILN_MAX_PREFIX);
  if (k > FDL_KILN_MAX_PREFIX)
    return fdl_fail(err, FDL_REFUSED,
                    "the streams diverge at step %zu; a request holds a common "
                    "continuation prefix of at most %u tokens",
                    k, FDL_KILN_MAX_PREFIX);
  if (np == 0 || np + k > FDL_KILN_MAX_INPUT)
    return fdl_fail(err, FDL_REFUSED,
                    "prompt of %zu ids plus %zu prefix ids: a request holds 1..%u input ids", np, k,
                    FDL_KILN_MAX_INPUT);
  json_t *prefix = json_array(), *input = json_deep_copy(in->prompt_ids);
  json_t *req = NULL;
  for (size_t i = 0; prefix && input && i < k; i++) {
    json_t *id = json_array_get(in->candidate_ids, i);
    const char *t =
        in->candidate_texts ? text_at(in->candidate_texts, i) : text_at(in->reference_texts, i);
    if (json_array_append_new(prefix, json_pack("{s:O, s:s}", "token_id", id, "text", t)) != 0 ||
        json_array_append(input, id) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  if (!prefix || !input) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  char ish[FDL_SEAL_BUF], utf8[FDL_SEAL_BUF];
  if (s == FDL_OK) s = fdl_kiln_canonical_sha256(input, ish, err);
  fdl_sha256 d;
  if (s == FDL_OK) s = fdl_sha256_buf(in->prompt_text, strlen(in->prompt_text), &d, err);
  if (s == FDL_OK) {
    char hex[FDL_SHA256_HEX_BUF];
    fdl_sha256_hex(&d, hex);
    snprintf(utf8, sizeof utf8, FDL_SEAL_KILN_PREFIX "%s", hex);
    req = json_pack("{s:s, s:s, s:{s:s, s:O, s:O}, s:O, "
                    "s:{s:{s:s, s:s, s:i, s:s, s:s}, s:[{s:s, s:s}], s:b, s:{s:b}, s:s, s:I, s:O}, "
                    "s:O, s:O, s:s, s:[{s:s, s:O, s:s}, {s:s, s:O, s:s}]}",
                    "schema", FDL_KILN_REQUEST_SCHEMA, "id", in->id, "source", "source_commit",
                    in->source_commit, "kiln_receipt", in->kiln_receipt, "vllm_receipt",
                    in->vllm_receipt, "model_identity", in->model_identity, "prompt", "generator",
                    "run_id", in->run_id, "phase", in->phase, "request_index", 0, "profile",
                    "short", "template_version", "fixed-serving-profiles-v1", "messages", "role",
                    "user", "content", in->prompt_text, "add_generation_prompt", 1,
                    "template_kwargs", "enable_thinking", 0, "utf8_sha256", utf8, "token_count",
                    (json_int_t)np, "token_ids", in->prompt_ids, "continuation_prefix", prefix,
                    "input_token_ids", input, "input_token_ids_sha256", ish, "candidates", "engine",
                    "kiln", "token_id", json_array_get(in->candidate_ids, k), "text",
                    text_at(in->candidate_texts, k), "engine", "vllm", "token_id",
                    json_array_get(in->reference_ids, k), "text", text_at(in->reference_texts, k));
    if (!req) s = fdl_fail(err, FDL_INVALID, "request: a field is missing or not valid UTF-8");
  }
  json_decref(prefix);
  json_decref(input);
  if (s == FDL_OK) {
    fdl_kiln_checked chk;
    s = fdl_kiln_check_doc(req, "divergence request", &chk, err);
  }
  return fdl_json_hand_over(s, req, out);
}
