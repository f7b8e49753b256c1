/* seal.c - the two self-seal recipes and the schema -> (recipe, field) table.
 *
 * fidelity-blank-field (FIDELITY-DATASET.md §5.3): the seal field stays, set to "", and the
 * canonical JSON is raw UTF-8; the seal is bare hex. kiln-remove-field (KILN-ATTRIBUTION.md §2):
 * the field is removed, the canonical JSON is ASCII-escaped; the seal is "sha256:" + hex.
 * Getting the dialect wrong changes the digest of any document with non-ASCII text. */
#include <stdio.h>
#include <string.h>

#include "fidelis/digest.h"
#include "json/json.h"
#include "digest/seal_json.h"

const char *fdl_seal_recipe_name(fdl_seal_recipe r) {
  switch (r) {
  case FDL_SEAL_FIDELITY_BLANK:
    return "fidelity-blank-field";
  case FDL_SEAL_KILN_REMOVE:
    return "kiln-remove-field";
  }
  return "unknown-recipe";
}

typedef struct {
  const char *schema;
  fdl_seal_recipe recipe;
  const char *field;
} seal_kind;

/* Every sealed top-level document kind the specs name. Nested "worker" schemas
 * (kiln.rocm-hf-*-attribution.vN) are not sealed on their own and are deliberately absent. */
static const seal_kind KNOWN_KINDS[] = {
    {"malaiwah.fidelity-dataset.v1", FDL_SEAL_FIDELITY_BLANK, "dataset_sha256"},
    {"malaiwah.fidelity-capture-manifest.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-panel-binding.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-head-identity.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-capture-runtime.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-path-remap.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-replay-qualification.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-structural-validation.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.fidelity-comparison-receipt.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"malaiwah.token-panel-build-receipt.v1", FDL_SEAL_FIDELITY_BLANK, "receipt_sha256"},
    {"kiln.rocm-hf-next-token-oracle.v1", FDL_SEAL_KILN_REMOVE, "result_sha256"},
    {"kiln.rocm-hf-next-token-oracle.v2", FDL_SEAL_KILN_REMOVE, "result_sha256"},
    {"kiln.rocm-hf-path-attribution-result.v1", FDL_SEAL_KILN_REMOVE, "result_sha256"},
    {"kiln.rocm-hf-path-attribution-result.v2", FDL_SEAL_KILN_REMOVE, "result_sha256"},
    {"kiln.rocm-hf-layer-attribution-result.v1", FDL_SEAL_KILN_REMOVE, "result_sha256"},
    {"kiln.rocm-hf-layer-attribution-result.v2", FDL_SEAL_KILN_REMOVE, "result_sha256"},
    {"kiln.serving-benchmark.v1", FDL_SEAL_KILN_REMOVE, "receipt_sha256"},
};

/* Fallback candidates for schemas of a known family that the table does not list yet. The
 * field names are static strings so fdl_seal_check.field can point at them. */
static const char *const FIDELITY_FIELDS[] = {"dataset_sha256", "receipt_sha256"};
static const char *const KILN_FIELDS[] = {"result_sha256", "receipt_sha256"};

static bool has_prefix(const char *s, size_t n, const char *prefix) {
  size_t p = strlen(prefix);
  return n >= p && memcmp(s, prefix, p) == 0;
}

/* The family fallback: exactly one candidate seal field present, else refuse. */
static fdl_status fallback_kind(const json_t *doc, const char *schema, const char *const *fields,
                                size_t nfields, const char **field, fdl_err *err) {
  const char *found = NULL;
  for (size_t i = 0; i < nfields; i++) {
    if (!json_object_get(doc, fields[i])) continue;
    if (found)
      return fdl_fail(err, FDL_UNSUPPORTED,
                      "seal: unknown schema \"%s\" carries both %s and %s; cannot tell which "
                      "one is its seal",
                      schema, found, fields[i]);
    found = fields[i];
  }
  if (!found)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "seal: unknown schema \"%s\" has no seal field (expected %s or %s)", schema,
                    fields[0], fields[1]);
  *field = found;
  return FDL_OK;
}

