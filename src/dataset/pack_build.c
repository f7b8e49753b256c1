/* pack_build.c - the five documents of a packed dataset, with every key the reference writes.
 *
 * Digests the seal chain fills later (file digests of sub-documents, checksums.txt) start as
 * "0"*64, as the reference's placeholders do; fdl_ds_write_sealed replaces them in order.
 *
 * Divisions: helpers; panel; capture; head; runtime; the manifest. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/vocab.h"
#include "base/quote.h"
#include "dataset/pack.h"
#include "json/json.h"
#include "base/sys.h"

#define ZERO64 "0000000000000000000000000000000000000000000000000000000000000000"
#define PK_POLICY FDL_DS_WINDOW_POLICY_ALL

/* ---- helpers ----------------------------------------------------------------------------- */

/* o[key] of the meta block (a new reference), or null. */
static json_t *meta_val(const pk_ctx *c, const char *block, const char *key) {
  const json_t *o = block ? fdl_json_obj(c->meta, block) : c->meta;
  const json_t *v = json_object_get(o, key);
  return v ? json_deep_copy(v) : json_null();
}

static fdl_status built(pk_ctx *c, json_t *doc, const json_error_t *je, const char *what,
                        fdl_err *err) {
  if (doc) return FDL_OK;
  /* jansson also fails on a NULL member or a string that is not UTF-8; only its own out-of-memory
   * code is a memory fault. */
  if (je && json_error_code(je) != json_error_out_of_memory)
    return fdl_pk_refuse(c, err, FDL_REF_BAD_INPUT, FDL_INVALID, "building %s: %s", what, je->text);
  return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "building %s: %s", what,
                       je ? je->text : "out of memory");
}

static bool hidden_form(const pk_ctx *c) {
  return !strcmp(c->form, "hidden");
}

/* FORM-1: lossless only if the stored dtype is not narrower than the forward's. */
static bool dtype_lossless(const pk_ctx *c) {
  if (c->narrowed) return false;
  if (c->forward == FDL_DTYPE_COUNT || c->forward == c->stored) return true;
  if (c->stored == FDL_DTYPE_F64) return true;
  if (c->stored == FDL_DTYPE_F32) return c->forward != FDL_DTYPE_F64;
  return false; /* BF16 vs F16 lose different bits; 16-bit vs a wider forward loses some */
}

static const char *semantic_point(const pk_ctx *c) {
  if (hidden_form(c)) return "after_final_rmsnorm_before_lm_head";
  return c->semantic_point ? c->semantic_point : "lm_head_output_before_sampling";
}

static json_t *scoring_window(const pk_ctx *c) {
  const json_t *sw = fdl_json_obj(fdl_json_obj(c->meta, "panel"), "scoring_window");
  if (!sw) sw = fdl_json_obj(fdl_json_obj(c->header, "header"), "scoring_window");
  if (sw) {
    json_t *w = json_deep_copy(sw);
    if (w && !json_object_get(w, "score_from"))
      json_object_set_new(w, "score_from", json_integer(0));
    if (w && !json_object_get(w, "windowed"))
      json_object_set_new(w, "windowed", json_boolean(c->score_from > 0));
    if (w && !json_object_get(w, "min_left_context_tokens"))
      json_object_set_new(w, "min_left_context_tokens",
                          json_integer((json_int_t)(c->score_from + 1)));
    if (w && !json_object_get(w, "policy"))
      json_object_set_new(w, "policy", json_string(PK_POLICY));
    return w;
  }
  return json_pack("{s:i, s:b, s:i, s:I, s:s}", "score_from", 0, "windowed", 0,
                   "min_left_context_tokens", 1, "dropped_positions_total", (json_int_t)0, "policy",
                   PK_POLICY);
}

static json_t *tokenizer(const pk_ctx *c) {
  json_t *t = json_deep_copy(fdl_json_obj(c->meta, "tokenizer"));
  /* the files the panel's tokenizer was read from, when the meta does not list them */
  const json_t *files =
      json_object_get(fdl_json_obj(fdl_json_obj(c->header, "header"), "tokenizer"), "files");
  if (t && files && !json_object_get(t, "files"))
    json_object_set_new(t, "files", json_deep_copy(files));
  if (t && !json_object_get(t, "vocab_size"))
    json_object_set_new(t, "vocab_size", json_integer((json_int_t)c->vocab));
  static const char *const NULLABLE[] = {"repository", "revision", "add_special_tokens",
                                         "chat_template_applied", NULL};
  for (size_t i = 0; t && NULLABLE[i]; i++)
    if (!json_object_get(t, NULLABLE[i])) json_object_set_new(t, NULLABLE[i], json_null());
  return t;
}

