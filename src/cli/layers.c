/* layers.c - `fidelis layers diff REF CAND`: Kiln's compare_boundary for every row of two
 * [boundaries, hidden] matrices (CAND the actual side, REF the reference) and the
 * largest_relative_error_growth over them (spec §11).
 *
 * --format kiln-v2 writes Kiln's layer-attribution result v2 (§13, fdl_attr_layer_v2) and
 * --check RECORD recomputes a layer record's numbers from the rows (fdl_attr_layer_recompute).
 *
 * The work is in src/attr (boundary.c, layer_v2.c); this file parses, reads, names the rows and
 * prints. docs/ATTRIBUTION.md describes inputs and output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "attr/layer_json.h"
#include "attr/kiln_json.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis layers diff REF CAND [--names A,B,...] [--hidden N] [--ref-tensor NAME]\n"
          "                           [--cand-tensor NAME] [--json]\n"
          "       fidelis layers diff REF CAND --format kiln-v2 --request FILE --provenance FILE\n"
          "                           --observed JSON|@FILE --kernel-policy P --final-logits FILE\n"
          "                           --out FILE [options above]\n"
          "       fidelis layers diff REF CAND --check RECORD [--final-logits FILE]\n\n"
          "Compares per-boundary hidden rows: for each row i of CAND (the actual side) against\n"
          "row i of REF, Kiln's compare_boundary (root mean square error, reference root mean\n"
          "square, relative RMSE, cosine, max and mean absolute error, sha256 of each row), then\n"
          "the boundary where the relative RMSE grows most (first maximum wins).\n\n"
          "inputs: [boundaries, hidden] as safetensors (its one tensor or the one named by\n"
          "--ref-tensor/--cand-tensor), .npy, or raw float32 little-endian (a name ending in\n"
          ".f32, cut into rows by --hidden); F32, or BF16/F16 widened exactly. Boundary names:\n"
          "--names, else REF's safetensors __metadata__ \"boundary_names\" (a JSON list of\n"
          "strings), else boundary_<i>.\n\n");
  fputs("--format kiln-v2 writes Kiln's kiln.rocm-hf-layer-attribution-result.v2 to --out (never\n"
        "overwritten): REF the HF rows and CAND Kiln's, both [34, hidden], named by section 13\n"
        "(embedding, layer_00_linear_attention .. layer_31_full_attention, final_norm; --names\n"
        "or REF's boundary_names, when given, must be these). fidelis computes the worker block\n"
        "(the 34 boundaries, the largest growth, hf_layer_last_rows_sha256 over REF and\n"
        "final_logits_sha256 over --final-logits as float32 digests, the request's id, input\n"
        "count and digest), request.sha256 and result_sha256. --request is the\n"
        "kiln.hf-next-token-request.v1; --observed the 4 token ids the worker saw (the 3\n"
        "continuation ids, then the final logits' argmax); --kernel-policy one of section 13's\n"
        "profiles (qualified, portable_fallback, ...; docs/ATTRIBUTION.md lists them); and\n"
        "--final-logits Kiln's 248320 final logits.\n"
        "--provenance is {created_at_utc, duration_seconds, source, binary, implementation,\n"
        "model_fingerprint, request_path, reference {bytes, evidence, location, sha256},\n"
        "containment {hf, kiln}} (model_identity optional, equal to the request's), copied.\n"
        "Whatever `fidelis check` would refuse is refused before anything is written.\n\n"
        "--check RECORD reads a Kiln layer-attribution result (v1 or v2; it must pass `fidelis\n"
        "check`) and recomputes every boundary value, the row digests, the largest growth and\n"
        "hf_layer_last_rows_sha256 from REF and CAND (final_logits_sha256 too with\n"
        "--final-logits), each compared as the record prints it (Python repr): bit for bit.\n\n",
        f);
  fputs(
      "options:\n"
      "  --names A,B,...       one name per boundary\n"
      "  --hidden N            cut a 1-D input (a raw .f32 file) into rows of N\n"
      "  --ref-tensor NAME     the tensor of a safetensors REF (the HF artifact's\n"
      "                        layer_last_rows)\n"
      "  --cand-tensor NAME    the tensor of a safetensors CAND\n"
      "  --json                {\"boundaries\": [...], \"largest_relative_error_growth\": {...}}\n"
      "  --format text|kiln-v2 the table (default) or Kiln's layer result v2\n"
      "  --request FILE        kiln-v2: the next-token request\n"
      "  --provenance FILE     kiln-v2: what fidelis cannot know, copied\n"
      "  --observed JSON|@FILE kiln-v2: the 4 observed next-token ids\n"
      "  --kernel-policy P     kiln-v2: the Kiln kernel profile\n"
      "  --final-logits FILE   Kiln's final logits (one vector; .npy, safetensors or .f32)\n"
      "  --out FILE            kiln-v2: the record to write\n"
      "  --check RECORD        recompute RECORD's numbers from the rows\n"
      "  -h, --help            show this help\n\n"
      "exit codes: 0 ok (written; --check: every value matches); 3 inputs refused (malformed,\n"
      "shapes that differ, a NaN or infinity, a reference row whose RMS is 0 or an actual row\n"
      "of zeros, names that do not match the rows, a kiln-v2 input that breaks a rule, --out\n"
      "exists; --check: a value differs, named with both values);\n"
      "4 bad usage, a file that cannot be opened, or output that cannot be written\n",
      f);
}

typedef struct {
  const char *pos[2];
  const char *names, *ref_tensor, *cand_tensor;
  const char *request, *provenance, *observed, *kernel_policy, *final_logits, *out, *check;
  uint64_t hidden;
  bool as_json;
  int format; /* 0 text, 1 kiln-v2 */
} args;

