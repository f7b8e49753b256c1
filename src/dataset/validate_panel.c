/* validate_panel.c - the panel binding (§7.4): BIND-6 aggregate and token files, PANEL-D2,
 * BIND-1..5, plus what fidelis checks beyond the reference: the panel document against the
 * manifest's panel block (rule "7.2"), mask files rehashed and their scored-row count
 * (rules "BIND-3" and "7.3"), REC-5, and the shipped panel receipt's own seal. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "base/quote.h"
#include "dataset/validate.h"
#include "json/json.h"
#include "base/path.h"
#include "base/sys.h"

typedef struct {
  int64_t index;
  json_t *rec;
} indexed;

static int cmp_indexed(const void *a, const void *b) {
  return fdl_order_cmp_i64(((const indexed *)a)->index, ((const indexed *)b)->index);
}

/* Panel records sorted by index (records without an integer index sort as 0, as the
 * reference's int(r.get("index", 0)) does). */
static indexed *sorted_records(const json_t *records, size_t *n) {
  *n = json_array_size(records);
  indexed *a = fdl_calloc(*n ? *n : 1, sizeof *a);
  if (!a) return NULL;
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    int64_t x = 0;
    (void)fdl_json_int(r, "index", &x);
    a[i].index = x;
    a[i].rec = r;
  }
  if (*n) qsort(a, *n, sizeof *a, cmp_indexed);
  return a;
}

static void aggregate(ds_vctx *v, const indexed *recs, size_t n) {
  const char **hexes = fdl_calloc(n ? n : 1, sizeof *hexes);
  if (!fdl_ds_v_got(v, hexes)) return;
  bool all = n > 0;
  for (size_t i = 0; i < n; i++) {
    hexes[i] = fdl_json_str(recs[i].rec, "token_ids_json_sha256");
    if (!hexes[i] || !hexes[i][0]) all = false;
  }
  char agg[DS_HEX_LEN + 1], legacy[DS_HEX_LEN + 1];
  fdl_status s = all ? fdl_ds_suite_token_hash(hexes, n, false, agg, NULL) : FDL_OK;
  if (all && s == FDL_OK) s = fdl_ds_suite_token_hash(hexes, n, true, legacy, NULL);
  /* The hash can only fail for memory: never let that skip the BIND-6 check silently. */
  if (s != FDL_OK) v->rep->oom = FDL_NOMEM;
  if (all && s == FDL_OK) {
    const char *doc_agg = fdl_json_str(v->panel.doc, "suite_token_hash_sha256");
    const char *top_agg = v->mf.panel.suite_token_hash_sha256;
    if (!doc_agg || strcmp(agg, doc_agg))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "BIND-6", v->panel.rel,
                          "suite_token_hash_sha256 does not recompute from the record digests "
                          "(%s)",
                          agg);
    if (!top_agg || strcmp(agg, top_agg))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "BIND-6", FDL_DS_MANIFEST_NAME,
                          "manifest panel.suite_token_hash_sha256 disagrees with panel.json");
    const json_t *doc_legacy = json_object_get(v->panel.doc, "panel_token_sha256_legacy");
    if (fdl_py_truthy(doc_legacy) &&
        fdl_py_truthy(json_object_get(v->panel.doc, "token_digest_algorithm")) &&
        !(json_is_string(doc_legacy) && !strcmp(json_string_value(doc_legacy), legacy)))
      fdl_ds_report_warn(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "5.1", v->panel.rel,
                         "panel_token_sha256_legacy does not recompute under the legacy join; it "
                         "is a historical value carried for cross-check only");
  }
  free(hexes);
  fdl_ds_report_check(v->rep, "panel.aggregate");
}

