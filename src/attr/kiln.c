/* kiln.c - Kiln canonical identities and the checker of requests, v1 and v2 results and
 * fidelis' path-attribution records (KILN-ATTRIBUTION.md §2, §5, §8, §9, §11-§14). The model
 * fingerprint is kiln_model.c, the first-divergence request kiln_divergence.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attr/internal.h"
#include "fidelis/attr.h"
#include "fidelis/file.h"
#include "fidelis/json.h"
#include "fidelis/kiln.h"
#include "base/order.h"
#include "base/sys.h"

fdl_status fdl_kiln_canonical_sha256(const json_t *v, char *out, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = fdl_json_dump(v, FDL_JSON_ASCII, &b, err);
  fdl_sha256 d;
  if (s == FDL_OK) s = fdl_sha256_buf(b.data ? b.data : "", b.len, &d, err);
  fdl_buf_free(&b);
  if (s != FDL_OK) return s;
  char hex[FDL_SHA256_HEX_BUF];
  fdl_sha256_hex(&d, hex);
  snprintf(out, FDL_SEAL_BUF, FDL_SEAL_KILN_PREFIX "%s", hex);
  return FDL_OK;
}

/* ---- a walker that names where it is ------------------------------------------------------ */

typedef struct {
  const char *name; /* the file */
  fdl_err *err;
} ctx;

static fdl_status bad(const ctx *c, const char *path, const char *fmt, ...) FDL_PRINTF(3, 4);
static fdl_status bad(const ctx *c, const char *path, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return fdl_fail(c->err, FDL_INVALID, "%s: %s: %s", c->name, path, msg);
}

static bool is_int(const json_t *v) {
  return json_is_integer(v);
} /* never a bool in jansson */

static bool is_sha(const json_t *v) {
  if (!json_is_string(v)) return false;
  const char *s = json_string_value(v);
  size_t n = json_string_length(v), p = sizeof FDL_SEAL_KILN_PREFIX - 1;
  return n == p + 64 && memcmp(s, FDL_SEAL_KILN_PREFIX, p) == 0 && fdl_hex_lower(s + p, 64);
}

static bool nonempty_str(const json_t *v) {
  return json_is_string(v) && json_string_length(v) > 0;
}

static bool str_eq(const json_t *v, const char *want) {
  return json_is_string(v) && json_string_length(v) == strlen(want) &&
         strcmp(json_string_value(v), want) == 0;
}

/* The key set of obj is exactly keys[0..n). */
static fdl_status closed(const ctx *c, const char *path, const json_t *obj, const char *const *keys,
                         size_t n) {
  if (!json_is_object(obj)) return bad(c, path, "expected an object");
  for (size_t i = 0; i < n; i++)
    if (!json_object_get(obj, keys[i])) return bad(c, path, "missing key \"%s\"", keys[i]);
  if (json_object_size(obj) != n) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
      bool known = false;
      for (size_t i = 0; i < n && !known; i++) known = strcmp(k, keys[i]) == 0;
      if (!known) return bad(c, path, "unexpected key \"%s\" (the object is closed)", k);
    }
  }
  return FDL_OK;
}
#define CLOSED(c, path, obj, ...)                                                                  \
  closed((c), (path), (obj), (const char *const[]){__VA_ARGS__},                                   \
         sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static fdl_status want_sha(const ctx *c, const char *path, const json_t *v) {
  return is_sha(v) ? FDL_OK : bad(c, path, "expected \"sha256:\" and 64 lowercase hex digits");
}

bool fdl_kiln_token_ok(const json_t *v) {
  return is_int(v) && json_integer_value(v) >= 0 &&
         json_integer_value(v) < (json_int_t)FDL_KILN_VOCAB_SIZE;
}

static fdl_status want_token(const ctx *c, const char *path, const json_t *v) {
  return fdl_kiln_token_ok(v) ? FDL_OK
                              : bad(c, path, "expected a token id, an integer in 0..248319");
}

static fdl_status want_tokens(const ctx *c, const char *path, const json_t *v, size_t lo,
                              size_t hi) {
  if (!json_is_array(v)) return bad(c, path, "expected an array of token ids");
  size_t n = json_array_size(v);
  if (n < lo || n > hi) return bad(c, path, "expected %zu..%zu token ids, found %zu", lo, hi, n);
  for (size_t i = 0; i < n; i++)
    if (!fdl_kiln_token_ok(json_array_get(v, i))) {
      char p[96];
      snprintf(p, sizeof p, "%s[%zu]", path, i);
      return want_token(c, p, json_array_get(v, i));
    }
  return FDL_OK;
}

bool fdl_kiln_rel_path_ok(const char *s, size_t n) {
  if (!n || s[0] == '/' || s[n - 1] == '/' || strlen(s) != n) return false;
  if (n == 1 && s[0] == '.') return false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && s[j] != '/') j++;
    size_t len = j - i;
    if (len == 0) return false;
    if (len == 1 && s[i] == '.') return false;
    if (len == 2 && s[i] == '.' && s[i + 1] == '.') return false;
    i = j + 1;
  }
  return true;
}

/* A ".." component anywhere ("..", "../a", "a/..", "a/../b"); "a..b" is a plain name. */
static bool has_dotdot(const char *s) {
  for (const char *p = s; (p = strstr(p, "..")) != NULL; p += 2)
    if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/')) return true;
  return false;
}

