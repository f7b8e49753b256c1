/* kiln_receipt.c - a request's source receipts (KILN-ATTRIBUTION.md §5, Kiln's
 * validate_source_receipts): each receipt file under the root is the one the request pinned
 * (file and content digests), comes from the request's clean source commit, workload run and model,
 * ran exactly one request at concurrency 1, and produced the continuation prefix followed by that
 * engine's candidate text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "attr/kiln_check.h"
#include "json/json.h"
#include "base/quote.h"
#include "digest/seal_json.h"

static int b64_value(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

/* Python's base64.b64decode(s, validate=True): only the standard alphabet, then at most two '='
 * that complete the last quantum; nothing after the padding. Unused low bits are not checked,
 * as Python does not. out holds at least n / 4 * 3 bytes. */
static bool b64_strict(const char *s, size_t n, unsigned char *out, size_t *len) {
  size_t pad = 0;
  while (pad < 2 && pad < n && s[n - 1 - pad] == '=') pad++;
  if (n % 4 != 0) return false;
  size_t body = n - pad, o = 0;
  uint32_t acc = 0;
  for (size_t i = 0; i < body; i++) {
    int v = b64_value((unsigned char)s[i]);
    if (v < 0) return false;
    acc = (acc << 6) | (uint32_t)v;
    if (i % 4 == 3) {
      out[o++] = (unsigned char)(acc >> 16);
      out[o++] = (unsigned char)(acc >> 8);
      out[o++] = (unsigned char)acc;
      acc = 0;
    }
  }
  if (pad == 1) {
    out[o++] = (unsigned char)(acc >> 10);
    out[o++] = (unsigned char)(acc >> 2);
  } else if (pad == 2) {
    out[o++] = (unsigned char)(acc >> 4);
  }
  *len = o;
  return true;
}

/* A JSON number equal to want, as Python's == sees it (1.0 == 1), never a bool. */
static bool num_is(const json_t *v, double want) {
  return json_is_number(v) && json_number_value(v) == want;
}

/* Decodes field key of exact_output (path names it) into a malloc'd buffer *out of *len bytes,
 * which must be valid UTF-8. */
static fdl_status decode_text(const fdl_kiln_ctx *c, const char *path, const json_t *v,
                              unsigned char **out, size_t *len) {
  *out = NULL;
  if (!json_is_string(v)) return fdl_kiln_bad(c, path, "expected a base64 string");
  size_t n = json_string_length(v);
  *out = fdl_malloc(n / 4 * 3 + 1);
  if (!*out) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  if (!b64_strict(json_string_value(v), n, *out, len))
    return fdl_kiln_bad(c, path, "expected strict base64 (the standard alphabet, '=' padding)");
  if (!fdl_utf8_valid((const char *)*out, *len))
    return fdl_kiln_bad(c, path, "decodes to bytes that are not valid UTF-8");
  return FDL_OK;
}

static const fdl_schema_obj EXACT_OUTPUT =
    FDL_SCHEMA_KEYS("content_base64", "reasoning_content_base64");
static const fdl_schema_field SEAL_F[] = {FDL_KF_SHA("receipt_sha256")};
static const fdl_schema_obj SEAL = FDL_SCHEMA_OPEN(SEAL_F);

/* The run's exact output: reasoning empty, content starting with want[0..wn). */
static fdl_status check_output(const fdl_kiln_ctx *c, const json_t *run, const char *want,
                               size_t wn) {
  const json_t *oe = json_object_get(run, "output_evidence");
  if (!json_is_array(oe) || json_array_size(oe) != 1)
    return fdl_kiln_bad(c, "$.runs[0].output_evidence", "expected exactly one row, found %zu",
                        json_array_size(oe));
  const json_t *ex = json_object_get(json_array_get(oe, 0), "exact_output");
  fdl_status s = fdl_kiln_walk(c, ex, "$.runs[0].output_evidence[0].exact_output", &EXACT_OUTPUT);
  if (s != FDL_OK) return s;
  unsigned char *content = NULL, *reasoning = NULL;
  size_t cn = 0, rn = 0;
  s = decode_text(c, "$.runs[0].output_evidence[0].exact_output.reasoning_content_base64",
                  json_object_get(ex, "reasoning_content_base64"), &reasoning, &rn);
  if (!s && rn)
    s = fdl_kiln_bad(c, "$.runs[0].output_evidence[0].exact_output.reasoning_content_base64",
                     "decodes to %zu bytes of reasoning, expected \"\"", rn);
  if (!s)
    s = decode_text(c, "$.runs[0].output_evidence[0].exact_output.content_base64",
                    json_object_get(ex, "content_base64"), &content, &cn);
  if (!s && want && (cn < wn || memcmp(content, want, wn) != 0))
    s = fdl_kiln_bad(c, "$.runs[0].output_evidence[0].exact_output.content_base64",
                     "the decoded content does not start with the request's continuation_prefix "
                     "texts followed by this engine's candidate text (%zu bytes)",
                     wn);
  free(content);
  free(reasoning);
  return s;
}