/* Reads a token file as a list of integer ids; NULL (after a finding) when it is not one. */
static int64_t *read_tokens(ds_vctx *v, const char *rel, size_t *n) {
  json_t *doc = NULL;
  bool missing;
  fdl_err e;
  fdl_status s = fdl_ds_load_json_at(v->rootfd, rel, &doc, &missing, &e);
  if (s != FDL_OK) {
    if (missing) {
      char q[FDL_QUOTE_CAP];
      if (!v->o->allow_partial)
        fdl_ds_report_error(v->rep, FDL_DSC_MISSING_FILE, "3", rel,
                            "panel token file %s is missing", fdl_quote_str(rel, q, sizeof q));
    } else if (s == FDL_PATH) {
      fdl_ds_report_error(v->rep, FDL_DSC_SYMLINK, "PATH-4", rel, "%s", e.msg);
    } else {
      fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "BIND-6", rel, "unparseable token file: %s",
                          e.msg);
    }
    return NULL;
  }
  int64_t *ids = NULL;
  bool ok = fdl_json_int_array(doc, INT64_MIN, INT64_MAX, &ids, n) == FDL_OK;
  json_decref(doc);
  if (!ok)
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "BIND-6", rel,
                        "a token file holds one JSON array of integer ids");
  return ids;
}

static bool ids_equal(const json_t *arr, const int64_t *ids, size_t n) {
  if (json_array_size(arr) != n) return false;
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(arr, i);
    if (!json_is_integer(x) || json_integer_value(x) != ids[i]) return false;
  }
  return true;
}

static void token_files(ds_vctx *v, const indexed *recs, size_t n) {
  size_t checked = 0;
  int64_t vocab = v->mf.panel.tokenizer.vocab_size;
  for (size_t k = 0; k < n; k++) {
    const json_t *r = recs[k].rec;
    const char *tf = fdl_json_str(r, "token_file");
    char rel[DS_MAX_PATH];
    if (!tf || !tf[0] || !fdl_ds_join_norm("", tf, rel, sizeof rel) ||
        !fdl_relpath_ok(tf, strlen(tf), false))
      continue; /* an unusable path is a PATH-1 finding already */
    size_t len;
    int64_t *ids = read_tokens(v, rel, &len);
    if (!ids) continue;
    char got[DS_HEX_LEN + 1], legacy[DS_HEX_LEN + 1];
    if (fdl_ds_token_digest(ids, len, false, got, NULL) != FDL_OK ||
        fdl_ds_token_digest(ids, len, true, legacy, NULL) != FDL_OK) {
      v->rep->oom = FDL_NOMEM;
      free(ids);
      return;
    }
    const char *want = fdl_json_str(r, "token_ids_json_sha256");
    if (!want || strcmp(got, want))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "BIND-6", rel,
                          "%s hashes to %s, record says %s", rel, got, want ? want : "(none)");
    const json_t *lg = json_object_get(r, "token_ids_sha256_legacy");
    if (fdl_py_truthy(lg) && !(json_is_string(lg) && !strcmp(json_string_value(lg), legacy)))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "5.1/P8", rel,
                          "%s legacy digest does not recompute", rel);
    int64_t nt;
    const json_t *ntv = json_object_get(r, "num_tokens");
    if (ntv && !json_is_null(ntv) && !(fdl_json_int(r, "num_tokens", &nt) && nt == (int64_t)len))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-6", rel,
                          "%s has %zu tokens, the record says otherwise", rel, len);
    const json_t *f16 = fdl_json_arr(r, "token_ids_first16"),
                 *l16 = fdl_json_arr(r, "token_ids_last16");
    size_t head_n = len < 16 ? len : 16;
    if (f16 && !ids_equal(f16, ids, head_n))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-6", rel,
                          "token_ids_first16 differs from the token file");
    if (l16 && !ids_equal(l16, ids + (len - head_n), head_n))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-6", rel,
                          "token_ids_last16 differs from the token file");
    for (size_t i = 0; vocab > 0 && i < len; i++)
      if (ids[i] < 0 || ids[i] >= vocab) {
        fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "14.1", rel,
                            "token %zu is id %" PRId64 ", outside [0, %" PRId64 ")", i, ids[i],
                            vocab);
        break;
      }
    free(ids);
    checked++;
  }
  fdl_ds_report_check(v->rep, "panel.tokens(%zu)", checked);
}

