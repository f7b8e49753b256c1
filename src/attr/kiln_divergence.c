/* kiln_divergence.c - the token streams the Kiln writers take from the command line, decoded
 * once into C arrays (the one place they are read), and the first step where two streams differ,
 * written as a Kiln first-divergence request (KILN-ATTRIBUTION.md §5). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr/internal.h"
#include "base/sys.h"
#include "json/json.h"
#include "fidelis/kiln.h"
#include "attr/kiln_json.h"

fdl_status fdl_kiln_token_ids(const json_t *v, size_t max, uint64_t **ids, size_t *n, size_t *bad) {
  *ids = NULL;
  *n = json_array_size(v);
  *bad = SIZE_MAX;
  if (!json_is_array(v) || *n > max) return FDL_PARSE;
  if (!(*ids = fdl_malloc((*n ? *n : 1) * sizeof **ids))) return FDL_NOMEM;
  for (size_t i = 0; i < *n; i++) {
    const json_t *x = json_array_get(v, i);
    if (!fdl_kiln_token_ok(x)) return *bad = i, FDL_PARSE;
    (*ids)[i] = (uint64_t)json_integer_value(x);
  }
  return FDL_OK;
}

/* The streams: prompt, reference and candidate ids; reference and candidate texts (NULL: every
 * text ""). */
typedef struct {
  uint64_t *ids[3];
  size_t n[3];
  const char **texts[2];
} streams;

static fdl_status streams_decode(const fdl_kiln_divergence_in *in, streams *st, fdl_err *err) {
  static const char *const what[5] = {"prompt ids", "reference ids", "candidate ids",
                                      "reference texts", "candidate texts"};
  const json_t *v[5] = {in->prompt_ids, in->reference_ids, in->candidate_ids, in->reference_texts,
                        in->candidate_texts};
  for (size_t i = 0, bad = 0; i < 3; i++) {
    fdl_status s = fdl_kiln_token_ids(v[i], SIZE_MAX, &st->ids[i], &st->n[i], &bad);
    if (s == FDL_NOMEM) return fdl_fail(err, s, "out of memory");
    if (s != FDL_OK)
      return bad == SIZE_MAX
                 ? fdl_fail(err, FDL_INVALID, "%s: expected a JSON array of token ids", what[i])
                 : fdl_fail(err, FDL_INVALID, "%s[%zu]: expected a token id, an integer in 0..%u",
                            what[i], bad, FDL_KILN_VOCAB_SIZE - 1);
  }
  for (size_t i = 3; i < 5; i++) {
    size_t n = st->n[i - 2];
    if (!v[i]) continue;
    if (!json_is_array(v[i]) || json_array_size(v[i]) != n)
      return fdl_fail(err, FDL_INVALID, "%s: expected an array of %zu strings, one per token",
                      what[i], n);
    const char **t = st->texts[i - 3] = fdl_malloc((n ? n : 1) * sizeof *t);
    if (!t) return fdl_fail(err, FDL_NOMEM, "out of memory");
    for (size_t j = 0; j < n; j++)
      if (!(t[j] = json_string_value(json_array_get(v[i], j))))
        return fdl_fail(err, FDL_INVALID, "%s[%zu]: expected a string", what[i], j);
  }
  return FDL_OK;
}

static const char *text_at(const char *const *t, size_t i) {
  return t ? t[i] : "";
}

/* The request at the streams' first divergence (§5); *step its index, set once they differ. */
static fdl_status request(const fdl_kiln_divergence_in *in, const streams *st, size_t *step,
                          json_t **out, fdl_err *err) {
  const uint64_t *prompt = st->ids[0], *ref = st->ids[1], *cand = st->ids[2];
  size_t np = st->n[0], nr = st->n[1], nc = st->n[2], k = 0;
  while (k < nr && k < nc && ref[k] == cand[k]) k++;
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
  json_t *prefix = json_array(),
         *input = fdl_json_append_ints(
             fdl_json_append_ints(json_array(), prompt, np, sizeof *prompt), cand, k, sizeof *cand);
  json_t *ids = fdl_json_append_ints(json_array(), prompt, np, sizeof *prompt), *req = NULL;
  fdl_status s = FDL_OK;
  for (size_t i = 0; prefix && i < k; i++) {
    const char *t = st->texts[1] ? st->texts[1][i] : text_at(st->texts[0], i);
    if (json_array_append_new(
            prefix, json_pack("{s:I, s:s}", "token_id", (json_int_t)cand[i], "text", t)) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  if (!prefix || !input || !ids) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  char ish[FDL_SEAL_BUF], utf8[FDL_SEAL_BUF];
  if (s == FDL_OK) s = fdl_kiln_canonical_sha256(input, ish, err);
  fdl_sha256 d;
  if (s == FDL_OK) s = fdl_sha256_buf(in->prompt_text, strlen(in->prompt_text), &d, err);
  if (s == FDL_OK) {
    fdl_attr_sha_text(&d, utf8);
    req = json_pack(
        "{s:s, s:s, s:{s:s, s:O, s:O}, s:O, "
        "s:{s:{s:s, s:s, s:i, s:s, s:s}, s:[{s:s, s:s}], s:b, s:{s:b}, s:s, s:I, s:O}, "
        "s:O, s:O, s:s, s:[{s:s, s:I, s:s}, {s:s, s:I, s:s}]}",
        "schema", FDL_KILN_REQUEST_SCHEMA, "id", in->id, "source", "source_commit",
        in->source_commit, "kiln_receipt", in->kiln_receipt, "vllm_receipt", in->vllm_receipt,
        "model_identity", in->model_identity, "prompt", "generator", "run_id", in->run_id, "phase",
        in->phase, "request_index", 0, "profile", "short", "template_version",
        "fixed-serving-profiles-v1", "messages", "role", "user", "content", in->prompt_text,
        "add_generation_prompt", 1, "template_kwargs", "enable_thinking", 0, "utf8_sha256", utf8,
        "token_count", (json_int_t)np, "token_ids", ids, "continuation_prefix", prefix,
        "input_token_ids", input, "input_token_ids_sha256", ish, "candidates", "engine", "kiln",
        "token_id", (json_int_t)cand[k], "text", text_at(st->texts[1], k), "engine", "vllm",
        "token_id", (json_int_t)ref[k], "text", text_at(st->texts[0], k));
    if (!req) s = fdl_fail(err, FDL_INVALID, "request: a field is missing or not valid UTF-8");
  }
  json_decref(prefix);
  json_decref(input);
  json_decref(ids);
  if (s == FDL_OK) {
    fdl_kiln_checked chk;
    s = fdl_kiln_check_doc(req, "divergence request", &chk, err);
  }
  return fdl_json_hand_over(s, req, out);
}

fdl_status fdl_kiln_divergence(const fdl_kiln_divergence_in *in, json_t **out, size_t *step,
                               fdl_err *err) {
  *out = NULL;
  streams st = {{NULL}, {0}, {NULL}};
  fdl_status s = streams_decode(in, &st, err);
  if (s == FDL_OK) s = request(in, &st, step, out, err);
  for (size_t i = 0; i < 3; i++) free(st.ids[i]);
  free(st.texts[0]);
  free(st.texts[1]);
  return s;
}
