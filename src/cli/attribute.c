/* attribute.c - `fidelis attribute`: which path of an inference stack first leaves the
 * reference at a first-divergence state, written as a sealed fidelis.path-attribution.v1 record.
 * docs/ATTRIBUTION.md describes the record and the rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "attr/kiln_json.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis attribute --request FILE --reference LOGITS\n"
          "         --path NAME=full:LOGITS|NAME=greedy:IDS.json [--path ...]\n"
          "         [--counters FILE] [--format fidelis|kiln-v2 --provenance FILE] --out FILE\n\n"
          "Attributes a first divergence to the first path, in the order given, that leaves the\n"
          "reference. --request is a kiln.hf-next-token-request.v1 (as `fidelis divergence`\n"
          "writes it); --reference holds the reference's full logits at that state (.npy,\n"
          "safetensors or raw .f32). A full path holds its full logits at each forced step\n"
          "(one row per step; the last row is compared with the reference by Kiln's\n"
          "compare_logits); a greedy path is a JSON array of the token ids it chose. A full\n"
          "path diverges when its last argmax differs from the reference argmax, a greedy path\n"
          "when its final token does. --counters FILE is a JSON file holding Kiln's\n"
          "graph-replay counter object, held to its rules. Writes a sealed\n"
          "fidelis.path-attribution.v1 (record_sha256) and prints the label, the path and\n"
          "the record identity.\n\n"
          "--format kiln-v2 writes Kiln's kiln.rocm-hf-path-attribution-result.v2 instead:\n"
          "the four paths eager_full, graph_full (full), eager_greedy, graph_greedy (greedy),\n"
          "4 observed tokens each, --counters, and --provenance FILE, a JSON file holding\n"
          "{created_at_utc, duration_seconds, source, binary, implementation, request_path,\n"
          "model_fingerprint, oracle_reference, containment}, copied; fidelis computes the\n"
          "worker block, the attribution (Kiln's labels and precedence) and result_sha256.\n\n"
          "labels: first_divergent_path (with the path's name), or\n"
          "        serving_only_or_not_reproduced (no path diverges)\n\n"
          "exit codes: 0 written; 3 an input is malformed or breaks a rule (a candidate outside\n"
          "the vocabulary, a path of another width, counters off the rules), or --out exists;\n"
          "4 bad usage, an unopenable input or a failed write\n");
}

typedef struct {
  const char *request, *reference, *counters, *out, *provenance;
  int format;         /* 0 fidelis, 1 kiln-v2 */
  const char **paths; /* the --path values, in order */
  size_t npaths;
} args;

static const char *const FORMATS[] = {"fidelis", "kiln-v2", NULL};

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  if (!(a->paths = calloc((size_t)argc + 1, sizeof *a->paths))) return FDL_EXIT_USAGE;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--request", &a->request),
      FDL_CLI_OPT_PATH("--reference", &a->reference),
      FDL_CLI_OPT_PATH("--counters", &a->counters),
      FDL_CLI_OPT_OUT("--out", &a->out),
      FDL_CLI_OPT_PATH("--provenance", &a->provenance),
      {"--format", NULL, FDL_CLI_CHOICE, &a->format, 0, 0, FORMATS},
  };
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  if (!rest) return FDL_EXIT_USAGE;
  int nrest = 0;
  int rc = fdl_cli_split_paths("attribute", "NAME=full:FILE or NAME=greedy:FILE", argc, argv, rest,
                               &nrest, a->paths, &a->npaths, diag);
  fdl_cli_spec s = {"attribute", usage, opts, FDL_CLI_N(opts), NULL, 0, NULL, 0, 0, out, diag, 0};
  if (rc == FDL_CLI_GO) rc = fdl_cli_parse(&s, 1, nrest, rest);
  free(rest);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->request) return fdl_cli_usage_error(&s, "--request is required");
  if (!a->reference) return fdl_cli_usage_error(&s, "--reference is required");
  if (!a->out) return fdl_cli_usage_error(&s, "--out is required");
  if (!a->npaths) return fdl_cli_usage_error(&s, "at least one --path is required");
  if (a->format == 1 && !a->provenance)
    return fdl_cli_usage_error(&s, "--format kiln-v2 needs --provenance");
  if (a->format != 1 && a->provenance)
    return fdl_cli_usage_error(&s, "--provenance goes with --format kiln-v2");
  if (a->npaths > FDL_KILN_MAX_PATHS)
    return fdl_cli_usage_error(&s, "%zu paths, at most %u", a->npaths, FDL_KILN_MAX_PATHS);
  for (size_t i = 0; i < a->npaths; i++) {
    const char *v = a->paths[i], *eq = strchr(v, '=');
    if (!eq || eq == v || (strncmp(eq + 1, "full:", 5) != 0 && strncmp(eq + 1, "greedy:", 7) != 0))
      return fdl_cli_usage_error(&s, "--path '%s': expected NAME=full:FILE or NAME=greedy:FILE", v);
    const char *file = strchr(eq + 1, ':') + 1;
    if (!*file) return fdl_cli_usage_error(&s, "--path '%s': empty FILE", v);
  }
  return FDL_CLI_GO;
}

