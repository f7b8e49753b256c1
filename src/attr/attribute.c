/* attribute.c - fidelis' own path attribution (fidelis.path-attribution.v1, docs/ATTRIBUTION.md):
 * the reference block and its verdict, each path's observed tokens and Kiln comparison block,
 * the first divergent path, sealed with record_sha256 by Kiln's self-hash rule (§2). The record
 * is re-checked by fdl_kiln_check_doc before it is handed back, so the writer and `fidelis check`
 * share one set of rules (the graph counters among them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "fidelis/attr.h"
#include "json/json.h"
#include "json/get.h"
#include "fidelis/kiln.h"
#include "digest/seal_json.h"
#include "attr/kiln_json.h"

/* [{logit, rank, token_id}] (engine too when engines is not NULL), or NULL when out of memory. */
static json_t *candidates(const fdl_attr_candidate *c, const char *const *engines) {
  json_t *list = json_array();
  for (size_t i = 0; list && i < 2; i++) {
    json_t *o = json_pack("{s:I, s:f, s:I}", "token_id", (json_int_t)c[i].token_id, "logit",
                          fdl_attr_f32_json_value(c[i].logit), "rank", (json_int_t)c[i].rank);
    if (o && engines && json_object_set_new(o, "engine", json_string(engines[i])) != 0) {
      json_decref(o);
      o = NULL;
    }
    if (!o || json_array_append_new(list, o) != 0) {
      json_decref(list);
      list = NULL;
    }
  }
  return list;
}

static json_t *comparison(const fdl_attr_logits *r, const fdl_attr_candidate *c) {
  char digest[FDL_SEAL_BUF];
  fdl_attr_sha_text(&r->logits_sha256, digest);
  json_t *list = candidates(c, NULL);
  return list ? json_pack("{s:I, s:b, s:f, s:f, s:f, s:I, s:s, s:o}", "argmax",
                          (json_int_t)r->argmax, "argmax_equal", r->argmax_equal,
                          "cosine_similarity", r->cosine_similarity, "max_abs_error",
                          r->max_abs_error, "mean_abs_error", r->mean_abs_error, "top10_overlap",
                          (json_int_t)r->top10_overlap, "logits_sha256", digest, "candidate_tokens",
                          list)
              : NULL;
}

/* The reference block: argmax, digest, both candidates and the verdict. */
static json_t *reference_block(const fdl_attr_logits *r, const fdl_attr_candidate *c, size_t n) {
  static const char *const engines[2] = {"kiln", "vllm"};
  double lk = fdl_attr_f32_json_value(c[0].logit), lv = fdl_attr_f32_json_value(c[1].logit);
  const char *arg = c[0].token_id == r->argmax   ? "kiln"
                    : c[1].token_id == r->argmax ? "vllm"
                                                 : "neither";
  const char *pref = lk > lv ? "kiln" : lv > lk ? "vllm" : "tie";
  double margin = lk > lv ? lk - lv : lv - lk;
  char digest[FDL_SEAL_BUF];
  fdl_attr_sha_text(&r->logits_sha256, digest);
  json_t *list = candidates(c, engines);
  return list ? json_pack("{s:I, s:I, s:s, s:o, s:{s:s, s:s, s:f}}", "vocab_size", (json_int_t)n,
                          "argmax", (json_int_t)r->argmax, "logits_sha256", digest,
                          "candidate_tokens", list, "verdict", "argmax_candidate", arg,
                          "preferred_candidate", pref, "margin", margin)
              : NULL;
}