fdl_status fdl_seal_kind(const json_t *doc, fdl_seal_recipe *recipe, const char **field,
                         fdl_err *err) {
  if (!json_is_object(doc))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "seal: document is not a JSON object, so it has no "
                    "\"schema\" naming its seal kind");
  const json_t *sv = json_object_get(doc, "schema");
  if (!sv)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "seal: document has no \"schema\" key, so its seal kind is unknown");
  if (!json_is_string(sv))
    return fdl_fail(err, FDL_UNSUPPORTED, "seal: \"schema\" is not a string");
  const char *schema = json_string_value(sv);
  size_t len = json_string_length(sv);
  if (strlen(schema) != len)
    return fdl_fail(err, FDL_UNSUPPORTED, "seal: \"schema\" contains a NUL character");
  for (size_t i = 0; i < sizeof KNOWN_KINDS / sizeof KNOWN_KINDS[0]; i++) {
    if (strcmp(schema, KNOWN_KINDS[i].schema) != 0) continue;
    if (recipe) *recipe = KNOWN_KINDS[i].recipe;
    if (field) *field = KNOWN_KINDS[i].field;
    return FDL_OK;
  }
  const char *f = NULL;
  fdl_status s;
  fdl_seal_recipe r;
  if (has_prefix(schema, len, "malaiwah.")) {
    r = FDL_SEAL_FIDELITY_BLANK;
    s = fallback_kind(doc, schema, FIDELITY_FIELDS, 2, &f, err);
  } else if (has_prefix(schema, len, "kiln.")) {
    r = FDL_SEAL_KILN_REMOVE;
    s = fallback_kind(doc, schema, KILN_FIELDS, 2, &f, err);
  } else {
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "seal: unknown schema \"%s\" (expected a malaiwah.* or kiln.* sealed kind)",
                    schema);
  }
  if (s != FDL_OK) return s;
  if (recipe) *recipe = r;
  if (field) *field = f;
  return FDL_OK;
}

/* Canonical text of the document with the seal field blanked or removed, per the recipe. */
static fdl_status seal_preimage(const json_t *doc, fdl_seal_recipe recipe, const char *field,
                                fdl_buf *out, fdl_err *err) {
  if (!json_is_object(doc))
    return fdl_fail(err, FDL_INVALID, "seal: only a JSON object can carry a seal field");
  if (!field || !*field) return fdl_fail(err, FDL_INVALID, "seal: empty seal field name");
  if (recipe != FDL_SEAL_FIDELITY_BLANK && recipe != FDL_SEAL_KILN_REMOVE)
    return fdl_fail(err, FDL_INVALID, "seal: unknown recipe %d", (int)recipe);
  /* A shallow copy: children are shared, only the top-level key set differs. jansson's copy
   * takes a non-const pointer but only adds references to the children. */
  json_t *body = json_copy((json_t *)doc);
  /* jansson's copy drops a key it cannot insert (out of memory) and still succeeds: a short
   * copy would hash to a wrong seal and read as tampering, so it is an error here. */
  if (body && json_object_size(body) != json_object_size(doc)) {
    json_decref(body);
    body = NULL;
  }
  if (!body) return fdl_fail(err, FDL_NOMEM, "seal: out of memory copying the document");
  if (recipe == FDL_SEAL_KILN_REMOVE)
    (void)json_object_del(body, field); /* absent is fine: nothing to remove */
  else if (json_object_set_new(body, field, json_string("")) != 0) {
    json_decref(body);
    return fdl_fail(err, FDL_NOMEM, "seal: out of memory blanking \"%s\"", field);
  }
  unsigned flags = recipe == FDL_SEAL_KILN_REMOVE ? FDL_JSON_ASCII : 0u;
  fdl_status s = fdl_json_dump(body, flags, out, err);
  json_decref(body);
  if (s != FDL_OK) fdl_err_prefix(err, "seal %s", field);
  return s;
}

