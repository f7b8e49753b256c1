/* provenance.c - what a Kiln v2 writer copies and fidelis cannot know (§12, §13): the provenance
 * object checked (closed keys, each block an object, the values §3 wants) and decoded once, so
 * the writers copy its blocks without reading keys; and a layer result's HF evidence held to the
 * rows and the request it must describe. */
#include <limits.h>
#include <string.h>

#include "attr/internal.h"
#include "attr/kiln_check.h"
#include "attr/layer_json.h"
#include "digest/seal_json.h"
#include "json/json.h"

/* The keys of each kind, sorted; a layer's model_identity (last) is optional. */
static const char *const KEYS[2][10] = {
    {"binary", "containment", "created_at_utc", "duration_seconds", "implementation",
     "model_fingerprint", "oracle_reference", "request_path", "source", NULL},
    {"binary", "containment", "created_at_utc", "duration_seconds", "implementation",
     "model_fingerprint", "reference", "request_path", "source", "model_identity"}};
static const char *const EXPECTED[2] = {
    "binary, containment, created_at_utc, duration_seconds, implementation, model_fingerprint, "
    "oracle_reference, request_path, source",
    "binary, containment, created_at_utc, duration_seconds, implementation, model_fingerprint, "
    "reference, request_path, source and optionally model_identity"};

/* The closed key set, then each block an object and the values. */
static fdl_status check(const json_t *pv, bool layer, fdl_err *err) {
  if (!json_is_object(pv)) return fdl_fail(err, FDL_INVALID, "provenance: $: expected an object");
  for (size_t i = 0; i < 9; i++)
    if (!json_object_get(pv, KEYS[layer][i]))
      return fdl_fail(err, FDL_INVALID, "provenance: $: missing key \"%s\"", KEYS[layer][i]);
  const char *k;
  json_t *v;
  json_object_foreach((json_t *)pv, k, v) {
    bool known = false;
    for (size_t i = 0; i < 10 && KEYS[layer][i] && !known; i++) known = !strcmp(k, KEYS[layer][i]);
    if (!known) /* the layer writer has always cut a shown key at 80 bytes, the path one not */
      return fdl_fail(err, FDL_INVALID, "provenance: $: unexpected key \"%.*s\" (expected %s)",
                      layer ? 80 : INT_MAX, k, EXPECTED[layer]);
  }
  static const size_t blocks[] = {0, 1, 4, 5, 6, 8}; /* binary .. source, less the values */
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
    if (!json_is_object(json_object_get(pv, KEYS[layer][blocks[i]])))
      return fdl_fail(err, FDL_INVALID, "provenance: $.%s: expected an object",
                      KEYS[layer][blocks[i]]);
  const json_t *d = json_object_get(pv, "duration_seconds");
  double dv = json_is_integer(d) ? (double)json_integer_value(d) : json_real_value(d);
  if (!json_is_number(d) || !(dv > 0))
    return fdl_fail(err, FDL_INVALID, "provenance: $.duration_seconds: expected a number > 0");
  if (!json_is_string(json_object_get(pv, "created_at_utc")))
    return fdl_fail(err, FDL_INVALID,
                    "provenance: $.created_at_utc: expected a UTC time string (Kiln §3)");
  const json_t *rp = json_object_get(pv, "request_path");
  if (!json_is_string(rp) || json_string_length(rp) == 0)
    return fdl_fail(err, FDL_INVALID,
                    "provenance: $.request_path: expected the request's repo-relative path");
  return FDL_OK;
}

fdl_status fdl_attr_provenance_read(const json_t *pv, const fdl_kiln_request *rq,
                                    fdl_attr_provenance *p, fdl_err *err) {
  bool layer = rq != NULL;
  fdl_status s = check(pv, layer, err);
  if (s != FDL_OK) return s;
  *p = (fdl_attr_provenance){json_object_get(pv, "created_at_utc"),
                             json_object_get(pv, "duration_seconds"),
                             json_object_get(pv, "source"),
                             json_object_get(pv, "binary"),
                             json_object_get(pv, "implementation"),
                             json_object_get(pv, "model_fingerprint"),
                             json_object_get(pv, "request_path"),
                             json_object_get(pv, "containment"),
                             KEYS[layer][6],
                             json_object_get(pv, KEYS[layer][6]),
                             json_object_get(pv, "model_identity"),
                             NULL};
  if (!layer) return FDL_OK;
  if (p->model_identity && !json_equal(p->model_identity, rq->model_identity))
    return fdl_fail(err, FDL_MISMATCH,
                    "provenance: $.model_identity differs from the request's model_identity "
                    "(the checker wants them equal; leave it out to take the request's)");
  p->evidence = json_object_get(p->reference, "evidence");
  if (!json_is_object(p->evidence))
    return fdl_fail(err, FDL_INVALID,
                    "provenance: $.reference.evidence: expected the HF layer evidence object "
                    "(§8)");
  return FDL_OK;
}