static const char *const FORMATS[] = {"text", "kiln-v2", NULL};

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_TEXT("--cand-tensor", &a->cand_tensor),
      FDL_CLI_OPT_NUMBER("--hidden", &a->hidden, 1, UINT32_MAX),
      FDL_CLI_OPT_FLAG("--json", &a->as_json),
      FDL_CLI_OPT_TEXT("--names", &a->names),
      FDL_CLI_OPT_TEXT("--ref-tensor", &a->ref_tensor),
      {"--format", NULL, FDL_CLI_CHOICE, &a->format, 0, 0, FORMATS},
      FDL_CLI_OPT_PATH("--request", &a->request),
      FDL_CLI_OPT_PATH("--provenance", &a->provenance),
      FDL_CLI_OPT_TEXT("--observed", &a->observed),
      FDL_CLI_OPT_TEXT("--kernel-policy", &a->kernel_policy),
      FDL_CLI_OPT_PATH("--final-logits", &a->final_logits),
      FDL_CLI_OPT_OUT("--out", &a->out),
      FDL_CLI_OPT_PATH("--check", &a->check),
  };
  static const char *const conflicts[] = {"--check", "--format", "--check", "--json",
                                          "--json",  "--out",    "--check", "--out"};
  fdl_cli_spec s = {"layers diff", usage, opts, FDL_CLI_N(opts), conflicts, 4, a->pos, 2, 0,
                    out,           diag,  0};
  int rc = fdl_cli_parse_sub(&s, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 2) return fdl_cli_usage_error(&s, "two files expected: REF CAND");
  const char *v2_only[][2] = {{"--request", a->request},
                              {"--provenance", a->provenance},
                              {"--observed", a->observed},
                              {"--kernel-policy", a->kernel_policy},
                              {"--out", a->out}};
  for (size_t i = 0; i < sizeof v2_only / sizeof v2_only[0]; i++) {
    if (a->format == 1 && !v2_only[i][1])
      return fdl_cli_usage_error(&s, "--format kiln-v2 needs %s", v2_only[i][0]);
    if (a->format != 1 && v2_only[i][1])
      return fdl_cli_usage_error(&s, "%s goes with --format kiln-v2", v2_only[i][0]);
  }
  if (a->format == 1 && !a->final_logits)
    return fdl_cli_usage_error(&s, "--format kiln-v2 needs --final-logits");
  if (a->final_logits && a->format != 1 && !a->check)
    return fdl_cli_usage_error(&s, "--final-logits goes with --format kiln-v2 or --check");
  return FDL_CLI_GO;
}

