/* tensor_gguf.c - `fidelis tensor ls FILE.gguf`: each tensor of a GGUF file with its ggml type,
 * its shape row-major (ggml's ne reversed: [rows, cols]), its byte range, the SHA-256 of its
 * stored bytes and the SHA-256 of its float32 little-endian dequantization by ggml's to_float
 * (dequantized_sha256: what llama.cpp's own dequantizer gives; none for a type fidelis does not
 * dequantize). One row is dequantized at a time, so memory stays one row. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct {
  char raw[FDL_SHA256_HEX_LEN + 1], deq[FDL_SHA256_HEX_LEN + 1];
  bool has_deq;
} digests;

static fdl_status digest_tensor(const fdl_gguf *g, const fdl_gguf_tensor *t, digests *d,
                                fdl_err *err) {
  const uint8_t *data = fdl_gguf_tensor_data(g, t);
  fdl_status s = fdl_sha256_buf_hex(data, (size_t)t->nbytes, d->raw, err);
  if (s) return s;
  const fdl_ggml_type_info *ti = fdl_ggml_type(t->type);
  d->has_deq = ti && ti->dequant;
  if (!d->has_deq) return FDL_OK;
  uint64_t row_bytes, rows = t->nbytes ? 1 : 0;
  if ((s = fdl_ggml_row_bytes(t->type, t->ne[0], &row_bytes, err))) return s;
  rows = row_bytes ? t->nbytes / row_bytes : 0;
  float *row = malloc((size_t)t->ne[0] * sizeof *row);
  fdl_sha256_ctx *ctx = NULL;
  fdl_sha256 dg;
  s = row ? fdl_sha256_new(&ctx, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
  for (uint64_t r = 0; !s && r < rows; r++) {
    s = fdl_ggml_dequant(t->type, data + r * row_bytes, t->ne[0], row, err);
    if (s == FDL_INVALID) s = FDL_OK; /* listed as stored: a non-finite value is still hashed */
    if (!s) s = fdl_sha256_update(ctx, row, (size_t)t->ne[0] * sizeof *row, err);
  }
  if (!s && !(s = fdl_sha256_final(ctx, &dg, err))) fdl_sha256_hex(&dg, d->deq);
  fdl_sha256_free(ctx);
  free(row);
  return s;
}

static json_t *tensor_json(const fdl_gguf_tensor *t, const digests *d) {
  const fdl_ggml_type_info *ti = fdl_ggml_type(t->type);
  json_t *shape = json_array();
  for (uint32_t k = t->n_dims; shape && k-- > 0;)
    json_array_append_new(shape, json_integer((json_int_t)t->ne[k]));
  return json_pack("{s:o, s:s, s:I, s:o, s:I, s:I, s:s, s:o}", "name", fdl_cli_json_text(t->name),
                   "type", ti ? ti->name : "unknown", "type_id", (json_int_t)t->type, "shape",
                   shape, "offset", (json_int_t)t->offset, "nbytes", (json_int_t)t->nbytes,
                   "sha256", d->raw, "dequantized_sha256",
                   d->has_deq ? json_string(d->deq) : json_null());
}

static fdl_status list(const char *path, const fdl_gguf *g, bool as_json, fdl_err *err) {
  json_t *arr = as_json ? json_array() : NULL;
  fdl_status s = as_json && !arr ? fdl_fail(err, FDL_NOMEM, "out of memory") : FDL_OK;
  for (uint64_t i = 0; i < g->n_tensors && !s; i++) {
    const fdl_gguf_tensor *t = &g->tensors[i];
    digests d;
    if ((s = digest_tensor(g, t, &d, err))) break;
    if (as_json) {
      json_t *o = tensor_json(t, &d);
      if (!o || json_array_append_new(arr, o)) s = fdl_fail(err, FDL_NOMEM, "out of memory");
      continue;
    }
    const fdl_ggml_type_info *ti = fdl_ggml_type(t->type);
    char name[FDL_QUOTE_CAP];
    printf("%s\t%s\t[", fdl_cli_shown(t->name, name, sizeof name), ti ? ti->name : "unknown");
    for (uint32_t k = t->n_dims; k-- > 0;)
      printf("%s%" PRIu64, k + 1 < t->n_dims ? ", " : "", t->ne[k]);
    printf("]\t[%" PRIu64 ",%" PRIu64 ")\t%s\t%s\n", t->offset, t->offset + t->nbytes, d.raw,
           d.has_deq ? d.deq : "-");
  }
  if (!s && as_json) {
    json_t *doc = json_pack("{s:o, s:s, s:I, s:I, s:I, s:o}", "file", fdl_cli_json_text(path),
                            "format", "gguf", "gguf_version", (json_int_t)g->version, "alignment",
                            (json_int_t)g->alignment, "tensor_data_offset",
                            (json_int_t)g->data_offset, "tensors", arr);
    arr = NULL;
    s = fdl_cli_put_json(doc, 0, err);
  }
  json_decref(arr);
  return s;
}

int fdl_cli_tensor_gguf(const char *path, const char *real, bool as_json) {
  fdl_err err = {0};
  fdl_gguf g;
  fdl_status s = fdl_gguf_open(real, &g, &err);
  if (s == FDL_OK) {
    s = list(path, &g, as_json, &err);
    fdl_gguf_close(&g);
  }
  if (s != FDL_OK) return fdl_cli_failed(&err, s);
  return FDL_EXIT_OK;
}