static json_t *contamination(void) {
  return json_pack("{s:b, s:n, s:s, s:n}", "checked", 0, "hits", "method", "not established",
                   "receipt");
}

static json_t *coverage(const pk_ctx *c) {
  int64_t lo = -1, hi = -1;
  json_t *missing = json_array();
  for (size_t i = 0; missing && i < c->n; i++) {
    if (c->recs[i].present) {
      if (lo < 0) lo = c->recs[i].index;
      hi = c->recs[i].index;
    } else if (json_array_size(missing) < 8) {
      json_array_append_new(missing, json_integer((json_int_t)c->recs[i].index));
    }
  }
  bool complete = c->present == c->n;
  const char *subset = fdl_json_str(c->meta, "subset_detail");
  char auto_subset[128];
  snprintf(auto_subset, sizeof auto_subset,
           "%zu of %zu panel records present (fidelis pack --allow-partial)", c->present, c->n);
  return json_pack("{s:I, s:I, s:b, s:[I,I], s:n, s:o, s:o}", "declared_records", (json_int_t)c->n,
                   "present_records", (json_int_t)c->present, "complete", complete, "index_range",
                   (json_int_t)(lo < 0 ? 0 : lo), (json_int_t)(hi < 0 ? 0 : hi), "shard_of",
                   "subset_detail",
                   complete ? json_null() : json_string(subset ? subset : auto_subset),
                   "missing_indices_sample", missing);
}

/* ---- panel ------------------------------------------------------------------------------- */

static json_t *panel_record(const pk_ctx *c, const pk_record *r) {
  char tok[64], mask[64];
  snprintf(tok, sizeof tok, "panel/tokens/context-%04" PRId64 ".json", r->index);
  snprintf(mask, sizeof mask, "panel/masks/context-%04" PRId64 ".npy", r->index);
  size_t head_n = r->ntok < 16 ? r->ntok : 16;
  const json_t *l = r->line;
  json_error_t je;
  return json_pack_ex(
      &je, 0,
      "{s:I, s:I, s:I, s:s?, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:s?, s:s?, s:s?, s:s?, s:s?, "
      "s:s?, s:s?, s:s?, s:s?, s:b}",
      "index", (json_int_t)r->index, "context_index", (json_int_t)r->index, "window_index",
      (json_int_t)r->index, "window_id", fdl_json_str(l, "window_id"), "token_file", tok,
      "token_ids_json_sha256", r->tok_hex, "token_ids_sha256_legacy", r->tok_legacy,
      "token_ids_first16", fdl_json_append_ints(json_array(), r->tokens, head_n, sizeof *r->tokens),
      "token_ids_last16",
      fdl_json_append_ints(json_array(), r->tokens + (r->ntok - head_n), head_n, sizeof *r->tokens),
      "num_tokens", (json_int_t)r->ntok, "prediction_positions", (json_int_t)r->scored,
      "attention_mask_file", c->masks ? mask : NULL, "attention_mask_sha256",
      c->masks ? r->mask_hex : NULL, "role", fdl_json_str(l, "role"), "domain",
      fdl_json_str(l, "domain"), "document_id", fdl_json_str(l, "document_id"),
      "allocation_stratum", fdl_json_str(l, "allocation_stratum"), "semantic_class",
      fdl_json_str(l, "semantic_class"), "source_cluster_id", fdl_json_str(l, "source_cluster_id"),
      "partition", fdl_json_str(l, "partition"), "sentinel", 0);
}

