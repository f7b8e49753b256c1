/* panel.c - `fidelis panel`: a pack panel from text with the model's tokenizer. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

#define MAX_TEXTS 16

static void usage(FILE *f) {
  fputs("usage: fidelis panel --tokenizer PATH --text FILE [--text FILE ...] --context N\n"
        "                     --out PANEL.jsonl [options]\n\n"
        "Tokenizes each text file whole with the model's own tokenizer (no special-token\n"
        "parsing) and cuts it into records of N tokens: the JSONL panel `fidelis capture` and\n"
        "`fidelis pack` read, after a header line naming the tokenizer's files (name, bytes,\n"
        "sha256) and the scoring window, which the dataset then records (docs/PANEL.md).\n\n"
        "  --tokenizer PATH  a model directory, a tokenizer.json or a .gguf; or hf://ORG/NAME@REV\n"
        "                    (docs/HUB.md): a Hub snapshot's repository and commit are\n"
        "                    recorded as the tokenizer's repository and revision\n"
        "  --text FILE       a UTF-8 text; repeat for more (at most 16), records in that order\n"
        "  --domain NAME     the domain of the matching --text, in order [the file's name\n"
        "                    without its extension]\n"
        "  --context N       tokens per record, BOS included\n"
        "  --out FILE        the panel to write (must not exist)\n"
        "  --chunks K        at most K records per text [all that fit]\n"
        "  --stride S        text tokens from one window's start to the next [the window: no\n"
        "                    overlap]; a smaller S makes overlapping windows\n"
        "  --bos auto|always|never  a BOS first in every record: auto when the tokenizer adds\n"
        "                    one [auto]\n"
        "  --score-from M    positions before M are context only: a record scores rows M..N-2\n"
        "                    [0: every position]\n"
        "  --like-llama-perplexity  the chunks and scored positions of llama-perplexity -c N:\n"
        "                    BOS (when the tokenizer adds one) + text cut into N-token chunks,\n"
        "                    position 0 of every chunk a BOS, positions N/2..N-2 scored\n"
        "                    (not with --stride, --score-from or --bos)\n"
        "  --offline         never reach the network for an hf:// input (also HF_HUB_OFFLINE=1)\n"
        "  --endpoint URL    the Hub or a mirror [HF_ENDPOINT, else https://huggingface.co]\n"
        "  -h, --help        show this help\n\n"
        "exit codes: 0 written; 3 refused (a text that is not UTF-8 - the message names the byte\n"
        "offset -, too short for one record, a tokenizer fidelis does not run, --bos always\n"
        "without a BOS token, OUT exists); 4 bad usage, an input that cannot be opened, out of\n"
        "memory, or output that cannot be written\n",
        f);
}

static const char *const BOS[] = {"auto", "always", "never", NULL};

typedef struct {
  fdl_panel_opts o;
  fdl_panel_text texts[MAX_TEXTS];
  fdl_cli_hub hub;
  char repo[2 * FDL_HUB_NAME_MAX + 2], commit[FDL_HUB_COMMIT_LEN + 1];
} args;

/* --text and --domain repeat, which the option table does not: they are taken out of argv
 * first, and the rest is parsed as usual. */
