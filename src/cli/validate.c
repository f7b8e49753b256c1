/* validate.c - `fidelis validate DIR`: every check of FIDELITY-DATASET §12 with its codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "fidelis/dataset.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis validate DIR [--verify-tensors | --structural] [--json] [--report FILE]\n"
          "                            [--allow-partial] [--strict] [--manifests-only]\n"
          "                            [--manifest-only] [--threads N]\n\n"
          "Checks a malaiwah.fidelity-dataset.v1 directory: schema and shapes, the seal chain,\n"
          "path rules PATH-1..4, checksums.txt, digest consistency, panel binding, coverage,\n"
          "head, determinism, role and scope rules. Every finding is reported, not just the "
          "first.\n\n"
          "By default every file listed in checksums.txt is hashed, as the reference validator\n"
          "does, so a flipped byte anywhere is an error: level 'structural'.\n"
          "  --verify-tensors  also recompute every tensor's content and payload digests and\n"
          "                    look for NaN and infinity, in the same reads: level 'sealed'\n"
          "  --no-verify-tensors  the default, accepted for the reference CLI's spelling\n"
          "  --structural      hash nothing: check the listing and every file's size only\n"
          "                    (fast; the report says nothing was hashed: level 'manifests')\n"
          "  --json            print the sealed report (%s) on stdout\n"
          "  --report FILE     also write that report to FILE (never overwrites)\n"
          "  --allow-partial   tolerate absent capture/ files and incomplete coverage\n"
          "  --strict          warnings count as errors\n"
          "  --manifests-only  check the manifests alone (seals, digests, bindings); token,\n"
          "                    mask, tensor files and checksums.txt are not read\n"
          "  --manifest-only   check fidelity-dataset.json alone (reference semantics)\n"
          "  --threads N       hashing threads (default: one per CPU)\n\n"
          "exit: 0 ok, 2 warnings only, 3 errors, 4 bad usage\n",
          FDL_DS_VALIDATION_SCHEMA);
}

static void print_findings(const fdl_ds_findings *f, const char *label) {
  for (size_t i = 0; i < f->count; i++) {
    const fdl_ds_finding *x = &f->items[i];
    printf("%s [%s/%s] ", label, x->code, x->rule);
    fdl_cli_put_text(stdout, x->message);
    if (x->where[0]) {
      fputs("  (", stdout);
      fdl_cli_put_text(stdout, x->where);
      fputc(')', stdout);
    }
    fputc('\n', stdout);
  }
}

static int cmp_cstr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_human(const fdl_ds_report *r) {
  fdl_cli_put_text(stdout, r->subject);
  printf(": %zu error(s), %zu warning(s)\n", r->errors.count, r->warnings.count);
  print_findings(&r->errors, "ERROR  ");
  print_findings(&r->warnings, "warning");
  char **names = malloc((r->n_checks ? r->n_checks : 1) * sizeof *names);
  if (names) {
    if (r->n_checks) memcpy(names, r->checks, r->n_checks * sizeof *names);
    if (r->n_checks) qsort(names, r->n_checks, sizeof *names, cmp_cstr);
    printf("checks:");
    for (size_t i = 0; i < r->n_checks; i++) printf(" %s", names[i]);
    printf("\n");
    free(names);
  }
  printf("conformance: %s\n", fdl_ds_level_name(r->level));
}

int fdl_cli_validate(int argc, char **argv) {
  fdl_ds_validate_opts o;
  memset(&o, 0, sizeof o);
  const char *dir = NULL, *report = NULL;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (fdl_cli_is_help(a)) {
      usage(stdout);
      return FDL_EXIT_OK;
    } else if (!strcmp(a, "--verify-tensors")) {
      o.verify_tensors = true;
    } else if (!strcmp(a, "--no-verify-tensors")) {
      o.verify_tensors = false;
    } else if (!strcmp(a, "--structural")) {
      o.skip_hashing = true;
    } else if (!strcmp(a, "--json")) {
      json = true;
    } else if (!strcmp(a, "--report") && i + 1 < argc) {
      report = argv[++i];
    } else if (!strcmp(a, "--allow-partial")) {
      o.allow_partial = true;
    } else if (!strcmp(a, "--strict")) {
      o.strict = true;
    } else if (!strcmp(a, "--manifests-only")) {
      o.manifests_only = true;
    } else if (!strcmp(a, "--manifest-only")) {
      o.manifest_only = true;
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      char *end;
      unsigned long n = strtoul(argv[++i], &end, 10);
      if (*end || n > 1024) {
        fprintf(stderr, "fidelis validate: --threads wants a number from 0 to 1024\n");
        return FDL_EXIT_USAGE;
      }
      o.threads = (unsigned)n;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "fidelis validate: unknown option '%s'\n\n", a);
      usage(stderr);
      return FDL_EXIT_USAGE;
    } else if (dir) {
      fprintf(stderr, "fidelis validate: one dataset directory at a time\n");
      return FDL_EXIT_USAGE;
    } else {
      dir = a;
    }
  }
  if (!dir) {
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_err err;
  if (fdl_ds_validate(dir, &o, &rep, &err) != FDL_OK) {
    fdl_cli_report(&err);
    fdl_ds_report_free(&rep);
    return FDL_EXIT_REFUSED;
  }
  fdl_ds_verdict verdict = fdl_ds_report_verdict(&rep);
  int rc = verdict == FDL_DS_VERDICT_ERRORS     ? FDL_EXIT_REFUSED
           : verdict == FDL_DS_VERDICT_WARNINGS ? FDL_EXIT_WARN
                                                : FDL_EXIT_OK;
  json_t *doc = NULL;
  if (json || report) {
    if (fdl_ds_report_to_json(&rep, true, &doc, &err) != FDL_OK) {
      fdl_cli_report(&err);
      fdl_ds_report_free(&rep);
      return FDL_EXIT_REFUSED;
    }
  }
  if (json) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    if (fdl_json_dump(doc, FDL_JSON_PRETTY, &b, &err) == FDL_OK)
      fwrite(b.data, 1, b.len, stdout);
    else
      fdl_cli_report(&err);
    fdl_buf_free(&b);
  } else {
    print_human(&rep);
  }
  if (report && fdl_json_write_file(report, doc, FDL_JSON_PRETTY, &err) != FDL_OK) {
    fdl_cli_report(&err);
    if (rc == FDL_EXIT_OK || rc == FDL_EXIT_WARN) rc = FDL_EXIT_REFUSED;
  }
  json_decref(doc);
  fdl_ds_report_free(&rep);
  return rc;
}
