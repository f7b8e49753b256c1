/* kiln.c - `fidelis check FILE...` (Kiln requests, v1 and v2 results) and `fidelis divergence`
 * (a first-divergence kiln.hf-next-token-request.v1). docs/ATTRIBUTION.md describes both. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "attr/kiln_json.h"

static void check_usage(FILE *f) {
  fprintf(f,
          "usage: fidelis check FILE... [--root DIR] [--reference FILE [--path NAME=FILE]...]\n\n"
          "Re-checks Kiln records: kiln.hf-next-token-request.v1 (every rule of the request\n"
          "contract; prints its identity), and the v1 oracle, path- and layer-attribution\n"
          "results (closed keys, result_sha256, invariants, the largest\n"
          "relative-error growth recomputed from the boundaries), the v2 oracle, path- and\n"
          "layer-attribution results (every rule the record alone allows: closed keys,\n"
          "result_sha256, the provenance blocks, the HF evidence, the oracle verdict, the\n"
          "graph counters, the path attribution and the largest growth recomputed), and\n"
          "fidelis' fidelis.path-attribution.v1 records (record_sha256; the verdict, the\n"
          "attribution and the graph counters recomputed from the record's own values).\n\n"
          "--reference FILE (one row of logits: .npy, .f32 or safetensors) recomputes a path\n"
          "record's numbers: the reference argmax (and fidelis' reference block), and with\n"
          "--path NAME=FILE (the path's logits; its last row) that full path's comparison,\n"
          "every value bit for bit. Every FILE must then be a path-attribution record.\n\n"
          "--root DIR (the Kiln repository root) also checks the rules that need other files,\n"
          "resolving the records' repo-relative paths under DIR: a request's two source\n"
          "receipts (digests, commit, run, model, one run at concurrency 1, the exact output\n"
          "starting with the prefix and that engine's candidate); an oracle, path or layer\n"
          "result's request (loaded, checked in full with its receipts, every field bound to\n"
          "it); a path result's oracle result (checked in full, bound). A named file must be\n"
          "relative without \"..\", inside DIR, a regular file, not a symlink; a request is at\n"
          "most 262144 bytes. Without --root these rules are not checked and a note on stderr\n"
          "says so. Kiln's --require-current-source (compare with Kiln's live git checkout and\n"
          "script digests) is refused: fidelis has neither.\n\n"
          "output: OK  PATH  SCHEMA  IDENTITY per file; failures on stderr.\n\n"
          "exit codes: 0 every file passes; 3 a file is malformed, fails a hash, a rule or a\n"
          "recomputation, or has an unsupported schema, or a file it references is missing,\n"
          "misplaced or breaks a rule or binding; 4 bad usage, a FILE or --root that cannot be\n"
          "opened, or a referenced file that exists but cannot be read (4 wins)\n");
}

typedef struct {
  const char **files;
  size_t nfiles;
  const char *reference;
  const char **paths; /* the --path values, in order */
  size_t npaths;
  const char *root;
  bool current_source; /* Kiln's --require-current-source, refused */
} check_args;

/* The loaded --reference and --path logits. */
typedef struct {
  fdl_attr_matrix ref;
  struct {
    fdl_attr_matrix m;
    char *name;
  } * paths; /* owned; rows[i] borrows paths[i] */
  fdl_kiln_logits_row *rows;
  size_t n;
} check_logits;

