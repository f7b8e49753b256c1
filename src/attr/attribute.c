/* attribute.c - fidelis' own path attribution (fidelis.path-attribution.v1, docs/ATTRIBUTION.md):
 * the reference block and its verdict, each path's observed tokens and Kiln comparison block,
 * the first divergent path, sealed with record_sha256 by Kiln's self-hash rule (§2). The record
 * is re-checked by fdl_kiln_check_doc before it is handed back, so the writer and `fidelis check`
 * share one set of rules (the graph counters among them). Kiln's path result v2 (§12) is written
 * from the same computed values, never read back from the record. */
#include <stdlib.h>
#include <string.h>

#include "attr/internal.h"
#include "fidelis/attr.h"
#include "json/json.h"
#include "base/sys.h"
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

json_t *fdl_attr_comparison_json(const fdl_attr_logits *r, const fdl_attr_candidate *c) {
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

json_t *fdl_attr_reference_json(const fdl_attr_logits *r, const fdl_attr_candidate *c, size_t n) {
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

/* One path as computed, before it is written (v1 entry, v2 worker block). */
typedef struct {
  uint64_t *obs; /* its observed tokens, owned */
  size_t nobs;
  bool diverges;  /* full: its last argmax differs from the reference's; greedy: its final token */
  json_t *copied; /* full: the comparison block; greedy: final_token_matches_reference */
} path_result;

static fdl_status full_path(const fdl_kiln_path_in *p, const float *reference, size_t n,
                            const uint64_t cand[2], path_result *r, fdl_err *err) {
  if (p->nrows == 0 || p->nrows > FDL_KILN_MAX_INPUT)
    return fdl_fail(err, FDL_REFUSED, "path %s: %zu rows of logits, expected 1..%u", p->name,
                    p->nrows, FDL_KILN_MAX_INPUT);
  if (!(r->obs = fdl_malloc(p->nrows * sizeof *r->obs)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  r->nobs = p->nrows;
  for (size_t i = 0; i < p->nrows; i++) fdl_attr_topk(p->rows + i * n, n, 1, &r->obs[i]);
  fdl_attr_logits c;
  fdl_attr_candidate cc[2];
  fdl_status s =
      fdl_attr_compare_logits(p->rows + (p->nrows - 1) * n, reference, n, cand, 2, &c, cc, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "path %s", p->name);
    return s;
  }
  r->diverges = !c.argmax_equal;
  if (!(r->copied = fdl_attr_comparison_json(&c, cc)))
    return fdl_fail(err, FDL_NOMEM, "path %s: out of memory", p->name);
  return FDL_OK;
}

static fdl_status greedy_path(const fdl_kiln_path_in *p, uint64_t ref_argmax, path_result *r,
                              fdl_err *err) {
  size_t bad = 0;
  fdl_status s = fdl_kiln_token_ids(p->ids, FDL_KILN_MAX_INPUT, &r->obs, &r->nobs, &bad);
  if (s == FDL_NOMEM) return fdl_fail(err, s, "out of memory");
  if (s != FDL_OK && bad != SIZE_MAX)
    return fdl_fail(err, FDL_REFUSED, "path %s: [%zu]: expected a token id, an integer in 0..%u",
                    p->name, bad, FDL_KILN_VOCAB_SIZE - 1);
  if (s != FDL_OK || r->nobs == 0)
    return fdl_fail(err, FDL_REFUSED, "path %s: expected an array of 1..%u token ids", p->name,
                    FDL_KILN_MAX_INPUT);
  r->diverges = r->obs[r->nobs - 1] != ref_argmax;
  r->copied = json_boolean(!r->diverges);
  return FDL_OK;
}

/* One path's v1 entry. */
static fdl_status path_entry(const fdl_kiln_path_in *p, const path_result *r, json_t **out,
                             fdl_err *err) {
  json_t *obs = fdl_json_append_ints(json_array(), r->obs, r->nobs, sizeof *r->obs);
  *out =
      !obs ? NULL
      : p->full
          ? json_pack("{s:s, s:s, s:O, s:O, s:b}", "name", p->name, "kind", "full",
                      "observed_tokens", obs, "comparison", r->copied, "argmax_equal", !r->diverges)
          : json_pack("{s:s, s:s, s:O, s:b}", "name", p->name, "kind", "greedy", "observed_tokens",
                      obs, "final_token_matches_reference", !r->diverges);
  json_decref(obs);
  return *out ? FDL_OK : fdl_fail(err, FDL_NOMEM, "path %s: out of memory", p->name);
}

/* Kiln's kiln.rocm-hf-path-attribution-result.v2 (§12) of the four Kiln paths, from the values
 * the v1 record was written from. */
static fdl_status kiln_v2(const fdl_kiln_request *rq, const json_t *provenance,
                          const fdl_kiln_path_in *paths, const path_result *res, size_t npaths,
                          uint64_t ref_argmax, const json_t *counters, json_t **out, fdl_err *err) {
  fdl_attr_provenance pv;
  fdl_status s = fdl_attr_provenance_read(provenance, NULL, &pv, err);
  if (s != FDL_OK) return s;
  if (npaths != 4)
    return fdl_fail(err, FDL_REFUSED,
                    "kiln-v2: %zu paths, expected exactly eager_full, graph_full, eager_greedy "
                    "and graph_greedy",
                    npaths);
  if (!counters)
    return fdl_fail(err, FDL_REFUSED, "kiln-v2: --counters is required (the worker's graph)");
  json_t *worker =
      json_pack("{s:s, s:O, s:I, s:I, s:s, s:s, s:s}", "schema", "kiln.rocm-hf-path-attribution.v2",
                "graph", counters, "hf_argmax", (json_int_t)ref_argmax, "input_token_count",
                (json_int_t)rq->input_count, "input_token_ids_sha256", rq->input_token_ids_sha256,
                "kernel_policy", "qualified", "request_id", rq->id);
  if (!worker) return fdl_fail(err, FDL_NOMEM, "out of memory");
  const char *label = NULL;
  for (size_t i = 0; s == FDL_OK && i < 4; i++) {
    const fdl_kiln_v2_path *v = &fdl_kiln_v2_paths[i];
    size_t j = 0;
    while (j < npaths && strcmp(paths[j].name, v->name) != 0) j++;
    if (j == npaths || paths[j].full != v->full) {
      s = fdl_fail(err, FDL_REFUSED, "kiln-v2: no %s path named %s (the four Kiln paths)",
                   v->full ? "full" : "greedy", v->name);
      break;
    }
    const path_result *r = &res[j];
    if (r->nobs != rq->nprefix + 1 || r->nobs != 4) {
      s = fdl_fail(err, FDL_REFUSED,
                   "kiln-v2: path %s: %zu observed tokens, expected 4 (after the prompt and "
                   "after each of the 3 forced continuation tokens; the request has %zu)",
                   v->name, r->nobs, rq->nprefix);
      break;
    }
    for (size_t t = 0; s == FDL_OK && t + 1 < 4; t++)
      if (r->obs[t] != rq->prefix[t])
        s = fdl_fail(err, FDL_REFUSED,
                     "kiln-v2: path %s: observed token %zu is %lld, expected the continuation "
                     "token %lld (Kiln §14.2: observed[:-1] equals the continuation ids)",
                     v->name, t, (long long)r->obs[t], (long long)rq->prefix[t]);
    if (s != FDL_OK) break;
    /* A full path's comparison is copied, a greedy one's final-token match */
    json_t *obs = fdl_json_append_ints(json_array(), r->obs, 4, sizeof *r->obs);
    json_t *blk =
        obs ? json_pack("{s:O, s:O}", v->full ? "comparison" : "final_token_matches_reference",
                        r->copied, "observed_next_tokens", obs)
            : NULL;
    json_decref(obs);
    if (!blk || json_object_set_new(worker, v->name, blk) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    if (r->diverges && !label) label = v->label;
  }
  if (s == FDL_OK && json_object_set_new(worker, "attribution",
                                         json_string(label ? label : FDL_KILN_LABEL_NONE)) != 0)
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  if (s != FDL_OK) {
    json_decref(worker);
    return s;
  }
  return fdl_attr_result_v2(FDL_KILN_PATH_V2_SCHEMA, &pv, rq, worker, out, err);
}

fdl_status fdl_kiln_attribute(const json_t *request, const float *reference, size_t n,
                              const fdl_kiln_path_in *paths, size_t npaths, const json_t *counters,
                              const json_t *provenance, json_t **out, fdl_err *err) {
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
  path_result *res = fdl_calloc(npaths, sizeof *res);
  const char *first = NULL;
  if (!list || !res) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < npaths; i++) {
    json_t *e = NULL;
    s = paths[i].full ? full_path(&paths[i], reference, n, cand, &res[i], err)
                      : greedy_path(&paths[i], ref.argmax, &res[i], err);
    if (s == FDL_OK) s = path_entry(&paths[i], &res[i], &e, err);
    if (s == FDL_OK && json_array_append_new(list, e) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s == FDL_OK && res[i].diverges && !first) first = paths[i].name;
  }
  json_t *rb = s == FDL_OK ? fdl_attr_reference_json(&ref, rc, n) : NULL;
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
  if (s == FDL_OK && provenance) {
    json_t *v2 = NULL;
    s = kiln_v2(&rq, provenance, paths, res, npaths, ref.argmax, counters, &v2, err);
    json_decref(rec);
    rec = v2;
  }
  for (size_t i = 0; res && i < npaths; i++) {
    free(res[i].obs);
    json_decref(res[i].copied);
  }
  free(res);
  return fdl_json_hand_over(s, rec, out);
}
