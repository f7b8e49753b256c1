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

/* Writes s with control bytes, DEL and backslash escaped, so it stays on one line. */
static void put_escaped(FILE *f, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '\\')
      fputs("\\\\", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\x%02x", *p);
    else
      fputc(*p, f);
  }
}

/* A JSON string for s; bytes that are not UTF-8 (possible in a path) fall back to the
 * escaped ASCII spelling. */
static json_t *json_text(const char *s) {
  json_t *v = json_string(s);
  if (v) return v;
  char tmp[4 * 1024];
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 < sizeof tmp; p++) {
    if (*p >= 0x20 && *p < 0x7f && *p != '\\')
      tmp[n++] = (char)*p;
    else
      n += (size_t)snprintf(tmp + n, sizeof tmp - n, "\\x%02x", *p);
  }
  tmp[n] = '\0';
  return json_string(tmp);
}

static void print_json(const char *path, result_kind k, const fdl_seal_check *c, const char *stored,
                       const fdl_err *err) {
  static const char *const names[] = {"ok", "mismatch", "error"};
  json_t *o = json_object();
  if (!o) return;
  json_object_set_new(o, "path", json_text(path));
  json_object_set_new(o, "status", json_string(names[k]));
  if (k == RES_ERROR) {
    json_object_set_new(o, "error", json_string(fdl_status_name(err->status)));
    json_object_set_new(o, "message", json_text(err->msg));
  } else {
    json_object_set_new(o, "recipe", json_string(fdl_seal_recipe_name(c->recipe)));
    json_object_set_new(o, "field", json_string(c->field));
    json_object_set_new(o, "computed", json_string(c->computed));
    json_object_set_new(o, "stored", stored ? json_text(stored) : json_null());
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
  put_escaped(stdout, path);
  if (k == RES_ERROR) {
    printf("  (%s) ", fdl_status_name(err->status));
    put_escaped(stdout, err->msg);
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
        put_escaped(stdout, stored);
      printf("  computed=%s", c->computed);
    }
  }
  fputc('\n', stdout);
}

/* Kiln hashes values as Kiln's strict loader reads them (-0.0 becomes 0.0, inexact float
 * literals are refused), so a kiln.* document is re-read that way before hashing. *read_failed
 * tells an input that could not be read (exit 4) from one that was read and refused (exit 3). */
static fdl_status load_sealed(const char *path, json_t **doc, fdl_seal_check *chk,
                              bool *read_failed, fdl_err *err) {
  char *text = NULL;
  size_t len = 0;
  fdl_status s = fdl_read_file(path, FDL_JSON_MAX_FILE_BYTES, &text, &len, err);
  *read_failed = s != FDL_OK;
  if (s == FDL_OK) s = fdl_json_parse(text, len, NULL, doc, err);
  fdl_seal_recipe recipe;
  const char *field;
  if (s == FDL_OK) s = fdl_seal_kind(*doc, &recipe, &field, err);
  if (s == FDL_OK && recipe == FDL_SEAL_KILN_REMOVE) {
    json_decref(*doc);
    *doc = NULL;
    fdl_json_read_opts kiln = {.max_depth = 0, .kiln_strict = true};
    s = fdl_json_parse(text, len, &kiln, doc, err);
  }
  free(text);
  if (s != FDL_OK && !*read_failed) fdl_err_prefix(err, "%s", path);
  if (s == FDL_OK) s = fdl_seal_verify(*doc, chk, err);
  return s;
}

/* The exit code this file contributes: 0, 3 (mismatch, or read and refused) or 4. */
static int verify_one(const char *path, bool as_json) {
  fdl_err err = {FDL_OK, ""};
  fdl_seal_check chk;
  memset(&chk, 0, sizeof chk);
  json_t *doc = NULL;
  bool read_failed = false;
  fdl_status s = load_sealed(path, &doc, &chk, &read_failed, &err);
  result_kind k = s != FDL_OK ? RES_ERROR : chk.ok ? RES_OK : RES_MISMATCH;
  const char *stored = NULL;
  if (k != RES_ERROR) {
    const json_t *v = json_object_get(doc, chk.field);
    if (v) stored = json_is_string(v) ? chk.stored : "(not a string)";
  }
  if (as_json)
    print_json(path, k, &chk, stored, &err);
  else
    print_text(path, k, &chk, stored, &err);
  if (k == RES_ERROR) fdl_cli_report(&err);
  json_decref(doc);
  if (k == RES_OK) return FDL_EXIT_OK;
  if (k == RES_MISMATCH) return FDL_EXIT_REFUSED;
  return read_failed ? FDL_EXIT_USAGE : fdl_cli_exit_for(s);
}

static int parse(int argc, char **argv, FILE *out, FILE *diag, const char **files, size_t *n,
                 bool *as_json) {
  *as_json = false;
  const fdl_cli_opt opts[] = {FDL_CLI_OPT_FLAG("--json", as_json)};
  fdl_cli_spec s = {"verify", usage, opts, 1, NULL, 0, files, (size_t)argc, 0, out, diag};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!s.npos) return fdl_cli_usage_error(&s, "no FILE given");
  *n = s.npos;
  return FDL_CLI_GO;
}

int fdl_cli_verify_check(int argc, char **argv, FILE *out, FILE *diag) {
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  if (!files) return FDL_EXIT_USAGE;
  size_t n;
  bool as_json;
  int rc = parse(argc, argv, out, diag, files, &n, &as_json);
  free(files);
  return rc;
}

int fdl_cli_verify(int argc, char **argv) {
  const char **files = calloc((size_t)argc + 1, sizeof *files);
  if (!files) {
    fprintf(stderr, "fidelis verify: out of memory\n");
    return FDL_EXIT_USAGE;
  }
  size_t n = 0;
  bool as_json;
  int rc = parse(argc, argv, NULL, NULL, files, &n, &as_json);
  if (rc != FDL_CLI_GO) {
    free(files);
    return rc;
  }
  rc = FDL_EXIT_OK;
  for (size_t i = 0; i < n; i++) {
    int r = verify_one(files[i], as_json);
    if (r > rc) rc = r; /* 4 wins over 3 */
    fflush(stdout);
  }
  free(files);
  return rc;
}
