/* validate_rules.c - head (§8.2), determinism (§10.2), role (§3), scope (§11), lane (§9.1) and
 * remap (§7.5) rules. head.json is also compared with the manifest's head block (fidelis rule
 * "HEAD-JSON": the reference never cross-checks them, so a head.json could name another head),
 * and the runtime document's lane and identities with the manifest's (rule "9.1"). */
#include <string.h>

#include "fidelis/vocab.h"
#include "base/quote.h"
#include "dataset/validate.h"
#include "base/path.h"

static bool is(const char *s, const char *want) {
  return s && !strcmp(s, want);
}

/* ---- head -------------------------------------------------------------------------------- */

static void head_json_mirror(ds_vctx *v, const json_t *head) {
  static const char *const KEYS[] = {"present",
                                     "file",
                                     "tensor_key",
                                     "compat_tensor_key",
                                     "shape",
                                     "dtype",
                                     "bias",
                                     "file_sha256",
                                     "raw_tensor_sha256",
                                     "tensor_content_sha256",
                                     "quantized",
                                     "bits",
                                     "source",
                                     "applied_in_capture",
                                     "final_norm",
                                     "equality_receipt",
                                     NULL};
  fdl_ds_v_mirror(v, head, v->head.doc, KEYS, FDL_DSC_HEAD_MISMATCH, "HEAD-JSON", v->head.rel,
                  "%s differs between head.json and the manifest's head block");
}

void fdl_ds_v_head(ds_vctx *v) {
  const json_t *head = fdl_json_obj(v->m, "head");
  const fdl_ds_manifest *m = &v->mf;
  const char *W = FDL_DS_MANIFEST_NAME;
  if (m->capture.form == FDL_FORM_HIDDEN) {
    if (fdl_py_truthy(json_object_get(head, "applied_in_capture")))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "HEAD-5", W,
                          "hidden form declares the cut BEFORE the head, but "
                          "head.applied_in_capture is true");
    if (!fdl_py_truthy(json_object_get(head, "tensor_content_sha256")))
      fdl_ds_report_error(v->rep, FDL_DSC_HEAD_MISMATCH, "HEAD-4", W,
                          "a hidden-form dataset with a null head content digest cannot be "
                          "scored through anyone's head; there is no override");
  }
  if (m->capture.form == FDL_FORM_LOGIT && fdl_py_truthy(json_object_get(head, "present")) &&
      json_is_false(json_object_get(head, "applied_in_capture")))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "4.2", W,
                        "logit form must declare head.applied_in_capture true");
  const char *raw = m->head.raw_tensor_sha256, *content = m->head.tensor_content_sha256,
             *file = m->head.file_sha256;
  if (raw && raw[0] && content && content[0] && strcmp(raw, content))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "HEAD-IDENT", W,
                        "raw_tensor_sha256 is a REQUIRED byte-equal alias of "
                        "tensor_content_sha256; they differ");
  if (file && file[0] && content && content[0] && !strcmp(file, content))
    fdl_ds_report_warn(v->rep, FDL_DSC_SCHEMA_INVALID, "HEAD-IDENT/O-6", W,
                       "head file_sha256 equals tensor_content_sha256; a container digest and a "
                       "content digest coinciding is almost certainly one convention pasted "
                       "twice");
  const json_t *fn = fdl_json_obj(head, "final_norm");
  if (is(m->capture.semantic_point, "after_final_rmsnorm_before_lm_head") &&
      fdl_py_truthy(json_object_get(fn, "applied_at_replay")))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "HEAD-7", W,
                        "the capture is already after the final norm; replay applies the head "
                        "only");
  if (m->dataset.role == FDL_ROLE_ROOT && !fdl_py_truthy(json_object_get(head, "present")))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "HEAD-6", W,
                        "a root that ships no head cannot be replayed against");
  head_json_mirror(v, head);
  fdl_ds_report_check(v->rep, "head");
}

/* ---- determinism ------------------------------------------------------------------------- */

/* Returns nonzero when an entry could not be recorded (out of memory): the DET-D2 check would
 * then miss a container digest, so the caller fails the run rather than pass it silently. */
