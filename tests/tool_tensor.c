/* tool_tensor.c - writes .npy and safetensors files with the fidelis writers, for
 * test_tensor_oracle.py to compare against numpy and Python's json.
 *
 *   tool_tensor npy OUT DTYPE SHAPE RAW
 *   tool_tensor st OUT [--meta KEY VALUE]... [--tensor NAME DTYPE SHAPE RAW]...
 *
 * DTYPE is a safetensors name (F64, BF16, ...); SHAPE is a comma list ("" for a scalar);
 * RAW is a file holding the little-endian element bytes. Exit 0 ok, 1 refused, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "base/fs.h"
#include "tensor/safetensors_json.h"

#define RAW_MAX (1u << 30)

static int parse_shape(const char *s, int64_t *shape, int *ndim) {
  *ndim = 0;
  if (!*s) return 1;
  for (;;) {
    if (*ndim == FDL_MAX_DIMS) return 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s) return 0;
    shape[(*ndim)++] = v;
    if (*end == '\0') return 1;
    if (*end != ',') return 0;
    s = end + 1;
  }
}

typedef struct {
  fdl_tensor_in in;
  int64_t shape[FDL_MAX_DIMS];
  char *raw;
} tool_tensor;

static int load(const char *dtype, const char *shape, const char *raw, tool_tensor *t,
                fdl_err *err) {
  if (!fdl_dtype_parse(dtype, &t->in.dtype) || !parse_shape(shape, t->shape, &t->in.ndim)) {
    fprintf(stderr, "tool_tensor: bad dtype '%s' or shape '%s'\n", dtype, shape);
    return 2;
  }
  t->in.shape = t->shape;
  size_t len;
  if (fdl_read_file(raw, RAW_MAX, &t->raw, &len, err) != FDL_OK) {
    fprintf(stderr, "tool_tensor: %s\n", err->msg);
    return 2;
  }
  t->in.data = t->raw;
  return 0;
}

static int write_npy(int argc, char **argv) {
  if (argc != 6) return 2;
  tool_tensor t = {0};
  fdl_err err = {0};
  int rc = load(argv[3], argv[4], argv[5], &t, &err);
  if (rc == 0 && fdl_npy_write(argv[2], t.in.dtype, t.in.ndim, t.shape, t.raw, &err) != FDL_OK) {
    fprintf(stderr, "tool_tensor: (%s) %s\n", fdl_status_name(err.status), err.msg);
    rc = 1;
  }
  free(t.raw);
  return rc;
}

static int write_st(int argc, char **argv) {
  if (argc < 3) return 2;
  tool_tensor *ts = calloc((size_t)argc, sizeof *ts);
  fdl_tensor_in *ins = calloc((size_t)argc, sizeof *ins);
  json_t *meta = NULL;
  size_t n = 0;
  int rc = (ts && ins) ? 0 : 2;
  fdl_err err = {0};
  for (int i = 3; rc == 0 && i < argc;) {
    if (!strcmp(argv[i], "--meta") && i + 2 < argc) {
      if (!meta) meta = json_object();
      json_object_set_new(meta, argv[i + 1], json_string(argv[i + 2]));
      i += 3;
    } else if (!strcmp(argv[i], "--tensor") && i + 4 < argc) {
      rc = load(argv[i + 2], argv[i + 3], argv[i + 4], &ts[n], &err);
      ts[n].in.name = argv[i + 1];
      ins[n] = ts[n].in;
      n++;
      i += 5;
    } else {
      rc = 2;
    }
  }
  if (rc == 0 && fdl_safetensors_write(argv[2], ins, n, meta, &err) != FDL_OK) {
    fprintf(stderr, "tool_tensor: (%s) %s\n", fdl_status_name(err.status), err.msg);
    rc = 1;
  }
  for (size_t i = 0; i < n; i++) free(ts[i].raw);
  free(ts);
  free(ins);
  json_decref(meta);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 2;
  if (argc >= 2 && !strcmp(argv[1], "npy")) rc = write_npy(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "st")) rc = write_st(argc, argv);
  if (rc == 2) fprintf(stderr, "usage: tool_tensor npy|st OUT ... (see the source)\n");
  return rc;
}