static int read_rows(const char *path, const char *tensor, uint64_t hidden, fdl_attr_matrix *m) {
  int rc = fdl_cli_load_matrix("layers diff", NULL, path, tensor, m);
  if (rc) return rc;
  fdl_err err = {0};
  fdl_status s = FDL_OK;
  if (m->ndim == 1 && hidden)
    s = fdl_attr_matrix_reshape(m, hidden, path, &err);
  else if (hidden && m->cols != hidden)
    s = fdl_fail(&err, FDL_MISMATCH, "%s: rows of %llu, but --hidden %llu", path,
                 (unsigned long long)m->cols, (unsigned long long)hidden);
  if (s != FDL_OK) {
    fdl_attr_matrix_free(m);
    return fdl_cli_failed(&err, s);
  }
  return FDL_EXIT_OK;
}

/* names[i] for each of n rows (fdl_attr_row_names), or NULL after reporting why. */
static char **row_names(const char *list, const char *meta, uint64_t n, int *rc) {
  fdl_err err = {0};
  char **names = NULL;
  fdl_status s = fdl_attr_row_names(list, meta, (size_t)n,
                                    list ? "--names" : "__metadata__ boundary_names", &names, &err);
  *rc = s == FDL_OK ? FDL_EXIT_OK : fdl_cli_failed(&err, s);
  return names;
}

static int emit(const args *a, char **names, const fdl_attr_boundary *bs, uint64_t n, size_t gi,
                double delta) {
  json_t *list = json_array();
  for (uint64_t i = 0; list && i < n; i++) {
    json_t *o = fdl_attr_boundary_json((size_t)i, names[i], &bs[i]);
    if (!o || json_array_append_new(list, o)) {
      json_decref(list);
      list = NULL;
    }
  }
  /* jansson (2.14) takes list even when the pack fails */
  json_t *doc = list ? json_pack("{s:o, s:{s:I, s:s, s:f}}", "boundaries", list,
                                 "largest_relative_error_growth", "index", (json_int_t)gi, "name",
                                 names[gi], "relative_root_mean_square_error_delta", delta)
                     : NULL;
  fdl_err err = {0};
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = doc ? fdl_json_dump(doc, 0, &b, &err) : fdl_fail(&err, FDL_NOMEM, "out of memory");
  int rc = FDL_EXIT_OK;
  if (s != FDL_OK) {
    rc = fdl_cli_failed(&err, s);
  } else if (a->as_json) {
    if (!fdl_cli_put(b.data, b.len) || !fdl_cli_put("\n", 1)) rc = FDL_EXIT_USAGE;
  } else {
    bool ok = printf("%-5s %-32s %-24s %-24s %s\n", "index", "name", "relative_rmse", "cosine",
                     "max_abs_error") >= 0;
    for (uint64_t i = 0; ok && i < n; i++) {
      char r[FDL_FLOAT_REPR_MAX], c[FDL_FLOAT_REPR_MAX], m[FDL_FLOAT_REPR_MAX], q[FDL_QUOTE_CAP];
      fdl_float_repr(bs[i].relative_root_mean_square_error, r);
      fdl_float_repr(bs[i].cosine_similarity, c);
      fdl_float_repr(bs[i].max_abs_error, m);
      ok = printf("%-5llu %-32s %-24s %-24s %s\n", (unsigned long long)i,
                  fdl_cli_shown(names[i], q, sizeof q), r, c, m) >= 0;
    }
    char d[FDL_FLOAT_REPR_MAX], q[FDL_QUOTE_CAP];
    fdl_float_repr(delta, d);
    if (ok)
      ok = printf("largest relative error growth: boundary %zu (%s), delta %s\n", gi,
                  fdl_cli_shown(names[gi], q, sizeof q), d) >= 0;
    if (!ok) rc = FDL_EXIT_USAGE;
  }
  fdl_buf_free(&b);
  json_decref(doc);
  return rc;
}

