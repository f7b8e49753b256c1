/* logits.c - `fidelis logits diff REF CAND`: Kiln's compare_logits (spec §11) between two
 * full-vocabulary vectors, CAND being the actual (Kiln) side and REF the reference.
 *
 * The work is fdl_attr_compare_logits; this file parses, reads the two files
 * (fdl_attr_matrix_read) and prints. docs/ATTRIBUTION.md describes inputs and output. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* More candidates than this is a usage error (Kiln asks about two: kiln, vllm). */
#define MAX_CANDIDATES 64

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis logits diff REF CAND [--candidates ID,ID] [--ref-tensor NAME]\n"
          "                           [--cand-tensor NAME] [--json]\n\n"
          "Compares the candidate's full-vocabulary logits (CAND, the actual side) with the\n"
          "reference's (REF) by Kiln's compare_logits: argmax of CAND and whether REF agrees,\n"
          "cosine similarity, max and mean absolute error, top-10 overlap, each candidate\n"
          "token's logit and rank in CAND, and sha256 of CAND as float32 little-endian bytes.\n"
          "Sums are float64 in index order (docs/ATTRIBUTION.md).\n\n"
          "inputs: .npy (by its magic), raw float32 little-endian (a name ending in .f32), or\n"
          "safetensors (anything else: its one tensor, or the one named by --ref-tensor /\n"
          "--cand-tensor); F32, or BF16/F16 widened exactly; shape [V] or [1, V].\n\n"
          "options:\n"
          "  --candidates ID,ID  token ids to report logit and rank for (decimal, comma list)\n"
          "  --ref-tensor NAME   the tensor of a safetensors REF\n"
          "  --cand-tensor NAME  the tensor of a safetensors CAND\n"
          "  --json              one canonical JSON object with Kiln's key names\n"
          "  -h, --help          show this help\n\n"
          "exit codes: 0 ok; 3 inputs refused (malformed, not F32/BF16/F16, not [V] or [1, V],\n"
          "length 0 or different lengths, a NaN or infinity (file and index named), a candidate\n"
          "id out of range); 4 bad usage, a file that cannot be opened, or output that cannot be\n"
          "written\n");
}

typedef struct {
  const char *pos[2];
  const char *candidates, *ref_tensor, *cand_tensor;
  bool as_json;
  uint64_t cand[MAX_CANDIDATES];
  size_t ncand;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_TEXT("--candidates", &a->candidates),
      FDL_CLI_OPT_TEXT("--cand-tensor", &a->cand_tensor),
      FDL_CLI_OPT_FLAG("--json", &a->as_json),
      FDL_CLI_OPT_TEXT("--ref-tensor", &a->ref_tensor),
  };
  fdl_cli_spec s = {"logits diff", usage, opts, FDL_CLI_N(opts), NULL, 0, a->pos, 2, 0,
                    out,           diag,  0};
  int rc = fdl_cli_parse_sub(&s, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 2) return fdl_cli_usage_error(&s, "two files expected: REF CAND");
  for (const char *p = a->candidates; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char word[32];
    if (len == 0 || len >= sizeof word || a->ncand == MAX_CANDIDATES)
      return fdl_cli_usage_error(&s,
                                 "--candidates '%s': expected up to %d decimal token ids "
                                 "separated by commas",
                                 a->candidates, MAX_CANDIDATES);
    memcpy(word, p, len);
    word[len] = '\0';
    if (fdl_cli_parse_u64(word, UINT64_MAX, &a->cand[a->ncand]))
      return fdl_cli_usage_error(&s, "--candidates: '%s' is not a decimal token id", word);
    a->ncand++;
    p = end ? end + 1 : p + len;
    if (end && !*p)
      return fdl_cli_usage_error(&s, "--candidates '%s': trailing comma", a->candidates);
  }
  return FDL_CLI_GO;
}

/* Reads one side as a [V] or [1, V] vector. */
static int read_vector(const char *path, const char *tensor, fdl_attr_matrix *m) {
  int rc = fdl_cli_load_matrix("logits diff", NULL, path, tensor, m);
  if (rc || m->rows == 1) return rc;
  fdl_err err = {0};
  fdl_fail(&err, FDL_BOUNDS, "%s: %llu rows of %llu, expected one vector ([V] or [1, V])", path,
           (unsigned long long)m->rows, (unsigned long long)m->cols);
  fdl_attr_matrix_free(m);
  return fdl_cli_failed(&err, FDL_BOUNDS);
}