static fdl_status panel_doc(pk_ctx *c, json_t **out, char *suite, char *legacy, fdl_err *err) {
  const char **hexes = fdl_calloc(c->n, sizeof *hexes);
  json_t *records = json_array();
  if (!hexes || !records) {
    free(hexes);
    json_decref(records);
    return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  }
  int64_t total = 0;
  for (size_t i = 0; i < c->n; i++) {
    hexes[i] = c->recs[i].tok_hex;
    total += c->recs[i].scored;
    json_t *r = panel_record(c, &c->recs[i]);
    if (!r || json_array_append_new(records, r) != 0) {
      free(hexes);
      json_decref(records);
      return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "building panel record %zu", i);
    }
  }
  fdl_status s = fdl_ds_suite_token_hash(hexes, c->n, false, suite, err);
  if (s == FDL_OK) s = fdl_ds_suite_token_hash(hexes, c->n, true, legacy, err);
  free(hexes);
  if (s != FDL_OK) {
    json_decref(records);
    return s;
  }
  const char *pid = c->panel_id, *name = c->panel_name;
  char default_name[256];
  snprintf(default_name, sizeof default_name, "token panel %s%s", pid ? "" : "of ",
           pid ? pid : c->dataset_id);
  json_error_t je;
  *out = json_pack_ex(
      &je, 0,
      "{s:s, s:i, s:s, s:s?, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:o, s:o, s:n, s:I, s:I, s:I, "
      "s:I, s:o, s:o, s:o, s:{}, s:o}",
      "schema", FDL_DS_PANEL_SCHEMA, "format_version", 1, "receipt_sha256", "", "panel_id", pid,
      "name", name ? name : default_name, "suite_token_hash_sha256", suite,
      "panel_token_sha256_legacy", legacy, "token_digest_algorithm", "per_record",
      "sha256(json.dumps(ids, separators=(',',':')).encode('utf-8'))", "aggregate",
      "sha256('\\n'.join(per_record_hex).encode('ascii'))", "legacy_per_record",
      "sha256(json.dumps(ids).encode('utf-8'))", "legacy_aggregate",
      "sha256(''.join(per_record_hex).encode('utf-8'))", "repository",
      meta_val(c, "panel", "repository"), "revision", meta_val(c, "panel", "revision"),
      "panel_receipt_sha256", "contexts", (json_int_t)c->n, "context_length",
      (json_int_t)c->context_length, "positions_per_context", (json_int_t)c->recs[0].scored,
      "scored_positions_total", (json_int_t)total, "scoring_window", scoring_window(c), "tokenizer",
      tokenizer(c), "contamination", contamination(), "strata", "records", records);
  return built(c, *out, &je, "panel/panel.json", err);
}

/* ---- capture ----------------------------------------------------------------------------- */

static json_t *capture_record(const pk_ctx *c, const pk_record *r) {
  bool hidden = hidden_form(c);
  char file[64];
  snprintf(file, sizeof file, "%s_%04" PRId64 ".safetensors", hidden ? "hidden" : "logits",
           r->index);
  const json_t *l = r->line;
  json_error_t je;
  return json_pack_ex(
      &je, 0,
      "{s:I, s:I, s:I, s:s?, s:s, s:s, s:s, s:[I,I], s:I, s:s, s:s, s:s, s:s, s:s, s:s?, s:I, "
      "s:I, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:n, s:n, s:b}",
      "index", (json_int_t)r->index, "context_index", (json_int_t)r->index, "window_index",
      (json_int_t)r->index, "window_id", fdl_json_str(l, "window_id"), "file", file, "key",
      hidden ? "hidden_states" : "logits", "dtype", fdl_dtype_name(c->stored), "shape",
      (json_int_t)r->scored, (json_int_t)c->width, "size_bytes", (json_int_t)r->size_bytes,
      "sha256", r->file_hex, "payload_sha256", r->payload_hex, "tensor_content_sha256",
      r->content_hex, "token_ids_json_sha256", r->tok_hex, "token_ids_sha256_legacy", r->tok_legacy,
      "attention_mask_sha256", c->masks ? r->mask_hex : NULL, "prediction_positions",
      (json_int_t)r->scored, "scored_rows", (json_int_t)r->scored, "role", fdl_json_str(l, "role"),
      "domain", fdl_json_str(l, "domain"), "document_id", fdl_json_str(l, "document_id"),
      "allocation_stratum", fdl_json_str(l, "allocation_stratum"), "semantic_class",
      fdl_json_str(l, "semantic_class"), "source_cluster_id", fdl_json_str(l, "source_cluster_id"),
      "elapsed_seconds", "request_id", "raw_chunks_retained", 0);
}

static fdl_status capture_doc(pk_ctx *c, json_t **out, fdl_err *err) {
  json_t *records = json_array();
  if (!records) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  int64_t first_rows = -1;
  for (size_t i = 0; i < c->n; i++) {
    if (!c->recs[i].present) continue;
    if (first_rows < 0) first_rows = c->recs[i].scored;
    json_t *r = capture_record(c, &c->recs[i]);
    if (!r || json_array_append_new(records, r) != 0) {
      json_decref(records);
      return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "building capture record %zu", i);
    }
  }
  json_error_t je;
  *out = json_pack_ex(
      &je, 0,
      "{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:o, s:I, s:I, s:I, s:I, s:I, s:s, "
      "s:s, s:s, s:o, s:o}",
      "schema", FDL_DS_CAPTURE_SCHEMA, "format_version", 1, "receipt_sha256", "", "created_utc",
      c->created, "run_name", c->run_name ? c->run_name : c->dataset_id, "form", c->form,
      "semantic_point", semantic_point(c), "tensor_key",
      hidden_form(c) ? "hidden_states" : "logits", "dtype", fdl_dtype_name(c->stored),
      "dtype_lossless", dtype_lossless(c), "hidden_width",
      hidden_form(c) ? json_integer((json_int_t)c->width) : json_null(), "vocab_size",
      (json_int_t)c->vocab, "context_length", (json_int_t)c->context_length,
      "scored_rows_per_context", (json_int_t)(first_rows < 0 ? 0 : first_rows), "total_scored_rows",
      (json_int_t)c->total_rows, "total_size_bytes", (json_int_t)c->total_size,
      "capture_content_digest", c->content_digest, "runtime_manifest",
      "../runtime/capture-runtime.json", "runtime_manifest_sha256", ZERO64, "coverage", coverage(c),
      "records", records);
  return built(c, *out, &je, "capture/manifest.json", err);
}