/* A mask file: an .npy array, or (the reference dataset builder's layout) the raw little-endian
 * bytes of num_tokens int64 or uint8 values with no header. The raw form is accepted only when
 * its size is exactly that and every value is 0 or 1; anything else stays refused. */
fdl_status fdl_ds_mask_load(const char *bytes, size_t len, int64_t num_tokens, const char *rel,
                            uint8_t **mask, int64_t *mlen, bool *headerless, fdl_err *err) {
  static const char magic[] = "\x93NUMPY";
  if (len >= sizeof magic - 1 && !memcmp(bytes, magic, sizeof magic - 1))
    return fdl_ds_mask_from_npy(bytes, len, rel, mask, mlen, err);
  size_t n = num_tokens > 0 ? (size_t)num_tokens : 0, width = 0;
  if (n && len == n * 8)
    width = 8;
  else if (n && len == n)
    width = 1;
  if (!width)
    return fdl_fail(err, FDL_PARSE,
                    "%s: not an .npy file (no \\x93NUMPY magic), and its %zu bytes are not %" PRId64
                    " tokens of raw int64 or uint8",
                    rel, len, num_tokens);
  uint8_t *m = fdl_malloc(n);
  if (!m) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", rel);
  for (size_t i = 0; i < n; i++) {
    const uint8_t *e = (const uint8_t *)bytes + i * width;
    uint8_t high = 0;
    for (size_t k = 1; k < width; k++) high |= e[k];
    if (high || e[0] > 1) {
      free(m);
      return fdl_fail(err, FDL_PARSE,
                      "%s: headerless mask value %zu is neither 0 nor 1 (raw %s bytes)", rel, i,
                      width == 8 ? "int64" : "uint8");
    }
    m[i] = e[0];
  }
  *mask = m;
  *mlen = (int64_t)n;
  *headerless = true;
  return FDL_OK;
}

static void mask_files(ds_vctx *v, const indexed *recs, size_t n) {
  size_t checked = 0;
  int64_t score_from = v->mf.panel.scoring_window.score_from;
  for (size_t k = 0; k < n; k++) {
    const json_t *r = recs[k].rec;
    const char *mf = fdl_json_str(r, "attention_mask_file");
    int64_t num_tokens = -1, positions = -1;
    (void)fdl_json_int(r, "num_tokens", &num_tokens);
    bool have_pp = fdl_json_int(r, "prediction_positions", &positions);
    char rel[DS_MAX_PATH];
    if (!mf) {
      /* No mask: every causal position is scored (§7.3 with an all-ones mask). */
      if (score_from == 0 && num_tokens >= 0 && have_pp &&
          fdl_ds_scored_rows(NULL, num_tokens, 0, NULL) != positions)
        fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "7.3", v->panel.rel,
                            "record %" PRId64 ": %" PRId64 " tokens without a mask score %" PRId64
                            " positions, not %" PRId64,
                            recs[k].index, num_tokens, num_tokens > 0 ? num_tokens - 1 : 0,
                            positions);
      continue;
    }
    if (!fdl_relpath_ok(mf, strlen(mf), false) || !fdl_ds_join_norm("", mf, rel, sizeof rel))
      continue;
    char *bytes;
    size_t len;
    bool missing;
    fdl_err e;
    if (fdl_ds_read_at(v->rootfd, rel, DS_MAX_SMALL_FILE, &bytes, &len, &missing, &e) != FDL_OK) {
      if (!missing)
        fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-3", rel, "%s", e.msg);
      else if (!v->o->allow_partial) {
        char q[FDL_QUOTE_CAP];
        fdl_ds_report_error(v->rep, FDL_DSC_MISSING_FILE, "3", rel, "mask file %s is missing",
                            fdl_quote_str(rel, q, sizeof q));
      }
      continue;
    }
    char hex[DS_HEX_LEN + 1];
    (void)fdl_sha256_buf_hex(bytes, len, hex, NULL);
    const char *want = fdl_json_str(r, "attention_mask_sha256");
    if (want && strcmp(want, hex))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "BIND-3", rel,
                          "%s hashes to %s, record says %s", rel, hex, want);
    uint8_t *mask;
    int64_t mlen;
    bool headerless = false;
    if (fdl_ds_mask_load(bytes, len, num_tokens, rel, &mask, &mlen, &headerless, &e) != FDL_OK) {
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-3", rel, "%s", e.msg);
    } else {
      if (headerless)
        fdl_ds_report_warn(v->rep, FDL_DSC_HEADERLESS_MASK, "BIND-3", rel,
                           "%s has no .npy header: read as %" PRId64 " raw little-endian %s "
                           "values, all 0 or 1 (the reference dataset builder writes masks so)",
                           rel, mlen, len == (size_t)mlen ? "uint8" : "int64");
      if (num_tokens >= 0 && mlen != num_tokens)
        fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-3", rel,
                            "mask has %" PRId64 " entries for %" PRId64 " tokens", mlen,
                            num_tokens);
      else if (score_from == 0 && have_pp && fdl_ds_scored_rows(mask, mlen, 0, NULL) != positions)
        fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "7.3", rel,
                            "record %" PRId64 ": the mask scores %" PRId64
                            " positions, prediction_positions says %" PRId64,
                            recs[k].index, fdl_ds_scored_rows(mask, mlen, 0, NULL), positions);
      free(mask);
    }
    free(bytes);
    checked++;
  }
  fdl_ds_report_check(v->rep, "panel.masks(%zu)", checked);
}

