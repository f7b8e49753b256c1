/* report.c - `fidelis report`: the HTML page of a comparison receipt (fdl_report_write), the
 * side-by-side page of several (--compare), or the headline table in Markdown (--markdown).
 * docs/REPORT.md describes the page. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis report RECEIPT_DIR [--out FILE.html]\n"
          "       fidelis report --compare RECEIPT_DIR RECEIPT_DIR... --out FILE.html\n"
          "       fidelis report [--compare] RECEIPT_DIR... --markdown\n\n"
          "Writes one self-contained HTML page (inline SVG, no scripts, no fonts, no network: it\n"
          "opens from disk) about the comparison receipt in RECEIPT_DIR, as `fidelis compare\n"
          "--out` wrote it: the verdict and disclosures, the headline numbers with their CI,\n"
          "the KL distribution (log histogram and CDF), per-context means with CIs by domain,\n"
          "mean KL by position, top-1 agreement per domain, the target token's change in\n"
          "probability, the llama.cpp-compatible statistics when the receipt has them, and the\n"
          "identity block. Nothing is drawn before the receipt's seal and the SHA-256 of every\n"
          "array it names verify; a receipt that fails gets a page saying so in red, with no\n"
          "numbers and no plots.\n\n"
          "options:\n"
          "  --out FILE.html  where the page goes [RECEIPT_DIR/report.html]; never overwritten\n"
          "  --compare        several receipts of one panel on one page: overlaid CDFs and a\n"
          "                   table ranked by mean KL (up to %d; --out is required). Receipts\n"
          "                   that differ in panel, reference, metric, direction, accumulation\n"
          "                   or head policy are refused (docs/REPORT.md)\n"
          "  --markdown       print the headline table (with --compare: the ranked table) as\n"
          "                   GitHub-flavoured Markdown on stdout; writes no page\n"
          "  -h, --help       show this help\n\n"
          "exit codes: 0 written (every receipt verified); 3 refused: a receipt failed\n"
          "verification (its seal, or an array's SHA-256: the page is still written, in red,\n"
          "without plots; --markdown prints nothing), RECEIPT_DIR holds no\n"
          "comparison-receipt.json, --compare receipts that cannot share a page (nothing\n"
          "written), or the output exists; 4 bad usage, an input that cannot be opened as a\n"
          "directory, a file the receipt names that cannot be read, a write that failed, or\n"
          "output that cannot be written\n",
          FDL_REPORT_MAX_RECEIPTS);
}

typedef struct {
  const char *pos[FDL_REPORT_MAX_RECEIPTS];
  size_t npos;
  const char *out;
  bool compare, markdown;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_OUT("--out", &a->out),
      FDL_CLI_OPT_FLAG("--compare", &a->compare),
      FDL_CLI_OPT_FLAG("--markdown", &a->markdown),
  };
  static const char *const conflicts[] = {"--markdown", "--out"};
  fdl_cli_spec s = {"report",  usage, opts,   FDL_CLI_N(opts),
                    conflicts, 1,     a->pos, FDL_REPORT_MAX_RECEIPTS,
                    0,         out,   diag,   0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  a->npos = s.npos;
  if (!a->compare && s.npos != 1)
    return fdl_cli_usage_error(&s, "one RECEIPT_DIR expected (several go with --compare)");
  if (a->compare && s.npos < 2)
    return fdl_cli_usage_error(&s, "--compare needs at least two RECEIPT_DIRs");
  if (a->compare && !a->markdown && !a->out)
    return fdl_cli_usage_error(&s, "--compare needs --out FILE.html (or --markdown)");
  return FDL_CLI_GO;
}

/* dir/name into out (cap bytes); false after saying the path is too long. */
static bool join(const char *dir, const char *name, char *out, size_t cap) {
  if (fdl_path_join_to(dir, name, out, cap)) return true;
  char q[FDL_QUOTE_CAP];
  fprintf(stderr, "fidelis report: %s: path too long\n", fdl_quote_str(dir, q, sizeof q));
  return false;
}

/* Each input is a directory holding a receipt. */
static int inputs(const args *a) {
  for (size_t i = 0; i < a->npos; i++) {
    int rc = fdl_cli_input_dir("report", a->pos[i]);
    if (rc) return rc;
    char path[4096];
    if (!join(a->pos[i], FDL_REPORT_RECEIPT, path, sizeof path)) return FDL_EXIT_USAGE;
    if (!fdl_path_exists(path)) {
      fprintf(stderr, "fidelis report: REFUSED [not_a_receipt_dir]: ");
      fdl_cli_put_text(stderr, a->pos[i]);
      fprintf(stderr, " holds no %s; give the directory `fidelis compare --out` wrote\n",
              FDL_REPORT_RECEIPT);
      return FDL_EXIT_REFUSED;
    }
  }
  return FDL_EXIT_OK;
}

static int work(args *a) {
  int rc;
  if ((rc = inputs(a))) return rc;
  fdl_err err = {FDL_OK, ""};
  fdl_report_result res;
  if (a->markdown) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    fdl_status s = fdl_report_markdown(a->pos, a->npos, &b, &res, &err);
    if (s != FDL_OK)
      rc = fdl_cli_failed(&err, s);
    else if (!fdl_cli_put(b.data, b.len))
      rc = FDL_EXIT_USAGE;
    fdl_buf_free(&b);
    return rc;
  }
  char dflt[4096];
  const char *out = a->out ? a->out : dflt;
  if (!a->out && !join(a->pos[0], FDL_REPORT_PAGE, dflt, sizeof dflt)) return FDL_EXIT_USAGE;
  fdl_status s = fdl_report_write(a->pos, a->npos, out, &res, &err);
  if (s == FDL_MISMATCH) {
    fprintf(stderr, "fidelis report: VERIFICATION FAILED: ");
    fdl_cli_put_text(stderr, err.msg);
    fprintf(stderr, "\nfidelis report: wrote ");
    fdl_cli_put_text(stderr, out);
    fprintf(stderr, " (a page that says so, with no numbers and no plots)\n");
    return FDL_EXIT_REFUSED;
  }
  if (s != FDL_OK) return fdl_cli_failed(&err, s);
  char shown[FDL_QUOTE_CAP];
  printf("fidelis report: wrote %s (%zu receipt%s verified%s)\n",
         fdl_cli_shown(out, shown, sizeof shown), res.receipts, res.receipts == 1 ? "" : "s",
         a->npos == 1 ? (res.llamacpp ? ", with llama.cpp-compatible statistics"
                                      : ", no llama.cpp-compatible block")
                      : "");
  return FDL_EXIT_OK;
}

FDL_CLI_COMMAND(fdl_cli_report_page, fdl_cli_report_page_check, args, parse, work)
