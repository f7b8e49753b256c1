/* tensor.c - `fidelis tensor ls FILE [--json]`: list the tensors of a safetensors or .npy file.
 *
 * The format is chosen by content, not by name: "\x93NUMPY" is .npy, anything else is read as
 * safetensors. Each tensor's SHA-256 covers exactly its raw bytes, so it can be compared with
 * hashlib over numpy's arr.tobytes() or a safetensors byte range. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "fidelis/tensor.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: fidelis tensor ls FILE [--json]\n\n"
      "Lists the tensors of a safetensors or .npy file (chosen by magic bytes): name,\n"
      "dtype, shape, byte range [begin,end) in the file, and SHA-256 of the raw bytes.\n"
      "Every header bound is checked before any tensor byte is read.\n\n"
      "  --json   print {\"file\", \"format\", \"metadata\", \"tensors\": [{\"name\",\n"
      "           \"dtype\", \"shape\", \"offset\", \"nbytes\", \"sha256\"}]} as canonical JSON\n\n"
      "exit codes: 0 ok, 3 file refused (malformed), 4 bad usage or unreadable file\n");
}

/* Unreadable (missing, a directory, a symlink) is a usage-level failure; anything the readers
 * refuse after reading is a refusal. */
static int exit_for(fdl_status s) {
  return (s == FDL_IO || s == FDL_PATH || s == FDL_NOMEM) ? FDL_EXIT_USAGE : FDL_EXIT_REFUSED;
}

/* Sniffs through the one regular-file open (non-blocking: a FIFO is refused, not waited on); a
 * file it cannot open is left to the safetensors reader to report. */
static bool is_npy(const char *path) {
  unsigned char head[6] = {0};
  int fd = -1;
  if (fdl_open_regular(path, false, &fd, NULL, NULL) != FDL_OK) return false;
  ssize_t got = read(fd, head, sizeof head);
  close(fd);
  return got == (ssize_t)sizeof head && !memcmp(head, "\x93NUMPY", 6);
}

static fdl_status print_text(const fdl_tensor *const *ts, size_t n, fdl_err *err) {
  for (size_t i = 0; i < n; i++) {
    const fdl_tensor *t = ts[i];
    fdl_sha256 d;
    char hex[FDL_SHA256_HEX_LEN + 1];
    fdl_status s = fdl_sha256_buf(t->data, (size_t)t->nbytes, &d, err);
    if (s != FDL_OK) return s;
    fdl_sha256_hex(&d, hex);
    char name[FDL_QUOTE_CAP];
    printf("%s\t%s\t[", fdl_cli_shown(t->name, strlen(t->name), name, sizeof name),
           fdl_dtype_name(t->dtype));
    for (int k = 0; k < t->ndim; k++) printf("%s%lld", k ? ", " : "", (long long)t->shape[k]);
    printf("]\t[%llu,%llu)\t%s\n", (unsigned long long)t->offset,
           (unsigned long long)(t->offset + t->nbytes), hex);
  }
  return FDL_OK;
}

static json_t *tensor_json(const fdl_tensor *t, fdl_err *err) {
  fdl_sha256 d;
  char hex[FDL_SHA256_HEX_LEN + 1];
  if (fdl_sha256_buf(t->data, (size_t)t->nbytes, &d, err) != FDL_OK) return NULL;
  fdl_sha256_hex(&d, hex);
  json_t *shape = json_array();
  for (int k = 0; shape && k < t->ndim; k++)
    json_array_append_new(shape, json_integer((json_int_t)t->shape[k]));
  json_t *o = json_pack("{s:s, s:s, s:o, s:I, s:I, s:s}", "name", t->name, "dtype",
                        fdl_dtype_name(t->dtype), "shape", shape, "offset", (json_int_t)t->offset,
                        "nbytes", (json_int_t)t->nbytes, "sha256", hex);
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
  json_t *doc = NULL;
  if (s == FDL_OK) {
    doc = json_pack("{s:o, s:s, s:O, s:O}", "file", fdl_cli_json_text(path), "format", format,
                    "metadata", meta ? (json_t *)meta : json_null(), "tensors", list);
    if (!doc) s = fdl_fail(err, FDL_NOMEM, "out of memory building the listing");
  }
  fdl_buf out;
  fdl_buf_init(&out, 0);
  if (s == FDL_OK) s = fdl_json_dump(doc, 0, &out, err);
  if (s == FDL_OK) printf("%s\n", out.data);
  fdl_buf_free(&out);
  json_decref(doc);
  json_decref(list);
  return s;
}

/* path: the resolved file, opened without following links; shown: the name the user gave. */
static int list_resolved(const char *path, const char *shown, bool as_json) {
  fdl_err err = {0};
  fdl_status s;
  if (is_npy(path)) {
    fdl_npy *npy = NULL;
    s = fdl_npy_open(path, &npy, &err);
    if (s != FDL_OK) {
      fdl_cli_report(&err);
      return exit_for(s);
    }
    const fdl_tensor *t = fdl_npy_tensor(npy);
    s = as_json ? print_json(shown, "npy", NULL, &t, 1, &err) : print_text(&t, 1, &err);
    fdl_npy_close(npy);
  } else {
    fdl_safetensors *st = NULL;
    s = fdl_safetensors_open(path, &st, &err);
    if (s != FDL_OK) {
      fdl_cli_report(&err);
      return exit_for(s);
    }
    size_t n = fdl_safetensors_count(st);
    const fdl_tensor **ts = calloc(n ? n : 1, sizeof *ts);
    if (!ts) {
      s = fdl_fail(&err, FDL_NOMEM, "out of memory");
    } else {
      for (size_t i = 0; i < n; i++) ts[i] = fdl_safetensors_at(st, i);
      s = as_json ? print_json(shown, "safetensors", fdl_safetensors_metadata(st), ts, n, &err)
                  : print_text(ts, n, &err);
    }
    free(ts);
    fdl_safetensors_close(st);
  }
  if (s != FDL_OK) {
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  return FDL_EXIT_OK;
}

/* A file named on the command line may be a link (a Hugging Face cache snapshot): resolved once,
 * the target is opened without following anything further. */
static int list_file(const char *named, bool as_json) {
  fdl_err err = {0};
  char *path = NULL;
  fdl_status s = fdl_resolve_named(named, &path, &err);
  if (s != FDL_OK) {
    fdl_cli_report(&err);
    return exit_for(s);
  }
  int rc = list_resolved(path, named, as_json);
  free(path);
  return rc;
}

int fdl_cli_tensor(int argc, char **argv) {
  if (argc >= 2 && fdl_cli_is_help(argv[1])) {
    usage(stdout);
    return FDL_EXIT_OK;
  }
  if (argc < 2 || strcmp(argv[1], "ls") != 0) {
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  const char *file = NULL;
  bool as_json = false;
  for (int i = 2; i < argc; i++) {
    if (fdl_cli_is_help(argv[i])) {
      usage(stdout);
      return FDL_EXIT_OK;
    } else if (!strcmp(argv[i], "--json")) {
      as_json = true;
    } else if (!strcmp(argv[i], "--")) {
      if (i + 2 != argc || file) {
        usage(stderr);
        return FDL_EXIT_USAGE;
      }
      file = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      fprintf(stderr, "fidelis tensor ls: unknown option '%s'\n", argv[i]);
      return FDL_EXIT_USAGE;
    } else if (file) {
      fprintf(stderr, "fidelis tensor ls: one FILE expected\n");
      return FDL_EXIT_USAGE;
    } else {
      file = argv[i];
    }
  }
  if (!file) {
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  return list_file(file, as_json);
}