static int collect_containers(const json_t *node, json_t *set, int depth) {
  static const char *const KEYS[] = {
      "file_sha256",    "sha256", "manifest_file_sha256", "panel_file_sha256", "checksums_sha256",
      "receipt_sha256", NULL};
  int lost = 0;
  if (depth > 2 * 64) return 0;
  if (json_is_object(node)) {
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)node, key, val) {
      if (json_is_string(val) && fdl_vocab_find(KEYS, key) >= 0)
        lost |= json_object_set(set, json_string_value(val), json_true());
      lost |= collect_containers(val, set, depth + 1);
    }
  } else if (json_is_array(node)) {
    size_t i;
    json_t *val;
    json_array_foreach(node, i, val) lost |= collect_containers(val, set, depth + 1);
  }
  return lost;
}

void fdl_ds_v_determinism(ds_vctx *v) {
  const json_t *det = fdl_json_obj(v->m, "determinism");
  const char *W = FDL_DS_MANIFEST_NAME;
  const char *kind = fdl_json_str(det, "evidence_kind");
  const json_t *hashes = fdl_json_arr(det, "evidence_hashes");
  json_t *distinct = json_object();
  if (!fdl_ds_v_got(v, distinct)) return;
  size_t i;
  json_t *h;
  int lost = 0; /* out of memory: the distinct count would be short */
  json_array_foreach(hashes, i, h) {
    if (json_is_string(h)) lost |= json_object_set(distinct, json_string_value(h), json_true());
  }
  if (lost) {
    json_decref(distinct);
    v->rep->oom = FDL_NOMEM;
    return;
  }
  size_t nd = json_object_size(distinct);
  json_decref(distinct);
  const json_t *dc = json_object_get(det, "distinct_evidence_hash_count");
  if (dc && !json_is_null(dc) && !(json_is_integer(dc) && (size_t)json_integer_value(dc) == nd))
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "DET-D1", W,
                        "distinct_evidence_hash_count != %zu distinct hashes", nd);
  int64_t runs = 0;
  (void)fdl_json_int(det, "run_count", &runs);
  if (fdl_py_truthy(json_object_get(det, "identical_across_runs"))) {
    bool content = fdl_vocab_find(fdl_content_evidence_names, kind) >= 0;
    char q[FDL_QUOTE_CAP];
    if (!content)
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "DET-D1", W,
                          "identical_across_runs requires content-level evidence, not %s",
                          kind ? fdl_quote_str(kind, q, sizeof q) : "None");
    if (runs < 2)
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "DET-D1", W,
                          "identical_across_runs requires run_count >= 2");
    if (nd != 1)
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "DET-D1", W,
                          "identical_across_runs with %zu distinct evidence hashes", nd);
  }
  json_t *containers = json_object();
  if (!fdl_ds_v_got(v, containers)) return;
  if (collect_containers(v->m, containers, 0)) {
    json_decref(containers);
    v->rep->oom = FDL_NOMEM;
    return;
  }
  json_array_foreach(hashes, i, h) {
    if (json_is_string(h) && json_object_get(containers, json_string_value(h)))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "DET-D2", W,
                          "evidence hash %.12s is a container (file) digest; file digests differ "
                          "between bitwise-identical runs",
                          json_string_value(h));
  }
  json_decref(containers);
  const char *pr = v->mf.panel.panel_receipt_sha256;
  json_array_foreach(hashes, i, h) {
    if (pr && json_is_string(h) && !strcmp(pr, json_string_value(h))) {
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "DET-D3", W,
                          "panel_receipt_sha256 may never be determinism evidence");
      break;
    }
  }
  if (runs < 5) {
    bool declared = false;
    json_array_foreach(fdl_json_arr(v->m, "disclosures"), i, h) declared |=
        is(fdl_json_str(h, "code"), "reduced_run_count");
    if (!declared)
      fdl_ds_report_warn(v->rep, FDL_DSC_REDUCED_RUN_COUNT, "DET-D4", W,
                         "run_count %lld < 5 and no reduced_run_count disclosure is present; a "
                         "published dataset carries one",
                         (long long)runs);
  }
  fdl_ds_report_check(v->rep, "determinism");
}