/* One FILE; *unchecked is set when it has rules needing other files that were not checked. */
static int check_one(const char *path, const char *root, const check_logits *lg, bool *unchecked) {
  fdl_err err = {FDL_OK, ""};
  char *real = NULL;
  int fd = -1;
  uint64_t size;
  fdl_status s = fdl_resolve_named(path, &real, &err);
  if (s == FDL_OK && (s = fdl_open_regular(real, false, &fd, &size, &err)) == FDL_OK) close(fd);
  if (s != FDL_OK) {
    free(real);
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  fdl_kiln_checked res;
  json_t *doc = NULL;
  const fdl_kiln_check_opts opts = {root};
  s = fdl_kiln_check_file_opts(real, &opts, &res, lg ? &doc : NULL, &err);
  free(real);
  if (s == FDL_OK && lg)
    s = fdl_kiln_recompute_paths(doc, path, lg->ref.data, (size_t)lg->ref.cols, lg->rows, lg->n,
                                 &err);
  json_decref(doc);
  if (s != FDL_OK) return fdl_cli_failed(&err, s);
  if (res.has_refs && !res.refs_checked) *unchecked = true;
  fputs("OK  ", stdout);
  fdl_cli_put_text(stdout, path);
  printf("  %s  %s\n", res.schema, res.identity);
  return FDL_EXIT_OK;
}

static int check_parse(check_args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  a->files = calloc((size_t)argc + 1, sizeof *a->files);
  a->paths = calloc((size_t)argc + 1, sizeof *a->paths);
  if (!a->files || !a->paths) return FDL_EXIT_USAGE;
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  if (!rest) return FDL_EXIT_USAGE;
  int k = 0;
  int rc =
      fdl_cli_split_paths("check", "NAME=FILE", argc, argv, rest, &k, a->paths, &a->npaths, diag);
  if (rc != FDL_CLI_GO) {
    free(rest);
    return rc;
  }
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--reference", &a->reference),
      FDL_CLI_OPT_PATH("--root", &a->root),
      FDL_CLI_OPT_FLAG("--require-current-source", &a->current_source),
  };
  fdl_cli_spec s = {"check", check_usage, opts, FDL_CLI_N(opts), NULL, 0, a->files, (size_t)argc, 0,
                    out,     diag,        0};
  rc = fdl_cli_parse(&s, 1, k, rest);
  free(rest);
  if (rc != FDL_CLI_GO) return rc;
  if (!s.npos) return fdl_cli_usage_error(&s, "no FILE given");
  if (a->current_source)
    return fdl_cli_usage_error(&s,
                               "--require-current-source compares a record with Kiln's live git "
                               "checkout and its script digests, which fidelis does not have; "
                               "check in Kiln's own checkout for that");
  if (a->npaths && !a->reference) return fdl_cli_usage_error(&s, "--path needs --reference");
  for (size_t i = 0; i < a->npaths; i++) {
    const char *eq = strchr(a->paths[i], '=');
    if (!eq || eq == a->paths[i] || !eq[1])
      return fdl_cli_usage_error(&s, "--path '%s': expected NAME=FILE", a->paths[i]);
  }
  a->nfiles = s.npos;
  return FDL_CLI_GO;
}

static void check_free(check_args *a) {
  free(a->files);
  free(a->paths);
}

static int load_check_logits(const check_args *a, check_logits *lg) {
  int rc = fdl_cli_load_matrix("check", "--reference", a->reference, NULL, &lg->ref);
  if (!rc && lg->ref.rows != 1) {
    char q[FDL_QUOTE_CAP];
    fprintf(stderr, "fidelis check: --reference %s: %llu rows, expected one row of logits\n",
            fdl_quote_str(a->reference, q, sizeof q), (unsigned long long)lg->ref.rows);
    rc = FDL_EXIT_REFUSED;
  }
  lg->paths = calloc(a->npaths + 1, sizeof *lg->paths);
  lg->rows = calloc(a->npaths + 1, sizeof *lg->rows);
  if (!lg->paths || !lg->rows) rc = FDL_EXIT_USAGE;
  for (size_t i = 0; !rc && i < a->npaths; i++) {
    const char *v = a->paths[i], *eq = strchr(v, '=');
    const fdl_attr_matrix *m = &lg->paths[i].m;
    if (!(lg->rows[i].name = lg->paths[i].name = strndup(v, (size_t)(eq - v))))
      return FDL_EXIT_USAGE;
    lg->n = i + 1;
    rc = fdl_cli_load_matrix("check", "--path", eq + 1, NULL, &lg->paths[i].m);
    if (!rc && (m->cols != lg->ref.cols || m->rows == 0)) {
      fprintf(stderr,
              "fidelis check: --path %s: %s: rows of %llu logits, expected %llu (the "
              "reference's width)\n",
              lg->paths[i].name, eq + 1, (unsigned long long)m->cols,
              (unsigned long long)lg->ref.cols);
      rc = FDL_EXIT_REFUSED;
    }
    if (!rc) lg->rows[i].row = m->data + (m->rows - 1) * m->cols;
  }
  return rc;
}

static void free_check_logits(check_logits *lg) {
  fdl_attr_matrix_free(&lg->ref);
  for (size_t i = 0; lg->paths && i < lg->n; i++) {
    fdl_attr_matrix_free(&lg->paths[i].m);
    free(lg->paths[i].name);
  }
  free(lg->paths);
  free(lg->rows);
}

