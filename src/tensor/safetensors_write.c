/* safetensors_write.c - safetensors files laid out as the upstream fidelity writer lays them out.
 *
 * Upstream (hf_capture st_bytes) writes u64le(len) || json.dumps(header, separators=(",", ":"),
 * sort_keys=True) || data, with no alignment padding, tensors' data in the order given, and
 * "__metadata__" only when the metadata dict is non-empty. json.dumps defaults to
 * ensure_ascii=True, hence FDL_JSON_ASCII: a non-ASCII name or metadata value is written as
 * \uXXXX escapes, exactly as the reference's file digest expects.
 *
 * Divisions: input checks; the header; the file. */
#include <stdlib.h>
#include <string.h>

#include "json/json.h"
#include "fidelis/tensor.h"
#include "tensor/tensor_internal.h"
#include "base/sys.h"
#include "tensor/safetensors_json.h"

/* ---- input checks ------------------------------------------------------------------------ */

static fdl_status check_metadata(const json_t *metadata, fdl_err *err) {
  if (!metadata) return FDL_OK;
  if (!json_is_object(metadata))
    return fdl_fail(err, FDL_INVALID, "safetensors metadata must be an object of strings");
  const char *key;
  const json_t *value;
  json_object_foreach((json_t *)metadata, key, value) {
    if (!json_is_string(value)) {
      char shown[FDL_QUOTE_CAP];
      fdl_quote(key, strlen(key), shown, sizeof shown);
      return fdl_fail(err, FDL_INVALID, "safetensors metadata %s is not a string", shown);
    }
  }
  return FDL_OK;
}

/* nbytes[i] receives each tensor's byte count; *total their overflow-checked sum. */
static fdl_status check_tensors(const fdl_tensor_in *t, size_t n, uint64_t *nbytes, uint64_t *total,
                                fdl_err *err) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (!t[i].name) return fdl_fail(err, FDL_INVALID, "safetensors tensor #%zu has no name", i);
    char shown[FDL_QUOTE_CAP];
    fdl_quote(t[i].name, strlen(t[i].name), shown, sizeof shown);
    if (!strcmp(t[i].name, "__metadata__"))
      return fdl_fail(err, FDL_INVALID,
                      "safetensors tensor #%zu: the name __metadata__ is reserved", i);
    if (t[i].ndim < 0 || t[i].ndim > FDL_MAX_DIMS || (t[i].ndim > 0 && !t[i].shape))
      return fdl_fail(err, FDL_INVALID, "tensor %s: ndim %d outside [0, %d]", shown, t[i].ndim,
                      FDL_MAX_DIMS);
    if (fdl_dtype_size(t[i].dtype) == 0)
      return fdl_fail(err, FDL_INVALID, "tensor %s: invalid dtype %d", shown, (int)t[i].dtype);
    if (!fdl_shape_nbytes(t[i].dtype, t[i].ndim, t[i].shape, NULL, &nbytes[i]) ||
        nbytes[i] > (uint64_t)INT64_MAX)
      return fdl_fail(err, FDL_INVALID,
                      "tensor %s: shape has a negative dimension or its byte size overflows",
                      shown);
    if (nbytes[i] > 0 && !t[i].data)
      return fdl_fail(err, FDL_INVALID, "tensor %s: %llu bytes declared but data is NULL", shown,
                      (unsigned long long)nbytes[i]);
    if (__builtin_add_overflow(sum, nbytes[i], &sum) || sum > (uint64_t)INT64_MAX)
      return fdl_fail(err, FDL_TOO_LARGE, "tensor %s: total data size overflows", shown);
  }
  *total = sum;
  return FDL_OK;
}

/* ---- the header -------------------------------------------------------------------------- */

static json_t *entry_json(const fdl_tensor_in *t, uint64_t begin, uint64_t end) {
  json_t *shape = json_array();
  json_t *offsets = json_array();
  json_t *e = json_object();
  bool ok = shape && offsets && e;
  for (int d = 0; ok && d < t->ndim; d++)
    ok = json_array_append_new(shape, json_integer((json_int_t)t->shape[d])) == 0;
  ok = ok && json_array_append_new(offsets, json_integer((json_int_t)begin)) == 0 &&
       json_array_append_new(offsets, json_integer((json_int_t)end)) == 0;
  ok = ok && json_object_set_new(e, "dtype", json_string(fdl_dtype_name(t->dtype))) == 0;
  ok = ok && json_object_set(e, "shape", shape) == 0 &&
       json_object_set(e, "data_offsets", offsets) == 0;
  json_decref(shape);
  json_decref(offsets);
  if (!ok) {
    json_decref(e);
    return NULL;
  }
  return e;
}