/* ---- role -------------------------------------------------------------------------------- */

static void validation_report(ds_vctx *v) {
  json_t *doc = fdl_ds_v_load_sub(v, FDL_DS_VALIDATION_FILE, "VALIDATION", NULL, true);
  if (!doc) return;
  if (!is(fdl_json_str(doc, "schema"), FDL_DS_VALIDATION_SCHEMA))
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_SCHEMA, "VALIDATION", FDL_DS_VALIDATION_FILE,
                        "schema is not '%s'", FDL_DS_VALIDATION_SCHEMA);
  bool ok, present;
  /* A seal that cannot be computed (out of memory) fails the run; it is not a seal that
   * mismatches, which would report tampering that did not happen. */
  fdl_status s = fdl_ds_seal_ok(doc, "receipt_sha256", &ok, &present, NULL);
  if (s == FDL_NOMEM)
    v->rep->oom = FDL_NOMEM;
  else if (s != FDL_OK || !ok)
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(g)", FDL_DS_VALIDATION_FILE,
                        "receipt_sha256 does not recompute");
  json_decref(doc);
}

void fdl_ds_v_role(ds_vctx *v) {
  const json_t *dataset = fdl_json_obj(v->m, "dataset"), *head = fdl_json_obj(v->m, "head");
  fdl_role role = v->mf.dataset.role;
  const char *W = FDL_DS_MANIFEST_NAME;
  bool sealed = is(v->mf.dataset.structural_status, "sealed");
  if (v->payload) {
    static const struct {
      const char *rel, *why;
    } NEEDED[] = {{FDL_DS_VALIDATION_FILE, "the validator's own verdict, sealed with the dataset"},
                  {"README.md", "the dataset card carrying x_fidelity"}};
    for (size_t i = 0; i < 2; i++) {
      if (fdl_ds_kind_at(v->rootfd, NEEDED[i].rel) == DS_REGULAR) continue;
      (sealed ? fdl_ds_report_error : fdl_ds_report_warn)(v->rep, FDL_DSC_MISSING_FILE, "3",
                                                          NEEDED[i].rel, "%s is missing (%s)",
                                                          NEEDED[i].rel, NEEDED[i].why);
    }
    validation_report(v);
  }
  if (role == FDL_ROLE_ROOT) {
    bool native = is(v->mf.scope.policy, "native");
    size_t i;
    json_t *a;
    json_array_foreach(fdl_json_arr(fdl_json_obj(v->m, "scope"), "assignments"), i, a) native &=
        is(fdl_json_str(a, "treatment"), "native");
    if (!native)
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "ROOT-1", W,
                          "a root declares scope.policy native with every tensor class native; a "
                          "quantized-weight capture is a quant dataset even if its author calls "
                          "it a reference");
    if (fdl_py_truthy(json_object_get(head, "quantized")))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "ROOT-1", W,
                          "a root's head is not quantized");
    const json_t *bc = json_object_get(dataset, "base_capture");
    if (bc && !json_is_null(bc))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "3", W,
                          "a root's base_capture must be null");
    if (v->mf.capture.lossy_codec)
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "3", W,
                          "a root's lossy_codec must be null");
    const char *hf = v->mf.head.file;
    char q[FDL_QUOTE_CAP];
    if (v->payload && hf && hf[0] && fdl_relpath_ok(hf, strlen(hf), false) &&
        fdl_ds_kind_at(v->rootfd, hf) != DS_REGULAR)
      fdl_ds_report_warn(v->rep, FDL_DSC_MISSING_FILE, "3", hf,
                         "root declares head.file %s but it is not present",
                         fdl_quote_str(hf, q, sizeof q));
  }
  if (role == FDL_ROLE_DERIVED) {
    const json_t *bc = json_object_get(dataset, "base_capture");
    if (!bc || json_is_null(bc))
      fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "3", W,
                          "a derived dataset must name its base_capture");
  }
  fdl_ds_report_check(v->rep, "role");
}

