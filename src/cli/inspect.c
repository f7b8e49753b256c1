/* inspect.c - `fidelis inspect DIR`: a readable summary of a fidelity dataset. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "dataset/dataset_json.h"

static void usage(FILE *f) {
  fprintf(f, "usage: fidelis inspect DIR [--json]\n\n"
             "Summarises a malaiwah.fidelity-dataset.v1 directory: role, form, records and\n"
             "positions, vocab and hidden sizes, dtype, head digest, lane and stack, seal status\n"
             "(the manifest seal and checksums.txt digest, recomputed), and the domains with\n"
             "their position counts. Use `fidelis validate` for the full check.\n\n"
             "  --json      print the summary as JSON\n"
             "  -h, --help  show this help\n\n"
             "exit codes: 0 ok; 3 the dataset is refused (no fidelity-dataset.json, or a\n"
             "manifest in it is malformed); 4 bad usage, DIR that cannot be opened as a\n"
             "directory (missing, a file, FIFO or device, a symlink loop, no permission), a\n"
             "manifest that cannot be read, or output that cannot be written\n");
}

static void row(const char *label, const char *v) {
  printf("%-26s%s\n", label, v);
}

/* A manifest string: untrusted, so shown escaped (fdl_cli_shown); absent as "-". */
static void text(const char *label, const char *v) {
  char buf[FDL_QUOTE_CAP];
  row(label, fdl_cli_shown(v, buf, sizeof buf));
}

/* Room for an int64 in decimal, its sign and the NUL. */
#define NUM_BUF 24

/* A count the manifest states, in buf; -1 (absent or mistyped) as "-". */
static const char *num(int64_t v, char buf[static NUM_BUF]) {
  if (v < 0) return "-";
  snprintf(buf, NUM_BUF, "%lld", (long long)v);
  return buf;
}

static const char *flag(fdl_ds_bool b) {
  return b == FDL_DS_UNSET ? "-" : b ? "true" : "false";
}

static void print_human(const fdl_ds_summary *s) {
  const fdl_ds_manifest *m = &s->ds.m;
  text("dataset", m->dataset.id);
  text("name", m->dataset.name);
  text("role", fdl_role_names[m->dataset.role]);
  text("form", fdl_form_names[m->capture.form]);
  text("semantic point", m->capture.semantic_point);
  char b[NUM_BUF];
  printf("%-26s%zu of %s (%s)\n", "records", s->ds.n_records, num(m->coverage.declared_records, b),
         m->coverage.complete == FDL_DS_TRUE ? "complete" : "INCOMPLETE");
  row("scored positions", num(s->positions, b));
  row("context length", num(m->panel.context_length, b));
  row("vocab size", num(m->capture.vocab_size, b));
  row("hidden width", num(m->capture.hidden_width, b));
  text("dtype", m->capture.dtype);
  row("dtype lossless", flag(m->capture.dtype_lossless));
  text("capture content digest", m->capture.capture_content_digest);
  row("head present", flag(m->head.present));
  text("head content digest", m->head.tensor_content_sha256);
  char shape[2 * NUM_BUF + 3] = "-";
  if (m->head.shape[0] >= 0)
    snprintf(shape, sizeof shape, "[%lld,%lld]", (long long)m->head.shape[0],
             (long long)m->head.shape[1]);
  row("head shape", shape);
  text("head source", m->head.source);
  text("lane", fdl_lane_names[m->runtime.lane]);
  text("stack fingerprint", m->runtime.stack_fingerprint_sha256);
  text("engine", s->ds.rt.stack_fingerprint.engine);
  text("device", s->ds.rt.stack_fingerprint.device);
  text("device name", s->ds.rt.stack_fingerprint.device_name);
  text("panel", m->panel.panel_id);
  text("suite token hash", m->panel.suite_token_hash_sha256);
  text("weights", m->weights.repository);
  text("dataset_sha256", m->dataset_sha256);
  row("manifest seal", s->manifest_seal);
  row("checksums.txt", s->checksums_txt);
  text("claimed status", m->dataset.structural_status ? m->dataset.structural_status : "unknown");
  printf("domains:\n");
  for (size_t i = 0; i < s->n_domains; i++) {
    char buf[FDL_QUOTE_CAP];
    const fdl_ds_domain_count *d = &s->domains[i];
    printf("  %-24s %lld positions in %lld record(s)\n", fdl_cli_shown(d->name, buf, sizeof buf),
           (long long)d->positions, (long long)d->records);
  }
}

typedef struct {
  const char *dir;
  bool json;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {FDL_CLI_OPT_FLAG("--json", &a->json)};
  fdl_cli_spec s = {"inspect", usage, opts, 1, NULL, 0, &a->dir, 1, 0, out, diag, 0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 1) return fdl_cli_usage_error(&s, "a dataset directory DIR is required");
  return FDL_CLI_GO;
}

static int work(args *a) {
  int rc;
  if ((rc = fdl_cli_input_dataset("inspect", a->dir, true)) != 0) return rc;
  fdl_ds_summary s;
  fdl_err err;
  fdl_status st = fdl_ds_inspect(a->dir, &s, &err);
  if (st != FDL_OK) return fdl_cli_failed(&err, st);
  if (!a->json) {
    print_human(&s);
    fdl_ds_summary_free(&s);
    return FDL_EXIT_OK;
  }
  json_t *j;
  st = fdl_ds_summary_to_json(&s, &j, &err);
  fdl_ds_summary_free(&s);
  return st != FDL_OK ? fdl_cli_failed(&err, st) : fdl_cli_print_json(j, FDL_JSON_PRETTY);
}

FDL_CLI_COMMAND(fdl_cli_inspect, fdl_cli_inspect_check, args, parse, work)