/* ---- head -------------------------------------------------------------------------------- */

static bool head_quantized(const pk_ctx *c, const json_t *scope) {
  const json_t *q = json_object_get(fdl_json_obj(c->meta, "head"), "quantized");
  if (json_is_boolean(q)) return json_is_true(q);
  const char *hp = fdl_json_str(scope, "head_policy");
  if (hp && !strcmp(hp, "quantized")) return true;
  size_t i;
  json_t *a;
  json_array_foreach(fdl_json_arr(scope, "assignments"), i, a) {
    const char *cls = fdl_json_str(a, "tensor_class"), *tr = fdl_json_str(a, "treatment");
    if (cls && tr && !strcmp(cls, "lm_head") && !strcmp(tr, "quantized")) return true;
  }
  return false;
}

/* The head identity; as_block gives the manifest's head block instead of head/head.json. */
static json_t *head_obj(const pk_ctx *c, const json_t *scope, bool as_block) {
  const json_t *mh = fdl_json_obj(c->meta, "head");
  bool quantized = head_quantized(c, scope);
  const char *source = fdl_json_str(mh, "source");
  if (!source) source = quantized ? "artifact_dequantized" : "native";
  const json_t *bits_v = json_object_get(mh, "bits");
  json_t *bits = bits_v      ? json_deep_copy(bits_v)
                 : quantized ? json_null()
                             : json_integer(!strcmp(c->head.dtype, "F32") ? 32 : 16);
  const char *content = c->head.content_hex[0] ? c->head.content_hex : NULL;
  const char *file_hex = c->head.file_hex[0] ? c->head.file_hex : NULL;
  json_error_t je;
  json_t *h = json_pack_ex(
      &je, 0,
      "{s:b, s:s?, s:s, s:s, s:[I,I], s:s, s:n, s:s?, s:s?, s:s?, s:b, s:o, s:s, s:b, "
      "s:{s:b, s:b, s:n, s:n, s:n, s:n, s:n, s:n}, s:n}",
      "present", c->head.present, "file", c->head.present ? "head/weight.safetensors" : NULL,
      "tensor_key", "lm_head.weight", "compat_tensor_key", "weight", "shape",
      (json_int_t)c->head.shape[0], (json_int_t)c->head.shape[1], "dtype", c->head.dtype, "bias",
      "file_sha256", file_hex, "raw_tensor_sha256", content, "tensor_content_sha256", content,
      "quantized", quantized, "bits", bits, "source", source, "applied_in_capture", !hidden_form(c),
      "final_norm", "applied_at_replay", 0, "applied_in_capture", 1, "dtype", "file", "file_sha256",
      "shape", "tensor_content_sha256", "tensor_key", "equality_receipt");
  if (!h) return NULL;
  int bad = 0;
  if (as_block) {
    bad |= json_object_set_new(h, "head_json", json_string("head/head.json"));
  } else {
    bad |= json_object_set_new(h, "schema", json_string(FDL_DS_HEAD_SCHEMA));
    bad |= json_object_set_new(h, "format_version", json_integer(1));
    bad |= json_object_set_new(h, "receipt_sha256", json_string(""));
    bad |= json_object_set_new(
        h, "note",
        json_string(hidden_form(c)
                        ? "the head this capture's own forward held; hidden states are replayed "
                          "through it alone (no bias, no final norm at replay)"
                        : "the head this capture's own forward applied to produce its logits"));
  }
  if (bad) {
    json_decref(h);
    return NULL;
  }
  return h;
}

/* ---- runtime ----------------------------------------------------------------------------- */

