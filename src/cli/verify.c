/* verify.c - `fidelis verify FILE...`: recompute the self-seal of sealed JSON documents.
 *
 * One line per file on stdout so results can be grepped and diffed:
 *   OK        PATH  RECIPE  FIELD  DIGEST
 *   MISMATCH  PATH  RECIPE  FIELD  stored=VALUE  computed=DIGEST
 *   ERROR     PATH  (STATUS) message
 * Fields are separated by two spaces; control characters in paths and messages are escaped so a
 * file can never take more than one line. Errors are also reported on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

typedef enum { RES_OK, RES_MISMATCH, RES_ERROR } result_kind;

static void usage(FILE *f) {
  fprintf(f, "usage: fidelis verify [--json] FILE...\n\n"
             "Recomputes the self-seal of each sealed JSON document (the recipe and seal field\n"
             "follow from its \"schema\") and compares it with the stored value.\n\n"
             "options:\n"
             "  --json     one JSON object per file (JSON Lines) instead of text\n"
             "  -h, --help show this help\n\n"
             "output (text), one line per file, fields separated by two spaces:\n"
             "  OK  PATH  RECIPE  FIELD  DIGEST\n"
             "  MISMATCH  PATH  RECIPE  FIELD  stored=VALUE  computed=DIGEST\n"
             "  ERROR  PATH  (STATUS) message\n\n"
             "exit codes: 0 every seal recomputes; 3 a seal mismatches, or a file is not JSON or\n"
             "of an unknown kind; 4 bad usage or a FILE that cannot be opened or read (missing,\n"
             "not a regular file, a symlink), or output that cannot be written (4 wins over 3)\n");
}

static void print_json(const char *path, result_kind k, const fdl_seal_check *c, const char *stored,
                       const fdl_err *err) {
  static const char *const names[] = {"ok", "mismatch", "error"};
  json_t *o = json_object();
  if (!o) return;
  json_object_set_new(o, "path", fdl_cli_json_text(path));
  json_object_set_new(o, "status", json_string(names[k]));
  if (k == RES_ERROR) {
    json_object_set_new(o, "error", json_string(fdl_status_name(err->status)));
    json_object_set_new(o, "message", fdl_cli_json_text(err->msg));
  } else {
    json_object_set_new(o, "recipe", json_string(fdl_seal_recipe_name(c->recipe)));
    json_object_set_new(o, "field", json_string(c->field));
    json_object_set_new(o, "computed", json_string(c->computed));
    json_object_set_new(o, "stored", stored ? fdl_cli_json_text(stored) : json_null());
  }
  fdl_cli_print_json(o, FDL_JSON_ASCII);
}

static void print_text(const char *path, result_kind k, const fdl_seal_check *c, const char *stored,
                       const fdl_err *err) {
  static const char *const names[] = {"OK", "MISMATCH", "ERROR"};
  fputs(names[k], stdout);
  fputs("  ", stdout);
  fdl_cli_put_text(stdout, path);
  if (k == RES_ERROR) {
    printf("  (%s) ", fdl_status_name(err->status));
    fdl_cli_put_text(stdout, err->msg);
  } else {
    printf("  %s  %s  ", fdl_seal_recipe_name(c->recipe), c->field);
    if (k == RES_OK) {
      fputs(c->computed, stdout);
    } else {
      fputs("stored=", stdout);
      if (!stored)
        fputs("(absent)", stdout);
      else if (!*stored)
        fputs("\"\"", stdout);
      else
        fdl_cli_put_text(stdout, stored);
      printf("  computed=%s", c->computed);
    }
  }
  fputc('\n', stdout);
}

/* The exit code this file contributes: 0, 3 (mismatch, or read and refused) or 4 (could not be
 * read). The library reads and checks the file (a kiln.* document in Kiln-strict mode); this only
 * prints the answer. A named file may be a link: resolved once, the target is opened without
 * following. */
static int verify_one(const char *path, bool as_json) {
  fdl_err err = {FDL_OK, ""};
  fdl_seal_check chk;
  memset(&chk, 0, sizeof chk);
  char *real = NULL;
  int fd = -1;
  uint64_t size;
  fdl_status s = fdl_resolve_named(path, &real, &err);
  if (s == FDL_OK && (s = fdl_open_regular(real, false, &fd, &size, &err)) == FDL_OK) close(fd);
  bool read_failed = s != FDL_OK;
  if (s == FDL_OK) s = fdl_seal_verify_file(real, &chk, &err);
  free(real);
  result_kind k = s != FDL_OK ? RES_ERROR : chk.ok ? RES_OK : RES_MISMATCH;
  const char *stored = NULL;
  if (k != RES_ERROR && chk.stored_present)
    stored = chk.stored_string ? chk.stored : "(not a string)";
  if (as_json)
    print_json(path, k, &chk, stored, &err);
  else
    print_text(path, k, &chk, stored, &err);
  if (k == RES_ERROR) fdl_cli_report(&err);
  if (k == RES_OK) return FDL_EXIT_OK;
  if (k == RES_MISMATCH) return FDL_EXIT_REFUSED;
  return read_failed ? FDL_EXIT_USAGE : fdl_cli_exit_for(s);
}

typedef struct {
  const char **files;
  size_t n;
  bool as_json;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  if (!(a->files = calloc((size_t)argc + 1, sizeof *a->files))) {
    fputs("fidelis verify: out of memory\n", diag ? diag : stderr);
    return FDL_EXIT_USAGE;
  }
  const fdl_cli_opt opts[] = {FDL_CLI_OPT_FLAG("--json", &a->as_json)};
  fdl_cli_spec s = {"verify", usage, opts, 1, NULL, 0, a->files, (size_t)argc, 0, out, diag, 0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!s.npos) return fdl_cli_usage_error(&s, "no FILE given");
  a->n = s.npos;
  return FDL_CLI_GO;
}

static void release(args *a) {
  free(a->files);
}

static int work(args *a) {
  int rc = FDL_EXIT_OK;
  for (size_t i = 0; i < a->n; i++) {
    int r = verify_one(a->files[i], a->as_json);
    if (r > rc) rc = r; /* 4 wins over 3 */
    fflush(stdout);
  }
  return rc;
}

FDL_CLI_COMMAND_FREE(fdl_cli_verify, fdl_cli_verify_check, args, parse, work, release)
