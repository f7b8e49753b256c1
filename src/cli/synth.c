/* synth.c - `fidelis synth --out DIR`: a synthetic reference/candidate dataset pair
 * (fdl_synth), ready for `fidelis compare DIR/reference DIR/candidate --own-heads`. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "fidelis/synth.h"

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
          "Everything is deterministic in the seed and the sizes. Compare them with\n"
          "  fidelis compare DIR/reference DIR/candidate --own-heads --out OUT\n\n"
          "options (default in brackets):\n"
          "  --out DIR                 where the pair goes (must not exist)\n"
          "  --seed S                  [0]\n"
          "  --vocab N                 vocabulary size [%d]\n"
          "  --hidden N                hidden width [%d]\n"
          "  --contexts N              panel contexts [%d]\n"
          "  --tokens-per-context N    tokens per context; N-1 positions are scored [%d]\n"
          "  --threads N               threads for pack's validation [all cores]\n"
          "  --json                    print the result as JSON\n"
          "  -h, --help                show this help\n\n"
          "exit codes: 0 written; 3 refused (nothing written); 4 bad usage\n",
          FDL_SYNTH_VOCAB_DEFAULT, FDL_SYNTH_HIDDEN_DEFAULT, FDL_SYNTH_CONTEXTS_DEFAULT,
          FDL_SYNTH_TOKENS_DEFAULT);
}

static int bad_usage(const char *what, const char *arg) {
  fprintf(stderr, "fidelis synth: %s%s\n\n", what, arg ? arg : "");
  usage(stderr);
  return FDL_EXIT_USAGE;
}

int fdl_cli_synth(int argc, char **argv) {
  fdl_synth_opts o;
  fdl_synth_opts_default(&o);
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (fdl_cli_is_help(a)) {
      usage(stdout);
      return FDL_EXIT_OK;
    }
    if (!strcmp(a, "--json")) {
      json = true;
      continue;
    }
    static const char *const valued[] = {"--out",    "--seed",     "--vocab",
                                         "--hidden", "--contexts", "--tokens-per-context",
                                         "--threads"};
    size_t k = 0;
    int m = 0;
    for (; k < sizeof valued / sizeof *valued; k++)
      if ((m = fdl_cli_value(argc, argv, &i, valued[k], &v)) != 0) break;
    if (m < 0) return bad_usage("missing value for ", valued[k]);
    if (m == 0) return bad_usage("unknown argument ", a);
    if (k == 0) {
      o.out_dir = v;
      continue;
    }
    uint64_t x;
    if (fdl_cli_parse_u64(v, k == 1 ? UINT64_MAX : (uint64_t)1 << 40, &x) || (k > 1 && !x))
      return bad_usage("bad value for ", valued[k]);
    switch (k) {
    case 1:
      o.seed = x;
      break;
    case 2:
      o.vocab = (size_t)x;
      break;
    case 3:
      o.hidden = (size_t)x;
      break;
    case 4:
      o.contexts = (size_t)x;
      break;
    case 5:
      o.tokens_per_context = (size_t)x;
      break;
    default:
      o.threads = x > 1024 ? 1024 : (unsigned)x;
      break;
    }
  }
  if (!o.out_dir) return bad_usage("--out DIR is required", NULL);
  char created[32];
  o.created_utc = fdl_cli_source_date(created, sizeof created);
  fdl_synth_result r;
  fdl_err err = {FDL_OK, ""};
  o.notice = fdl_cli_notice;
  o.notice_arg = "synth";
  fdl_status s = fdl_synth(&o, &r, &err);
  if (s == FDL_INVALID) return bad_usage(err.msg, NULL);
  if (s != FDL_OK) {
    fprintf(stderr, "REFUSED [%s]: %s\n", s == FDL_EXISTS ? "destination_exists" : "synth_failed",
            err.msg);
    return FDL_EXIT_REFUSED;
  }
  if (json) {
    json_t *j = json_pack("{s:s, s:s, s:s, s:I}", "out", o.out_dir, "reference_dataset_sha256",
                          r.reference_sha256, "candidate_dataset_sha256", r.candidate_sha256,
                          "scored_rows", (json_int_t)r.rows);
    fdl_buf b;
    fdl_buf_init(&b, 0);
    if (j && fdl_json_dump(j, 0, &b, &err) == FDL_OK) printf("%s\n", b.data);
    fdl_buf_free(&b);
    json_decref(j);
  } else {
    printf("fidelis synth: wrote %s (seed %llu, vocab %zu, hidden %zu, %zu contexts x %zu "
           "tokens, %zu scored rows per side)\n",
           o.out_dir, (unsigned long long)o.seed, o.vocab, o.hidden, o.contexts,
           o.tokens_per_context, r.rows);
    printf("  reference  %s/reference  dataset_sha256 %s\n", o.out_dir, r.reference_sha256);
    printf("  candidate  %s/candidate  dataset_sha256 %s\n", o.out_dir, r.candidate_sha256);
    printf("next: fidelis compare %s/reference %s/candidate --own-heads --out OUT\n", o.out_dir,
           o.out_dir);
  }
  return FDL_EXIT_OK;
}