static fdl_status stack_fingerprint(pk_ctx *c, json_t **fp, char *hex, fdl_err *err) {
  const char *np = fdl_json_str(c->meta, "numeric_policy");
  json_t *dtypes = fdl_json_obj(c->meta, "dtypes") ? json_deep_copy(fdl_json_obj(c->meta, "dtypes"))
                                                   : json_object();
  json_error_t je;
  *fp = json_pack_ex(&je, 0, "{s:s, s:s, s:s, s:s, s:s?, s:o, s:s}", "schema", FDL_DS_STACK_SCHEMA,
                     "engine", c->engine_name, "engine_version", c->engine_version, "device",
                     c->device, "device_name", c->device_name, "dtypes", dtypes, "numeric_policy",
                     np ? np : "not recorded by the producer");
  fdl_status s = built(c, *fp, &je, "stack fingerprint", err);
  if (s != FDL_OK) return s;
  /* Compact sorted-key JSON, ASCII: the reference recipe for this digest. */
  fdl_buf b;
  fdl_buf_init(&b, 0);
  s = fdl_json_dump(*fp, FDL_JSON_ASCII, &b, err);
  if (s == FDL_OK) s = fdl_sha256_buf_hex(b.data, b.len, hex, err);
  fdl_buf_free(&b);
  return s;
}

static fdl_status lane_identity(pk_ctx *c, char *hex, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_buf_printf(&b, "%s|%s %s|%s", c->lane, c->engine_name, c->engine_version,
                 c->device_name ? c->device_name : c->device);
  fdl_status s = fdl_buf_status(&b) == FDL_OK ? fdl_sha256_buf_hex(b.data, b.len, hex, err)
                                              : fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_buf_free(&b);
  return s;
}

static fdl_status runtime_doc(pk_ctx *c, json_t **out, char *lane_hex, char *stack_hex,
                              fdl_err *err) {
  json_t *fp = NULL;
  fdl_status s = stack_fingerprint(c, &fp, stack_hex, err);
  if (s == FDL_OK) s = lane_identity(c, lane_hex, err);
  if (s != FDL_OK) {
    json_decref(fp); /* built, then its digest failed (out of memory) */
    return s;
  }
  const json_t *w = fdl_json_obj(c->meta, "weights");
  const json_t *mrev = json_object_get(w, "model_revision");
  json_t *sources = fdl_json_obj(c->meta, "source_files")
                        ? json_deep_copy(fdl_json_obj(c->meta, "source_files"))
                        : json_object();
  char wraps[256], version[64];
  snprintf(wraps, sizeof wraps, "%s %s", c->engine_name, c->engine_version);
  snprintf(version, sizeof version, "fidelis-pack/%s", fdl_version());
  json_error_t je;
  *out = json_pack_ex(
      &je, 0,
      "{s:s, s:i, s:s, s:s, s:b, s:s, s:[s,s,s,s], s:o, s:s, s:{s:n, s:n, s:n}, s:{}, s:o, "
      "s:{s:n, s:n, s:s, s:[s], s:n, s:s, s:o}, s:{s:o, s:o, s:o, s:o, s:n, s:[]}, s:[]}",
      "schema", FDL_DS_RUNTIME_SCHEMA, "format_version", 1, "receipt_sha256", "", "lane", c->lane,
      "lane_inferred", 0, "lane_identity_sha256", lane_hex, "lane_identity_inputs", "lane",
      "engine_name", "engine_version", "device_name", "stack_fingerprint", fp,
      "stack_fingerprint_sha256", stack_hex, "container", "image_digest", "image_reference",
      "image_repository_digest", "runtime_environment", "source_files", sources, "capture_tool",
      "file", "sha256", "version", version, "wraps", wraps, "schedule", "mechanism",
      "per-record tensors dumped by the engine named in wraps, packed, checked (shape, "
      "finiteness, panel binding) and sealed by fidelis pack",
      "weights_decode", meta_val(c, NULL, "weights_decode"), "weights", "repository",
      meta_val(c, "weights", "repository"), "revision", meta_val(c, "weights", "revision"),
      "model_revision", mrev ? json_deep_copy(mrev) : meta_val(c, "weights", "revision"),
      "checkpoint_identity_sha256", meta_val(c, "weights", "checkpoint_identity_sha256"),
      "checkpoint_identity_algorithm", "checkpoint_files", "upstream_receipts");
  return built(c, *out, &je, "runtime/capture-runtime.json", err);
}

/* ---- the manifest ------------------------------------------------------------------------ */

static json_t *native_scope(void) {
  json_t *a = json_array();
  for (size_t i = 0; a && fdl_tensor_class_names[i]; i++)
    if (json_array_append_new(a, json_pack("{s:i, s:s, s:n, s:s, s:s}", "bits_per_weight", 16,
                                           "format", "bf16", "layer_range", "tensor_class",
                                           fdl_tensor_class_names[i], "treatment", "native"))) {
      json_decref(a); /* out of memory: no scope rather than one missing a class */
      return NULL;
    }
  return json_pack("{s:o, s:s, s:s, s:s}", "assignments", a, "head_policy", "native",
                   "kv_cache_dtype", "bf16", "policy", "native");
}