static int check_run(check_args *a) {
  check_logits lg;
  memset(&lg, 0, sizeof lg);
  int rc = a->reference ? load_check_logits(a, &lg) : FDL_EXIT_OK;
  if (!rc && a->root && fdl_cli_input_dir("check", a->root) != 0) rc = FDL_EXIT_USAGE;
  if (!rc) {
    bool unchecked = false;
    for (size_t i = 0; i < a->nfiles; i++) {
      int r = check_one(a->files[i], a->root, a->reference ? &lg : NULL, &unchecked);
      if (r > rc) rc = r;
      fflush(stdout);
    }
    if (unchecked)
      fprintf(stderr, "fidelis check: note: the rules that need other files (source receipts, "
                      "the request a result names, a path result's oracle result) were not "
                      "checked: no --root\n");
  }
  free_check_logits(&lg);
  return rc;
}

FDL_CLI_COMMAND_FREE(fdl_cli_check, fdl_cli_check_check, check_args, check_parse, check_run,
                     check_free)

/* ---- divergence ---------------------------------------------------------------------------- */

static void div_usage(FILE *f) {
  fprintf(f, "usage: fidelis divergence --prompt-ids JSON|@FILE --reference-ids JSON|@FILE\n"
             "         --candidate-ids JSON|@FILE --prompt-text TEXT|@FILE --id ID\n"
             "         --source-commit HEX40 --run-id ID --phase PHASE\n"
             "         --kiln-receipt JSON|@FILE --vllm-receipt JSON|@FILE\n"
             "         (--model-dir DIR --model-id ID | --model-identity JSON|@FILE)\n"
             "         [--reference-texts JSON|@FILE] [--candidate-texts JSON|@FILE] --out FILE\n\n"
             "Finds the first step where the reference (vllm) and candidate (kiln) generated\n"
             "token streams differ and writes a kiln.hf-next-token-request.v1: the prompt, the\n"
             "common continuation prefix (1..64 tokens), both candidate tokens, the input ids and\n"
             "their canonical hash, and the model identity (Kiln's fingerprint of --model-dir).\n"
             "Receipt references are {path, file_sha256, content_sha256} objects. Texts default\n"
             "to \"\". Prints the step and the request identity.\n\n"
             "exit codes: 0 written; 3 nothing diverges, the request would break a rule, a value\n"
             "is malformed, or --out exists; 4 bad usage, an unopenable input or a failed write\n");
}

typedef struct {
  const char *prompt_ids, *reference_ids, *candidate_ids, *prompt_text, *id, *source_commit,
      *run_id, *phase, *kiln_receipt, *vllm_receipt, *model_dir, *model_id, *model_identity,
      *reference_texts, *candidate_texts, *out;
} div_args;

static int div_parse(div_args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_TEXT("--prompt-ids", &a->prompt_ids),
      FDL_CLI_OPT_TEXT("--reference-ids", &a->reference_ids),
      FDL_CLI_OPT_TEXT("--candidate-ids", &a->candidate_ids),
      FDL_CLI_OPT_TEXT("--prompt-text", &a->prompt_text),
      FDL_CLI_OPT_TEXT("--id", &a->id),
      FDL_CLI_OPT_TEXT("--source-commit", &a->source_commit),
      FDL_CLI_OPT_TEXT("--run-id", &a->run_id),
      FDL_CLI_OPT_TEXT("--phase", &a->phase),
      FDL_CLI_OPT_TEXT("--kiln-receipt", &a->kiln_receipt),
      FDL_CLI_OPT_TEXT("--vllm-receipt", &a->vllm_receipt),
      FDL_CLI_OPT_PATH("--model-dir", &a->model_dir),
      FDL_CLI_OPT_TEXT("--model-id", &a->model_id),
      FDL_CLI_OPT_TEXT("--model-identity", &a->model_identity),
      FDL_CLI_OPT_TEXT("--reference-texts", &a->reference_texts),
      FDL_CLI_OPT_TEXT("--candidate-texts", &a->candidate_texts),
      FDL_CLI_OPT_OUT("--out", &a->out),
  };
  static const char *const conflicts[] = {"--model-dir", "--model-identity"};
  fdl_cli_spec s = {"divergence", div_usage, opts, FDL_CLI_N(opts), conflicts, 1, NULL, 0, 0,
                    out,          diag,      0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  const char *need[][2] = {{"--prompt-ids", a->prompt_ids},
                           {"--reference-ids", a->reference_ids},
                           {"--candidate-ids", a->candidate_ids},
                           {"--prompt-text", a->prompt_text},
                           {"--id", a->id},
                           {"--source-commit", a->source_commit},
                           {"--run-id", a->run_id},
                           {"--phase", a->phase},
                           {"--kiln-receipt", a->kiln_receipt},
                           {"--vllm-receipt", a->vllm_receipt},
                           {"--out", a->out}};
  for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
    if (!need[i][1]) return fdl_cli_usage_error(&s, "%s is required", need[i][0]);
  if (!a->model_dir && !a->model_identity)
    return fdl_cli_usage_error(&s, "--model-dir (with --model-id) or --model-identity is required");
  if (a->model_dir && !a->model_id) return fdl_cli_usage_error(&s, "--model-dir needs --model-id");
  return FDL_CLI_GO;
}