/* One path's entry; *diverges says whether it leaves the reference argmax. */
static fdl_status path_entry(const fdl_kiln_path_in *p, const float *reference, size_t n,
                             const uint64_t cand[2], uint64_t ref_argmax, json_t **out,
                             bool *diverges, fdl_err *err) {
  *out = NULL;
  json_t *obs = json_array();
  if (!obs) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = FDL_OK;
  if (p->full) {
    if (p->nrows == 0 || p->nrows > FDL_KILN_MAX_INPUT)
      s = fdl_fail(err, FDL_REFUSED, "path %s: %zu rows of logits, expected 1..%u", p->name,
                   p->nrows, FDL_KILN_MAX_INPUT);
    for (size_t i = 0; s == FDL_OK && i < p->nrows; i++) {
      uint64_t am = 0;
      fdl_attr_topk(p->rows + i * n, n, 1, &am);
      if (json_array_append_new(obs, json_integer((json_int_t)am)) != 0)
        s = fdl_fail(err, FDL_NOMEM, "out of memory");
    }
    fdl_attr_logits r;
    fdl_attr_candidate c[2];
    if (s == FDL_OK)
      s = fdl_attr_compare_logits(p->rows + (p->nrows - 1) * n, reference, n, cand, 2, &r, c, err);
    if (s != FDL_OK) {
      fdl_err_prefix(err, "path %s", p->name);
    } else {
      json_t *cmp = comparison(&r, c);
      *out =
          cmp ? json_pack("{s:s, s:s, s:o, s:o, s:b}", "name", p->name, "kind", "full",
                          "observed_tokens", obs, "comparison", cmp, "argmax_equal", r.argmax_equal)
              : NULL;
      if (cmp) obs = NULL; /* the pack took it, even on failure */
      if (!*out) s = fdl_fail(err, FDL_NOMEM, "path %s: out of memory", p->name);
      *diverges = !r.argmax_equal;
    }
  } else {
    size_t k = json_array_size(p->ids);
    if (!json_is_array(p->ids) || k == 0 || k > FDL_KILN_MAX_INPUT)
      s = fdl_fail(err, FDL_REFUSED, "path %s: expected an array of 1..%u token ids", p->name,
                   FDL_KILN_MAX_INPUT);
    for (size_t i = 0; s == FDL_OK && i < k; i++) {
      const json_t *v = json_array_get(p->ids, i);
      if (!json_is_integer(v) || json_integer_value(v) < 0 ||
          json_integer_value(v) >= (json_int_t)FDL_KILN_VOCAB_SIZE)
        s = fdl_fail(err, FDL_REFUSED, "path %s: [%zu]: expected a token id, an integer in 0..%u",
                     p->name, i, FDL_KILN_VOCAB_SIZE - 1);
      else if (json_array_append(obs, (json_t *)v) != 0)
        s = fdl_fail(err, FDL_NOMEM, "out of memory");
    }
    if (s == FDL_OK) {
      bool match = json_integer_value(json_array_get(p->ids, k - 1)) == (json_int_t)ref_argmax;
      *out = json_pack("{s:s, s:s, s:o, s:b}", "name", p->name, "kind", "greedy", "observed_tokens",
                       obs, "final_token_matches_reference", match);
      obs = NULL;
      if (!*out) s = fdl_fail(err, FDL_NOMEM, "path %s: out of memory", p->name);
      *diverges = !match;
    }
  }
  json_decref(obs);
  return s;
}