static fdl_status scope_block(pk_ctx *c, json_t **out, fdl_err *err) {
  const json_t *ms = fdl_json_obj(c->meta, "scope");
  json_t *scope = ms ? json_deep_copy(ms) : native_scope();
  if (!scope) return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  fdl_buf b;
  fdl_buf_init(&b, 0);
  if (fdl_ds_scope_digest(scope, &b, err) != FDL_OK) {
    fdl_buf_free(&b);
    json_decref(scope);
    return fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_INVALID, "meta scope: %s",
                         fdl_err_msg(err));
  }
  const char *given = fdl_json_str(scope, "scope_digest");
  if (given && strcmp(given, b.data)) {
    char q[FDL_QUOTE_CAP];
    fdl_status s = fdl_pk_refuse(c, err, FDL_REF_SCHEMA_INVALID, FDL_MISMATCH,
                                 "meta scope.scope_digest %s is not the digest of its own "
                                 "assignments ('%s')",
                                 fdl_quote_str(given, q, sizeof q), b.data);
    fdl_buf_free(&b);
    json_decref(scope);
    return s;
  }
  int lost = json_object_set_new(scope, "scope_digest", json_string(b.data));
  fdl_buf_free(&b);
  if (lost) {
    json_decref(scope);
    return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "out of memory");
  }
  *out = scope;
  return FDL_OK;
}

static json_t *weights_block(const pk_ctx *c) {
  json_t *w = json_deep_copy(fdl_json_obj(c->meta, "weights"));
  if (!w) return NULL;
  int lost = 0; /* a failed set (out of memory) must not publish a block missing a key */
  if (!json_object_get(w, "model_revision"))
    lost |= json_object_set(w, "model_revision", json_object_get(w, "revision"));
  if (!json_object_get(w, "quantized")) lost |= json_object_set_new(w, "quantized", json_false());
  static const char *const NULLABLE[] = {
      "config_sha256", "index_sha256",       "checkpoint_identity_sha256",
      "artifact_ref",  "model_ref",          "codec",
      "declared_bits", "declared_head_bits", NULL};
  for (size_t i = 0; NULLABLE[i]; i++)
    if (!json_object_get(w, NULLABLE[i])) lost |= json_object_set_new(w, NULLABLE[i], json_null());
  if (lost) {
    json_decref(w);
    return NULL;
  }
  return w;
}

static json_t *dataset_block(const pk_ctx *c) {
  const json_t *d = fdl_json_obj(c->meta, "dataset");
  const char *name = fdl_json_str(d, "name");
  json_t *b = json_pack("{s:s, s:s, s:s, s:s, s:n, s:o, s:o, s:o, s:o}", "id", c->dataset_id,
                        "name", name ? name : c->dataset_id, "role", c->role, "structural_status",
                        "sealed", "qualification", "license", meta_val(c, "dataset", "license"),
                        "repository", meta_val(c, "dataset", "repository"), "revision",
                        meta_val(c, "dataset", "revision"), "base_capture",
                        meta_val(c, "dataset", "base_capture"));
  if (b && json_object_get(d, "author") &&
      json_object_set_new(b, "author", json_deep_copy(json_object_get(d, "author")))) {
    json_decref(b); /* out of memory */
    return NULL;
  }
  return b;
}

static json_t *divergences(void) {
  static const char *const D[][2] = {
      {"head", "each capture names the head its own forward used, by content digest; "
               "hidden-form comparisons across different heads are refused"},
      {"runtime.lane", "the lane is required and compared before any number is produced"},
      {"panel.scoring_window", "the scoring window is part of the panel's identity, not a "
                               "comparison option"},
      {"comparison_kind", "self-comparison is its own mode and must give exactly 0.0"},
      {"estimator.accumulation_dtype", "the estimator's accumulation dtype is recorded; fp64 "
                                       "by default"},
      {"coverage", "declared and present record counts are both recorded, with shard_of for a "
                   "partial capture"},
      {"panel", "the panel is a separately referenceable, sealed object"},
      {"capture.lossy_codec", "a lossy capture (such as a llama.cpp .kld) declares its codec"},
      {"capture.records[].attention_mask_sha256", "each record binds its attention mask by "
                                                  "digest"},
      {"capture.head_separable", "hidden form is the default; a logit capture says whether its "
                                 "head is separable"}};
  json_t *a = json_array();
  for (size_t i = 0; a && i < sizeof D / sizeof D[0]; i++) {
    char id[16];
    snprintf(id, sizeof id, "D-%zu", i + 1);
    if (json_array_append_new(
            a, json_pack("{s:s, s:s, s:s}", "id", id, "field", D[i][0], "reason", D[i][1]))) {
      json_decref(a); /* out of memory: none rather than nine of ten */
      return NULL;
    }
  }
  return a;
}