static void release(args *a) {
  free(a->paths);
}

static int work(args *a) {
  int rc = FDL_EXIT_OK;
  json_t *req = NULL, *counters = NULL, *rec = NULL, *prov = NULL;
  fdl_attr_matrix ref = {0};
  struct { /* each path's name and input, owned; in[i] borrows them */
    char *name;
    fdl_attr_matrix full;
    json_t *ids;
  } *p = calloc(a->npaths, sizeof *p);
  fdl_kiln_path_in *in = calloc(a->npaths, sizeof *in);
  fdl_err err = {FDL_OK, ""};
  if (!p || !in) {
    fprintf(stderr, "fidelis attribute: out of memory\n");
    rc = FDL_EXIT_USAGE;
  }
  if (!rc) rc = fdl_cli_load_json("attribute", a->request, &req);
  if (!rc) rc = fdl_cli_load_matrix("attribute", NULL, a->reference, NULL, &ref);
  if (!rc && ref.rows != 1) {
    char q[FDL_QUOTE_CAP];
    fprintf(stderr, "fidelis attribute: %s: %llu rows, expected one vector ([V] or [1, V])\n",
            fdl_quote_str(a->reference, q, sizeof q), (unsigned long long)ref.rows);
    rc = FDL_EXIT_REFUSED;
  }
  if (!rc && a->counters) rc = fdl_cli_load_json("attribute", a->counters, &counters);
  if (!rc && a->provenance) rc = fdl_cli_load_json("attribute", a->provenance, &prov);
  for (size_t i = 0; !rc && i < a->npaths; i++) {
    const char *v = a->paths[i], *eq = strchr(v, '='), *colon = strchr(eq + 1, ':');
    bool is_full = strncmp(eq + 1, "full:", 5) == 0;
    if (!(in[i].name = p[i].name = strndup(v, (size_t)(eq - v)))) {
      rc = FDL_EXIT_USAGE;
      break;
    }
    in[i].full = is_full;
    if (is_full) {
      rc = fdl_cli_load_matrix("attribute", NULL, colon + 1, NULL, &p[i].full);
      if (!rc && p[i].full.cols != ref.cols) {
        fprintf(stderr,
                "fidelis attribute: path %s: %s: rows of %llu logits, expected %llu (the "
                "reference's width)\n",
                p[i].name, colon + 1, (unsigned long long)p[i].full.cols,
                (unsigned long long)ref.cols);
        rc = FDL_EXIT_REFUSED;
      }
      in[i].rows = p[i].full.data;
      in[i].nrows = (size_t)p[i].full.rows;
    } else {
      rc = fdl_cli_load_json("attribute", colon + 1, &p[i].ids);
      in[i].ids = p[i].ids;
    }
  }
  if (!rc) {
    fdl_status s = fdl_kiln_attribute(req, ref.data, (size_t)ref.cols, in, a->npaths, counters,
                                      prov, &rec, &err);
    if (s == FDL_OK) s = fdl_json_write_file(a->out, rec, FDL_JSON_ASCII | FDL_JSON_PRETTY, &err);
    if (s != FDL_OK) {
      rc = fdl_cli_failed(&err, s);
    } else {
      fdl_kiln_summary sum;
      fdl_kiln_summary_read(rec, &sum);
      printf("attribution %s", sum.label);
      if (sum.path) {
        fputs("  ", stdout);
        fdl_cli_put_text(stdout, sum.path);
      }
      printf("\n%s %s\n", prov ? "result" : "record", sum.sha256);
    }
  }
  for (size_t i = 0; p && i < a->npaths; i++) {
    fdl_attr_matrix_free(&p[i].full);
    json_decref(p[i].ids);
    free(p[i].name);
  }
  free(p);
  free(in);
  fdl_attr_matrix_free(&ref);
  json_decref(req);
  json_decref(counters);
  json_decref(rec);
  json_decref(prov);
  return rc;
}

FDL_CLI_COMMAND_FREE(fdl_cli_attribute, fdl_cli_attribute_check, args, parse, work, release)