/* Kiln's final logits: one vector ([V] or [1, V]). */
static int load_logits(const char *path, fdl_attr_matrix *m) {
  int rc = read_rows(path, NULL, 0, m);
  if (rc == FDL_EXIT_OK && m->rows != 1) {
    fdl_err err = {0};
    fdl_fail(&err, FDL_REFUSED, "--final-logits %s: %llu rows, expected one vector ([V] or [1, V])",
             path, (unsigned long long)m->rows);
    rc = fdl_cli_failed(&err, FDL_REFUSED);
  }
  return rc;
}

static int run_kiln_v2(const args *a, const fdl_attr_matrix *ref, const fdl_attr_matrix *cand) {
  fdl_err err = {0};
  json_t *req = NULL, *prov = NULL, *obs = NULL, *rec = NULL;
  char **given = NULL;
  fdl_attr_matrix fl = {0};
  int rc = FDL_EXIT_OK;
  if (a->names || ref->boundary_names) {
    given = row_names(a->names, ref->boundary_names, ref->rows, &rc);
    fdl_status s =
        rc == FDL_EXIT_OK
            ? fdl_attr_layer_names_check((const char *const *)given, (size_t)ref->rows,
                                         a->names ? "--names" : "REF boundary_names", &err)
            : FDL_OK;
    if (s != FDL_OK) rc = fdl_cli_failed(&err, s);
  }
  if (rc == FDL_EXIT_OK && fdl_cli_input_file("layers diff", a->request) != 0) rc = FDL_EXIT_USAGE;
  if (rc == FDL_EXIT_OK) {
    /* read as `fidelis check` reads a request: Kiln-strict, at most 256 KiB, its rules held */
    fdl_kiln_checked rq;
    fdl_status s = fdl_kiln_check_file_doc(a->request, &rq, &req, &err);
    if (s != FDL_OK) rc = fdl_cli_failed(&err, s);
  }
  if (rc == FDL_EXIT_OK) rc = fdl_cli_load_json("layers diff", a->provenance, &prov);
  if (rc == FDL_EXIT_OK) rc = fdl_cli_read_json("layers diff", "--observed", a->observed, &obs);
  if (rc == FDL_EXIT_OK) rc = load_logits(a->final_logits, &fl);
  if (rc == FDL_EXIT_OK) {
    const fdl_attr_layer_v2_in in = {.request = req,
                                     .provenance = prov,
                                     .reference = ref->data,
                                     .actual = cand->data,
                                     .rows = (size_t)ref->rows,
                                     .hidden = (size_t)ref->cols,
                                     .final_logits = fl.data,
                                     .vocab = (size_t)fl.cols,
                                     .observed = obs,
                                     .kernel_policy = a->kernel_policy};
    fdl_status s = fdl_attr_layer_v2(&in, &rec, &err);
    if (s == FDL_OK) s = fdl_json_write_file(a->out, rec, FDL_JSON_ASCII | FDL_JSON_PRETTY, &err);
    if (s != FDL_OK) {
      fdl_err_prefix(&err, "layers diff --format kiln-v2");
      rc = fdl_cli_failed(&err, s);
    } else {
      fdl_kiln_summary sum;
      fdl_kiln_summary_read(rec, &sum);
      char d[FDL_FLOAT_REPR_MAX];
      fdl_float_repr(sum.growth_delta, d);
      if (printf("largest_relative_error_growth %zu %s %s\nresult %s\n", sum.growth_index,
                 sum.growth_name, d, sum.sha256) < 0)
        rc = FDL_EXIT_USAGE;
    }
  }
  fdl_attr_matrix_free(&fl);
  free(given);
  json_decref(req);
  json_decref(prov);
  json_decref(obs);
  json_decref(rec);
  return rc;
}