/* The panel document mirrors the manifest's panel block (rule "7.2"). */
static void mirror(ds_vctx *v, const indexed *recs, size_t n) {
  const json_t *panel = fdl_json_obj(v->m, "panel");
  static const char *const KEYS[] = {"contexts",
                                     "context_length",
                                     "scored_positions_total",
                                     "scoring_window",
                                     "tokenizer",
                                     "panel_id",
                                     NULL};
  fdl_ds_v_mirror(v, panel, v->panel.doc, KEYS, FDL_DSC_PANEL_BINDING, "7.2", v->panel.rel,
                  "%s differs between panel.json and the manifest's panel block");
  int64_t contexts, total, sum = 0;
  if (fdl_json_int(v->panel.doc, "contexts", &contexts) && contexts != (int64_t)n)
    fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "7.2", v->panel.rel,
                        "contexts %" PRId64 " != %zu panel records", contexts, n);
  for (size_t k = 0; k < n; k++) {
    int64_t pp;
    if (fdl_json_int(recs[k].rec, "prediction_positions", &pp)) sum += pp;
  }
  if (fdl_json_int(v->panel.doc, "scored_positions_total", &total) && total != sum)
    fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "7.2", v->panel.rel,
                        "scored_positions_total %" PRId64 " != sum(prediction_positions) %" PRId64,
                        total, sum);
}

static void receipt(ds_vctx *v) {
  const char *rf = v->mf.panel.panel_receipt_file, *want = v->mf.panel.panel_receipt_sha256;
  if (!rf || !want || !fdl_relpath_ok(rf, strlen(rf), false)) return;
  json_t *doc = NULL;
  bool missing;
  fdl_err e;
  if (fdl_ds_load_json_at(v->rootfd, rf, &doc, &missing, &e) != FDL_OK) {
    if (!missing) fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "PANEL-RECEIPT", rf, "%s", e.msg);
    return;
  }
  bool ok, present;
  const char *stored = fdl_json_str(doc, "receipt_sha256");
  fdl_status s = fdl_ds_seal_ok(doc, "receipt_sha256", &ok, &present, &e);
  if (s == FDL_NOMEM)
    v->rep->oom = FDL_NOMEM; /* cannot compute is not a mismatch (no false tamper report) */
  else if (s != FDL_OK || !ok)
    fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "PANEL-RECEIPT", rf,
                        "the shipped panel receipt's receipt_sha256 does not recompute");
  else if (strcmp(stored, want))
    fdl_ds_report_error(v->rep, FDL_DSC_PANEL_DIGEST_MISMATCH, "PANEL-RECEIPT", rf,
                        "panel receipt is sealed as %s, the manifest cites %s", stored, want);
  json_decref(doc);
}

