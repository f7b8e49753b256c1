/* tensor.c - `fidelis tensor ls FILE [--json]`: list the tensors of a safetensors, .npy or GGUF
 * file (GGUF: tensor_gguf.c).
 *
 * The format is chosen by content, not by name (sniff): "\x93NUMPY" is .npy, anything else is
 * read as safetensors. Each tensor's SHA-256 covers exactly its raw bytes, so it can be compared
 * with hashlib over numpy's arr.tobytes() or a safetensors byte range. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tensor/safetensors_json.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: fidelis tensor ls FILE [--json]\n\n"
      "Lists the tensors of a safetensors, .npy or GGUF file (chosen by magic bytes):\n"
      "name, dtype, shape, byte range [begin,end) in the file, and SHA-256 of the raw\n"
      "bytes. For GGUF the dtype is the ggml type, the shape is row-major ([rows, cols],\n"
      "ggml's ne reversed), and a last column gives the SHA-256 of the tensor's float32\n"
      "little-endian dequantization by ggml's to_float (\"-\" for a type fidelis does not\n"
      "dequantize). Every header bound is checked before any tensor byte is read.\n\n"
      "  --json   print {\"file\", \"format\", \"metadata\", \"tensors\": [{\"name\",\n"
      "           \"dtype\", \"shape\", \"offset\", \"nbytes\", \"sha256\"}]} as canonical JSON\n"
      "           (GGUF: {\"file\", \"format\", \"gguf_version\", \"alignment\",\n"
      "           \"tensor_data_offset\", \"tensors\": [{\"name\", \"type\", \"type_id\",\n"
      "           \"shape\", \"offset\", \"nbytes\", \"sha256\", \"dequantized_sha256\"}]})\n\n"
      "  -h, --help  show this help\n\n"
      "exit codes: 0 ok; 3 file refused (malformed, named in the terms of the format its\n"
      "first bytes announce); 4 bad usage, a FILE that cannot be opened (missing, not a\n"
      "regular file: a directory, FIFO, device or symlink), or output that cannot be written\n");
}

/* What the first bytes say the file is. .npy starts with "\x93NUMPY"; safetensors with an 8-byte
 * little-endian header length and then the JSON header's '{'. A file that starts like one but
 * breaks its rules is named in that format's terms instead of being read as the other. */
typedef enum { SNIFF_NPY, SNIFF_NPY_BAD_MAGIC, SNIFF_SAFETENSORS } sniffed;

static sniffed sniff(const uint8_t *p, size_t n) {
  if (n >= 6 && !memcmp(p, "\x93NUMPY", 6)) return SNIFF_NPY;
  /* One byte off in the 6-byte magic: the first byte, or "NUMPY" after it. */
  if ((n >= 1 && p[0] == 0x93) || (n >= 6 && !memcmp(p + 1, "NUMPY", 5)))
    return SNIFF_NPY_BAD_MAGIC;
  return SNIFF_SAFETENSORS;
}

static fdl_status print_text(const fdl_tensor *const *ts, size_t n, fdl_err *err) {
  for (size_t i = 0; i < n; i++) {
    const fdl_tensor *t = ts[i];
    char hex[FDL_SHA256_HEX_BUF];
    fdl_status s = fdl_sha256_buf_hex(t->data, (size_t)t->nbytes, hex, err);
    if (s != FDL_OK) return s;
    char name[FDL_QUOTE_CAP];
    printf("%s\t%s\t[", fdl_cli_shown(t->name, name, sizeof name), fdl_dtype_name(t->dtype));
    for (int k = 0; k < t->ndim; k++) printf("%s%lld", k ? ", " : "", (long long)t->shape[k]);
    printf("]\t[%llu,%llu)\t%s\n", (unsigned long long)t->offset,
           (unsigned long long)(t->offset + t->nbytes), hex);
  }
  return FDL_OK;
}

static json_t *tensor_json(const fdl_tensor *t, fdl_err *err) {
  char hex[FDL_SHA256_HEX_BUF];
  if (fdl_sha256_buf_hex(t->data, (size_t)t->nbytes, hex, err) != FDL_OK) return NULL;
  json_t *shape = json_array();
  for (int k = 0; shape && k < t->ndim; k++)
    json_array_append_new(shape, json_integer((json_int_t)t->shape[k]));
  json_t *o = json_pack("{s:o, s:s, s:o, s:I, s:I, s:s}", "name", fdl_cli_json_text(t->name),
                        "dtype", fdl_dtype_name(t->dtype), "shape", shape, "offset",
                        (json_int_t)t->offset, "nbytes", (json_int_t)t->nbytes, "sha256", hex);
  if (!o) fdl_fail(err, FDL_NOMEM, "out of memory building the listing");
  return o;
}