/* ---- scope ------------------------------------------------------------------------------- */

void fdl_ds_v_scope(ds_vctx *v) {
  const json_t *assign = fdl_json_arr(fdl_json_obj(v->m, "scope"), "assignments");
  static const char *const ALLOWED[] = {"tensor_class", "treatment", "format", "bits_per_weight",
                                        "layer_range",  "note",      NULL};
  const char *W = FDL_DS_MANIFEST_NAME;
  size_t n = json_array_size(assign);
  bool embed = false, lm_head = false, attn = false, mlp = false;
  for (size_t i = 0; i < n; i++) {
    const json_t *a = json_array_get(assign, i);
    const json_t *cls = json_object_get(a, "tensor_class"), *lr = json_object_get(a, "layer_range");
    /* A pair is reported once, at its second occurrence. */
    size_t count = 0, first = i;
    for (size_t k = 0; k < n; k++) {
      const json_t *b = json_array_get(assign, k);
      if (fdl_py_equal(cls, json_object_get(b, "tensor_class")) &&
          fdl_py_equal(lr, json_object_get(b, "layer_range"))) {
        if (!count) first = k;
        count++;
      }
    }
    if (count > 1 && first == i) {
      char c1[96], c2[64];
      fdl_py_shown(cls, c1, sizeof c1);
      fdl_py_shown(lr, c2, sizeof c2);
      fdl_ds_report_error(v->rep, FDL_DSC_SCOPE_DUPLICATE_ASSIGNMENT, "SCOPE-004", W,
                          "scope.assignments has %zu rows for (tensor_class=%s, layer_range=%s); "
                          "the registry admits one row per class and layer_range",
                          count, c1, c2);
    }
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)a, key, val) {
      char q[FDL_QUOTE_CAP];
      if (fdl_vocab_find(ALLOWED, key) < 0)
        fdl_ds_report_error(v->rep, FDL_DSC_SCOPE_ASSIGNMENT_KEYS, "SCOPE-004", W,
                            "scope assignment %zu carries key %s, which the registry schema "
                            "does not admit",
                            i, fdl_quote_str(key, q, sizeof q));
    }
    if (!json_is_string(cls)) continue;
    const char *c = json_string_value(cls);
    embed |= is(c, "embed_tokens");
    lm_head |= is(c, "lm_head");
    attn |= !strncmp(c, "attn.", 5);
    mlp |= !strncmp(c, "mlp.", 4) || !strncmp(c, "moe.", 4);
  }
  if (!embed)
    fdl_ds_report_error(v->rep, FDL_DSC_SCOPE_COVERAGE, "SCOPE-004", W,
                        "scope.assignments does not cover embed_tokens");
  if (!lm_head)
    fdl_ds_report_error(v->rep, FDL_DSC_SCOPE_COVERAGE, "SCOPE-004", W,
                        "scope.assignments does not cover lm_head");
  if (!attn)
    fdl_ds_report_error(v->rep, FDL_DSC_SCOPE_COVERAGE, "SCOPE-004", W,
                        "scope.assignments covers no attention class");
  if (!mlp)
    fdl_ds_report_error(v->rep, FDL_DSC_SCOPE_COVERAGE, "SCOPE-004", W,
                        "scope.assignments covers no mlp/moe class");
}

/* ---- lane -------------------------------------------------------------------------------- */

void fdl_ds_v_lane(ds_vctx *v) {
  const json_t *rt = fdl_json_obj(v->m, "runtime");
  const char *lane = fdl_json_str(rt, "lane");
  bool ok = fdl_vocab_find(fdl_lane_names, lane) >= 0;
  char q[FDL_QUOTE_CAP];
  if (!ok)
    fdl_ds_report_error(v->rep, FDL_DSC_SCHEMA_INVALID, "9.3", FDL_DS_MANIFEST_NAME,
                        "lane %s is not a registry lane",
                        lane ? fdl_quote_str(lane, q, sizeof q) : "None");
  static const char *const COPIED[] = {"lane", "lane_identity_sha256", "stack_fingerprint_sha256",
                                       NULL};
  fdl_ds_v_mirror(v, rt, v->runtime.doc, COPIED, FDL_DSC_SCHEMA_INVALID, "9.1", v->runtime.rel,
                  "runtime.%s differs between the manifest and the runtime document");
}