static void binding(ds_vctx *v, const indexed *recs, size_t n) {
  json_t *records = fdl_ds_v_records_of(v);
  int64_t total = 0;
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    int64_t idx;
    char where[DS_MAX_PATH + 32];
    snprintf(where, sizeof where, "%s:records[%zu]", v->capture.rel, i);
    if (!fdl_json_int(r, "index", &idx)) continue;
    indexed key = {idx, NULL};
    const indexed *hit = n ? bsearch(&key, recs, n, sizeof key, cmp_indexed) : NULL;
    if (!hit) {
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-1", where,
                          "capture record %" PRId64 " has no panel record", idx);
      continue;
    }
    const json_t *p = hit->rec;
    if (!fdl_py_equal(json_object_get(r, "token_ids_json_sha256"),
                      json_object_get(p, "token_ids_json_sha256")))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-2", where,
                          "record %" PRId64 " token digest differs between capture and panel", idx);
    const json_t *a = json_object_get(r, "attention_mask_sha256"),
                 *b = json_object_get(p, "attention_mask_sha256");
    if (a && b && !json_is_null(a) && !json_is_null(b) && !fdl_py_equal(a, b))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-3", where,
                          "record %" PRId64 " attention_mask_sha256 differs", idx);
    if (b && !json_is_null(b) && (!a || json_is_null(a)))
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "REC-5", where,
                          "record %" PRId64 " has no attention_mask_sha256 but the panel ships "
                          "a mask",
                          idx);
    const json_t *sr = json_object_get(r, "scored_rows"),
                 *pp = json_object_get(p, "prediction_positions");
    if (!fdl_py_equal(sr, pp)) {
      char s1[32], s2[32];
      fdl_py_shown(sr, s1, sizeof s1);
      fdl_py_shown(pp, s2, sizeof s2);
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-4", where,
                          "record %" PRId64 " scored_rows %s != panel prediction_positions %s", idx,
                          s1, s2);
    }
    if (json_is_integer(sr)) total += (int64_t)json_integer_value(sr);
  }
  const json_t *panel = fdl_json_obj(v->m, "panel");
  if (fdl_py_truthy(json_object_get(fdl_json_obj(v->m, "coverage"), "complete"))) {
    int64_t want;
    if (!fdl_json_int(panel, "scored_positions_total", &want) || want != total)
      fdl_ds_report_error(v->rep, FDL_DSC_PANEL_BINDING, "BIND-5", FDL_DS_MANIFEST_NAME,
                          "sum(scored_rows) %" PRId64 " != panel.scored_positions_total", total);
  }
  fdl_ds_report_check(v->rep, "panel.binding");
}

void fdl_ds_v_panel(ds_vctx *v) {
  if (!v->panel.doc) return;
  size_t n;
  indexed *recs = sorted_records(fdl_json_arr(v->panel.doc, "records"), &n);
  if (!fdl_ds_v_got(v, recs)) return;
  aggregate(v, recs, n);
  if (v->payload) {
    token_files(v, recs, n);
    mask_files(v, recs, n);
  }
  mirror(v, recs, n);
  receipt(v);
  const char *pr = v->mf.panel.panel_receipt_sha256, *sh = v->mf.panel.suite_token_hash_sha256;
  if (pr && pr[0] && sh && !strcmp(pr, sh))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "PANEL-D2", FDL_DS_MANIFEST_NAME,
                        "panel_receipt_sha256 reused as the token identity");
  size_t i;
  json_t *r;
  json_array_foreach(fdl_json_arr(v->panel.doc, "records"), i, r) {
    if (!fdl_json_int(r, "index", NULL))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "REC-1", v->panel.rel,
                          "panel record %zu without an integer index", i);
  }
  if (v->capture.doc) binding(v, recs, n);
  free(recs);
}
