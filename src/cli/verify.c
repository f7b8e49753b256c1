/* verify.c - `fidelis verify FILE...`: recompute the self-seal of sealed JSON documents.
 *
 * One line per file on stdout so results can be grepped and diffed:
 *   OK        PATH  RECIPE  FIELD  DIGEST
 *   MISMATCH  PATH  RECIPE  FIELD  stored=VALUE  computed=DIGEST
 *   ERROR     PATH  (STATUS) message
 * Fields are separated by two spaces; control characters in paths and messages are escaped so a
 * file can never take more than one line. Errors are also reported on stderr. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef enum { RES_OK, RES_MISMATCH, RES_ERROR } result_kind;

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis verify [--json] FILE...\n\n"
          "Recomputes the self-seal of each sealed JSON document (the recipe and seal field\n"
          "follow from its \"schema\") and compares it with the stored value.\n\n"
          "options:\n"
          "  --json     one JSON object per file (JSON Lines) instead of text\n"
          "  -h, --help show this help\n\n"
          "output (text), one line per file, fields separated by two spaces:\n"
          "  OK  PATH  RECIPE  FIELD  DIGEST\n"
          "  MISMATCH  PATH  RECIPE  FIELD  stored=VALUE  computed=DIGEST\n"
          "  ERROR  PATH  (STATUS) message\n\n"
          "exit codes: 0 every seal recomputes; 3 a seal mismatches and every file was read;\n"
          "4 a file is unreadable, not JSON, of an unknown kind, or bad usage (4 wins over 3)\n");
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
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_err e;
  if (fdl_json_dump(o, FDL_JSON_ASCII, &b, &e) == FDL_OK)
    printf("%s\n", b.data);
  else
    fdl_cli_report(&e);
  fdl_buf_free(&b);
  json_decref(o);
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

/* The library reads and checks the file (a kiln.* document in Kiln-strict mode); this only
 * prints the answer. */
static result_kind verify_one(const char *path, bool as_json) {
  fdl_err err = {FDL_OK, ""};
  fdl_seal_check chk;
  memset(&chk, 0, sizeof chk);
  /* A named file may be a link: resolved once, the target is opened without following. */
  char *real = NULL;
  fdl_status s = fdl_resolve_named(path, &real, &err);
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
  return k;
}

int fdl_cli_verify(int argc, char **argv) {
  bool as_json = false;
  int first = 1;
  for (; first < argc; first++) {
    const char *a = argv[first];
    if (!strcmp(a, "--")) {
      first++;
      break;
    }
    if (a[0] != '-' || !a[1]) break;
    if (fdl_cli_is_help(a)) {
      usage(stdout);
      return FDL_EXIT_OK;
    }
    if (!strcmp(a, "--json")) {
      as_json = true;
      continue;
    }
    fprintf(stderr, "fidelis verify: unknown option '%s'\n\n", a);
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  if (first >= argc) {
    fprintf(stderr, "fidelis verify: no FILE given\n\n");
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  bool any_mismatch = false, any_error = false;
  for (int i = first; i < argc; i++) {
    result_kind k = verify_one(argv[i], as_json);
    any_mismatch |= k == RES_MISMATCH;
    any_error |= k == RES_ERROR;
    fflush(stdout);
  }
  if (any_error) return FDL_EXIT_USAGE;
  return any_mismatch ? FDL_EXIT_REFUSED : FDL_EXIT_OK;
}