static int run_check(const args *a, const fdl_attr_matrix *ref, const fdl_attr_matrix *cand) {
  if (fdl_cli_input_file("layers diff", a->check) != 0) return FDL_EXIT_USAGE;
  fdl_err err = {0};
  fdl_kiln_checked chk;
  json_t *doc = NULL;
  fdl_attr_matrix fl = {0};
  int rc = FDL_EXIT_OK;
  fdl_status s = fdl_kiln_check_file_doc(a->check, &chk, &doc, &err);
  if (s != FDL_OK) return fdl_cli_failed(&err, s);
  if (a->final_logits) rc = load_logits(a->final_logits, &fl);
  if (rc == FDL_EXIT_OK) {
    s = fdl_attr_layer_recompute(doc, a->check, ref->data, cand->data, (size_t)ref->rows,
                                 (size_t)ref->cols, fl.data, (size_t)fl.cols, &err);
    if (s != FDL_OK)
      rc = fdl_cli_failed(&err, s);
    else if (printf("OK  %s  %s  %s  (%llu boundaries and the largest growth recomputed from the "
                    "rows, bit for bit)\n",
                    a->check, chk.schema, chk.identity, (unsigned long long)ref->rows) < 0)
      rc = FDL_EXIT_USAGE;
  }
  fdl_attr_matrix_free(&fl);
  json_decref(doc);
  return rc;
}

static int work(args *a) {
  int rc;
  fdl_attr_matrix ref = {0}, cand = {0};
  fdl_attr_boundary *bs = NULL;
  char **names = NULL;
  fdl_err err = {0};
  rc = read_rows(a->pos[0], a->ref_tensor, a->hidden, &ref);
  if (rc == FDL_EXIT_OK) rc = read_rows(a->pos[1], a->cand_tensor, a->hidden, &cand);
  if (rc == FDL_EXIT_OK && (ref.rows != cand.rows || ref.cols != cand.cols)) {
    fdl_fail(&err, FDL_MISMATCH,
             "layers diff: %s is [%llu, %llu], %s is [%llu, %llu]; expected "
             "the same shape",
             a->pos[0], (unsigned long long)ref.rows, (unsigned long long)ref.cols, a->pos[1],
             (unsigned long long)cand.rows, (unsigned long long)cand.cols);
    rc = fdl_cli_failed(&err, FDL_MISMATCH);
  }
  if (rc == FDL_EXIT_OK && (a->check || a->format == 1)) {
    rc = a->check ? run_check(a, &ref, &cand) : run_kiln_v2(a, &ref, &cand);
    fdl_attr_matrix_free(&ref);
    fdl_attr_matrix_free(&cand);
    return rc;
  }
  if (rc == FDL_EXIT_OK) names = row_names(a->names, ref.boundary_names, ref.rows, &rc);
  if (rc == FDL_EXIT_OK && !(bs = calloc((size_t)ref.rows, sizeof *bs))) {
    fdl_fail(&err, FDL_NOMEM, "out of memory");
    rc = fdl_cli_failed(&err, FDL_NOMEM);
  }
  size_t gi = 0;
  double gd = 0.0;
  if (rc == FDL_EXIT_OK) {
    fdl_status s = fdl_attr_compare_rows(ref.data, cand.data, (size_t)ref.rows, (size_t)ref.cols,
                                         (const char *const *)names, bs, &gi, &gd, &err);
    if (s != FDL_OK) {
      fdl_err_prefix(&err, "layers diff %s %s", a->pos[0], a->pos[1]);
      rc = fdl_cli_failed(&err, s);
    }
  }
  if (rc == FDL_EXIT_OK) rc = emit(a, names, bs, ref.rows, gi, gd);
  free(bs);
  free(names);
  fdl_attr_matrix_free(&ref);
  fdl_attr_matrix_free(&cand);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_layers, fdl_cli_layers_check, args, parse, work)