fdl_status fdl_attr_result_v2(const char *schema, const fdl_attr_provenance *p,
                              const fdl_kiln_request *rq, json_t *worker, json_t **out,
                              fdl_err *err) {
  *out = NULL;
  json_t *rec =
      json_pack("{s:s, s:O, s:O, s:O, s:O, s:O, s:{s:O, s:s}, s:O, s:O, s:O, s:O, s:o}", "schema",
                schema, "created_at_utc", p->created_at_utc, "duration_seconds",
                p->duration_seconds, "source", p->source, "binary", p->binary, "implementation",
                p->implementation, "request", "path", p->request_path, "sha256", rq->identity,
                "model_identity", rq->model_identity, "model_fingerprint", p->model_fingerprint,
                p->reference_key, p->reference, "containment", p->containment, "worker", worker);
  if (!rec) return fdl_fail(err, FDL_NOMEM, "out of memory");
  return fdl_json_hand_over(fdl_seal_apply(rec, FDL_SEAL_KILN_REMOVE, "result_sha256", err), rec,
                            out);
}

/* The evidence's key is the integer want; else FDL_MISMATCH saying what want is. */
static fdl_status evidence_int(const json_t *ev, const char *key, size_t want, const char *what,
                               fdl_err *err) {
  const json_t *v = json_object_get(ev, key);
  if (json_is_integer(v) && json_integer_value(v) == (json_int_t)want) return FDL_OK;
  return fdl_fail(err, FDL_MISMATCH, "provenance: $.reference.evidence.%s is not %zu, %s", key,
                  want, what);
}

fdl_status fdl_attr_evidence_check(const fdl_attr_provenance *p, const char *rows_sha, size_t rows,
                                   size_t hidden, const fdl_kiln_request *rq, fdl_err *err) {
  const json_t *ev = p->evidence;
  const json_t *v = json_object_get(ev, "layer_last_rows_sha256");
  if (!fdl_kiln_str_eq(v, rows_sha))
    return fdl_fail(err, FDL_MISMATCH,
                    "provenance: $.reference.evidence.layer_last_rows_sha256 is %.80s, but the REF "
                    "rows (f32 little-endian, row-major, §8) hash to %s: the evidence is not of "
                    "these rows",
                    json_is_string(v) ? json_string_value(v) : "not a string", rows_sha);
  fdl_status s;
  if ((s = evidence_int(ev, "hidden_size", hidden, "the width of the rows", err)) != FDL_OK ||
      (s = evidence_int(ev, "boundary_count", rows, "the rows given", err)) != FDL_OK)
    return s;
  const json_t *bn = json_object_get(ev, "boundary_names");
  const char *names[FDL_ATTR_LAYER_BOUNDARIES];
  size_t nn = json_array_size(bn);
  for (size_t i = 0; nn == FDL_ATTR_LAYER_BOUNDARIES && i < nn; i++)
    names[i] = json_string_value(json_array_get(bn, i));
  s = fdl_attr_layer_names_check(names, nn, "provenance: $.reference.evidence.boundary_names", err);
  if (s != FDL_OK) return s;
  if (!fdl_kiln_str_eq(json_object_get(ev, "request_sha256"), rq->identity))
    return fdl_fail(err, FDL_MISMATCH,
                    "provenance: $.reference.evidence.request_sha256 is not %s, the request's "
                    "canonical identity",
                    rq->identity);
  if (!fdl_kiln_str_eq(json_object_get(ev, "request_id"), rq->id))
    return fdl_fail(err, FDL_MISMATCH,
                    "provenance: $.reference.evidence.request_id is not the request's id \"%s\"",
                    rq->id);
  if (!fdl_kiln_str_eq(json_object_get(ev, "input_token_ids_sha256"), rq->input_token_ids_sha256))
    return fdl_fail(err, FDL_MISMATCH,
                    "provenance: $.reference.evidence.input_token_ids_sha256 is not the "
                    "request's input_token_ids_sha256");
  if ((s = evidence_int(ev, "input_token_count", rq->input_count, "the request's input length",
                        err)) != FDL_OK)
    return s;
  if (!json_equal(json_object_get(p->reference, "bytes"), json_object_get(ev, "output_bytes")))
    return fdl_fail(err, FDL_MISMATCH,
                    "provenance: $.reference.bytes is not $.reference.evidence.output_bytes (the "
                    "artifact's size)");
  return FDL_OK;
}
