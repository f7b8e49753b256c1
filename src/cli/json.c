/* json.c - `fidelis json canon`: read strictly, print the canonical form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis json canon [--ascii] [--pretty] [--kiln-strict] FILE|-\n\n"
          "Reads one JSON document strictly (FILE, or standard input for '-') and prints its\n"
          "canonical form: Python's json.dumps(v, sort_keys=True, separators=(\",\", \":\"),\n"
          "allow_nan=False, ensure_ascii=False) followed by one newline.\n\n"
          "options:\n"
          "  --ascii        ensure_ascii=True: escape DEL and non-ASCII as \\uXXXX\n"
          "  --pretty       the file form json.dumps(v, indent=2, sort_keys=True) + \"\\n\"\n"
          "                 (no extra newline is added)\n"
          "  --kiln-strict  also apply Kiln's float-literal rules and read -0.0 as 0.0\n"
          "  -h, --help     show this help\n\n"
          "The reader refuses duplicate keys, NaN/Infinity, invalid UTF-8, a leading BOM,\n"
          "trailing data, nesting deeper than %d and integers outside int64.\n"
          "exit codes: 0 ok; 3 input refused by the reader; 4 bad usage, an input that cannot\n"
          "be read whole (missing, not a regular file, over %u bytes, also on standard\n"
          "input), or output that cannot be written\n",
          FDL_JSON_DEFAULT_MAX_DEPTH, FDL_JSON_MAX_FILE_BYTES);
}

/* Reads standard input up to the cap and stops there: an endless stream (</dev/zero) must end
 * in an error, not in reading forever into a buffer that has already given up. */
static fdl_status read_stdin(char **out, size_t *len, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, FDL_JSON_MAX_FILE_BYTES);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) {
    if (n > FDL_JSON_MAX_FILE_BYTES - b.len) {
      fdl_buf_free(&b);
      return fdl_fail(err, FDL_TOO_LARGE, "<stdin>: more than %u bytes (the JSON input limit)",
                      FDL_JSON_MAX_FILE_BYTES);
    }
    fdl_buf_append(&b, chunk, n);
    if (fdl_buf_status(&b) != FDL_OK) break;
  }
  if (ferror(stdin)) {
    fdl_buf_free(&b);
    return fdl_fail(err, FDL_IO, "<stdin>: read failed");
  }
  if (fdl_buf_status(&b) != FDL_OK) {
    fdl_status st = fdl_buf_status(&b);
    fdl_buf_free(&b);
    return fdl_fail(err, st, "<stdin>: %s (limit %u bytes)", fdl_strerror(st),
                    FDL_JSON_MAX_FILE_BYTES);
  }
  *out = fdl_buf_take(&b, len);
  return *out ? FDL_OK : fdl_fail(err, FDL_NOMEM, "<stdin>: out of memory");
}

typedef struct {
  const char *path;
  unsigned flags;
  fdl_json_read_opts opts;
} args;

static int canon(args *a) {
  fdl_err err;
  char *data = NULL;
  size_t len = 0;
  bool is_stdin = !strcmp(a->path, "-");
  char *real = NULL; /* a named file may be a link: resolved once, then opened without following */
  fdl_status st =
      is_stdin ? read_stdin(&data, &len, &err) : fdl_resolve_named(a->path, &real, &err);
  if (st == FDL_OK && !is_stdin)
    st = fdl_read_file(real, FDL_JSON_MAX_FILE_BYTES, &data, &len, &err);
  free(real);
  if (st != FDL_OK) {
    /* The input could not be read whole: missing, not a regular file, over the cap. */
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  json_t *v = NULL;
  st = fdl_json_parse(data, len, &a->opts, &v, &err);
  free(data);
  if (st != FDL_OK) {
    fdl_err_prefix(&err, "%s", is_stdin ? "<stdin>" : a->path);
    return fdl_cli_failed(&err, st);
  }
  return fdl_cli_print_json(v,
                            a->flags); /* a failed write to stdout is caught when main closes it */
}

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  bool ascii = false, pretty = false;
  const fdl_cli_opt table[] = {
      FDL_CLI_OPT_FLAG("--ascii", &ascii),
      FDL_CLI_OPT_FLAG("--pretty", &pretty),
      FDL_CLI_OPT_FLAG("--kiln-strict", &a->opts.kiln_strict),
  };
  fdl_cli_spec s = {"json canon", usage, table, 3, NULL, 0, &a->path, 1, 0, out, diag, 0};
  int rc = fdl_cli_parse_sub(&s, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 1) return fdl_cli_usage_error(&s, "missing FILE (or '-' for standard input)");
  a->flags = (ascii ? FDL_JSON_ASCII : 0u) | (pretty ? FDL_JSON_PRETTY : 0u);
  a->opts.allow_nul = true; /* canon is Python's json: "\u0000" is a string like any other */
  return FDL_CLI_GO;
}

FDL_CLI_COMMAND(fdl_cli_json, fdl_cli_json_check, args, parse, canon)