static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  char *rest[256];
  int nrest = 0;
  size_t nt = 0, nd = 0;
  const char *domains[MAX_TEXTS];
  for (int i = 0; i < argc; i++) {
    bool t = !strcmp(argv[i], "--text"), d = !strcmp(argv[i], "--domain");
    if ((t || d) && i + 1 < argc && strcmp(argv[i + 1], "--")) {
      if ((t ? nt : nd) == MAX_TEXTS) {
        fprintf(diag ? diag : stderr, "fidelis panel: at most %d --text files\n", MAX_TEXTS);
        return FDL_EXIT_USAGE;
      }
      if (!argv[i + 1][0]) {
        fprintf(diag ? diag : stderr, "fidelis panel: %s needs a non-empty value\n", argv[i]);
        return FDL_EXIT_USAGE;
      }
      if (t)
        a->texts[nt++].path = argv[++i];
      else
        domains[nd++] = argv[++i];
      continue;
    }
    if (nrest == 256) {
      fputs("fidelis panel: too many arguments\n", diag ? diag : stderr);
      return FDL_EXIT_USAGE;
    }
    rest[nrest++] = argv[i];
  }
  int bos = 0;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--tokenizer", &a->o.tokenizer),
      FDL_CLI_HUB_OPTS(&a->hub),
      FDL_CLI_OPT_SIZE("--context", &a->o.context, 2, 1u << 24),
      FDL_CLI_OPT_OUT("--out", &a->o.out),
      FDL_CLI_OPT_SIZE("--chunks", &a->o.chunks, 1, UINT32_MAX),
      FDL_CLI_OPT_SIZE("--stride", &a->o.stride, 1, 1u << 24),
      FDL_CLI_OPT_SIZE("--score-from", &a->o.score_from, 1, 1u << 24),
      {"--bos", NULL, FDL_CLI_CHOICE, &bos, 0, 0, BOS},
      FDL_CLI_OPT_FLAG("--like-llama-perplexity", &a->o.like_llama),
  };
  /* llama-perplexity's rule decides the stride, the scored rows and the BOS. */
  static const char *const conflicts[] = {"--like-llama-perplexity", "--stride",
                                          "--like-llama-perplexity", "--score-from",
                                          "--like-llama-perplexity", "--bos"};
  fdl_cli_spec s = {
      "panel", usage, opts, FDL_CLI_N(opts), conflicts, FDL_CLI_N(conflicts) / 2, NULL, 0, 0,
      out,     diag,  0};
  int rc = fdl_cli_parse(&s, 1, nrest, rest);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->o.tokenizer || !nt || !a->o.context || !a->o.out)
    return fdl_cli_usage_error(&s, "--tokenizer, --text, --context and --out are required");
  if (nd && nd != nt)
    return fdl_cli_usage_error(&s, "%zu --domain for %zu --text: give one per text, or none", nd,
                               nt);
  for (size_t i = 0; i < nd; i++) a->texts[i].domain = domains[i];
  for (size_t i = 0; i < nt; i++)
    if (!strcmp(a->texts[i].path, a->o.out))
      return fdl_cli_usage_error(&s, "--out is also a --text");
  a->o.texts = a->texts;
  a->o.n_texts = nt;
  a->o.bos = (fdl_panel_bos)bos;
  return FDL_CLI_GO;
}

static int work(args *a) {
  int rc;
  if ((rc = fdl_cli_hub_input("panel", &a->hub, &a->o.tokenizer, true)) ||
      (rc = fdl_cli_input_tokenizer("panel", a->o.tokenizer))) {
    fdl_cli_hub_free(&a->hub);
    return rc;
  }
  if (fdl_hub_snapshot_identity(a->o.tokenizer, a->repo, a->commit)) {
    a->o.tokenizer_repository = a->repo;
    a->o.tokenizer_revision = a->commit;
  }
  for (size_t i = 0; i < a->o.n_texts; i++)
    if ((rc = fdl_cli_input_file("panel", a->texts[i].path)) != 0) {
      fdl_cli_hub_free(&a->hub);
      return rc;
    }
  fdl_panel_result r;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_panel_from_text(&a->o, &r, &err);
  fdl_cli_hub_free(&a->hub);
  if (s != FDL_OK) {
    fdl_err_prefix(&err, "panel");
    fdl_cli_report(&err);
    return s == FDL_EXISTS ? FDL_EXIT_REFUSED : fdl_cli_exit_for(s);
  }
  fputs("fidelis panel: wrote ", stdout);
  fdl_cli_put_text(stdout, a->o.out);
  printf(": %zu record(s) of %zu tokens, %llu scored row(s); %llu text token(s), %llu in no "
         "record\n",
         r.records, a->o.context, (unsigned long long)r.scored, (unsigned long long)r.text_tokens,
         (unsigned long long)r.unused_tokens);
  printf("tokenizer  %s\n", r.tokenizer_id);
  return FDL_EXIT_OK;
}

FDL_CLI_COMMAND(fdl_cli_panel, fdl_cli_panel_check, args, parse, work)