static fdl_status print_json(const char *path, const char *format, const json_t *meta,
                             const fdl_tensor *const *ts, size_t n, fdl_err *err) {
  json_t *list = json_array();
  fdl_status s = list ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    json_t *t = tensor_json(ts[i], err);
    if (!t)
      s = err->status;
    else if (json_array_append_new(list, t) != 0)
      s = fdl_fail(err, FDL_NOMEM, "out of memory building the listing");
  }
  if (s == FDL_OK) {
    json_t *doc =
        json_pack("{s:o, s:s, s:O, s:O}", "file", fdl_cli_json_text(path), "format", format,
                  "metadata", meta ? (json_t *)meta : json_null(), "tensors", list);
    s = doc ? fdl_cli_put_json(doc, 0, err)
            : fdl_fail(err, FDL_NOMEM, "out of memory building the listing");
  }
  json_decref(list);
  return s;
}

/* path is shown as the user named it. A named file may be a link (a Hugging Face cache
 * snapshot): resolved once, the target is mapped without following anything further, through
 * the library's one open for untrusted inputs (regular files only, O_NONBLOCK so that a FIFO, or
 * a link to one, is refused instead of waiting for a writer). */
static int list_file(const char *path, bool as_json) {
  fdl_err err = {0};
  fdl_map m;
  char *real = NULL;
  fdl_status s = fdl_resolve_named(path, &real, &err);
  if (s == FDL_OK && (s = fdl_map_file(real, &m, &err)) != FDL_OK && strcmp(real, path))
    fdl_err_prefix(&err, "%s", path); /* name the link the user gave, then its target */
  if (s == FDL_OK && m.size >= 4 && !memcmp(m.data, "GGUF", 4)) {
    fdl_unmap(&m);
    int rc = fdl_cli_tensor_gguf(path, real, as_json);
    free(real);
    return rc;
  }
  free(real);
  if (s != FDL_OK) {
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  sniffed kind = sniff(m.data, m.size);
  if (kind == SNIFF_NPY_BAD_MAGIC) {
    char got[6 * 4 + 1] = "";
    for (size_t i = 0; i < 6 && i < m.size; i++)
      snprintf(got + 4 * i, sizeof got - 4 * i, "\\x%02x", m.data[i]);
    fdl_unmap(&m);
    char q[FDL_QUOTE_CAP];
    fprintf(stderr,
            "fidelis: (PARSE) %s: looks like .npy but its magic is %s, expected "
            "\\x93NUMPY\n",
            fdl_quote_str(path, q, sizeof q), got);
    return FDL_EXIT_REFUSED;
  }
  if (kind == SNIFF_NPY) {
    fdl_npy *npy = NULL;
    s = fdl_npy_open_mem(m.data, m.size, &npy, &err);
    if (s == FDL_OK) {
      const fdl_tensor *t = fdl_npy_tensor(npy);
      s = as_json ? print_json(path, "npy", NULL, &t, 1, &err) : print_text(&t, 1, &err);
      fdl_npy_close(npy);
    }
  } else {
    fdl_safetensors *st = NULL;
    s = fdl_safetensors_open_mem(m.data, m.size, &st, &err);
    if (s == FDL_OK) {
      size_t n = fdl_safetensors_count(st);
      const fdl_tensor **ts = calloc(n ? n : 1, sizeof *ts);
      if (!ts) {
        s = fdl_fail(&err, FDL_NOMEM, "out of memory");
      } else {
        for (size_t i = 0; i < n; i++) ts[i] = fdl_safetensors_at(st, i);
        s = as_json ? print_json(path, "safetensors", fdl_safetensors_metadata(st), ts, n, &err)
                    : print_text(ts, n, &err);
      }
      free(ts);
      fdl_safetensors_close(st);
    }
  }
  fdl_unmap(&m);
  if (s != FDL_OK) {
    fdl_err_prefix(&err, "%s (%s)", path, kind == SNIFF_NPY ? ".npy" : "safetensors");
    return fdl_cli_failed(&err, s);
  }
  return FDL_EXIT_OK;
}

typedef struct {
  const char *file;
  bool as_json;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {FDL_CLI_OPT_FLAG("--json", &a->as_json)};
  fdl_cli_spec s = {"tensor ls", usage, opts, 1, NULL, 0, &a->file, 1, 0, out, diag, 0};
  int rc = fdl_cli_parse_sub(&s, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 1) return fdl_cli_usage_error(&s, "one FILE expected");
  return FDL_CLI_GO;
}

static int work(args *a) {
  return list_file(a->file, a->as_json);
}

FDL_CLI_COMMAND(fdl_cli_tensor, fdl_cli_tensor_check, args, parse, work)