/* Appends u64le(len) || header JSON to out; nbytes[] and *total as from check_tensors. */
static fdl_status build_header(const fdl_tensor_in *t, size_t n, const json_t *metadata,
                               uint64_t *nbytes, fdl_buf *out, fdl_err *err) {
  fdl_status s = check_metadata(metadata, err);
  uint64_t total;
  if (s == FDL_OK) s = check_tensors(t, n, nbytes, &total, err);
  if (s != FDL_OK) return s;
  json_t *header = json_object();
  if (!header) return fdl_fail(err, FDL_NOMEM, "out of memory building a safetensors header");
  uint64_t offset = 0;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    if (json_object_get(header, t[i].name)) {
      char shown[FDL_QUOTE_CAP];
      fdl_quote(t[i].name, strlen(t[i].name), shown, sizeof shown);
      s = fdl_fail(err, FDL_INVALID, "tensor name %s appears twice", shown);
      break;
    }
    json_t *e = entry_json(&t[i], offset, offset + nbytes[i]);
    if (!e || json_object_set_new(header, t[i].name, e) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory building a safetensors header");
    offset += nbytes[i];
  }
  /* Upstream writes the key only for a non-empty dict ("if metadata:"). */
  if (s == FDL_OK && metadata && json_object_size(metadata) > 0) {
    json_t *copy = json_deep_copy(metadata);
    if (!copy || json_object_set_new(header, "__metadata__", copy) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory building a safetensors header");
  }
  fdl_buf text;
  fdl_buf_init(&text, FDL_SAFETENSORS_MAX_HEADER);
  if (s == FDL_OK) s = fdl_json_dump(header, FDL_JSON_ASCII, &text, err);
  json_decref(header);
  if (s == FDL_OK && fdl_buf_status(&text) != FDL_OK)
    s = fdl_fail(err, fdl_buf_status(&text),
                 "safetensors header exceeds the %u-byte limit readers enforce",
                 FDL_SAFETENSORS_MAX_HEADER);
  if (s == FDL_OK) {
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)text.len >> (8 * i));
    fdl_buf_append(out, len, sizeof len);
    fdl_buf_append(out, text.data, text.len);
    if (fdl_buf_status(out) != FDL_OK)
      s = fdl_fail(err, fdl_buf_status(out), "cannot append the safetensors header");
  }
  fdl_buf_free(&text);
  return s;
}

fdl_status fdl_safetensors_header(const fdl_tensor_in *tensors, size_t n, const json_t *metadata,
                                  fdl_buf *out, fdl_err *err) {
  if (n > 0 && !tensors) return fdl_fail(err, FDL_INVALID, "safetensors: tensors is NULL");
  uint64_t *nbytes = fdl_calloc(n ? n : 1, sizeof *nbytes);
  if (!nbytes) return fdl_fail(err, FDL_NOMEM, "out of memory");
  fdl_status s = build_header(tensors, n, metadata, nbytes, out, err);
  free(nbytes);
  return s;
}

/* ---- the file ---------------------------------------------------------------------------- */

fdl_status fdl_safetensors_write(const char *path, const fdl_tensor_in *tensors, size_t n,
                                 const json_t *metadata, fdl_err *err) {
  if (n > 0 && !tensors) return fdl_fail(err, FDL_INVALID, "%s: tensors is NULL", path);
  uint64_t *nbytes = fdl_calloc(n ? n : 1, sizeof *nbytes);
  if (!nbytes) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  fdl_buf head;
  fdl_buf_init(&head, 0);
  fdl_status s = build_header(tensors, n, metadata, nbytes, &head, err);
  if (s != FDL_OK) {
    fdl_err_prefix(err, "%s", path);
    goto done;
  }
  fdl_out o;
  s = fdl_out_open(&o, path, err);
  if (s != FDL_OK) goto done;
  s = fdl_out_write(&o, head.data, head.len, err);
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    if (nbytes[i] == 0) continue;
#if SIZE_MAX < UINT64_MAX
    /* The caller's buffer exists, so its size fits size_t; a larger claim is a bad shape. */
    if (nbytes[i] > SIZE_MAX) {
      s = fdl_fail(err, FDL_TOO_LARGE, "%s: tensor too large for this host", path);
      break;
    }
#endif
    s = fdl_out_write(&o, tensors[i].data, (size_t)nbytes[i], err);
  }
  if (s == FDL_OK)
    s = fdl_out_commit(&o, err);
  else
    fdl_out_abort(&o);
done:
  fdl_buf_free(&head);
  free(nbytes);
  return s;
}