/* Appends one disclosure to a; nonzero when out of memory. */
int fdl_ds_disclose(json_t *a, bool affects, const char *code, const char *detail,
                    const char *severity) {
  return json_array_append_new(a,
                               json_pack("{s:b, s:s, s:s, s:s}", "affects_comparability", affects,
                                         "code", code, "detail", detail, "severity", severity));
}

json_t *fdl_ds_disclosures_end(json_t *a, const json_t *extra, int lost) {
  size_t i;
  json_t *d;
  json_array_foreach(extra, i, d) lost |= json_array_append_new(a, json_deep_copy(d));
  if (lost) {
    json_decref(a);
    return NULL;
  }
  return a;
}

static json_t *disclosures(const pk_ctx *c) {
  char detail[512];
  snprintf(detail, sizeof detail, "packed by fidelis pack %s from %s %s per-record dumps",
           fdl_version(), c->engine_name, c->engine_version);
  json_t *a = json_array();
  if (!a) return NULL;
  int lost = 0; /* out of memory: no list rather than one missing a disclosure */
  lost |= fdl_ds_disclose(a, false, "no_known_deviations", detail, "info");
  lost |=
      fdl_ds_disclose(a, false, "reduced_run_count",
                      "this dataset is ONE capture (run_count 1, below the DET-D4 floor of 5); "
                      "cross-run determinism is not asserted here and is established by a second "
                      "capture and an exact-zero self-compare",
                      "caveat");
  if (c->narrowed)
    lost |= fdl_ds_disclose(a, true, "stored_dtype_narrowed",
                            "hidden states were handed over as F32 and rounded to BF16 (round to "
                            "nearest, ties to even) for storage; dtype_lossless is false",
                            "caveat");
  if (c->legacy_key)
    lost |= fdl_ds_disclose(a, false, "legacy_tensor_key_rewritten",
                            "input tensors used the pre-v1 key 'hidden'; stored as 'hidden_states' "
                            "(REC-2)",
                            "info");
  if (c->present < c->n)
    lost |= fdl_ds_disclose(a, true, "partial_capture",
                            "not every panel record was captured; see coverage", "caveat");
  return fdl_ds_disclosures_end(a, fdl_json_arr(c->meta, "disclosures"), lost);
}

static json_t *seal_block(void) {
  return json_pack(
      "{s:s, s:s, s:s, s:s, s:[s,s,s], s:[s,s], s:n, s:s}", "checksums_file", "checksums.txt",
      "checksums_format", "sha256sum", "checksums_sha256", ZERO64, "method",
      "self_blanked_canonical_json_sha256", "covers",
      "every published file except checksums.txt and fidelity-dataset.json, through "
      "checksums.txt",
      "fidelity-dataset.json itself, through its self-blanked seal (dataset_sha256)",
      "every capture tensor once more by content, through capture.capture_content_digest",
      "excludes", "checksums.txt", "fidelity-dataset.json", "external_anchor", "seal_field",
      "dataset_sha256");
}

