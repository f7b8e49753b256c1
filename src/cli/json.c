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
          "exit codes: 0 ok, 3 input refused by the reader, 4 bad usage, unreadable input or\n"
          "failed output\n",
          FDL_JSON_DEFAULT_MAX_DEPTH);
}

static fdl_status read_stdin(char **out, size_t *len, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, FDL_JSON_MAX_FILE_BYTES);
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) fdl_buf_append(&b, chunk, n);
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

static int canon(const char *path, unsigned flags, const fdl_json_read_opts *opts) {
  fdl_err err;
  char *data = NULL;
  size_t len = 0;
  bool is_stdin = !strcmp(path, "-");
  char *real = NULL; /* a named file may be a link: resolved once, then opened without following */
  fdl_status st = is_stdin ? read_stdin(&data, &len, &err) : fdl_resolve_named(path, &real, &err);
  if (st == FDL_OK && !is_stdin)
    st = fdl_read_file(real, FDL_JSON_MAX_FILE_BYTES, &data, &len, &err);
  free(real);
  if (st != FDL_OK) {
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  json_t *v = NULL;
  st = fdl_json_parse(data, len, opts, &v, &err);
  free(data);
  if (st != FDL_OK) {
    fdl_err_prefix(&err, "%s", is_stdin ? "<stdin>" : path);
    fdl_cli_report(&err);
    return st == FDL_NOMEM ? FDL_EXIT_USAGE : FDL_EXIT_REFUSED;
  }
  fdl_buf out;
  fdl_buf_init(&out, 0);
  st = fdl_json_dump(v, flags, &out, &err);
  json_decref(v);
  if (st != FDL_OK) {
    fdl_buf_free(&out);
    fdl_cli_report(&err);
    return FDL_EXIT_REFUSED;
  }
  if (!(flags & FDL_JSON_PRETTY)) fdl_buf_putc(&out, '\n');
  bool ok = fdl_buf_status(&out) == FDL_OK && fwrite(out.data, 1, out.len, stdout) == out.len &&
            fflush(stdout) == 0;
  fdl_buf_free(&out);
  if (!ok) {
    fdl_fail(&err, FDL_IO, "<stdout>: cannot write the canonical JSON");
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  return FDL_EXIT_OK;
}

int fdl_cli_json(int argc, char **argv) {
  if (argc < 2 || fdl_cli_is_help(argv[1])) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? FDL_EXIT_USAGE : FDL_EXIT_OK;
  }
  if (strcmp(argv[1], "canon")) {
    fprintf(stderr, "fidelis json: unknown subcommand '%s'\n\n", argv[1]);
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  unsigned flags = 0;
  fdl_json_read_opts opts = {0};
  const char *path = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (fdl_cli_is_help(a)) {
      usage(stdout);
      return FDL_EXIT_OK;
    } else if (!strcmp(a, "--ascii")) {
      flags |= FDL_JSON_ASCII;
    } else if (!strcmp(a, "--pretty")) {
      flags |= FDL_JSON_PRETTY;
    } else if (!strcmp(a, "--kiln-strict")) {
      opts.kiln_strict = true;
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "fidelis json canon: unknown option '%s'\n\n", a);
      usage(stderr);
      return FDL_EXIT_USAGE;
    } else if (path) {
      fprintf(stderr, "fidelis json canon: one input expected, got '%s' and '%s'\n\n", path, a);
      usage(stderr);
      return FDL_EXIT_USAGE;
    } else {
      path = a;
    }
  }
  if (!path) {
    fprintf(stderr, "fidelis json canon: missing FILE (or '-' for standard input)\n\n");
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  return canon(path, flags, &opts);
}
