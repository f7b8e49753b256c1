/* model_io.c - the file plumbing model init and the quantizer share: JSON documents written
 * into a directory, and a safetensors header written ahead of data that is then streamed
 * tensor by tensor, so that no model is ever held whole in memory. */

#include <stdlib.h>

#include "engine/model_internal.h"
#include "base/path.h"
#include "json/json.h"
#include "base/buf.h"
#include "tensor/safetensors_json.h"

json_t *fdl_model_st_metadata(void) {
  return json_pack("{s:s}", "format", "pt");
}

void fdl_model_put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

void fdl_model_put_le16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

fdl_status fdl_model_write_json(const char *dir, const char *name, json_t *v, fdl_err *err) {
  if (!v) return fdl_fail(err, FDL_NOMEM, "out of memory building %s", name);
  char *path = fdl_path_join(dir, name);
  fdl_status s = path ? fdl_json_write_file(path, v, FDL_JSON_PRETTY, err)
                      : fdl_fail(err, FDL_NOMEM, "out of memory");
  free(path);
  json_decref(v);
  return s;
}

fdl_status fdl_model_st_header(fdl_out *o, const fdl_tensor_in *tensors, size_t n,
                               const json_t *metadata, uint64_t *file_bytes, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = fdl_safetensors_header(tensors, n, metadata, &b, err);
  if (s == FDL_OK) {
    while (b.len % 8) fdl_buf_putc(&b, ' ');
    s = fdl_buf_status(&b);
    if (s != FDL_OK) s = fdl_fail(err, s, "out of memory for a safetensors header");
  }
  if (s == FDL_OK) {
    fdl_model_put_le32((uint8_t *)b.data, (uint32_t)(b.len - 8));
    fdl_model_put_le32((uint8_t *)b.data + 4, (uint32_t)((uint64_t)(b.len - 8) >> 32));
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
      uint64_t numel = 1;
      for (int d = 0; d < tensors[i].ndim; d++) numel *= (uint64_t)tensors[i].shape[d];
      total += numel * fdl_dtype_size(tensors[i].dtype); /* checked by fdl_safetensors_header */
    }
    *file_bytes = b.len + total;
    s = fdl_out_write(o, b.data, b.len, err);
  }
  fdl_buf_free(&b);
  return s;
}