fdl_status fdl_kiln_attribute(const json_t *request, const float *reference, size_t n,
                              const fdl_kiln_path_in *paths, size_t npaths, const json_t *counters,
                              json_t **out, fdl_err *err) {
  *out = NULL;
  fdl_kiln_request rq;
  fdl_status s = fdl_kiln_request_read(request, &rq, err);
  if (s != FDL_OK) return s;
  if (npaths == 0 || npaths > FDL_KILN_MAX_PATHS)
    return fdl_fail(err, FDL_REFUSED, "%zu paths, expected 1..%u", npaths, FDL_KILN_MAX_PATHS);
  for (size_t i = 0; i < npaths; i++) {
    if (!paths[i].name || !paths[i].name[0])
      return fdl_fail(err, FDL_REFUSED, "path %zu: empty name", i + 1);
    for (size_t j = 0; j < i; j++)
      if (strcmp(paths[i].name, paths[j].name) == 0)
        return fdl_fail(err, FDL_REFUSED, "path name %s given twice, expected unique names",
                        paths[i].name);
  }
  uint64_t cand[2];
  for (size_t i = 0; i < 2; i++) {
    cand[i] = rq.candidates[i];
    if (cand[i] >= n)
      return fdl_fail(err, FDL_REFUSED,
                      "request: $.candidates[%zu].token_id %llu is outside the %zu reference "
                      "logits",
                      i, (unsigned long long)cand[i], n);
  }
  fdl_attr_logits ref;
  fdl_attr_candidate rc[2];
  s = fdl_attr_compare_logits(reference, reference, n, cand, 2, &ref, rc, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "reference");
    return s;
  }
  json_t *list = json_array(), *rec = NULL;
  const char *first = NULL;
  if (!list) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < npaths; i++) {
    json_t *e = NULL;
    bool div = false;
    s = path_entry(&paths[i], reference, n, cand, ref.argmax, &e, &div, err);
    if (s == FDL_OK && json_array_append_new(list, e) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s == FDL_OK && div && !first) first = paths[i].name;
  }
  json_t *rb = s == FDL_OK ? reference_block(&ref, rc, n) : NULL;
  if (s == FDL_OK && !rb) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK) {
    rec = json_pack("{s:s, s:{s:s, s:s, s:s, s:[I, I]}, s:o, s:O, s:{s:s, s:o}}", "schema",
                    FDL_KILN_PATH_ATTR_SCHEMA, "request", "id", rq.id, "sha256", rq.identity,
                    "input_token_ids_sha256", rq.input_token_ids_sha256, "candidate_token_ids",
                    (json_int_t)cand[0], (json_int_t)cand[1], "reference", rb, "paths", list,
                    "attribution", "label", first ? FDL_KILN_LABEL_PATH : FDL_KILN_LABEL_NONE,
                    "path", first ? json_string(first) : json_null());
    rb = NULL;
    if (!rec) s = fdl_fail(err, FDL_NOMEM, "out of memory (or a path name is not UTF-8)");
  }
  json_decref(rb);
  json_decref(list);
  if (s == FDL_OK && counters && json_object_set(rec, "counters", (json_t *)counters) != 0)
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s == FDL_OK) s = fdl_seal_apply(rec, FDL_SEAL_KILN_REMOVE, "record_sha256", err);
  fdl_kiln_checked chk;
  if (s == FDL_OK) s = fdl_kiln_check_doc(rec, "attribution record", &chk, err);
  return fdl_json_hand_over(s, rec, out);
}

/* ---- Kiln v2 (§12) ------------------------------------------------------------------------- */

static const json_t *find_path(const json_t *paths, const char *name) {
  for (size_t i = 0; i < json_array_size(paths); i++) {
    const json_t *e = json_array_get(paths, i);
    if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0) return e;
  }
  return NULL;
}