static int print_json(const fdl_attr_logits *r, const fdl_attr_candidate *c, size_t nc) {
  char hex[FDL_SHA256_HEX_BUF], digest[8 + FDL_SHA256_HEX_BUF];
  fdl_sha256_hex(&r->logits_sha256, hex);
  snprintf(digest, sizeof digest, "sha256:%s", hex);
  json_t *list = json_array();
  for (size_t i = 0; list && i < nc; i++) {
    json_t *o = json_pack("{s:I, s:f, s:I}", "token_id", (json_int_t)c[i].token_id, "logit",
                          fdl_attr_f32_json_value(c[i].logit), "rank", (json_int_t)c[i].rank);
    if (!o || json_array_append_new(list, o)) {
      json_decref(list);
      list = NULL;
    }
  }
  json_t *doc =
      list ? json_pack("{s:I, s:b, s:f, s:f, s:f, s:I, s:s, s:o}", "argmax", (json_int_t)r->argmax,
                       "argmax_equal", r->argmax_equal, "cosine_similarity", r->cosine_similarity,
                       "max_abs_error", r->max_abs_error, "mean_abs_error", r->mean_abs_error,
                       "top10_overlap", (json_int_t)r->top10_overlap, "logits_sha256", digest,
                       "candidate_tokens", list)
           : NULL;
  return fdl_cli_print_json(doc, 0);
}

static int print_text(const fdl_attr_logits *r, const fdl_attr_candidate *c, size_t nc) {
  char hex[FDL_SHA256_HEX_BUF], cos[FDL_FLOAT_REPR_MAX], mx[FDL_FLOAT_REPR_MAX],
      mean[FDL_FLOAT_REPR_MAX];
  fdl_sha256_hex(&r->logits_sha256, hex);
  fdl_float_repr(r->cosine_similarity, cos);
  fdl_float_repr(r->max_abs_error, mx);
  fdl_float_repr(r->mean_abs_error, mean);
  int ok = printf("vocab             %llu\n"
                  "argmax            %llu (reference %llu: %s)\n"
                  "cosine_similarity %s\n"
                  "max_abs_error     %s\n"
                  "mean_abs_error    %s\n"
                  "top10_overlap     %u of %u\n"
                  "logits_sha256     sha256:%s\n",
                  (unsigned long long)r->n, (unsigned long long)r->argmax,
                  (unsigned long long)r->reference_argmax, r->argmax_equal ? "equal" : "differs",
                  cos, mx, mean, r->top10_overlap, r->k, hex) >= 0;
  for (size_t i = 0; ok && i < nc; i++) {
    char v[FDL_FLOAT_REPR_MAX];
    fdl_float_repr(fdl_attr_f32_json_value(c[i].logit), v);
    ok = printf("candidate %-7llu logit %s rank %llu\n", (unsigned long long)c[i].token_id, v,
                (unsigned long long)c[i].rank) >= 0;
  }
  return ok ? FDL_EXIT_OK : FDL_EXIT_USAGE;
}

static int work(args *a) {
  fdl_attr_matrix ref = {0}, cand = {0};
  int rc = read_vector(a->pos[0], a->ref_tensor, &ref);
  if (rc == FDL_EXIT_OK) rc = read_vector(a->pos[1], a->cand_tensor, &cand);
  if (rc == FDL_EXIT_OK && ref.cols != cand.cols) {
    char q1[FDL_QUOTE_CAP], q2[FDL_QUOTE_CAP];
    fprintf(stderr,
            "fidelis: (MISMATCH) logits diff: %s has %llu values, %s has %llu; expected the "
            "same length\n",
            fdl_quote_str(a->pos[0], q1, sizeof q1), (unsigned long long)ref.cols,
            fdl_quote_str(a->pos[1], q2, sizeof q2), (unsigned long long)cand.cols);
    rc = FDL_EXIT_REFUSED;
  }
  if (rc == FDL_EXIT_OK) {
    fdl_attr_logits r;
    fdl_attr_candidate c[MAX_CANDIDATES];
    fdl_err err = {0};
    fdl_status s = fdl_attr_compare_logits(cand.data, ref.data, (size_t)cand.cols, a->cand,
                                           a->ncand, &r, c, &err);
    if (s != FDL_OK) {
      fdl_err_prefix(&err, "logits diff %s %s", a->pos[0], a->pos[1]);
      rc = fdl_cli_failed(&err, s);
    } else {
      rc = a->as_json ? print_json(&r, c, a->ncand) : print_text(&r, c, a->ncand);
    }
  }
  fdl_attr_matrix_free(&ref);
  fdl_attr_matrix_free(&cand);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_logits, fdl_cli_logits_check, args, parse, work)