fdl_status fdl_pk_build_docs(pk_ctx *c, fdl_ds_docs *docs, fdl_err *err) {
  memset(docs, 0, sizeof *docs);
  char suite[DS_HEX_LEN + 1], legacy[DS_HEX_LEN + 1], lane_hex[DS_HEX_LEN + 1],
      stack_hex[DS_HEX_LEN + 1];
  json_t *scope = NULL;
  fdl_status s = panel_doc(c, &docs->panel, suite, legacy, err);
  if (s == FDL_OK) s = capture_doc(c, &docs->capture, err);
  if (s == FDL_OK) s = runtime_doc(c, &docs->runtime, lane_hex, stack_hex, err);
  if (s == FDL_OK) s = scope_block(c, &scope, err);
  if (s == FDL_OK) {
    docs->head = head_obj(c, scope, false);
    s = built(c, docs->head, NULL, "head/head.json", err);
  }
  if (s != FDL_OK) {
    json_decref(scope);
    fdl_pk_free_docs(docs);
    return s;
  }
  bool hidden = hidden_form(c);
  const json_t *sep = json_object_get(c->meta, "head_separable");
  const char *sep_reason = fdl_json_str(c->meta, "head_not_separable_reason");
  json_error_t je;
  json_t *m = json_pack_ex(
      &je, 0,
      "{s:s, s:i, s:s, s:s, s:o, s:o, s:o, "
      "s:{s:s, s:s, s:s, s:o, s:I, s:I, s:I, s:o, s:o, s:s?, s:n, s:o, s:o, s:n, s:o},"
      "s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:o, s:I, s:b, s:s?, s:I, s:I, s:I, s:o},"
      "s:o,"
      "s:{s:s, s:s, s:s, s:b, s:s, s:s, s:n, s:n, s:o},"
      "s:{s:i, s:b, s:s, s:[s], s:i, s:n, s:[], s:n, s:s},"
      "s:o, s:o, s:{s:[s], s:o, s:o, s:b, s:n}, s:o, s:[]}",
      "schema", FDL_DS_SCHEMA, "format_version", 1, "dataset_sha256", ZERO64, "created_utc",
      c->created, "dataset", dataset_block(c), "weights", weights_block(c), "scope", scope,
      /* panel */
      "panel", "panel_file", "panel/panel.json", "panel_file_sha256", ZERO64,
      "suite_token_hash_sha256", suite, "panel_token_sha256_legacy", json_string(legacy),
      "contexts", (json_int_t)c->n, "context_length", (json_int_t)c->context_length,
      "scored_positions_total",
      (json_int_t)json_integer_value(json_object_get(docs->panel, "scored_positions_total")),
      "scoring_window", scoring_window(c), "tokenizer", tokenizer(c), "panel_id", c->panel_id,
      "panel_receipt_sha256", "remap_file", json_null(), "repository",
      meta_val(c, "panel", "repository"), "revision", "contamination", contamination(),
      /* capture */
      "capture", "manifest_file", "capture/manifest.json", "manifest_file_sha256", ZERO64,
      "capture_content_digest", c->content_digest, "form", c->form, "semantic_point",
      semantic_point(c), "tensor_key", hidden ? "hidden_states" : "logits", "dtype",
      fdl_dtype_name(c->stored), "dtype_lossless", dtype_lossless(c), "hidden_width",
      hidden ? json_integer((json_int_t)c->width) : json_null(), "vocab_size", (json_int_t)c->vocab,
      "head_separable", hidden || !json_is_false(sep), "head_not_separable_reason",
      hidden ? NULL : sep_reason, "records_count", (json_int_t)c->present, "scored_rows_total",
      (json_int_t)c->total_rows, "total_size_bytes", (json_int_t)c->total_size, "lossy_codec",
      meta_val(c, NULL, "lossy_codec"),
      /* head */
      "head", head_obj(c, scope, true),
      /* runtime */
      "runtime", "file", "runtime/capture-runtime.json", "file_sha256", ZERO64, "lane", c->lane,
      "lane_inferred", 0, "lane_identity_sha256", lane_hex, "stack_fingerprint_sha256", stack_hex,
      "backend_identity_sha256", "runtime_reader_sha256", "source",
      meta_val(c, NULL, "runtime_source"),
      /* determinism */
      "determinism", "run_count", 1, "cold_start_per_run", 1, "evidence_kind",
      hidden ? "hidden_state_tensor_sha256" : "logits_tensor_sha256", "evidence_hashes",
      c->content_digest, "distinct_evidence_hash_count", 1, "identical_across_runs", "repeats",
      "repeat_noise", "note",
      "a single capture; cross-run determinism is not asserted here. Capture again and "
      "self-compare: an exactly 0.0 result confirms reproduction.",
      "seal", seal_block(), "coverage", coverage(c), "interop", "compatible_with",
      "kimi-k3-distribution-fidelity/1", "divergences", divergences(), "adapted_from", json_null(),
      "k3_compat_emitted", 0, "note", "disclosures", disclosures(c), "upstream_receipts");
  s = built(c, m, &je, "fidelity-dataset.json", err);
  if (s != FDL_OK) {
    fdl_pk_free_docs(docs);
    return s;
  }
  /* The panel block's revision comes from the same meta field as panel.json's. */
  json_object_set_new(fdl_json_obj(m, "panel"), "revision", meta_val(c, "panel", "revision"));
  docs->manifest = m;
  return FDL_OK;
}

void fdl_pk_free_docs(fdl_ds_docs *docs) {
  json_decref(docs->manifest);
  json_decref(docs->panel);
  json_decref(docs->runtime);
  json_decref(docs->head);
  json_decref(docs->capture);
  json_decref(docs->validation);
  memset(docs, 0, sizeof *docs);
}