fdl_status fdl_kiln_attribution_v2(const json_t *record, const json_t *request,
                                   const json_t *provenance, json_t **out, fdl_err *err) {
  *out = NULL;
  fdl_kiln_request rq;
  fdl_attr_provenance pv;
  fdl_status s = fdl_attr_provenance_read(provenance, NULL, &pv, err);
  if (s == FDL_OK) s = fdl_kiln_request_read(request, &rq, err);
  if (s != FDL_OK) return s;
  const json_t *paths = json_object_get(record, "paths"),
               *counters = json_object_get(record, "counters");
  if (json_array_size(paths) != 4)
    return fdl_fail(err, FDL_REFUSED,
                    "kiln-v2: %zu paths, expected exactly eager_full, graph_full, eager_greedy "
                    "and graph_greedy",
                    json_array_size(paths));
  if (!counters)
    return fdl_fail(err, FDL_REFUSED, "kiln-v2: --counters is required (the worker's graph)");
  json_t *worker =
      json_pack("{s:s, s:O, s:I, s:I, s:s, s:s, s:s}", "schema", "kiln.rocm-hf-path-attribution.v2",
                "graph", counters, "hf_argmax",
                json_integer_value(json_object_get(json_object_get(record, "reference"), "argmax")),
                "input_token_count", (json_int_t)rq.input_count, "input_token_ids_sha256",
                rq.input_token_ids_sha256, "kernel_policy", "qualified", "request_id", rq.id);
  if (!worker) return fdl_fail(err, FDL_NOMEM, "out of memory");
  const char *label = NULL;
  for (size_t i = 0; s == FDL_OK && i < 4; i++) {
    const json_t *e = find_path(paths, fdl_kiln_v2_paths[i].name);
    if (!e || fdl_kiln_str_eq(json_object_get(e, "kind"), "full") != fdl_kiln_v2_paths[i].full) {
      s = fdl_fail(err, FDL_REFUSED, "kiln-v2: no %s path named %s (the four Kiln paths)",
                   fdl_kiln_v2_paths[i].full ? "full" : "greedy", fdl_kiln_v2_paths[i].name);
      break;
    }
    const json_t *obs = json_object_get(e, "observed_tokens");
    if (json_array_size(obs) != rq.nprefix + 1 || json_array_size(obs) != 4) {
      s = fdl_fail(err, FDL_REFUSED,
                   "kiln-v2: path %s: %zu observed tokens, expected 4 (after the prompt and "
                   "after each of the 3 forced continuation tokens; the request has %zu)",
                   fdl_kiln_v2_paths[i].name, json_array_size(obs), rq.nprefix);
      break;
    }
    for (size_t j = 0; s == FDL_OK && j + 1 < 4; j++)
      if (json_integer_value(json_array_get(obs, j)) != rq.prefix[j])
        s = fdl_fail(err, FDL_REFUSED,
                     "kiln-v2: path %s: observed token %zu is %lld, expected the continuation "
                     "token %lld (Kiln §14.2: observed[:-1] equals the continuation ids)",
                     fdl_kiln_v2_paths[i].name, j,
                     (long long)json_integer_value(json_array_get(obs, j)),
                     (long long)rq.prefix[j]);
    if (s != FDL_OK) break;
    /* A full path's comparison is copied, a greedy one's final-token match */
    bool full = fdl_kiln_v2_paths[i].full;
    const char *copied = full ? "comparison" : "final_token_matches_reference";
    bool div = !json_is_true(json_object_get(e, full ? "argmax_equal" : copied));
    json_t *blk =
        json_pack("{s:O, s:O}", copied, json_object_get(e, copied), "observed_next_tokens", obs);
    if (!blk || json_object_set_new(worker, fdl_kiln_v2_paths[i].name, blk) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    if (div && !label) label = fdl_kiln_v2_paths[i].label;
  }
  if (s == FDL_OK && json_object_set_new(worker, "attribution",
                                         json_string(label ? label : FDL_KILN_LABEL_NONE)) != 0)
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s != FDL_OK) {
    json_decref(worker);
    return s;
  }
  return fdl_attr_result_v2(FDL_KILN_PATH_V2_SCHEMA, &pv, &rq, worker, out, err);
}

/* ---- recomputation from the logits (fidelis check --reference) ----------------------------- */

/* stored must equal want (an object); else the first key that differs, both values shown. */
static fdl_status same_block(const char *name, const char *path, const json_t *stored,
                             const json_t *want, fdl_err *err) {
  if (json_equal(stored, want)) return FDL_OK;
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)want, k, v) {
    const json_t *got = json_object_get(stored, k);
    if (json_equal(got, v)) continue;
    size_t fl = JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS | JSON_REAL_PRECISION(17);
    char *a = got ? json_dumps(got, fl) : NULL, *b = json_dumps(v, fl);
    fdl_fail(err, FDL_MISMATCH, "%s: %s.%s: stored %.300s, recomputed from the logits %.300s", name,
             path, k, a ? a : "(none)", b ? b : "?");
    free(a);
    free(b);
    return FDL_MISMATCH;
  }
  return fdl_fail(err, FDL_MISMATCH, "%s: %s: differs from the block recomputed from the logits",
                  name, path);
}