static int work(div_args *a) {
  int rc = 0;
  /* The JSON inputs, in the order they are read (an optional one may stay NULL). */
  enum { PROMPT, REF, CAND, REF_TEXTS, CAND_TEXTS, KILN_RECEIPT, VLLM_RECEIPT, MODEL, NDOCS };
  const char *const flags[NDOCS][2] = {
      {"--prompt-ids", a->prompt_ids},           {"--reference-ids", a->reference_ids},
      {"--candidate-ids", a->candidate_ids},     {"--reference-texts", a->reference_texts},
      {"--candidate-texts", a->candidate_texts}, {"--kiln-receipt", a->kiln_receipt},
      {"--vllm-receipt", a->vllm_receipt},       {"--model-identity", a->model_identity}};
  json_t *d[NDOCS] = {NULL}, *req = NULL;
  for (size_t i = 0; !rc && i < NDOCS; i++)
    if (flags[i][1]) rc = fdl_cli_read_json("divergence", flags[i][0], flags[i][1], &d[i]);
  char *prompt = NULL;
  size_t plen = 0;
  if (!rc) rc = fdl_cli_read_arg("divergence", "--prompt-text", a->prompt_text, &prompt, &plen);
  fdl_err err = {FDL_OK, ""};
  if (!rc && strlen(prompt) != plen) {
    fprintf(stderr, "fidelis divergence: --prompt-text holds a NUL byte\n");
    rc = FDL_EXIT_REFUSED;
  }
  if (!rc && a->model_dir) {
    if (fdl_cli_input_model("divergence", a->model_dir) != 0) rc = FDL_EXIT_USAGE;
    fdl_status s =
        rc ? FDL_OK : fdl_kiln_model_identity(a->model_dir, a->model_id, &d[MODEL], &err);
    if (s != FDL_OK) rc = fdl_cli_failed(&err, s);
  }
  size_t step = 0;
  if (!rc) {
    fdl_kiln_divergence_in in = {
        d[PROMPT],        d[REF],    d[CAND],  d[REF_TEXTS],    d[CAND_TEXTS],   prompt,  a->id,
        a->source_commit, a->run_id, a->phase, d[KILN_RECEIPT], d[VLLM_RECEIPT], d[MODEL]};
    fdl_status s = fdl_kiln_divergence(&in, &req, &step, &err);
    /* The request is written only if `check` will take it: the same byte limit. */
    fdl_buf b;
    fdl_buf_init(&b, 0);
    if (s == FDL_OK) s = fdl_json_dump(req, FDL_JSON_ASCII | FDL_JSON_PRETTY, &b, &err);
    if (s == FDL_OK && b.len > FDL_KILN_REQUEST_MAX_BYTES)
      s = fdl_fail(&err, FDL_TOO_LARGE,
                   "the request would be %zu bytes, over the %u-byte limit of a Kiln request "
                   "(`fidelis check` refuses larger ones): shorten the prompt or the streams",
                   b.len, FDL_KILN_REQUEST_MAX_BYTES);
    if (s == FDL_OK) s = fdl_write_file(a->out, b.data, b.len, &err);
    fdl_buf_free(&b);
    fdl_kiln_request rq;
    if (s == FDL_OK) s = fdl_kiln_request_read(req, &rq, &err);
    if (s != FDL_OK)
      rc = fdl_cli_failed(&err, s);
    else
      printf("diverges at step %zu: kiln %u, vllm %u\nrequest %s\n", step, rq.candidates[0],
             rq.candidates[1], rq.identity);
  }
  free(prompt);
  for (size_t i = 0; i < NDOCS; i++) json_decref(d[i]);
  json_decref(req);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_divergence, fdl_cli_divergence_check, div_args, div_parse, work)
