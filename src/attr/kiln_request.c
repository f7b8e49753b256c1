/* kiln_request.c - the kiln.hf-next-token-request.v1 rules (KILN-ATTRIBUTION.md §5) and the model
 * identity every record carries (§6). */
#include <stdio.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "fidelis/kiln.h"

static fdl_status check_receipt_ref(const fdl_kiln_ctx *c, const char *path, const json_t *r) {
  fdl_status s = FDL_CLOSED(c, path, r, "path", "file_sha256", "content_sha256");
  if (s != FDL_OK) return s;
  char p[96];
  const json_t *pv = json_object_get(r, "path");
  snprintf(p, sizeof p, "%s.path", path);
  if (!json_is_string(pv) || !fdl_kiln_rel_path_ok(json_string_value(pv), json_string_length(pv)))
    return fdl_kiln_bad(c, p, "expected a nonempty normalised relative POSIX path without \"..\"");
  snprintf(p, sizeof p, "%s.file_sha256", path);
  if ((s = fdl_kiln_want_sha(c, p, json_object_get(r, "file_sha256"))) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.content_sha256", path);
  return fdl_kiln_want_sha(c, p, json_object_get(r, "content_sha256"));
}

/* A request's source (§5): {source_commit (40 hex), kiln_receipt, vllm_receipt}. */
fdl_status fdl_kiln_check_source_pair(const fdl_kiln_ctx *c, const char *path, const json_t *src) {
  fdl_status s = FDL_CLOSED(c, path, src, "source_commit", "kiln_receipt", "vllm_receipt");
  if (s != FDL_OK) return s;
  char p[96];
  const json_t *sc = json_object_get(src, "source_commit");
  snprintf(p, sizeof p, "%s.source_commit", path);
  if (!json_is_string(sc) || json_string_length(sc) != 40 ||
      !fdl_hex_lower(json_string_value(sc), 40))
    return fdl_kiln_bad(c, p, "expected 40 lowercase hex digits");
  snprintf(p, sizeof p, "%s.kiln_receipt", path);
  if ((s = check_receipt_ref(c, p, json_object_get(src, "kiln_receipt"))) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.vllm_receipt", path);
  return check_receipt_ref(c, p, json_object_get(src, "vllm_receipt"));
}

fdl_status fdl_kiln_check_model_identity(const fdl_kiln_ctx *c, const char *path, const json_t *m) {
  fdl_status s = FDL_CLOSED(c, path, m, "id", "content_sha256", "config_hash", "tokenizer_hash",
                            "chat_template_hash", "weight_files");
  if (s != FDL_OK) return s;
  char p[128];
  snprintf(p, sizeof p, "%s.id", path);
  if (!fdl_kiln_nonempty_str(json_object_get(m, "id")))
    return fdl_kiln_bad(c, p, "expected a nonempty string");
  static const char *const shas[] = {"content_sha256", "config_hash", "tokenizer_hash",
                                     "chat_template_hash"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s.%s", path, shas[i]);
    if ((s = fdl_kiln_want_sha(c, p, json_object_get(m, shas[i]))) != FDL_OK) return s;
  }
  const json_t *w = json_object_get(m, "weight_files");
  snprintf(p, sizeof p, "%s.weight_files", path);
  if (!json_is_array(w) || !json_array_size(w))
    return fdl_kiln_bad(c, p, "expected a nonempty array");
  const char *prev = NULL;
  size_t prev_n = 0;
  for (size_t i = 0; i < json_array_size(w); i++) {
    const json_t *f = json_array_get(w, i);
    snprintf(p, sizeof p, "%s.weight_files[%zu]", path, i);
    if ((s = FDL_CLOSED(c, p, f, "path", "bytes", "sha256")) != FDL_OK) return s;
    const json_t *fp = json_object_get(f, "path");
    if (!json_is_string(fp) || !json_string_length(fp) || json_string_value(fp)[0] == '/' ||
        fdl_kiln_has_dotdot(json_string_value(fp)))
      return fdl_kiln_bad(c, p, "path: expected a nonempty relative path without \"..\"");
    const json_t *b = json_object_get(f, "bytes");
    if (!fdl_kiln_is_int(b) || json_integer_value(b) <= 0)
      return fdl_kiln_bad(c, p, "bytes: expected an integer greater than 0");
    char q[160];
    snprintf(q, sizeof q, "%s.sha256", p);
    if ((s = fdl_kiln_want_sha(c, q, json_object_get(f, "sha256"))) != FDL_OK) return s;
    const char *cur = json_string_value(fp);
    size_t cur_n = json_string_length(fp);
    if (prev) {
      int cmp = memcmp(prev, cur, prev_n < cur_n ? prev_n : cur_n);
      if (cmp > 0 || (cmp == 0 && prev_n >= cur_n))
        return fdl_kiln_bad(c, p,
                            "path: weight files must be sorted by code point, without duplicates");
    }
    prev = cur;
    prev_n = cur_n;
  }
  /* content_sha256 = canonical hash of the identity without content_sha256 (§6). */
  json_t *body = json_copy((json_t *)m);
  if (!body) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  json_object_del(body, "content_sha256");
  char want[FDL_SEAL_BUF];
  s = fdl_kiln_canonical_sha256(body, want, c->err);
  json_decref(body);
  if (s != FDL_OK) return s;
  if (strcmp(want, json_string_value(json_object_get(m, "content_sha256"))) != 0) {
    snprintf(p, sizeof p, "%s.content_sha256", path);
    return fdl_fail(c->err, FDL_MISMATCH, "%s: %s: stored %s, recomputed %s", c->name, p,
                    json_string_value(json_object_get(m, "content_sha256")), want);
  }
  return FDL_OK;
}

static fdl_status check_prompt(const fdl_kiln_ctx *c, const json_t *p) {
  fdl_status s = FDL_CLOSED(c, "$.prompt", p, "generator", "messages", "add_generation_prompt",
                            "template_kwargs", "utf8_sha256", "token_count", "token_ids");
  if (s != FDL_OK) return s;
  const json_t *g = json_object_get(p, "generator");
  s = FDL_CLOSED(c, "$.prompt.generator", g, "run_id", "phase", "request_index", "profile",
                 "template_version");
  if (s != FDL_OK) return s;
  if (!fdl_kiln_nonempty_str(json_object_get(g, "run_id")))
    return fdl_kiln_bad(c, "$.prompt.generator.run_id", "expected a nonempty string");
  if (!fdl_kiln_nonempty_str(json_object_get(g, "phase")))
    return fdl_kiln_bad(c, "$.prompt.generator.phase", "expected a nonempty string");
  const json_t *ri = json_object_get(g, "request_index");
  if (!(fdl_kiln_is_int(ri) && json_integer_value(ri) == 0) &&
      !(json_is_real(ri) && json_real_value(ri) == 0))
    return fdl_kiln_bad(c, "$.prompt.generator.request_index", "expected 0");
  if (!fdl_kiln_str_eq(json_object_get(g, "profile"), "short"))
    return fdl_kiln_bad(c, "$.prompt.generator.profile", "expected \"short\"");
  if (!fdl_kiln_str_eq(json_object_get(g, "template_version"), "fixed-serving-profiles-v1"))
    return fdl_kiln_bad(c, "$.prompt.generator.template_version",
                        "expected \"fixed-serving-profiles-v1\"");
  if (!json_is_true(json_object_get(p, "add_generation_prompt")))
    return fdl_kiln_bad(c, "$.prompt.add_generation_prompt", "expected true");
  const json_t *tk = json_object_get(p, "template_kwargs");
  if ((s = FDL_CLOSED(c, "$.prompt.template_kwargs", tk, "enable_thinking")) != FDL_OK) return s;
  if (!json_is_false(json_object_get(tk, "enable_thinking")))
    return fdl_kiln_bad(c, "$.prompt.template_kwargs.enable_thinking", "expected false");
  const json_t *ms = json_object_get(p, "messages");
  if (!json_is_array(ms) || json_array_size(ms) != 1)
    return fdl_kiln_bad(c, "$.prompt.messages", "expected exactly one message");
  const json_t *m = json_array_get(ms, 0);
  if ((s = FDL_CLOSED(c, "$.prompt.messages[0]", m, "role", "content")) != FDL_OK) return s;
  if (!fdl_kiln_str_eq(json_object_get(m, "role"), "user"))
    return fdl_kiln_bad(c, "$.prompt.messages[0].role", "expected \"user\"");
  const json_t *content = json_object_get(m, "content");
  if (!fdl_kiln_nonempty_str(content))
    return fdl_kiln_bad(c, "$.prompt.messages[0].content", "expected a nonempty string");
  if ((s = fdl_kiln_want_sha(c, "$.prompt.utf8_sha256", json_object_get(p, "utf8_sha256"))) !=
      FDL_OK)
    return s;
  fdl_sha256 d;
  if ((s = fdl_sha256_buf(json_string_value(content), json_string_length(content), &d, c->err)) !=
      FDL_OK)
    return s;
  char hex[FDL_SHA256_HEX_BUF];
  fdl_sha256_hex(&d, hex);
  if (strcmp(json_string_value(json_object_get(p, "utf8_sha256")) + 7, hex) != 0)
    return fdl_fail(c->err, FDL_MISMATCH,
                    "%s: $.prompt.utf8_sha256: stored %s, but the UTF-8 bytes of "
                    "messages[0].content hash to sha256:%s",
                    c->name, json_string_value(json_object_get(p, "utf8_sha256")), hex);
  const json_t *ids = json_object_get(p, "token_ids");
  if ((s = fdl_kiln_want_tokens(c, "$.prompt.token_ids", ids, 1, FDL_KILN_MAX_INPUT)) != FDL_OK)
    return s;
  const json_t *tc = json_object_get(p, "token_count");
  if (!fdl_kiln_is_int(tc) || (size_t)json_integer_value(tc) != json_array_size(ids))
    return fdl_kiln_bad(c, "$.prompt.token_count",
                        "expected an integer equal to len(token_ids) = %zu", json_array_size(ids));
  return FDL_OK;
}

fdl_status fdl_kiln_check_request(const fdl_kiln_ctx *c, const json_t *r) {
  fdl_status s =
      FDL_CLOSED(c, "$", r, "schema", "id", "source", "model_identity", "prompt",
                 "continuation_prefix", "input_token_ids", "input_token_ids_sha256", "candidates");
  if (s != FDL_OK) return s;
  const json_t *id = json_object_get(r, "id");
  bool id_ok = json_is_string(id);
  if (id_ok) {
    const char *v = json_string_value(id);
    size_t n = json_string_length(id);
    id_ok = n >= 3 && n <= 128 && strlen(v) == n;
    for (size_t i = 0; id_ok && i < n; i++) {
      char ch = v[i];
      bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
      id_ok = alnum || (i > 0 && (ch == '.' || ch == '_' || ch == '-'));
    }
  }
  if (!id_ok)
    return fdl_kiln_bad(c, "$.id", "expected a string matching [a-z0-9][a-z0-9._-]{2,127}");
  if ((s = fdl_kiln_check_source_pair(c, "$.source", json_object_get(r, "source"))) != FDL_OK)
    return s;
  if ((s = fdl_kiln_check_model_identity(c, "$.model_identity",
                                         json_object_get(r, "model_identity"))) != FDL_OK)
    return s;
  const json_t *prompt = json_object_get(r, "prompt");
  if ((s = check_prompt(c, prompt)) != FDL_OK) return s;
  const json_t *cp = json_object_get(r, "continuation_prefix");
  if (!json_is_array(cp) || json_array_size(cp) < 1 || json_array_size(cp) > FDL_KILN_MAX_PREFIX)
    return fdl_kiln_bad(c, "$.continuation_prefix", "expected 1..%u tokens", FDL_KILN_MAX_PREFIX);
  char p[96];
  for (size_t i = 0; i < json_array_size(cp); i++) {
    const json_t *t = json_array_get(cp, i);
    snprintf(p, sizeof p, "$.continuation_prefix[%zu]", i);
    if ((s = FDL_CLOSED(c, p, t, "token_id", "text")) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.continuation_prefix[%zu].token_id", i);
    if ((s = fdl_kiln_want_token(c, p, json_object_get(t, "token_id"))) != FDL_OK) return s;
    if (!json_is_string(json_object_get(t, "text"))) {
      snprintf(p, sizeof p, "$.continuation_prefix[%zu].text", i);
      return fdl_kiln_bad(c, p, "expected a string");
    }
  }
  const json_t *in = json_object_get(r, "input_token_ids");
  if ((s = fdl_kiln_want_tokens(c, "$.input_token_ids", in, 1, FDL_KILN_MAX_INPUT)) != FDL_OK)
    return s;
  const json_t *pids = json_object_get(prompt, "token_ids");
  size_t np = json_array_size(pids), nc = json_array_size(cp);
  bool eq = json_array_size(in) == np + nc;
  for (size_t i = 0; eq && i < np + nc; i++) {
    const json_t *want =
        i < np ? json_array_get(pids, i) : json_object_get(json_array_get(cp, i - np), "token_id");
    eq = json_integer_value(json_array_get(in, i)) == json_integer_value(want);
  }
  if (!eq)
    return fdl_kiln_bad(
        c, "$.input_token_ids",
        "expected prompt.token_ids followed by the continuation_prefix token ids (%zu ids)",
        np + nc);
  const json_t *ish = json_object_get(r, "input_token_ids_sha256");
  if ((s = fdl_kiln_want_sha(c, "$.input_token_ids_sha256", ish)) != FDL_OK) return s;
  char h[FDL_SEAL_BUF];
  if ((s = fdl_kiln_canonical_sha256(in, h, c->err)) != FDL_OK) return s;
  if (strcmp(h, json_string_value(ish)) != 0)
    return fdl_fail(c->err, FDL_MISMATCH, "%s: $.input_token_ids_sha256: stored %s, recomputed %s",
                    c->name, json_string_value(ish), h);
  const json_t *cands = json_object_get(r, "candidates");
  if (!json_is_array(cands) || json_array_size(cands) != 2)
    return fdl_kiln_bad(c, "$.candidates", "expected exactly 2 candidates");
  static const char *const engines[] = {"kiln", "vllm"};
  for (size_t i = 0; i < 2; i++) {
    const json_t *t = json_array_get(cands, i);
    snprintf(p, sizeof p, "$.candidates[%zu]", i);
    if ((s = FDL_CLOSED(c, p, t, "engine", "token_id", "text")) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.candidates[%zu].engine", i);
    if (!fdl_kiln_str_eq(json_object_get(t, "engine"), engines[i]))
      return fdl_kiln_bad(c, p, "expected \"%s\" (the engines are [\"kiln\",\"vllm\"] in order)",
                          engines[i]);
    snprintf(p, sizeof p, "$.candidates[%zu].token_id", i);
    if ((s = fdl_kiln_want_token(c, p, json_object_get(t, "token_id"))) != FDL_OK) return s;
    if (!json_is_string(json_object_get(t, "text"))) {
      snprintf(p, sizeof p, "$.candidates[%zu].text", i);
      return fdl_kiln_bad(c, p, "expected a string");
    }
  }
  if (json_integer_value(json_object_get(json_array_get(cands, 0), "token_id")) ==
      json_integer_value(json_object_get(json_array_get(cands, 1), "token_id")))
    return fdl_kiln_bad(c, "$.candidates[1].token_id",
                        "expected a token id different from the kiln candidate's");
  return FDL_OK;
}