/* One parsed receipt (c names it) against the request; engine 0 is kiln, 1 vllm. Without a
 * request (req NULL: `check` given the receipt alone) every rule that needs no other file: the
 * seal, the driver, a clean checkout, one run at concurrency 1, its output evidence strictly
 * base64 of UTF-8 with no reasoning. */
static fdl_status check_receipt(const fdl_kiln_ctx *c, const json_t *rc, const json_t *req,
                                const json_t *ref, size_t engine) {
  if (!json_is_object(rc)) return fdl_kiln_bad(c, "$", "expected an object");
  const json_t *stored = json_object_get(rc, "receipt_sha256");
  fdl_status s = fdl_kiln_walk(c, rc, "$", &SEAL);
  char self[FDL_SEAL_BUF];
  if (!s) s = fdl_seal_compute(rc, FDL_SEAL_KILN_REMOVE, "receipt_sha256", self, c->err);
  if (!s && strcmp(self, json_string_value(stored)) != 0)
    return fdl_fail(c->err, FDL_MISMATCH,
                    "%s: $.receipt_sha256: stored %s, but the receipt without it hashes to %s",
                    c->name, json_string_value(stored), self);
  if (!s && req)
    s = fdl_kiln_bind(c, "$.receipt_sha256", stored, json_object_get(ref, "content_sha256"),
                      "the request's content_sha256 for this receipt");
  if (s) return s;
  if (!fdl_kiln_str_eq(json_object_get(rc, "driver_version"), "7"))
    return fdl_kiln_bad(c, "$.driver_version", "expected \"7\"");
  const json_t *repo = json_object_get(json_object_get(rc, "driver_environment"), "repository");
  const json_t *src = json_object_get(req, "source");
  if (req && (s = fdl_kiln_bind(
                  c, "$.driver_environment.repository.commit", json_object_get(repo, "commit"),
                  json_object_get(src, "source_commit"), "the request's source.source_commit")))
    return s;
  if (!json_is_false(json_object_get(repo, "dirty")))
    return fdl_kiln_bad(c, "$.driver_environment.repository.dirty", "expected false");
  const json_t *prompt = json_object_get(req, "prompt");
  if (req && (s = fdl_kiln_bind(c, "$.workload.run_id",
                                json_object_get(json_object_get(rc, "workload"), "run_id"),
                                json_object_get(json_object_get(prompt, "generator"), "run_id"),
                                "the request's prompt.generator.run_id")))
    return s;
  const json_t *mi = json_object_get(json_object_get(rc, "engine"), "model_identity");
  if (!json_is_object(mi)) return fdl_kiln_bad(c, "$.engine.model_identity", "expected an object");
  if (req) {
    json_t *bare = json_copy((json_t *)mi);
    if (!bare) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
    json_object_del(bare, "path");
    s = fdl_kiln_bind(c, "$.engine.model_identity (without path)", bare,
                      json_object_get(req, "model_identity"), "the request's model_identity");
    json_decref(bare);
    if (s) return s;
  }
  const json_t *runs = json_object_get(rc, "runs");
  if (!json_is_array(runs) || json_array_size(runs) != 1)
    return fdl_kiln_bad(c, "$.runs", "expected exactly one run, found %zu", json_array_size(runs));
  const json_t *run = json_array_get(runs, 0);
  if (!num_is(json_object_get(run, "concurrency"), 1))
    return fdl_kiln_bad(c, "$.runs[0].concurrency", "expected 1");
  if (!num_is(json_object_get(run, "repeat"), 0))
    return fdl_kiln_bad(c, "$.runs[0].repeat", "expected 0");
  const json_t *ptc = json_object_get(run, "prompt_token_counts");
  if (!req) {
    const json_t *c0 = json_array_get(ptc, 0);
    if (!json_is_array(ptc) || json_array_size(ptc) != 1 || !json_is_integer(c0) ||
        json_integer_value(c0) < 1)
      return fdl_kiln_bad(c, "$.runs[0].prompt_token_counts", "expected [N], N >= 1");
    return check_output(c, run, NULL, 0);
  }
  size_t np = json_array_size(json_object_get(prompt, "token_ids"));
  if (!json_is_array(ptc) || json_array_size(ptc) != 1 ||
      !num_is(json_array_get(ptc, 0), (double)np))
    return fdl_kiln_bad(c, "$.runs[0].prompt_token_counts",
                        "expected [%zu], the request's prompt length", np);
  /* The engine produced the common prefix, then its own candidate token's text. */
  const json_t *cp = json_object_get(req, "continuation_prefix");
  size_t wn = 0;
  for (size_t i = 0; i < json_array_size(cp); i++)
    wn += json_string_length(json_object_get(json_array_get(cp, i), "text"));
  const json_t *ct =
      json_object_get(json_array_get(json_object_get(req, "candidates"), engine), "text");
  wn += json_string_length(ct);
  char *want = fdl_malloc(wn + 1);
  if (!want) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  size_t o = 0;
  for (size_t i = 0; i < json_array_size(cp); i++) {
    const json_t *t = json_object_get(json_array_get(cp, i), "text");
    memcpy(want + o, json_string_value(t), json_string_length(t));
    o += json_string_length(t);
  }
  memcpy(want + o, json_string_value(ct), json_string_length(ct));
  s = check_output(c, run, want, wn);
  free(want);
  return s;
}