fdl_status fdl_seal_compute(const json_t *doc, fdl_seal_recipe recipe, const char *field, char *out,
                            fdl_err *err) {
  if (!out) return fdl_fail(err, FDL_INVALID, "seal: NULL output");
  fdl_buf text;
  fdl_buf_init(&text, 0);
  fdl_status s = seal_preimage(doc, recipe, field, &text, err);
  char hex[FDL_SHA256_HEX_BUF];
  if (s == FDL_OK) s = fdl_sha256_buf_hex(text.data, text.len, hex, err);
  fdl_buf_free(&text);
  if (s != FDL_OK) return s;
  if (recipe == FDL_SEAL_KILN_REMOVE)
    snprintf(out, FDL_SEAL_BUF, FDL_SEAL_KILN_PREFIX "%s", hex);
  else
    memcpy(out, hex, sizeof hex);
  return FDL_OK;
}

fdl_status fdl_seal_apply(json_t *doc, fdl_seal_recipe recipe, const char *field, fdl_err *err) {
  char value[FDL_SEAL_BUF];
  fdl_status s = fdl_seal_compute(doc, recipe, field, value, err);
  if (s != FDL_OK) return s;
  if (json_object_set_new(doc, field, json_string(value)) != 0)
    return fdl_fail(err, FDL_NOMEM, "seal: out of memory storing \"%s\"", field);
  return FDL_OK;
}

fdl_status fdl_seal_verify(const json_t *doc, fdl_seal_check *res, fdl_err *err) {
  if (!res) return fdl_fail(err, FDL_INVALID, "seal: NULL result");
  fdl_seal_check c;
  memset(&c, 0, sizeof c);
  fdl_status s = fdl_seal_kind(doc, &c.recipe, &c.field, err);
  if (s != FDL_OK) return s;
  s = fdl_seal_compute(doc, c.recipe, c.field, c.computed, err);
  if (s != FDL_OK) return s;
  const json_t *v = json_object_get(doc, c.field);
  c.stored_present = v != NULL;
  c.stored_string = json_is_string(v);
  /* A stored value too long for the record can never equal a 64/71-char seal; keep a
   * truncated copy for display and compare the full string. */
  if (json_is_string(v)) {
    const char *sv = json_string_value(v);
    size_t n = json_string_length(v);
    snprintf(c.stored, sizeof c.stored, "%s", sv);
    c.ok = n == strlen(c.computed) && memcmp(sv, c.computed, n) == 0;
  }
  *res = c;
  return FDL_OK;
}

/* Kiln hashes values as Kiln's strict loader reads them (-0.0 becomes 0.0, inexact float
 * literals are refused). The first, plain read only finds the schema; a kiln.* document is then
 * read again that way, so the library's answer never depends on how the caller loaded it. */
fdl_status fdl_seal_verify_file(const char *path, fdl_seal_check *res, fdl_err *err) {
  if (!path || !res) return fdl_fail(err, FDL_INVALID, "seal: NULL path or result");
  json_t *doc = NULL;
  fdl_status s = fdl_json_load_file(path, NULL, &doc, err);
  if (s != FDL_OK) return s;
  fdl_seal_recipe recipe;
  s = fdl_seal_kind(doc, &recipe, NULL, err);
  if (s == FDL_OK && recipe == FDL_SEAL_KILN_REMOVE) {
    json_decref(doc);
    doc = NULL;
    const fdl_json_read_opts kiln = {.max_depth = 0, .kiln_strict = true};
    s = fdl_json_load_file(path, &kiln, &doc, err);
  }
  if (s == FDL_OK) s = fdl_seal_verify(doc, res, err);
  json_decref(doc);
  return s;
}
