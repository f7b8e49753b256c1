/* validate.c - `fidelis validate DIR`: every check of FIDELITY-DATASET §12 with its codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dataset/dataset_json.h"
#include "base/order.h"

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
          "  --threads N       hashing threads, 1 to %d (default: one per CPU)\n"
          "  -h, --help        show this help\n\n"
          "exit codes: 0 ok; 2 warnings only; 3 errors found (the dataset is refused) or --report\n"
          "FILE exists; 4 bad usage, DIR that cannot be opened as a directory (missing, a\n"
          "file, FIFO or device, a symlink loop, no permission), or output that cannot be\n"
          "written\n",
          FDL_DS_VALIDATION_SCHEMA, FDL_POOL_MAX_THREADS);
}

static void print_findings(const fdl_ds_findings *f, const char *label) {
  for (size_t i = 0; i < f->count; i++) {
    const fdl_ds_finding *x = &f->items[i];
    printf("%s [%s/%s] ", label, fdl_ds_code_name(x->code), x->rule);
    fdl_cli_put_text(stdout, x->message);
    if (x->where[0]) {
      fputs("  (", stdout);
      fdl_cli_put_text(stdout, x->where);
      fputc(')', stdout);
    }
    fputc('\n', stdout);
  }
}

static void print_human(const fdl_ds_report *r) {
  fdl_cli_put_text(stdout, r->subject);
  printf(": %zu error(s), %zu warning(s)\n", r->errors.count, r->warnings.count);
  print_findings(&r->errors, "ERROR  ");
  print_findings(&r->warnings, "warning");
  char **names = malloc((r->n_checks ? r->n_checks : 1) * sizeof *names);
  if (names) {
    if (r->n_checks) memcpy(names, r->checks, r->n_checks * sizeof *names);
    if (r->n_checks) qsort(names, r->n_checks, sizeof *names, fdl_order_cstr);
    printf("checks:");
    for (size_t i = 0; i < r->n_checks; i++) printf(" %s", names[i]);
    printf("\n");
    free(names);
  }
  printf("conformance: %s\n", fdl_ds_level_name(r->level));
}

typedef struct {
  fdl_ds_validate_opts o;
  const char *dir, *report;
  bool json;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  bool no_verify = false;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_FLAG("--verify-tensors", &a->o.verify_tensors),
      FDL_CLI_OPT_FLAG("--no-verify-tensors", &no_verify),
      FDL_CLI_OPT_FLAG("--structural", &a->o.skip_hashing),
      FDL_CLI_OPT_FLAG("--json", &a->json),
      FDL_CLI_OPT_OUT("--report", &a->report),
      FDL_CLI_OPT_FLAG("--allow-partial", &a->o.allow_partial),
      FDL_CLI_OPT_FLAG("--strict", &a->o.strict),
      FDL_CLI_OPT_FLAG("--manifests-only", &a->o.manifests_only),
      FDL_CLI_OPT_FLAG("--manifest-only", &a->o.manifest_only),
      FDL_CLI_THREADS(&a->o.threads),
  };
  static const char *const conflicts[] = {
      "--verify-tensors", "--no-verify-tensors", "--manifests-only", "--manifest-only",
      "--verify-tensors", "--manifests-only",    "--verify-tensors", "--manifest-only",
      "--verify-tensors", "--structural",
  };
  const char *pos[1];
  fdl_cli_spec s = {"validate", usage, opts, FDL_CLI_N(opts), conflicts, 5, pos, 1, 0,
                    out,        diag,  0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 1) return fdl_cli_usage_error(&s, "a dataset directory DIR is required");
  a->dir = pos[0];
  return FDL_CLI_GO;
}

static int work(args *a) {
  int rc;
  if ((rc = fdl_cli_input_dataset("validate", a->dir, false)) != 0) return rc;
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_err err;
  fdl_status st = fdl_ds_validate(a->dir, &a->o, &rep, &err);
  if (st != FDL_OK) {
    fdl_cli_report(&err);
    fdl_ds_report_free(&rep);
    return fdl_cli_exit_for(st);
  }
  fdl_ds_verdict verdict = fdl_ds_report_verdict(&rep);
  rc = verdict == FDL_DS_VERDICT_ERRORS     ? FDL_EXIT_REFUSED
       : verdict == FDL_DS_VERDICT_WARNINGS ? FDL_EXIT_WARN
                                            : FDL_EXIT_OK;
  json_t *doc = NULL;
  if (a->json || a->report) {
    if ((st = fdl_ds_report_to_json(&rep, true, &doc, &err)) != FDL_OK) {
      fdl_cli_report(&err);
      fdl_ds_report_free(&rep);
      return fdl_cli_exit_for(st);
    }
  }
  if (a->json) {
    int printed = fdl_cli_print_json(json_incref(doc), FDL_JSON_PRETTY);
    if (printed != FDL_EXIT_OK) rc = printed;
  } else {
    print_human(&rep);
  }
  if (a->report && (st = fdl_json_write_file(a->report, doc, FDL_JSON_PRETTY, &err)) != FDL_OK) {
    fdl_cli_report(&err);
    /* The report was asked for and not written: an existing FILE is a refusal (never
     * overwritten), anything else output that could not be written. */
    rc = st == FDL_EXISTS ? FDL_EXIT_REFUSED : FDL_EXIT_USAGE;
  }
  json_decref(doc);
  fdl_ds_report_free(&rep);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_validate, fdl_cli_validate_check, args, parse, work)