fdl_status fdl_kiln_refs_request(const fdl_kiln_ctx *c, const json_t *req) {
  static const char *const engines[2] = {"kiln_receipt", "vllm_receipt"};
  const json_t *src = json_object_get(req, "source");
  fdl_status s = FDL_OK;
  for (size_t i = 0; i < 2 && s == FDL_OK; i++) {
    const json_t *ref = json_object_get(src, engines[i]);
    char jp[96], jq[96];
    snprintf(jp, sizeof jp, "$.source.%s.path", engines[i]);
    char *real = NULL, *text = NULL;
    size_t len = 0;
    s = fdl_kiln_read_ref(c, jp, json_object_get(ref, "path"), "receipt",
                          FDL_KILN_RECEIPT_MAX_BYTES, &real, &text, &len);
    const char *rel = json_string_value(json_object_get(ref, "path"));
    char hex[FDL_SHA256_HEX_BUF];
    if (!s) s = fdl_sha256_buf_hex(text, len, hex, c->err);
    if (!s) {
      const char *stored = json_string_value(json_object_get(ref, "file_sha256"));
      if (strcmp(stored + 7, hex) != 0)
        s = fdl_fail(c->err, FDL_MISMATCH,
                     "%s: $.source.%s.file_sha256: stored %s, but the receipt %s hashes to "
                     "sha256:%s",
                     c->name, engines[i], stored, rel, hex);
    }
    json_t *rc = NULL;
    const fdl_json_read_opts kiln = {.max_depth = 0, .kiln_strict = true};
    if (!s) {
      /* What goes wrong inside the receipt names the receipt, under the request's field. */
      fdl_kiln_ctx n = {rel, c->err, c->refs};
      s = fdl_json_parse(text, len, &kiln, &rc, c->err);
      if (!s) s = check_receipt(&n, rc, req, ref, i);
      snprintf(jq, sizeof jq, "$.source.%s", engines[i]);
      if (s) fdl_err_prefix(c->err, "%s: %s", c->name, jq);
    }
    json_decref(rc);
    free(real);
    free(text);
  }
  return s;
}

fdl_status fdl_kiln_check_receipt_alone(const fdl_kiln_ctx *c, const json_t *doc) {
  return check_receipt(c, doc, NULL, NULL, 0);
}