static fdl_status check_receipt_ref(const ctx *c, const char *path, const json_t *r) {
  fdl_status s = CLOSED(c, path, r, "path", "file_sha256", "content_sha256");
  if (s != FDL_OK) return s;
  char p[96];
  const json_t *pv = json_object_get(r, "path");
  snprintf(p, sizeof p, "%s.path", path);
  if (!json_is_string(pv) || !fdl_kiln_rel_path_ok(json_string_value(pv), json_string_length(pv)))
    return bad(c, p, "expected a nonempty normalised relative POSIX path without \"..\"");
  snprintf(p, sizeof p, "%s.file_sha256", path);
  if ((s = want_sha(c, p, json_object_get(r, "file_sha256"))) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.content_sha256", path);
  return want_sha(c, p, json_object_get(r, "content_sha256"));
}

/* A request's source (§5): {source_commit (40 hex), kiln_receipt, vllm_receipt}. */
static fdl_status check_source_pair(const ctx *c, const char *path, const json_t *src) {
  fdl_status s = CLOSED(c, path, src, "source_commit", "kiln_receipt", "vllm_receipt");
  if (s != FDL_OK) return s;
  char p[96];
  const json_t *sc = json_object_get(src, "source_commit");
  snprintf(p, sizeof p, "%s.source_commit", path);
  if (!json_is_string(sc) || json_string_length(sc) != 40 ||
      !fdl_hex_lower(json_string_value(sc), 40))
    return bad(c, p, "expected 40 lowercase hex digits");
  snprintf(p, sizeof p, "%s.kiln_receipt", path);
  if ((s = check_receipt_ref(c, p, json_object_get(src, "kiln_receipt"))) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.vllm_receipt", path);
  return check_receipt_ref(c, p, json_object_get(src, "vllm_receipt"));
}

static fdl_status check_model_identity(const ctx *c, const char *path, const json_t *m) {
  fdl_status s = CLOSED(c, path, m, "id", "content_sha256", "config_hash", "tokenizer_hash",
                        "chat_template_hash", "weight_files");
  if (s != FDL_OK) return s;
  char p[128];
  snprintf(p, sizeof p, "%s.id", path);
  if (!nonempty_str(json_object_get(m, "id"))) return bad(c, p, "expected a nonempty string");
  static const char *const shas[] = {"content_sha256", "config_hash", "tokenizer_hash",
                                     "chat_template_hash"};
  for (size_t i = 0; i < 4; i++) {
    snprintf(p, sizeof p, "%s.%s", path, shas[i]);
    if ((s = want_sha(c, p, json_object_get(m, shas[i]))) != FDL_OK) return s;
  }
  const json_t *w = json_object_get(m, "weight_files");
  snprintf(p, sizeof p, "%s.weight_files", path);
  if (!json_is_array(w) || !json_array_size(w)) return bad(c, p, "expected a nonempty array");
  const char *prev = NULL;
  size_t prev_n = 0;
  for (size_t i = 0; i < json_array_size(w); i++) {
    const json_t *f = json_array_get(w, i);
    snprintf(p, sizeof p, "%s.weight_files[%zu]", path, i);
    if ((s = CLOSED(c, p, f, "path", "bytes", "sha256")) != FDL_OK) return s;
    const json_t *fp = json_object_get(f, "path");
    if (!json_is_string(fp) || !json_string_length(fp) || json_string_value(fp)[0] == '/' ||
        has_dotdot(json_string_value(fp)))
      return bad(c, p, "path: expected a nonempty relative path without \"..\"");
    const json_t *b = json_object_get(f, "bytes");
    if (!is_int(b) || json_integer_value(b) <= 0)
      return bad(c, p, "bytes: expected an integer greater than 0");
    char q[160];
    snprintf(q, sizeof q, "%s.sha256", p);
    if ((s = want_sha(c, q, json_object_get(f, "sha256"))) != FDL_OK) return s;
    const char *cur = json_string_value(fp);
    size_t cur_n = json_string_length(fp);
    if (prev) {
      int cmp = memcmp(prev, cur, prev_n < cur_n ? prev_n : cur_n);
      if (cmp > 0 || (cmp == 0 && prev_n >= cur_n))
        return bad(c, p, "path: weight files must be sorted by code point, without duplicates");
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

static fdl_status check_prompt(const ctx *c, const json_t *p) {
  fdl_status s = CLOSED(c, "$.prompt", p, "generator", "messages", "add_generation_prompt",
                        "template_kwargs", "utf8_sha256", "token_count", "token_ids");
  if (s != FDL_OK) return s;
  const json_t *g = json_object_get(p, "generator");
  s = CLOSED(c, "$.prompt.generator", g, "run_id", "phase", "request_index", "profile",
             "template_version");
  if (s != FDL_OK) return s;
  if (!nonempty_str(json_object_get(g, "run_id")))
    return bad(c, "$.prompt.generator.run_id", "expected a nonempty string");
  if (!nonempty_str(json_object_get(g, "phase")))
    return bad(c, "$.prompt.generator.phase", "expected a nonempty string");
  const json_t *ri = json_object_get(g, "request_index");
  if (!(is_int(ri) && json_integer_value(ri) == 0) &&
      !(json_is_real(ri) && json_real_value(ri) == 0))
    return bad(c, "$.prompt.generator.request_index", "expected 0");
  if (!str_eq(json_object_get(g, "profile"), "short"))
    return bad(c, "$.prompt.generator.profile", "expected \"short\"");
  if (!str_eq(json_object_get(g, "template_version"), "fixed-serving-profiles-v1"))
    return bad(c, "$.prompt.generator.template_version", "expected \"fixed-serving-profiles-v1\"");
  if (!json_is_true(json_object_get(p, "add_generation_prompt")))
    return bad(c, "$.prompt.add_generation_prompt", "expected true");
  const json_t *tk = json_object_get(p, "template_kwargs");
  if ((s = CLOSED(c, "$.prompt.template_kwargs", tk, "enable_thinking")) != FDL_OK) return s;
  if (!json_is_false(json_object_get(tk, "enable_thinking")))
    return bad(c, "$.prompt.template_kwargs.enable_thinking", "expected false");
  const json_t *ms = json_object_get(p, "messages");
  if (!json_is_array(ms) || json_array_size(ms) != 1)
    return bad(c, "$.prompt.messages", "expected exactly one message");
  const json_t *m = json_array_get(ms, 0);
  if ((s = CLOSED(c, "$.prompt.messages[0]", m, "role", "content")) != FDL_OK) return s;
  if (!str_eq(json_object_get(m, "role"), "user"))
    return bad(c, "$.prompt.messages[0].role", "expected \"user\"");
  const json_t *content = json_object_get(m, "content");
  if (!nonempty_str(content))
    return bad(c, "$.prompt.messages[0].content", "expected a nonempty string");
  if ((s = want_sha(c, "$.prompt.utf8_sha256", json_object_get(p, "utf8_sha256"))) != FDL_OK)
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
  if ((s = want_tokens(c, "$.prompt.token_ids", ids, 1, FDL_KILN_MAX_INPUT)) != FDL_OK) return s;
  const json_t *tc = json_object_get(p, "token_count");
  if (!is_int(tc) || (size_t)json_integer_value(tc) != json_array_size(ids))
    return bad(c, "$.prompt.token_count", "expected an integer equal to len(token_ids) = %zu",
               json_array_size(ids));
  return FDL_OK;
}

static fdl_status check_request(const ctx *c, const json_t *r) {
  fdl_status s =
      CLOSED(c, "$", r, "schema", "id", "source", "model_identity", "prompt", "continuation_prefix",
             "input_token_ids", "input_token_ids_sha256", "candidates");
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
  if (!id_ok) return bad(c, "$.id", "expected a string matching [a-z0-9][a-z0-9._-]{2,127}");
  if ((s = check_source_pair(c, "$.source", json_object_get(r, "source"))) != FDL_OK) return s;
  if ((s = check_model_identity(c, "$.model_identity", json_object_get(r, "model_identity"))) !=
      FDL_OK)
    return s;
  const json_t *prompt = json_object_get(r, "prompt");
  if ((s = check_prompt(c, prompt)) != FDL_OK) return s;
  const json_t *cp = json_object_get(r, "continuation_prefix");
  if (!json_is_array(cp) || json_array_size(cp) < 1 || json_array_size(cp) > FDL_KILN_MAX_PREFIX)
    return bad(c, "$.continuation_prefix", "expected 1..64 tokens");
  char p[96];
  for (size_t i = 0; i < json_array_size(cp); i++) {
    const json_t *t = json_array_get(cp, i);
    snprintf(p, sizeof p, "$.continuation_prefix[%zu]", i);
    if ((s = CLOSED(c, p, t, "token_id", "text")) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.continuation_prefix[%zu].token_id", i);
    if ((s = want_token(c, p, json_object_get(t, "token_id"))) != FDL_OK) return s;
    if (!json_is_string(json_object_get(t, "text"))) {
      snprintf(p, sizeof p, "$.continuation_prefix[%zu].text", i);
      return bad(c, p, "expected a string");
    }
  }
  const json_t *in = json_object_get(r, "input_token_ids");
  if ((s = want_tokens(c, "$.input_token_ids", in, 1, FDL_KILN_MAX_INPUT)) != FDL_OK) return s;
  const json_t *pids = json_object_get(prompt, "token_ids");
  size_t np = json_array_size(pids), nc = json_array_size(cp);
  bool eq = json_array_size(in) == np + nc;
  for (size_t i = 0; eq && i < np + nc; i++) {
    const json_t *want =
        i < np ? json_array_get(pids, i) : json_object_get(json_array_get(cp, i - np), "token_id");
    eq = json_integer_value(json_array_get(in, i)) == json_integer_value(want);
  }
  if (!eq)
    return bad(c, "$.input_token_ids",
               "expected prompt.token_ids followed by the continuation_prefix token ids (%zu ids)",
               np + nc);
  const json_t *ish = json_object_get(r, "input_token_ids_sha256");
  if ((s = want_sha(c, "$.input_token_ids_sha256", ish)) != FDL_OK) return s;
  char h[FDL_SEAL_BUF];
  if ((s = fdl_kiln_canonical_sha256(in, h, c->err)) != FDL_OK) return s;
  if (strcmp(h, json_string_value(ish)) != 0)
    return fdl_fail(c->err, FDL_MISMATCH, "%s: $.input_token_ids_sha256: stored %s, recomputed %s",
                    c->name, json_string_value(ish), h);
  const json_t *cands = json_object_get(r, "candidates");
  if (!json_is_array(cands) || json_array_size(cands) != 2)
    return bad(c, "$.candidates", "expected exactly 2 candidates");
  static const char *const engines[] = {"kiln", "vllm"};
  for (size_t i = 0; i < 2; i++) {
    const json_t *t = json_array_get(cands, i);
    snprintf(p, sizeof p, "$.candidates[%zu]", i);
    if ((s = CLOSED(c, p, t, "engine", "token_id", "text")) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.candidates[%zu].engine", i);
    if (!str_eq(json_object_get(t, "engine"), engines[i]))
      return bad(c, p, "expected \"%s\" (the engines are [\"kiln\",\"vllm\"] in order)",
                 engines[i]);
    snprintf(p, sizeof p, "$.candidates[%zu].token_id", i);
    if ((s = want_token(c, p, json_object_get(t, "token_id"))) != FDL_OK) return s;
    if (!json_is_string(json_object_get(t, "text"))) {
      snprintf(p, sizeof p, "$.candidates[%zu].text", i);
      return bad(c, p, "expected a string");
    }
  }
  if (json_integer_value(json_object_get(json_array_get(cands, 0), "token_id")) ==
      json_integer_value(json_object_get(json_array_get(cands, 1), "token_id")))
    return bad(c, "$.candidates[1].token_id",
               "expected a token id different from the kiln candidate's");
  return FDL_OK;
}

/* ---- v1 results (§14.4) ---------------------------------------------------------------------- */

static bool finite_num(const json_t *v) {
  if (is_int(v)) return true;
  return json_is_real(v) && isfinite(json_real_value(v));
}
static double num(const json_t *v) {
  return is_int(v) ? (double)json_integer_value(v) : json_real_value(v);
}

/* The self-hash rule (§2) under key `key` ("result_sha256", or fidelis' "record_sha256"). */
static fdl_status self_hash(const ctx *c, const json_t *doc, const char *key,
                            fdl_kiln_checked *res) {
  const json_t *stored = json_object_get(doc, key);
  char p[40];
  snprintf(p, sizeof p, "$.%s", key);
  fdl_status s = want_sha(c, p, stored);
  if (s != FDL_OK) return s;
  s = fdl_seal_compute(doc, FDL_SEAL_KILN_REMOVE, key, res->identity, c->err);
  if (s != FDL_OK) return s;
  if (strcmp(res->identity, json_string_value(stored)) != 0)
    return fdl_fail(c->err, FDL_MISMATCH,
                    "%s: %s: stored %s, but the record without it hashes to %s "
                    "(a value was changed)",
                    c->name, p, json_string_value(stored), res->identity);
  return FDL_OK;
}

static fdl_status check_request_ref(const ctx *c, const json_t *doc) {
  const json_t *rq = json_object_get(doc, "request");
  if (!json_is_object(rq)) return bad(c, "$.request", "expected an object");
  const json_t *sha = json_object_get(rq, "sha256");
  if (sha) return want_sha(c, "$.request.sha256", sha);
  return FDL_OK;
}

static fdl_status check_observed(const ctx *c, const char *path, const json_t *obs) {
  fdl_status s = want_tokens(c, path, obs, 4, 4);
  if (s != FDL_OK) return s;
  static const json_int_t prefix[3] = {1206, 5517, 264};
  for (size_t i = 0; i < 3; i++)
    if (json_integer_value(json_array_get(obs, i)) != prefix[i])
      return bad(c, path, "expected to start with the continuation [1206,5517,264]");
  return FDL_OK;
}

static fdl_status check_comparison(const ctx *c, const char *path, const json_t *cmp,
                                   json_int_t hf_argmax) {
  fdl_status s =
      CLOSED(c, path, cmp, "argmax", "argmax_equal", "candidate_tokens", "cosine_similarity",
             "logits_sha256", "max_abs_error", "mean_abs_error", "top10_overlap");
  if (s != FDL_OK) return s;
  char p[128];
  snprintf(p, sizeof p, "%s.argmax", path);
  const json_t *am = json_object_get(cmp, "argmax");
  if ((s = want_token(c, p, am)) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.argmax_equal", path);
  const json_t *ae = json_object_get(cmp, "argmax_equal");
  if (!json_is_boolean(ae)) return bad(c, p, "expected a bool");
  if (json_is_true(ae) != (json_integer_value(am) == hf_argmax))
    return bad(c, p, "is %s, but argmax %lld %s hf_argmax %lld",
               json_is_true(ae) ? "true" : "false", (long long)json_integer_value(am),
               json_integer_value(am) == hf_argmax ? "==" : "!=", (long long)hf_argmax);
  snprintf(p, sizeof p, "%s.top10_overlap", path);
  const json_t *t = json_object_get(cmp, "top10_overlap");
  if (!is_int(t) || json_integer_value(t) < 0 || json_integer_value(t) > 10)
    return bad(c, p, "expected an integer in 0..10");
  snprintf(p, sizeof p, "%s.logits_sha256", path);
  if ((s = want_sha(c, p, json_object_get(cmp, "logits_sha256"))) != FDL_OK) return s;
  const json_t *cs = json_object_get(cmp, "cosine_similarity");
  snprintf(p, sizeof p, "%s.cosine_similarity", path);
  if (!finite_num(cs) || num(cs) < -1 || num(cs) > 1)
    return bad(c, p, "expected a finite number in [-1, 1]");
  const json_t *mx = json_object_get(cmp, "max_abs_error"),
               *mn = json_object_get(cmp, "mean_abs_error");
  snprintf(p, sizeof p, "%s.mean_abs_error", path);
  if (!finite_num(mx) || !finite_num(mn) || num(mn) < 0 || num(mn) > num(mx))
    return bad(c, p, "expected finite numbers with 0 <= mean_abs_error <= max_abs_error");
  const json_t *ct = json_object_get(cmp, "candidate_tokens");
  snprintf(p, sizeof p, "%s.candidate_tokens", path);
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return bad(c, p, "expected exactly 2 candidates");
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    snprintf(p, sizeof p, "%s.candidate_tokens[%zu]", path, i);
    if ((s = CLOSED(c, p, e, "logit", "rank", "token_id")) != FDL_OK) return s;
    const json_t *rk = json_object_get(e, "rank");
    if (!finite_num(json_object_get(e, "logit")))
      return bad(c, p, "logit: expected a finite number");
    if (!is_int(rk) || json_integer_value(rk) < 1 ||
        json_integer_value(rk) > (json_int_t)FDL_KILN_VOCAB_SIZE)
      return bad(c, p, "rank: expected an integer in 1..248320");
    if (!fdl_kiln_token_ok(json_object_get(e, "token_id")))
      return bad(c, p, "token_id: expected a token id");
  }
  return FDL_OK;
}

/* The two full and two greedy worker paths of a v1 or v2 path worker (§14.2). */
static fdl_status check_worker_paths(const ctx *c, const json_t *w, json_int_t hf) {
  static const char *const full[] = {"eager_full", "graph_full"};
  static const char *const greedy[] = {"eager_greedy", "graph_greedy"};
  char p[96];
  fdl_status s;
  for (size_t i = 0; i < 2; i++) {
    const json_t *f = json_object_get(w, full[i]);
    snprintf(p, sizeof p, "$.worker.%s", full[i]);
    if ((s = CLOSED(c, p, f, "comparison", "observed_next_tokens")) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.worker.%s.observed_next_tokens", full[i]);
    if ((s = check_observed(c, p, json_object_get(f, "observed_next_tokens"))) != FDL_OK) return s;
    snprintf(p, sizeof p, "$.worker.%s.comparison", full[i]);
    if ((s = check_comparison(c, p, json_object_get(f, "comparison"), hf)) != FDL_OK) return s;
    const json_t *g = json_object_get(w, greedy[i]);
    snprintf(p, sizeof p, "$.worker.%s", greedy[i]);
    if ((s = CLOSED(c, p, g, "final_token_matches_reference", "observed_next_tokens")) != FDL_OK)
      return s;
    snprintf(p, sizeof p, "$.worker.%s.observed_next_tokens", greedy[i]);
    const json_t *obs = json_object_get(g, "observed_next_tokens");
    if ((s = check_observed(c, p, obs)) != FDL_OK) return s;
    const json_t *m = json_object_get(g, "final_token_matches_reference");
    snprintf(p, sizeof p, "$.worker.%s.final_token_matches_reference", greedy[i]);
    if (!json_is_boolean(m)) return bad(c, p, "expected a bool");
    bool want = json_integer_value(json_array_get(obs, 3)) == hf;
    if (json_is_true(m) != want)
      return bad(c, p, "is %s, but observed_next_tokens[3] %s hf_argmax",
                 json_is_true(m) ? "true" : "false", want ? "==" : "!=");
  }
  return FDL_OK;
}

static fdl_status check_path_v1(const ctx *c, const json_t *doc) {
  const json_t *w = json_object_get(doc, "worker");
  if (!json_is_object(w)) return bad(c, "$.worker", "expected an object");
  if (!str_eq(json_object_get(w, "schema"), "kiln.rocm-hf-path-attribution.v1"))
    return bad(c, "$.worker.schema", "expected \"kiln.rocm-hf-path-attribution.v1\"");
  const json_t *hf = json_object_get(w, "hf_argmax");
  fdl_status s = want_token(c, "$.worker.hf_argmax", hf);
  if (s != FDL_OK) return s;
  if ((s = check_worker_paths(c, w, json_integer_value(hf))) != FDL_OK) return s;
  if ((s = want_sha(c, "$.worker.input_token_ids_sha256",
                    json_object_get(w, "input_token_ids_sha256"))) != FDL_OK)
    return s;
  if (!nonempty_str(json_object_get(w, "request_id")))
    return bad(c, "$.worker.request_id", "expected a nonempty string");
  return FDL_OK;
}

/* §13's boundary name at index i of 34: embedding, layer_NN_{full,linear}_attention, final_norm. */
static void boundary_name(size_t i, char *out, size_t cap) {
  if (i == 0)
    snprintf(out, cap, "embedding");
  else if (i == 33)
    snprintf(out, cap, "final_norm");
  else
    snprintf(out, cap, "layer_%02zu_%s", i - 1, i % 4 == 0 ? "full_attention" : "linear_attention");
}

/* A layer worker's boundaries, growth, observed ids, shas and request id; v2 also wants the 34
 * boundaries by §13's names. */
static fdl_status check_layer_worker(const ctx *c, const json_t *w, bool v2) {
  const json_t *bs = json_object_get(w, "boundaries");
  if (!json_is_array(bs) || json_array_size(bs) == 0)
    return bad(c, "$.worker.boundaries", "expected a nonempty array");
  size_t n = json_array_size(bs);
  if (v2 && n != 34) return bad(c, "$.worker.boundaries", "expected 34 boundaries, found %zu", n);
  double *rel = fdl_malloc(n * sizeof *rel);
  if (!rel) return fdl_fail(c->err, FDL_NOMEM, "%s: out of memory", c->name);
  fdl_status s = FDL_OK;
  char p[128];
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    const json_t *b = json_array_get(bs, i);
    snprintf(p, sizeof p, "$.worker.boundaries[%zu]", i);
    s = CLOSED(c, p, b, "cosine_similarity", "hf_sha256", "index", "kiln_sha256", "max_abs_error",
               "mean_abs_error", "name", "reference_root_mean_square",
               "relative_root_mean_square_error", "root_mean_square_error");
    if (s != FDL_OK) break;
    const json_t *ix = json_object_get(b, "index");
    if (!is_int(ix) || json_integer_value(ix) != (json_int_t)i) {
      s = bad(c, p, "index: expected %zu (its position)", i);
      break;
    }
    if (!nonempty_str(json_object_get(b, "name"))) {
      s = bad(c, p, "name: expected a nonempty string");
      break;
    }
    char bname[64];
    boundary_name(i, bname, sizeof bname);
    if (v2 && !str_eq(json_object_get(b, "name"), bname)) {
      s = bad(c, p, "name: expected \"%s\" (§13's boundary %zu)", bname, i);
      break;
    }
    static const char *const shas[] = {"hf_sha256", "kiln_sha256"};
    for (size_t k = 0; k < 2 && s == FDL_OK; k++) {
      char q[160];
      snprintf(q, sizeof q, "%s.%s", p, shas[k]);
      s = want_sha(c, q, json_object_get(b, shas[k]));
    }
    if (s != FDL_OK) break;
    const json_t *cs = json_object_get(b, "cosine_similarity"),
                 *mx = json_object_get(b, "max_abs_error"),
                 *mn = json_object_get(b, "mean_abs_error"),
                 *rr = json_object_get(b, "reference_root_mean_square"),
                 *re = json_object_get(b, "relative_root_mean_square_error"),
                 *rm = json_object_get(b, "root_mean_square_error");
    if (!finite_num(cs) || !finite_num(mx) || !finite_num(mn) || !finite_num(rr) ||
        !finite_num(re) || !finite_num(rm)) {
      s = bad(c, p, "expected finite numbers");
      break;
    }
    if (num(cs) < -1 || num(cs) > 1)
      s = bad(c, p, "cosine_similarity: expected a value in [-1, 1]");
    else if (num(mn) < 0 || num(mn) > num(mx))
      s = bad(c, p, "mean_abs_error: expected 0 <= mean <= max_abs_error");
    else if (!(num(rr) > 0))
      s = bad(c, p, "reference_root_mean_square: expected > 0");
    else if (num(re) < 0 || num(rm) < 0)
      s = bad(c, p, "expected errors >= 0");
    else {
      double want = num(rm) / num(rr), got = num(re);
      double tol = fmax(1e-12 * fmax(fabs(want), fabs(got)), 1e-12);
      if (!(fabs(got - want) <= tol))
        s = bad(c, p,
                "relative_root_mean_square_error %.17g is not root_mean_square_error / "
                "reference_root_mean_square = %.17g",
                got, want);
    }
    rel[i] = num(re);
  }
  if (s == FDL_OK) {
    size_t idx;
    double delta;
    fdl_attr_largest_growth(rel, n, &idx, &delta);
    const json_t *g = json_object_get(w, "largest_relative_error_growth");
    s = CLOSED(c, "$.worker.largest_relative_error_growth", g, "index", "name",
               "relative_root_mean_square_error_delta");
    if (s == FDL_OK) {
      const json_t *gi = json_object_get(g, "index"),
                   *gd = json_object_get(g, "relative_root_mean_square_error_delta");
      const json_t *want_name = json_object_get(json_array_get(bs, idx), "name");
      if (!is_int(gi) || json_integer_value(gi) != (json_int_t)idx)
        s = bad(c, "$.worker.largest_relative_error_growth.index",
                "expected %zu, recomputed from the boundaries", idx);
      else if (!json_equal(json_object_get(g, "name"), want_name))
        s = bad(c, "$.worker.largest_relative_error_growth.name", "expected \"%s\" (boundary %zu)",
                json_string_value(want_name), idx);
      else if (!finite_num(gd) ||
               !(fabs(num(gd) - delta) <= fmax(1e-12 * fmax(fabs(num(gd)), fabs(delta)), 1e-12)))
        s = bad(c, "$.worker.largest_relative_error_growth.relative_root_mean_square_error_delta",
                "expected %.17g, recomputed from the boundaries", delta);
    }
  }
  free(rel);
  if (s != FDL_OK) return s;
  if ((s = check_observed(c, "$.worker.observed_next_tokens",
                          json_object_get(w, "observed_next_tokens"))) != FDL_OK)
    return s;
  static const char *const shas[] = {"final_logits_sha256", "hf_layer_last_rows_sha256",
                                     "input_token_ids_sha256"};
  for (size_t k = 0; k < 3; k++) {
    snprintf(p, sizeof p, "$.worker.%s", shas[k]);
    if ((s = want_sha(c, p, json_object_get(w, shas[k]))) != FDL_OK) return s;
  }
  if (!nonempty_str(json_object_get(w, "request_id")))
    return bad(c, "$.worker.request_id", "expected a nonempty string");
  return FDL_OK;
}

static fdl_status check_layer_v1(const ctx *c, const json_t *doc) {
  const json_t *w = json_object_get(doc, "worker");
  if (!json_is_object(w)) return bad(c, "$.worker", "expected an object");
  if (!str_eq(json_object_get(w, "schema"), "kiln.rocm-hf-layer-attribution.v1"))
    return bad(c, "$.worker.schema", "expected \"kiln.rocm-hf-layer-attribution.v1\"");
  return check_layer_worker(c, w, false);
}

static fdl_status check_oracle_v1(const ctx *c, const json_t *doc) {
  const json_t *o = json_object_get(doc, "oracle"), *v = json_object_get(doc, "verdict");
  if (!json_is_object(o)) return bad(c, "$.oracle", "expected an object");
  fdl_status s = CLOSED(c, "$.verdict", v, "argmax_candidate", "argmax_token_id",
                        "candidate_attribution_complete");
  if (s != FDL_OK) return s;
  const json_t *am = json_object_get(o, "argmax");
  if ((s = want_token(c, "$.oracle.argmax", am)) != FDL_OK) return s;
  if (!json_equal(json_object_get(v, "argmax_token_id"), am))
    return bad(c, "$.verdict.argmax_token_id", "expected oracle.argmax %lld",
               (long long)json_integer_value(am));
  const json_t *ct = json_object_get(o, "candidate_tokens");
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return bad(c, "$.oracle.candidate_tokens", "expected 2 candidates");
  const char *winner = NULL;
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    if (json_integer_value(json_object_get(e, "token_id")) == json_integer_value(am))
      winner = json_string_value(json_object_get(e, "engine"));
  }
  const json_t *ac = json_object_get(v, "argmax_candidate");
  if (winner ? !str_eq(ac, winner) : !json_is_null(ac))
    return bad(c, "$.verdict.argmax_candidate",
               "expected %s%s%s (the candidate whose token is the oracle argmax)",
               winner ? "\"" : "", winner ? winner : "null", winner ? "\"" : "");
  if (!json_is_boolean(json_object_get(v, "candidate_attribution_complete")))
    return bad(c, "$.verdict.candidate_attribution_complete", "expected a bool");
  if ((s = want_sha(c, "$.oracle.logits_sha256", json_object_get(o, "logits_sha256"))) != FDL_OK)
    return s;
  if ((s = want_sha(c, "$.oracle.request_sha256", json_object_get(o, "request_sha256"))) != FDL_OK)
    return s;
  const json_t *rs = json_object_get(json_object_get(doc, "request"), "sha256");
  if (!json_equal(rs, json_object_get(o, "request_sha256")))
    return bad(c, "$.oracle.request_sha256", "expected request.sha256");
  return FDL_OK;
}

/* ---- fidelis.path-attribution.v1 (docs/ATTRIBUTION.md) --------------------------------------- */

/* Kiln's graph-replay counters (§12): ints (not bools) but `enabled`, which is true. */
static fdl_status check_graph(const ctx *c, const char *path, const json_t *g) {
  static const char *const keys[] = {
      "cache_admission_successes", "capture_attempts", "capture_failures",
      "capture_successes",         "fallbacks",        "replay_attempts",
      "replay_failures",           "replay_successes"};
  fdl_status s = CLOSED(c, path, g, "enabled", "cache_admission_successes", "capture_attempts",
                        "capture_failures", "capture_successes", "fallbacks", "replay_attempts",
                        "replay_failures", "replay_successes");
  if (s != FDL_OK) return s;
  char p[128];
  json_int_t v[8];
  for (size_t i = 0; i < 8; i++) {
    const json_t *x = json_object_get(g, keys[i]);
    snprintf(p, sizeof p, "%s.%s", path, keys[i]);
    if (!is_int(x) || json_integer_value(x) < 0) return bad(c, p, "expected an integer >= 0");
    v[i] = json_integer_value(x);
  }
  snprintf(p, sizeof p, "%s.enabled", path);
  if (!json_is_true(json_object_get(g, "enabled"))) return bad(c, p, "expected true");
  if (v[3] < 1) return bad(c, path, "capture_successes is %lld, expected >= 1", (long long)v[3]);
  if (v[0] < 1)
    return bad(c, path, "cache_admission_successes is %lld, expected >= 1", (long long)v[0]);
  if (v[7] < 7 || v[5] < 7)
    return bad(c, path,
               "replay_successes %lld / replay_attempts %lld, expected >= 7 each (1 priming "
               "replay and 3 + 3 exact replays)",
               (long long)v[7], (long long)v[5]);
  if (v[1] < v[3] + v[2])
    return bad(c, path,
               "capture_attempts %lld, expected >= capture_successes + capture_failures (%lld)",
               (long long)v[1], (long long)(v[3] + v[2]));
  if (v[5] != v[7] + v[6])
    return bad(c, path,
               "replay_attempts %lld, expected == replay_successes + replay_failures (%lld)",
               (long long)v[5], (long long)(v[7] + v[6]));
  if (v[2] || v[6] || v[4])
    return bad(c, path,
               "capture_failures %lld, replay_failures %lld, fallbacks %lld: expected 0 each",
               (long long)v[2], (long long)v[6], (long long)v[4]);
  return FDL_OK;
}

static fdl_status check_fa_reference(const ctx *c, const json_t *ref, const json_t *cids,
                                     json_int_t *argmax, json_int_t *vocab) {
  fdl_status s = CLOSED(c, "$.reference", ref, "argmax", "candidate_tokens", "logits_sha256",
                        "verdict", "vocab_size");
  if (s != FDL_OK) return s;
  const json_t *vs = json_object_get(ref, "vocab_size"), *am = json_object_get(ref, "argmax");
  if (!is_int(vs) || json_integer_value(vs) < 2 ||
      json_integer_value(vs) > (json_int_t)FDL_KILN_VOCAB_SIZE)
    return bad(c, "$.reference.vocab_size", "expected an integer in 2..248320");
  *vocab = json_integer_value(vs);
  if (!is_int(am) || json_integer_value(am) < 0 || json_integer_value(am) >= *vocab)
    return bad(c, "$.reference.argmax", "expected a token id below vocab_size %lld",
               (long long)*vocab);
  *argmax = json_integer_value(am);
  if ((s = want_sha(c, "$.reference.logits_sha256", json_object_get(ref, "logits_sha256"))))
    return s;
  const json_t *ct = json_object_get(ref, "candidate_tokens");
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return bad(c, "$.reference.candidate_tokens", "expected exactly 2 candidates");
  static const char *const engines[2] = {"kiln", "vllm"};
  double lg[2];
  char p[96];
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    snprintf(p, sizeof p, "$.reference.candidate_tokens[%zu]", i);
    if ((s = CLOSED(c, p, e, "engine", "logit", "rank", "token_id")) != FDL_OK) return s;
    if (!str_eq(json_object_get(e, "engine"), engines[i]))
      return bad(c, p, "engine: expected \"%s\" (request order kiln, vllm)", engines[i]);
    if (!finite_num(json_object_get(e, "logit")))
      return bad(c, p, "logit: expected a finite number");
    lg[i] = num(json_object_get(e, "logit"));
    const json_t *rk = json_object_get(e, "rank");
    if (!is_int(rk) || json_integer_value(rk) < 1 || json_integer_value(rk) > *vocab)
      return bad(c, p, "rank: expected an integer in 1..vocab_size");
    if (!json_equal(json_object_get(e, "token_id"), json_array_get(cids, i)))
      return bad(c, p, "token_id: expected $.request.candidate_token_ids[%zu]", i);
  }
  const json_t *v = json_object_get(ref, "verdict");
  if ((s = CLOSED(c, "$.reference.verdict", v, "argmax_candidate", "margin",
                  "preferred_candidate")) != FDL_OK)
    return s;
  json_int_t k0 = json_integer_value(json_array_get(cids, 0)),
             k1 = json_integer_value(json_array_get(cids, 1));
  const char *arg = k0 == *argmax ? "kiln" : k1 == *argmax ? "vllm" : "neither";
  const char *pref = lg[0] > lg[1] ? "kiln" : lg[1] > lg[0] ? "vllm" : "tie";
  double margin = lg[0] > lg[1] ? lg[0] - lg[1] : lg[1] - lg[0];
  if (!str_eq(json_object_get(v, "argmax_candidate"), arg))
    return bad(c, "$.reference.verdict.argmax_candidate",
               "expected \"%s\" (the candidate whose id is the reference argmax %lld)", arg,
               (long long)*argmax);
  if (!str_eq(json_object_get(v, "preferred_candidate"), pref))
    return bad(c, "$.reference.verdict.preferred_candidate",
               "expected \"%s\" (the candidate with the larger reference logit)", pref);
  const json_t *m = json_object_get(v, "margin");
  if (!json_is_real(m) || json_real_value(m) != margin)
    return bad(c, "$.reference.verdict.margin",
               "expected %.17g, the difference of the two candidate logits", margin);
  return FDL_OK;
}

/* One path; *diverges: full, its comparison argmax differs from the reference argmax; greedy,
 * its final observed token does. */
static fdl_status check_fa_path(const ctx *c, size_t i, const json_t *e, const json_t *cids,
                                json_int_t argmax, bool *diverges) {
  char p[64], q[160];
  snprintf(p, sizeof p, "$.paths[%zu]", i);
  if (!json_is_object(e)) return bad(c, p, "expected an object");
  const json_t *kind = json_object_get(e, "kind");
  bool full = str_eq(kind, "full");
  if (!full && !str_eq(kind, "greedy")) {
    snprintf(q, sizeof q, "%s.kind", p);
    return bad(c, q, "expected \"full\" or \"greedy\"");
  }
  fdl_status s =
      full ? CLOSED(c, p, e, "argmax_equal", "comparison", "kind", "name", "observed_tokens")
           : CLOSED(c, p, e, "final_token_matches_reference", "kind", "name", "observed_tokens");
  if (s != FDL_OK) return s;
  snprintf(q, sizeof q, "%s.name", p);
  if (!nonempty_str(json_object_get(e, "name"))) return bad(c, q, "expected a nonempty string");
  const json_t *obs = json_object_get(e, "observed_tokens");
  snprintf(q, sizeof q, "%s.observed_tokens", p);
  if ((s = want_tokens(c, q, obs, 1, FDL_KILN_MAX_INPUT)) != FDL_OK) return s;
  json_int_t last = json_integer_value(json_array_get(obs, json_array_size(obs) - 1));
  if (full) {
    const json_t *cmp = json_object_get(e, "comparison");
    snprintf(q, sizeof q, "%s.comparison", p);
    if ((s = check_comparison(c, q, cmp, argmax)) != FDL_OK) return s;
    const json_t *ct = json_object_get(cmp, "candidate_tokens");
    for (size_t j = 0; j < 2; j++)
      if (!json_equal(json_object_get(json_array_get(ct, j), "token_id"),
                      json_array_get(cids, j))) {
        snprintf(q, sizeof q, "%s.comparison.candidate_tokens[%zu].token_id", p, j);
        return bad(c, q, "expected $.request.candidate_token_ids[%zu]", j);
      }
    json_int_t am = json_integer_value(json_object_get(cmp, "argmax"));
    if (am != last) {
      snprintf(q, sizeof q, "%s.observed_tokens", p);
      return bad(c, q, "last token %lld, expected the comparison argmax %lld", (long long)last,
                 (long long)am);
    }
    const json_t *ae = json_object_get(e, "argmax_equal");
    snprintf(q, sizeof q, "%s.argmax_equal", p);
    if (!json_equal(ae, json_object_get(cmp, "argmax_equal")))
      return bad(c, q, "expected a bool equal to comparison.argmax_equal");
    *diverges = !json_is_true(ae);
  } else {
    const json_t *fm = json_object_get(e, "final_token_matches_reference");
    snprintf(q, sizeof q, "%s.final_token_matches_reference", p);
    if (!json_is_boolean(fm)) return bad(c, q, "expected a bool");
    if (json_is_true(fm) != (last == argmax))
      return bad(c, q, "is %s, but the final token %lld %s the reference argmax %lld",
                 json_is_true(fm) ? "true" : "false", (long long)last,
                 last == argmax ? "==" : "!=", (long long)argmax);
    *diverges = !json_is_true(fm);
  }
  return FDL_OK;
}

static fdl_status check_fidelis_attr(const ctx *c, const json_t *doc) {
  bool has_counters = json_object_get(doc, "counters") != NULL;
  fdl_status s = has_counters ? CLOSED(c, "$", doc, "attribution", "counters", "paths",
                                       "record_sha256", "reference", "request", "schema")
                              : CLOSED(c, "$", doc, "attribution", "paths", "record_sha256",
                                       "reference", "request", "schema");
  if (s != FDL_OK) return s;
  const json_t *rq = json_object_get(doc, "request");
  if ((s = CLOSED(c, "$.request", rq, "candidate_token_ids", "id", "input_token_ids_sha256",
                  "sha256")) != FDL_OK)
    return s;
  if (!nonempty_str(json_object_get(rq, "id")))
    return bad(c, "$.request.id", "expected a nonempty string");
  if ((s = want_sha(c, "$.request.sha256", json_object_get(rq, "sha256"))) ||
      (s = want_sha(c, "$.request.input_token_ids_sha256",
                    json_object_get(rq, "input_token_ids_sha256"))))
    return s;
  const json_t *cids = json_object_get(rq, "candidate_token_ids");
  if ((s = want_tokens(c, "$.request.candidate_token_ids", cids, 2, 2)) != FDL_OK) return s;
  if (json_equal(json_array_get(cids, 0), json_array_get(cids, 1)))
    return bad(c, "$.request.candidate_token_ids", "expected two distinct tokens");
  json_int_t argmax = 0, vocab = 0;
  if ((s = check_fa_reference(c, json_object_get(doc, "reference"), cids, &argmax, &vocab)))
    return s;
  const json_t *paths = json_object_get(doc, "paths");
  size_t n = json_array_size(paths);
  if (!json_is_array(paths) || n == 0 || n > FDL_KILN_MAX_PATHS)
    return bad(c, "$.paths", "expected an array of 1..%u paths", FDL_KILN_MAX_PATHS);
  const char *first = NULL;
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(paths, i);
    bool div = false;
    if ((s = check_fa_path(c, i, e, cids, argmax, &div)) != FDL_OK) return s;
    const char *name = json_string_value(json_object_get(e, "name"));
    for (size_t j = 0; j < i; j++)
      if (strcmp(name, json_string_value(json_object_get(json_array_get(paths, j), "name"))) == 0) {
        char p[96];
        snprintf(p, sizeof p, "$.paths[%zu].name", i);
        return bad(c, p, "\"%s\" repeats $.paths[%zu].name, expected unique names", name, j);
      }
    if (div && !first) first = name;
  }
  if (has_counters && (s = check_graph(c, "$.counters", json_object_get(doc, "counters"))))
    return s;
  const json_t *at = json_object_get(doc, "attribution");
  if ((s = CLOSED(c, "$.attribution", at, "label", "path")) != FDL_OK) return s;
  const char *label = first ? FDL_KILN_LABEL_PATH : FDL_KILN_LABEL_NONE;
  if (!str_eq(json_object_get(at, "label"), label))
    return bad(c, "$.attribution.label", "expected \"%s\" (recomputed from the paths)", label);
  const json_t *ap = json_object_get(at, "path");
  if (first ? !str_eq(ap, first) : !json_is_null(ap))
    return bad(c, "$.attribution.path", "expected %s%s%s (the first path that diverges)",
               first ? "\"" : "", first ? first : "null", first ? "\"" : "");
  return FDL_OK;
}

/* ---- v2 results (§12, §13, §14) -------------------------------------------------------------- */

const fdl_kiln_v2_path fdl_kiln_v2_paths[4] = {
    {"eager_full", "eager_full_logits", true},
    {"graph_full", "hip_graph_full_logits", true},
    {"eager_greedy", "eager_greedy_selection", false},
    {"graph_greedy", "hip_graph_greedy_selection", false},
};

static fdl_status want_positive(const ctx *c, const char *path, const json_t *v) {
  return finite_num(v) && num(v) > 0 ? FDL_OK : bad(c, path, "expected a finite number > 0");
}

static fdl_status want_rel_path(const ctx *c, const char *path, const json_t *v) {
  /* §14: Kiln's _path_from_repository: nonempty, no NUL, not absolute, no ".." component. */
  const char *t = json_string_value(v);
  if (t && json_string_length(v) && strlen(t) == json_string_length(v) && t[0] != '/' &&
      !has_dotdot(t))
    return FDL_OK;
  return bad(c, path, "expected a nonempty repo-relative path, not absolute, without \"..\"");
}

/* An object of exactly the given keys, each a canonical digest. */
static fdl_status digests(const ctx *c, const char *path, const json_t *o, const char *const *keys,
                          size_t n) {
  fdl_status s = closed(c, path, o, keys, n);
  char p[128];
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    snprintf(p, sizeof p, "%s.%s", path, keys[i]);
    s = want_sha(c, p, json_object_get(o, keys[i]));
  }
  return s;
}
#define DIGESTS(c, path, obj, ...)                                                                 \
  digests((c), (path), (obj), (const char *const[]){__VA_ARGS__},                                  \
          sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* processEvidence (§10): {elapsed_seconds >= 0, schema, timeout_seconds > 0, worker_exit_code 0}.
 */
static fdl_status check_process(const ctx *c, const char *path, const json_t *pr) {
  fdl_status s =
      CLOSED(c, path, pr, "elapsed_seconds", "schema", "timeout_seconds", "worker_exit_code");
  if (s != FDL_OK) return s;
  char p[128];
  const json_t *el = json_object_get(pr, "elapsed_seconds");
  snprintf(p, sizeof p, "%s.elapsed_seconds", path);
  if (!finite_num(el) || num(el) < 0) return bad(c, p, "expected a finite number >= 0");
  snprintf(p, sizeof p, "%s.schema", path);
  if (!str_eq(json_object_get(pr, "schema"), "kiln.hf-process-containment.v1"))
    return bad(c, p, "expected \"kiln.hf-process-containment.v1\"");
  snprintf(p, sizeof p, "%s.timeout_seconds", path);
  if ((s = want_positive(c, p, json_object_get(pr, "timeout_seconds"))) != FDL_OK) return s;
  const json_t *x = json_object_get(pr, "worker_exit_code");
  snprintf(p, sizeof p, "%s.worker_exit_code", path);
  if (!is_int(x) || json_integer_value(x) != 0) return bad(c, p, "expected 0");
  return FDL_OK;
}

/* A contained arm: {host_available_before_gib >= 1, network "forbidden", `proc` (the process
 * evidence: "process", or the oracle's "service")}. */
static fdl_status check_arm(const ctx *c, const char *path, const json_t *a, const char *proc) {
  fdl_status s =
      closed(c, path, a, (const char *const[]){"host_available_before_gib", "network", proc}, 3);
  if (s != FDL_OK) return s;
  char p[128];
  const json_t *g = json_object_get(a, "host_available_before_gib");
  snprintf(p, sizeof p, "%s.host_available_before_gib", path);
  if (!is_int(g) || json_integer_value(g) < 1) return bad(c, p, "expected an integer >= 1");
  snprintf(p, sizeof p, "%s.network", path);
  if (!str_eq(json_object_get(a, "network"), "forbidden"))
    return bad(c, p, "expected \"forbidden\"");
  snprintf(p, sizeof p, "%s.%s", path, proc);
  return check_process(c, p, json_object_get(a, proc));
}

/* What every v2 result has: duration, created_at_utc, source, model_fingerprint. */
static fdl_status check_v2_common(const ctx *c, const json_t *doc) {
  fdl_status s = want_positive(c, "$.duration_seconds", json_object_get(doc, "duration_seconds"));
  if (s != FDL_OK) return s;
  if (!json_is_string(json_object_get(doc, "created_at_utc")))
    return bad(c, "$.created_at_utc", "expected a UTC time string");
  const json_t *src = json_object_get(doc, "source");
  if ((s = CLOSED(c, "$.source", src, "commit", "origin_main", "tree")) != FDL_OK) return s;
  static const char *const git[] = {"commit", "origin_main", "tree"};
  for (size_t i = 0; i < 3; i++) {
    const json_t *v = json_object_get(src, git[i]);
    if (!json_is_string(v) || json_string_length(v) != 40 ||
        !fdl_hex_lower(json_string_value(v), 40)) {
      char p[64];
      snprintf(p, sizeof p, "$.source.%s", git[i]);
      return bad(c, p, "expected 40 lowercase hex digits");
    }
  }
  if (!json_equal(json_object_get(src, "commit"), json_object_get(src, "origin_main")))
    return bad(c, "$.source.origin_main", "expected equal to $.source.commit");
  const json_t *fp = json_object_get(doc, "model_fingerprint");
  if ((s = CLOSED(c, "$.model_fingerprint", fp, "implementation_sha256", "process",
                  "python_sha256")) != FDL_OK ||
      (s = want_sha(c, "$.model_fingerprint.implementation_sha256",
                    json_object_get(fp, "implementation_sha256"))) != FDL_OK ||
      (s = want_sha(c, "$.model_fingerprint.python_sha256",
                    json_object_get(fp, "python_sha256"))) != FDL_OK)
    return s;
  return check_process(c, "$.model_fingerprint.process", json_object_get(fp, "process"));
}

/* The path and layer results' binary (both name the same example binary) and request. */
static fdl_status check_binary_request(const ctx *c, const json_t *doc) {
  static const char binary_path[] = "target/release/examples/rocm_hf_path_attribution";
  fdl_status s;
  const json_t *bin = json_object_get(doc, "binary");
  if ((s = CLOSED(c, "$.binary", bin, "build_duration_seconds", "build_environment_policy", "path",
                  "sha256")) != FDL_OK ||
      (s = want_positive(c, "$.binary.build_duration_seconds",
                         json_object_get(bin, "build_duration_seconds"))) != FDL_OK ||
      (s = want_sha(c, "$.binary.sha256", json_object_get(bin, "sha256"))) != FDL_OK)
    return s;
  if (!str_eq(json_object_get(bin, "build_environment_policy"), "closed-source-build-v1"))
    return bad(c, "$.binary.build_environment_policy", "expected \"closed-source-build-v1\"");
  if (!str_eq(json_object_get(bin, "path"), binary_path))
    return bad(c, "$.binary.path", "expected \"%s\"", binary_path);
  const json_t *rq = json_object_get(doc, "request");
  if ((s = CLOSED(c, "$.request", rq, "path", "sha256")) != FDL_OK ||
      (s = want_rel_path(c, "$.request.path", json_object_get(rq, "path"))) != FDL_OK ||
      (s = want_sha(c, "$.request.sha256", json_object_get(rq, "sha256"))) != FDL_OK)
    return s;
  return FDL_OK;
}

static fdl_status check_path_v2(const ctx *c, const json_t *doc) {
  fdl_status s =
      CLOSED(c, "$", doc, "schema", "result_sha256", "created_at_utc", "duration_seconds", "source",
             "binary", "implementation", "request", "model_identity", "model_fingerprint",
             "oracle_reference", "containment", "worker");
  if (s != FDL_OK) return s;
  if ((s = check_v2_common(c, doc)) != FDL_OK || (s = check_binary_request(c, doc)) != FDL_OK)
    return s;
  if ((s = DIGESTS(c, "$.implementation", json_object_get(doc, "implementation"),
                   "guarded_exec_sha256", "process_runner_sha256", "runner_sha256")) != FDL_OK)
    return s;
  const json_t *orf = json_object_get(doc, "oracle_reference");
  if ((s = CLOSED(c, "$.oracle_reference", orf, "bytes", "oracle_result_path",
                  "oracle_result_sha256", "raw_location", "raw_sha256")) != FDL_OK)
    return s;
  const json_t *by = json_object_get(orf, "bytes");
  if (!is_int(by) || json_integer_value(by) < 1)
    return bad(c, "$.oracle_reference.bytes", "expected an integer > 0");
  if ((s = want_rel_path(c, "$.oracle_reference.oracle_result_path",
                         json_object_get(orf, "oracle_result_path"))) != FDL_OK ||
      (s = want_sha(c, "$.oracle_reference.oracle_result_sha256",
                    json_object_get(orf, "oracle_result_sha256"))) != FDL_OK ||
      (s = want_sha(c, "$.oracle_reference.raw_sha256", json_object_get(orf, "raw_sha256"))) !=
          FDL_OK)
    return s;
  if (!str_eq(json_object_get(orf, "raw_location"), "local_ignored"))
    return bad(c, "$.oracle_reference.raw_location", "expected \"local_ignored\"");
  if ((s = check_arm(c, "$.containment", json_object_get(doc, "containment"), "process")) != FDL_OK)
    return s;
  const json_t *w = json_object_get(doc, "worker");
  if ((s = CLOSED(c, "$.worker", w, "schema", "attribution", "eager_full", "eager_greedy", "graph",
                  "graph_full", "graph_greedy", "hf_argmax", "input_token_count",
                  "input_token_ids_sha256", "kernel_policy", "request_id")) != FDL_OK)
    return s;
  if (!str_eq(json_object_get(w, "schema"), "kiln.rocm-hf-path-attribution.v2"))
    return bad(c, "$.worker.schema", "expected \"kiln.rocm-hf-path-attribution.v2\"");
  const json_t *hf = json_object_get(w, "hf_argmax");
  if ((s = want_token(c, "$.worker.hf_argmax", hf)) != FDL_OK) return s;
  if ((s = check_worker_paths(c, w, json_integer_value(hf))) != FDL_OK) return s;
  if ((s = check_graph(c, "$.worker.graph", json_object_get(w, "graph"))) != FDL_OK) return s;
  const char *label = FDL_KILN_LABEL_NONE;
  for (size_t i = 0; i < 4; i++) {
    const json_t *e = json_object_get(w, fdl_kiln_v2_paths[i].name);
    bool ok = fdl_kiln_v2_paths[i].full
                  ? json_is_true(json_object_get(json_object_get(e, "comparison"), "argmax_equal"))
                  : json_is_true(json_object_get(e, "final_token_matches_reference"));
    if (!ok) {
      label = fdl_kiln_v2_paths[i].label;
      break;
    }
  }
  if (!str_eq(json_object_get(w, "attribution"), label))
    return bad(c, "$.worker.attribution",
               "expected \"%s\" (recomputed from the paths by the precedence of §12)", label);
  if (!str_eq(json_object_get(w, "kernel_policy"), "qualified"))
    return bad(c, "$.worker.kernel_policy", "expected \"qualified\"");
  const json_t *cnt = json_object_get(w, "input_token_count");
  if (!is_int(cnt) || json_integer_value(cnt) != 166)
    return bad(c, "$.worker.input_token_count", "expected 166 (prompt + continuation)");
  if ((s = want_sha(c, "$.worker.input_token_ids_sha256",
                    json_object_get(w, "input_token_ids_sha256"))) != FDL_OK)
    return s;
  if (!nonempty_str(json_object_get(w, "request_id")))
    return bad(c, "$.worker.request_id", "expected a nonempty string");
  return FDL_OK;
}

/* A string member equal to want; names path.key. */
static fdl_status want_const_str(const ctx *c, const char *path, const json_t *o, const char *key,
                                 const char *want) {
  if (str_eq(json_object_get(o, key), want)) return FDL_OK;
  char p[128];
  snprintf(p, sizeof p, "%s.%s", path, key);
  return bad(c, p, "expected \"%s\"", want);
}

/* An integer member in lo..hi. */
static fdl_status want_int_in(const ctx *c, const char *path, const json_t *o, const char *key,
                              json_int_t lo, json_int_t hi) {
  const json_t *v = json_object_get(o, key);
  if (is_int(v) && json_integer_value(v) >= lo && json_integer_value(v) <= hi) return FDL_OK;
  char p[128];
  snprintf(p, sizeof p, "%s.%s", path, key);
  if (lo == hi) return bad(c, p, "expected %lld", (long long)lo);
  if (hi == INT64_MAX) return bad(c, p, "expected an integer >= %lld", (long long)lo);
  return bad(c, p, "expected an integer in %lld..%lld", (long long)lo, (long long)hi);
}

/* HF evidence (§8; layer mode adds the four boundary keys, §14.3): closed keys, the pinned
 * constants, the top-10 and candidate invariants, the margin recomputed. */
static fdl_status check_hf_evidence(const ctx *c, const char *path, const json_t *ev, bool layer) {
  static const char *const keys[] = {
      "argmax", "argmax_text", "attention_implementation", "candidate_tokens",
      "configuration_sha256", "deterministic_algorithms", "device", "dtype", "duration_seconds",
      "input_token_count", "input_token_ids_sha256", "linear_attention_implementation",
      "logits_sha256", "memory_high_events", "memory_max_events", "memory_oom_events",
      "memory_oom_kill_events", "memory_peak_bytes", "memory_swap_bytes", "modeling_sha256",
      "output_bytes", "request_id", "request_sha256", "tf32_allowed", "top_logit_margin",
      "top_tokens", "torch_commit", "torch_hip_version", "torch_version", "transformers_version",
      "vocab",
      /* layer mode */
      "boundary_count", "boundary_names", "hidden_size", "layer_last_rows_sha256"};
  fdl_status s = closed(c, path, ev, keys, layer ? 35 : 31);
  if (s != FDL_OK) return s;
  char p[160];
  static const char *const consts[][2] = {
      {"attention_implementation", "eager"},
      {"dtype", "bfloat16"},
      {"linear_attention_implementation", "transformers_torch_fallback"},
      {"torch_version", "2.13.0+rocm7.2"},
      {"transformers_version", "5.13.1"},
      {"configuration_sha256",
       "sha256:3c01b3cdcff8d77cbafac9841bc48c41e5a5b38637231f1bde3d843cd198dbaf"},
      {"modeling_sha256",
       "sha256:cf085792cb59e5bdf9b88a3d20bd353892289d054662a9c2b662221b97caefba"},
      {"torch_commit", "cf30153c4c131c8164ee7798e5022d810682e2cb"}};
  for (size_t i = 0; i < sizeof consts / sizeof consts[0]; i++)
    if ((s = want_const_str(c, path, ev, consts[i][0], consts[i][1])) != FDL_OK) return s;
  snprintf(p, sizeof p, "%s.deterministic_algorithms", path);
  if (!json_is_true(json_object_get(ev, "deterministic_algorithms")))
    return bad(c, p, "expected true");
  snprintf(p, sizeof p, "%s.tf32_allowed", path);
  if (!json_is_false(json_object_get(ev, "tf32_allowed"))) return bad(c, p, "expected false");
  if ((s = want_int_in(c, path, ev, "vocab", FDL_KILN_VOCAB_SIZE, FDL_KILN_VOCAB_SIZE)) ||
      (s = want_int_in(c, path, ev, "output_bytes", 1, INT64_MAX)) ||
      (s = want_int_in(c, path, ev, "memory_peak_bytes", 1, INT64_MAX)) ||
      (s = want_int_in(c, path, ev, "input_token_count", layer ? 166 : 1,
                       layer ? 166 : FDL_KILN_MAX_INPUT)))
    return s;
  /* §14.3 wants the memory counters 0 in a layer result; §9 leaves them to the oracle's runner. */
  static const char *const mem[] = {"memory_high_events", "memory_max_events", "memory_oom_events",
                                    "memory_oom_kill_events", "memory_swap_bytes"};
  for (size_t i = 0; i < 5; i++)
    if ((s = want_int_in(c, path, ev, mem[i], 0, layer ? 0 : INT64_MAX)) != FDL_OK) return s;
  static const char *const shas[] = {"input_token_ids_sha256", "logits_sha256", "request_sha256",
                                     "layer_last_rows_sha256"};
  for (size_t i = 0; i < (layer ? 4u : 3u); i++) {
    snprintf(p, sizeof p, "%s.%s", path, shas[i]);
    if ((s = want_sha(c, p, json_object_get(ev, shas[i]))) != FDL_OK) return s;
  }
  static const char *const strs[] = {"device", "request_id", "torch_hip_version", "argmax_text"};
  for (size_t i = 0; i < 4; i++)
    if (!nonempty_str(json_object_get(ev, strs[i]))) {
      snprintf(p, sizeof p, "%s.%s", path, strs[i]);
      return bad(c, p, "expected a nonempty string");
    }
  snprintf(p, sizeof p, "%s.duration_seconds", path);
  if ((s = want_positive(c, p, json_object_get(ev, "duration_seconds"))) != FDL_OK) return s;
  const json_t *am = json_object_get(ev, "argmax");
  snprintf(p, sizeof p, "%s.argmax", path);
  if ((s = want_token(c, p, am)) != FDL_OK) return s;
  const json_t *top = json_object_get(ev, "top_tokens");
  snprintf(p, sizeof p, "%s.top_tokens", path);
  if (!json_is_array(top) || json_array_size(top) != 10)
    return bad(c, p, "expected exactly 10 entries");
  for (size_t i = 0; i < 10; i++) {
    const json_t *e = json_array_get(top, i);
    snprintf(p, sizeof p, "%s.top_tokens[%zu]", path, i);
    if ((s = CLOSED(c, p, e, "logit", "text", "token_id")) != FDL_OK) return s;
    if (!finite_num(json_object_get(e, "logit")))
      return bad(c, p, "logit: expected a finite number");
    if (!json_is_string(json_object_get(e, "text"))) return bad(c, p, "text: expected a string");
    if (!fdl_kiln_token_ok(json_object_get(e, "token_id")))
      return bad(c, p, "token_id: expected a token id");
    if (i && num(json_object_get(e, "logit")) >
                 num(json_object_get(json_array_get(top, i - 1), "logit")))
      return bad(c, p, "logit: expected no larger than top_tokens[%zu]'s (sorted)", i - 1);
    for (size_t j = 0; j < i; j++)
      if (json_equal(json_object_get(e, "token_id"),
                     json_object_get(json_array_get(top, j), "token_id")))
        return bad(c, p, "token_id: repeats top_tokens[%zu], expected 10 distinct ids", j);
  }
  const json_t *t0 = json_array_get(top, 0);
  snprintf(p, sizeof p, "%s.top_tokens[0].token_id", path);
  if (!json_equal(json_object_get(t0, "token_id"), am)) return bad(c, p, "expected the argmax");
  snprintf(p, sizeof p, "%s.argmax_text", path);
  if (!json_equal(json_object_get(t0, "text"), json_object_get(ev, "argmax_text")))
    return bad(c, p, "expected top_tokens[0].text");
  double margin =
      num(json_object_get(t0, "logit")) - num(json_object_get(json_array_get(top, 1), "logit"));
  const json_t *mg = json_object_get(ev, "top_logit_margin");
  snprintf(p, sizeof p, "%s.top_logit_margin", path);
  if (!(margin > 0)) return bad(c, p, "the top two logits tie; expected a margin > 0");
  if (!finite_num(mg) || num(mg) != margin)
    return bad(c, p, "expected %.17g (top_tokens[0].logit - top_tokens[1].logit)", margin);
  const json_t *ct = json_object_get(ev, "candidate_tokens");
  snprintf(p, sizeof p, "%s.candidate_tokens", path);
  if (!json_is_array(ct) || json_array_size(ct) != 2)
    return bad(c, p, "expected exactly 2 candidates");
  static const char *const engines[2] = {"kiln", "vllm"};
  for (size_t i = 0; i < 2; i++) {
    const json_t *e = json_array_get(ct, i);
    snprintf(p, sizeof p, "%s.candidate_tokens[%zu]", path, i);
    if ((s = CLOSED(c, p, e, "engine", "logit", "rank", "text", "token_id")) != FDL_OK) return s;
    if (!str_eq(json_object_get(e, "engine"), engines[i]))
      return bad(c, p, "engine: expected \"%s\" (request order kiln, vllm)", engines[i]);
    if (!finite_num(json_object_get(e, "logit")))
      return bad(c, p, "logit: expected a finite number");
    if (!json_is_string(json_object_get(e, "text"))) return bad(c, p, "text: expected a string");
    if (!fdl_kiln_token_ok(json_object_get(e, "token_id")))
      return bad(c, p, "token_id: expected a token id");
    const json_t *rk = json_object_get(e, "rank");
    if (!is_int(rk) || json_integer_value(rk) < 1 ||
        json_integer_value(rk) > (json_int_t)FDL_KILN_VOCAB_SIZE)
      return bad(c, p, "rank: expected an integer in 1..248320");
  }
  if (json_equal(json_object_get(json_array_get(ct, 0), "token_id"),
                 json_object_get(json_array_get(ct, 1), "token_id")))
    return bad(c, p, "expected two distinct token ids");
  if (!layer) return FDL_OK;
  if ((s = want_int_in(c, path, ev, "boundary_count", 34, 34)) ||
      (s = want_int_in(c, path, ev, "hidden_size", 2560, 2560)))
    return s;
  const json_t *names = json_object_get(ev, "boundary_names");
  snprintf(p, sizeof p, "%s.boundary_names", path);
  if (!json_is_array(names) || json_array_size(names) != 34)
    return bad(c, p, "expected the 34 boundary names");
  for (size_t i = 0; i < 34; i++) {
    char want[64];
    boundary_name(i, want, sizeof want);
    if (!str_eq(json_array_get(names, i), want)) {
      snprintf(p, sizeof p, "%s.boundary_names[%zu]", path, i);
      return bad(c, p, "expected \"%s\"", want);
    }
  }
  return FDL_OK;
}

static const char *const KERNEL_POLICIES[] = {"qualified",
                                              "portable_fallback",
                                              "model_fallback",
                                              "tensor_fallback",
                                              "fused_norm_mlp_fallback",
                                              "fused_norm_mlp_only",
                                              "fused_rmsnorm_fallback",
                                              "fused_mlp_silu_mul_fallback",
                                              "fused_mlp_gate_up_prefill_fallback",
                                              "gdn_fallback",
                                              "non_gdn_fallback",
                                              "split_q_gate_fallback",
                                              "split_q_gate_only"};

static fdl_status check_layer_v2(const ctx *c, const json_t *doc) {
  fdl_status s =
      CLOSED(c, "$", doc, "schema", "result_sha256", "created_at_utc", "duration_seconds", "source",
             "binary", "implementation", "request", "model_identity", "model_fingerprint",
             "reference", "containment", "worker");
  if (s != FDL_OK) return s;
  if ((s = check_v2_common(c, doc)) != FDL_OK || (s = check_binary_request(c, doc)) != FDL_OK)
    return s;
  const json_t *im = json_object_get(doc, "implementation");
  if ((s = DIGESTS(c, "$.implementation", im, "guarded_exec_sha256", "hf_worker_sha256",
                   "process_runner_sha256", "python_sha256", "runner_sha256")) != FDL_OK)
    return s;
  if (!json_equal(json_object_get(json_object_get(doc, "model_fingerprint"), "python_sha256"),
                  json_object_get(im, "python_sha256")))
    return bad(c, "$.model_fingerprint.python_sha256", "expected $.implementation.python_sha256");
  const json_t *ct = json_object_get(doc, "containment");
  if ((s = CLOSED(c, "$.containment", ct, "hf", "kiln")) != FDL_OK ||
      (s = check_arm(c, "$.containment.hf", json_object_get(ct, "hf"), "process")) != FDL_OK ||
      (s = check_arm(c, "$.containment.kiln", json_object_get(ct, "kiln"), "process")) != FDL_OK)
    return s;
  const json_t *w = json_object_get(doc, "worker");
  if ((s = CLOSED(c, "$.worker", w, "boundaries", "final_logits_sha256",
                  "hf_layer_last_rows_sha256", "input_token_count", "input_token_ids_sha256",
                  "kernel_policy", "largest_relative_error_growth", "observed_next_tokens",
                  "request_id", "schema")) != FDL_OK)
    return s;
  if ((s = want_const_str(c, "$.worker", w, "schema", "kiln.rocm-hf-layer-attribution.v2")) ||
      (s = check_layer_worker(c, w, true)) ||
      (s = want_int_in(c, "$.worker", w, "input_token_count", 166, 166)))
    return s;
  bool known = false;
  for (size_t i = 0; i < sizeof KERNEL_POLICIES / sizeof KERNEL_POLICIES[0] && !known; i++)
    known = str_eq(json_object_get(w, "kernel_policy"), KERNEL_POLICIES[i]);
  if (!known) return bad(c, "$.worker.kernel_policy", "expected one of §13's kernel profiles");
  const json_t *ref = json_object_get(doc, "reference"), *ev = json_object_get(ref, "evidence");
  if ((s = CLOSED(c, "$.reference", ref, "bytes", "evidence", "location", "sha256")) ||
      (s = want_const_str(c, "$.reference", ref, "location", "local_ignored")) ||
      (s = want_sha(c, "$.reference.sha256", json_object_get(ref, "sha256"))) ||
      (s = check_hf_evidence(c, "$.reference.evidence", ev, true)))
    return s;
  if (!json_equal(json_object_get(ref, "bytes"), json_object_get(ev, "output_bytes")))
    return bad(c, "$.reference.bytes", "expected $.reference.evidence.output_bytes");
  const json_t *rq = json_object_get(doc, "request");
  if (!json_equal(json_object_get(ev, "request_sha256"), json_object_get(rq, "sha256")))
    return bad(c, "$.reference.evidence.request_sha256", "expected $.request.sha256");
  if (!json_equal(json_object_get(ev, "request_id"), json_object_get(w, "request_id")))
    return bad(c, "$.reference.evidence.request_id", "expected $.worker.request_id");
  if (!json_equal(json_object_get(ev, "input_token_ids_sha256"),
                  json_object_get(w, "input_token_ids_sha256")))
    return bad(c, "$.reference.evidence.input_token_ids_sha256",
               "expected $.worker.input_token_ids_sha256");
  if (!json_equal(json_object_get(w, "hf_layer_last_rows_sha256"),
                  json_object_get(ev, "layer_last_rows_sha256")))
    return bad(c, "$.worker.hf_layer_last_rows_sha256",
               "expected $.reference.evidence.layer_last_rows_sha256");
  return FDL_OK;
}

static fdl_status check_oracle_v2(const ctx *c, const json_t *doc) {
  fdl_status s =
      CLOSED(c, "$", doc, "schema", "result_sha256", "created_at_utc", "duration_seconds", "source",
             "implementation", "request", "model_identity", "model_fingerprint", "containment",
             "oracle", "reference_artifact", "verdict");
  if (s != FDL_OK) return s;
  if ((s = check_v2_common(c, doc)) != FDL_OK) return s;
  const json_t *im = json_object_get(doc, "implementation");
  if ((s = DIGESTS(c, "$.implementation", im, "hf_worker_sha256", "process_runner_sha256",
                   "python_sha256")) != FDL_OK)
    return s;
  if (!json_equal(json_object_get(json_object_get(doc, "model_fingerprint"), "python_sha256"),
                  json_object_get(im, "python_sha256")))
    return bad(c, "$.model_fingerprint.python_sha256", "expected $.implementation.python_sha256");
  const json_t *rq = json_object_get(doc, "request");
  if ((s = CLOSED(c, "$.request", rq, "contract_path", "id", "sha256", "source")) ||
      (s = want_rel_path(c, "$.request.contract_path", json_object_get(rq, "contract_path"))) ||
      (s = want_sha(c, "$.request.sha256", json_object_get(rq, "sha256"))) ||
      (s = check_source_pair(c, "$.request.source", json_object_get(rq, "source"))))
    return s;
  if (!nonempty_str(json_object_get(rq, "id")))
    return bad(c, "$.request.id", "expected a nonempty string");
  if ((s = check_arm(c, "$.containment", json_object_get(doc, "containment"), "service"))) return s;
  const json_t *o = json_object_get(doc, "oracle");
  if ((s = check_hf_evidence(c, "$.oracle", o, false)) != FDL_OK) return s;
  if (!json_equal(json_object_get(o, "request_id"), json_object_get(rq, "id")))
    return bad(c, "$.oracle.request_id", "expected $.request.id");
  if (!json_equal(json_object_get(o, "request_sha256"), json_object_get(rq, "sha256")))
    return bad(c, "$.oracle.request_sha256", "expected $.request.sha256");
  const json_t *ra = json_object_get(doc, "reference_artifact");
  if ((s = CLOSED(c, "$.reference_artifact", ra, "bytes", "location", "sha256")) ||
      (s = want_const_str(c, "$.reference_artifact", ra, "location", "local_ignored")) ||
      (s = want_sha(c, "$.reference_artifact.sha256", json_object_get(ra, "sha256"))))
    return s;
  if (!json_equal(json_object_get(ra, "bytes"), json_object_get(o, "output_bytes")))
    return bad(c, "$.reference_artifact.bytes", "expected $.oracle.output_bytes");
  /* §9's verdict, rebuilt and compared exactly. */
  const json_t *v = json_object_get(doc, "verdict"), *am = json_object_get(o, "argmax"),
               *cands = json_object_get(o, "candidate_tokens");
  if ((s = CLOSED(c, "$.verdict", v, "argmax_candidate", "argmax_token_id",
                  "candidate_attribution_complete")) != FDL_OK)
    return s;
  const char *match = "neither";
  size_t nmatch = 0;
  for (size_t i = 0; i < 2; i++)
    if (json_equal(json_object_get(json_array_get(cands, i), "token_id"), am)) {
      nmatch++;
      match = json_string_value(json_object_get(json_array_get(cands, i), "engine"));
    }
  if (nmatch != 1) match = "neither";
  if (!str_eq(json_object_get(v, "argmax_candidate"), match))
    return bad(c, "$.verdict.argmax_candidate",
               "expected \"%s\" (the candidate whose token is the oracle argmax)", match);
  if (!json_equal(json_object_get(v, "argmax_token_id"), am))
    return bad(c, "$.verdict.argmax_token_id", "expected $.oracle.argmax %lld",
               (long long)json_integer_value(am));
  bool complete = strcmp(match, "neither") != 0;
  const json_t *cc = json_object_get(v, "candidate_attribution_complete");
  if (!json_is_boolean(cc) || json_is_true(cc) != complete)
    return bad(c, "$.verdict.candidate_attribution_complete", "expected %s",
               complete ? "true" : "false");
  return FDL_OK;
}

typedef struct {
  const char *schema;
  fdl_status (*check)(const ctx *, const json_t *);
} kind;

static const kind KINDS[] = {
    {"kiln.rocm-hf-next-token-oracle.v1", check_oracle_v1},
    {"kiln.rocm-hf-path-attribution-result.v1", check_path_v1},
    {"kiln.rocm-hf-layer-attribution-result.v1", check_layer_v1},
    {FDL_KILN_PATH_V2_SCHEMA, check_path_v2},
    {"kiln.rocm-hf-layer-attribution-result.v2", check_layer_v2},
    {"kiln.rocm-hf-next-token-oracle.v2", check_oracle_v2},
};

fdl_status fdl_kiln_check_doc(const json_t *doc, const char *name, fdl_kiln_checked *res,
                              fdl_err *err) {
  ctx c = {name ? name : "(document)", err};
  memset(res, 0, sizeof *res);
  if (!json_is_object(doc)) return bad(&c, "$", "expected an object");
  const json_t *sv = json_object_get(doc, "schema");
  if (!json_is_string(sv)) return bad(&c, "$.schema", "expected a string naming the kind");
  const char *schema = json_string_value(sv);
  if (strcmp(schema, FDL_KILN_REQUEST_SCHEMA) == 0) {
    res->schema = FDL_KILN_REQUEST_SCHEMA;
    fdl_status s = check_request(&c, doc);
    if (s == FDL_OK) s = fdl_kiln_canonical_sha256(doc, res->identity, err);
    return s;
  }
  if (strcmp(schema, FDL_KILN_PATH_ATTR_SCHEMA) == 0) {
    res->schema = FDL_KILN_PATH_ATTR_SCHEMA;
    fdl_status s = self_hash(&c, doc, "record_sha256", res);
    if (s == FDL_OK) s = check_fidelis_attr(&c, doc);
    return s;
  }
  for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
    if (strcmp(schema, KINDS[i].schema) != 0) continue;
    res->schema = KINDS[i].schema;
    fdl_status s = self_hash(&c, doc, "result_sha256", res);
    if (s == FDL_OK) s = check_request_ref(&c, doc);
    if (s == FDL_OK)
      s = check_model_identity(&c, "$.model_identity", json_object_get(doc, "model_identity"));
    if (s == FDL_OK) s = KINDS[i].check(&c, doc);
    return s;
  }
  char shown[80];
  snprintf(shown, sizeof shown, "%s", schema);
  return fdl_fail(err, FDL_UNSUPPORTED, "%s: unsupported schema %s", c.name, shown);
}

fdl_status fdl_kiln_check_file(const char *path, fdl_kiln_checked *res, fdl_err *err) {
  return fdl_kiln_check_file_doc(path, res, NULL, err);
}

fdl_status fdl_kiln_check_file_doc(const char *path, fdl_kiln_checked *res, json_t **out,
                                   fdl_err *err) {
  if (out) *out = NULL;
  const fdl_json_read_opts kiln = {.max_depth = 0, .kiln_strict = true};
  json_t *doc = NULL;
  fdl_status s = fdl_json_load_file(path, &kiln, &doc, err);
  if (s != FDL_OK) return s;
  s = fdl_kiln_check_doc(doc, path, res, err);
  if (s == FDL_OK && res->schema && strcmp(res->schema, FDL_KILN_REQUEST_SCHEMA) == 0) {
    struct stat st;
    if (stat(path, &st) == 0 && (uint64_t)st.st_size > FDL_KILN_REQUEST_MAX_BYTES)
      s = fdl_fail(err, FDL_TOO_LARGE,
                   "%s: a request file is at most 262144 bytes, this one is %llu", path,
                   (unsigned long long)st.st_size);
  }
  if (s == FDL_OK && out)
    *out = doc;
  else
    json_decref(doc);
  return s;
}
