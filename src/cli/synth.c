/* synth.c - `fidelis synth --out DIR`: a synthetic reference/candidate dataset pair
 * (fdl_synth), ready for `fidelis compare DIR/reference DIR/candidate --own-heads`. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis synth --out DIR [options]\n\n"
          "Writes DIR/reference and DIR/candidate, two sealed hidden-form fidelity datasets made\n"
          "by `fidelis pack` from synthetic data, and DIR/synth.json describing them:\n"
          "  reference  a random BF16 head over random BF16 hidden states, on a built-in panel\n"
          "             of four domains (prose, code, arithmetic, dialogue)\n"
          "  candidate  the same model with only its head quantized to int4 (symmetric round to\n"
          "             nearest, groups of 32 along the hidden axis) and decoded back to BF16;\n"
          "             its hidden states are the reference's, bit for bit\n"
          "Everything is deterministic in the seed and the sizes: two runs with the same\n"
          "options write byte-identical trees. created_utc is not the wall clock but\n"
          "2026-01-01T00:00:00Z plus (seed mod 31536000) seconds, unless --created-utc gives\n"
          "one. Compare them with\n"
          "  fidelis compare DIR/reference DIR/candidate --own-heads --out OUT\n\n"
          "options (default in brackets):\n"
          "  --out DIR                 where the pair goes (must not exist)\n"
          "  --seed S                  [0]\n"
          "  --vocab N                 vocabulary size [%d]\n"
          "  --hidden N                hidden width [%d]\n"
          "  --contexts N              panel contexts [%d]\n"
          "  --tokens-per-context N    tokens per context; N-1 positions are scored [%d]\n"
          "  --created-utc T           created_utc of both datasets, YYYY-MM-DDTHH:MM:SSZ\n"
          "                            [derived from the seed, see above]\n"
          "  --threads N               threads for pack's validation, 1 to %d [all cores]\n"
          "  --json                    print the result as JSON\n"
          "  -h, --help                show this help\n\n"
          "exit codes: 0 written; 3 refused (nothing written: DIR exists, or the pair was\n"
          "refused); 4 bad usage, a write that failed, out of memory, or output that cannot be\n"
          "written\n",
          FDL_SYNTH_VOCAB_DEFAULT, FDL_SYNTH_HIDDEN_DEFAULT, FDL_SYNTH_CONTEXTS_DEFAULT,
          FDL_SYNTH_TOKENS_DEFAULT, FDL_POOL_MAX_THREADS);
}

/* created_utc when --created-utc is absent: a fixed start plus the seed, so that the same seed
 * gives the same bytes on every run and different seeds are told apart. */
#define SYNTH_EPOCH_2026 1767225600LL /* 2026-01-01T00:00:00Z */
#define SYNTH_YEAR_SECONDS 31536000ULL

static void seed_time(uint64_t seed, char out[FDL_CLI_UTC_LEN + 1]) {
  time_t t = (time_t)(SYNTH_EPOCH_2026 + (long long)(seed % SYNTH_YEAR_SECONDS));
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, FDL_CLI_UTC_LEN + 1, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

typedef struct {
  fdl_synth_opts o;
  bool json;
  char created[FDL_CLI_UTC_LEN + 1];
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  fdl_synth_opts_default(&a->o);
  const char *created = NULL;
  const uint64_t size_max = (uint64_t)1 << 40; /* far above memory; the library checks more */
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_OUT("--out", &a->o.out_dir),
      FDL_CLI_OPT_NUMBER("--seed", &a->o.seed, 0, UINT64_MAX),
      FDL_CLI_OPT_SIZE("--vocab", &a->o.vocab, 1, size_max),
      FDL_CLI_OPT_SIZE("--hidden", &a->o.hidden, 1, size_max),
      FDL_CLI_OPT_SIZE("--contexts", &a->o.contexts, 1, size_max),
      FDL_CLI_OPT_SIZE("--tokens-per-context", &a->o.tokens_per_context, 1, size_max),
      FDL_CLI_OPT_TEXT("--created-utc", &created),
      FDL_CLI_THREADS(&a->o.threads),
      FDL_CLI_OPT_FLAG("--json", &a->json),
  };
  fdl_cli_spec s = {"synth", usage, opts, FDL_CLI_N(opts), NULL, 0, NULL, 0, 0, out, diag, 0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->o.out_dir) return fdl_cli_usage_error(&s, "--out DIR is required");
  if (created && (rc = fdl_cli_created_utc(&s, created, a->created)) != FDL_CLI_GO) return rc;
  if (!created) seed_time(a->o.seed, a->created);
  a->o.created_utc = a->created;
  return FDL_CLI_GO;
}

static int work(args *a) {
  int rc = FDL_EXIT_OK;
  fdl_synth_opts o = a->o;
  o.notice = fdl_cli_notice;
  o.notice_arg = "synth";
  fdl_synth_result r;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_synth(&o, &r, &err);
  if (s != FDL_OK) {
    rc = fdl_cli_refused("synth", NULL, s,
                         s == FDL_INVALID ? FDL_REF_BAD_USAGE : FDL_REF_SYNTH_FAILED, &err);
    return s == FDL_INVALID ? FDL_EXIT_USAGE : rc;
  }
  if (a->json) {
    json_t *j = json_pack("{s:s, s:s, s:s, s:I}", "out", o.out_dir, "reference_dataset_sha256",
                          r.reference_sha256, "candidate_dataset_sha256", r.candidate_sha256,
                          "scored_rows", (json_int_t)r.rows);
    rc = fdl_cli_print_json(j, FDL_JSON_ASCII);
  } else {
    char q[FDL_QUOTE_CAP];
    const char *dir = fdl_cli_shown(o.out_dir, q, sizeof q);
    printf("fidelis synth: wrote %s (seed %llu, vocab %zu, hidden %zu, %zu contexts x %zu "
           "tokens, %zu scored rows per side)\n",
           dir, (unsigned long long)o.seed, o.vocab, o.hidden, o.contexts, o.tokens_per_context,
           r.rows);
    printf("  reference  %s/reference  dataset_sha256 %s\n", dir, r.reference_sha256);
    printf("  candidate  %s/candidate  dataset_sha256 %s\n", dir, r.candidate_sha256);
    printf("next: fidelis compare %s/reference %s/candidate --own-heads --out OUT\n", dir, dir);
  }
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_synth, fdl_cli_synth_check, args, parse, work)