/* ---- remap ------------------------------------------------------------------------------- */

void fdl_ds_v_remap(ds_vctx *v) {
  const char *rf = v->mf.panel.remap_file;
  if (!rf || !rf[0]) return;
  json_t *remap = fdl_ds_v_load_sub(v, rf, "REMAP", NULL, false);
  if (!remap) return;
  bool ok, present;
  fdl_status s = fdl_ds_seal_ok(remap, "receipt_sha256", &ok, &present, NULL);
  if (s == FDL_NOMEM)
    v->rep->oom = FDL_NOMEM; /* as in validation_report: not a mismatch */
  else if (s != FDL_OK || !ok)
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(g)", rf,
                        present ? "receipt_sha256 does not recompute" : "no receipt_sha256");
  const json_t *entries = fdl_json_obj(remap, "entries");
  const char *digest;
  json_t *target;
  json_object_foreach((json_t *)entries, digest, target) {
    const char *t = json_is_string(target) ? json_string_value(target) : NULL;
    if (!t || !fdl_relpath_ok(t, strlen(t), false)) {
      fdl_ds_report_error(v->rep, FDL_DSC_REMAP_INVALID, "REMAP-2", rf,
                          "remap target for %.12s is not a relative path inside the root", digest);
      continue;
    }
    if (!v->payload) continue;
    char hex[DS_HEX_LEN + 1];
    if (fdl_ds_kind_at(v->rootfd, t) != DS_REGULAR) {
      fdl_ds_report_error(v->rep, FDL_DSC_REMAP_INVALID, "REMAP-2", t, "remap target %s is missing",
                          t);
    } else if (fdl_ds_sha256_at(v->rootfd, t, hex, NULL, NULL) != FDL_OK || strcmp(hex, digest)) {
      fdl_ds_report_error(v->rep, FDL_DSC_REMAP_INVALID, "REMAP-2", t,
                          "remap target %s does not hash to its key %.12s", t, digest);
    }
  }
  const char *for_file = fdl_json_str(remap, "for_receipt_file");
  if (for_file) {
    char rel[DS_MAX_PATH], dir[DS_MAX_PATH];
    fdl_dirname(rf, dir, sizeof dir);
    bool resolved = !strncmp(for_file, "panel/", 6)
                        ? fdl_ds_join_norm("", for_file, rel, sizeof rel)
                        : fdl_ds_join_norm(dir, for_file, rel, sizeof rel);
    json_t *sealed = resolved ? fdl_ds_v_load_sub(v, rel, "REMAP-3", NULL, false) : NULL;
    if (!resolved)
      fdl_ds_report_error(v->rep, FDL_DSC_REMAP_INVALID, "REMAP-3", rf,
                          "for_receipt_file resolves outside the dataset root");
    if (sealed) {
      s = fdl_ds_seal_ok(sealed, "receipt_sha256", &ok, &present, NULL);
      if (s == FDL_NOMEM)
        v->rep->oom = FDL_NOMEM; /* as in validation_report: not a mismatch */
      else if (s != FDL_OK || !ok)
        fdl_ds_report_error(v->rep, FDL_DSC_REMAP_INVALID, "REMAP-3", rel,
                            "the copied sealed receipt no longer verifies; it must be verbatim");
      size_t i, missing = 0;
      json_t *a;
      json_array_foreach(fdl_json_arr(sealed, "artifacts"), i, a) {
        const char *d = fdl_json_str(a, "sha256");
        if (d && d[0] && !json_object_get(entries, d)) missing++;
      }
      if (missing)
        fdl_ds_report_error(v->rep, FDL_DSC_REMAP_INVALID, "REMAP-1", rf,
                            "%zu sealed artifact digest(s) have no remap entry", missing);
      json_decref(sealed);
    }
  }
  json_decref(remap);
  fdl_ds_report_check(v->rep, "remap");
}