fdl_status fdl_kiln_recompute_paths(const json_t *doc, const char *name, const float *reference,
                                    size_t n, const fdl_kiln_logits_row *paths, size_t npaths,
                                    fdl_err *err) {
  const json_t *sv = json_object_get(doc, "schema");
  bool fid = fdl_kiln_str_eq(sv, FDL_KILN_PATH_ATTR_SCHEMA);
  bool kiln = fdl_kiln_str_eq(sv, "kiln.rocm-hf-path-attribution-result.v1") ||
              fdl_kiln_str_eq(sv, FDL_KILN_PATH_V2_SCHEMA);
  if (!fid && !kiln)
    return fdl_fail(err, FDL_REFUSED,
                    "%s: a %s has no path comparisons to recompute (--reference and --path go "
                    "with path-attribution records)",
                    name, json_is_string(sv) ? json_string_value(sv) : "record");
  const json_t *w = json_object_get(doc, "worker");
  const json_t *ct =
      fid ? json_object_get(json_object_get(doc, "request"), "candidate_token_ids") : NULL;
  uint64_t cand[2];
  for (size_t i = 0; i < 2; i++) {
    const json_t *id =
        fid ? json_array_get(ct, i)
            : json_object_get(
                  json_array_get(fdl_json_path(w, "eager_full.comparison.candidate_tokens"), i),
                  "token_id");
    if (!json_is_integer(id) || json_integer_value(id) < 0 || (uint64_t)json_integer_value(id) >= n)
      return fdl_fail(err, FDL_REFUSED,
                      "%s: candidate %zu is no token id below the reference's width %zu", name, i,
                      n);
    cand[i] = (uint64_t)json_integer_value(id);
  }
  fdl_attr_logits r;
  fdl_attr_candidate c[2];
  fdl_status s = fdl_attr_compare_logits(reference, reference, n, cand, 2, &r, c, err);
  if (s != FDL_OK) return s;
  if (fid) {
    json_t *rb = reference_block(&r, c, n);
    if (!rb) return fdl_fail(err, FDL_NOMEM, "out of memory");
    s = same_block(name, "$.reference", json_object_get(doc, "reference"), rb, err);
    json_decref(rb);
    if (s != FDL_OK) return s;
  } else if (json_integer_value(json_object_get(w, "hf_argmax")) != (json_int_t)r.argmax) {
    return fdl_fail(err, FDL_MISMATCH,
                    "%s: $.worker.hf_argmax: stored %lld, the reference's argmax %llu", name,
                    (long long)json_integer_value(json_object_get(w, "hf_argmax")),
                    (unsigned long long)r.argmax);
  }
  for (size_t i = 0; i < npaths; i++) {
    const json_t *blk = NULL;
    char jp[128];
    if (fid) {
      const json_t *all = json_object_get(doc, "paths");
      for (size_t j = 0; j < json_array_size(all) && !blk; j++) {
        const json_t *e = json_array_get(all, j);
        if (fdl_kiln_str_eq(json_object_get(e, "name"), paths[i].name) &&
            fdl_kiln_str_eq(json_object_get(e, "kind"), "full")) {
          blk = json_object_get(e, "comparison");
          snprintf(jp, sizeof jp, "$.paths[%zu].comparison", j);
        }
      }
    } else if (strcmp(paths[i].name, "eager_full") == 0 ||
               strcmp(paths[i].name, "graph_full") == 0) {
      blk = json_object_get(json_object_get(w, paths[i].name), "comparison");
      snprintf(jp, sizeof jp, "$.worker.%s.comparison", paths[i].name);
    }
    if (!blk)
      return fdl_fail(err, FDL_REFUSED, "%s: --path %s: the record has no full path of that name",
                      name, paths[i].name);
    s = fdl_attr_compare_logits(paths[i].row, reference, n, cand, 2, &r, c, err);
    if (s != FDL_OK) return s;
    json_t *cmp = comparison(&r, c);
    if (!cmp) return fdl_fail(err, FDL_NOMEM, "out of memory");
    s = same_block(name, jp, blk, cmp, err);
    json_decref(cmp);
    if (s != FDL_OK) return s;
  }
  return FDL_OK;
}
