/* inspect.c - `fidelis inspect DIR`: a readable summary of a fidelity dataset. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "fidelis/dataset.h"
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

/* A value as text: strings as fdl_cli_shown, others as compact JSON, absent as "-". Manifest
 * strings are untrusted, so nothing reaches the terminal unescaped. */
static void put(const json_t *v) {
  char buf[FDL_QUOTE_CAP];
  if (!v || json_is_null(v)) {
    fputs("-", stdout);
  } else if (json_is_string(v)) {
    fputs(fdl_cli_shown(json_string_value(v), json_string_length(v), buf, sizeof buf), stdout);
  } else {
    fdl_buf b;
    fdl_buf_init(&b, 4096);
    if (fdl_json_dump(v, 0, &b, NULL) == FDL_OK)
      fputs(fdl_quote_text(b.data, b.len, buf, sizeof buf), stdout);
    fdl_buf_free(&b);
  }
}

static void line(const char *label, const json_t *o, const char *key) {
  printf("%-26s", label);
  put(json_object_get(o, key));
  putchar('\n');
}

static void print_human(const json_t *s) {
  const json_t *rec = json_object_get(s, "records"), *head = json_object_get(s, "head"),
               *rt = json_object_get(s, "runtime"), *panel = json_object_get(s, "panel"),
               *seal = json_object_get(s, "seal");
  line("dataset", s, "id");
  line("name", s, "name");
  line("role", s, "role");
  line("form", s, "form");
  line("semantic point", s, "semantic_point");
  printf("%-26s", "records");
  put(json_object_get(rec, "present"));
  fputs(" of ", stdout);
  put(json_object_get(rec, "declared"));
  fputs(json_is_true(json_object_get(rec, "complete")) ? " (complete)\n" : " (INCOMPLETE)\n",
        stdout);
  line("scored positions", rec, "positions");
  line("context length", s, "context_length");
  line("vocab size", s, "vocab_size");
  line("hidden width", s, "hidden_width");
  line("dtype", s, "dtype");
  line("dtype lossless", s, "dtype_lossless");
  line("capture content digest", s, "capture_content_digest");
  line("head present", head, "present");
  line("head content digest", head, "tensor_content_sha256");
  line("head shape", head, "shape");
  line("head source", head, "source");
  line("lane", rt, "lane");
  line("stack fingerprint", rt, "stack_fingerprint_sha256");
  line("engine", rt, "engine");
  line("device", rt, "device");
  line("device name", rt, "device_name");
  line("panel", panel, "panel_id");
  line("suite token hash", panel, "suite_token_hash_sha256");
  line("weights", s, "weights_repository");
  line("dataset_sha256", seal, "dataset_sha256");
  line("manifest seal", seal, "manifest_seal");
  line("checksums.txt", seal, "checksums_txt");
  line("claimed status", seal, "claimed_status");
  printf("domains:\n");
  const char *key;
  json_t *v;
  json_object_foreach(json_object_get(s, "domains"), key, v) {
    char buf[FDL_QUOTE_CAP];
    printf("  %-24s %lld positions in %lld record(s)\n",
           fdl_cli_shown(key, strlen(key), buf, sizeof buf),
           (long long)json_integer_value(json_object_get(v, "positions")),
           (long long)json_integer_value(json_object_get(v, "records")));
  }
}

static int parse(int argc, char **argv, FILE *out, FILE *diag, const char **dir, bool *json) {
  *json = false;
  const fdl_cli_opt opts[] = {FDL_CLI_OPT_FLAG("--json", json)};
  fdl_cli_spec s = {"inspect", usage, opts, 1, NULL, 0, dir, 1, 0, out, diag, 0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 1) return fdl_cli_usage_error(&s, "a dataset directory DIR is required");
  return FDL_CLI_GO;
}

int fdl_cli_inspect_check(int argc, char **argv, FILE *out, FILE *diag) {
  const char *dir;
  bool json;
  return parse(argc, argv, out, diag, &dir, &json);
}

int fdl_cli_inspect(int argc, char **argv) {
  const char *dir = NULL;
  bool json;
  int rc = parse(argc, argv, NULL, NULL, &dir, &json);
  if (rc != FDL_CLI_GO) return rc;
  if ((rc = fdl_cli_input_dataset("inspect", dir, true)) != 0) return rc;
  json_t *s;
  fdl_err err;
  fdl_status st = fdl_ds_inspect(dir, &s, &err);
  if (st != FDL_OK) return fdl_cli_failed(&err, st);
  if (json) return fdl_cli_print_json(s, FDL_JSON_PRETTY);
  print_human(s);
  json_decref(s);
  return FDL_EXIT_OK;
}
