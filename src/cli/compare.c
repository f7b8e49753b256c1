/* compare.c - `fidelis compare REFERENCE CANDIDATE --out DIR`: options, the refusal lines of
 * the reference (`REFUSED [code]: gate G: message` + `  remedy: ...`), the human summary or the
 * --json headline, and the exit code (0 strict, 2 advisory, 3 refused, 4 usage). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: fidelis compare [options] REFERENCE CANDIDATE --out DIR\n"
      "       fidelis compare --reference A --candidate B --out DIR [options]\n\n"
      "Compares two sealed fidelity datasets: runs the gate ladder, computes the token-wise\n"
      "KL(reference || candidate) over the full vocabulary in float64 (or proves it is exactly\n"
      "zero by hash), and writes DIR/tokenwise-kld.npy and the sealed "
      "DIR/comparison-receipt.json.\n"
      "When rows are computed it also writes each side's float64 log-probability of the token\n"
      "each row predicts and top-1 agreement (tokenwise-logprob-ref.npy,\n"
      "tokenwise-logprob-cand.npy, tokenwise-top1.npy), and seals llama.cpp's statistics\n"
      "computed exactly from them (fidelis_extensions.llamacpp_compatible).\n"
      "Nothing is written on a refusal; an existing output is never overwritten.\n\n"
      "options (default in brackets):\n"
      "  --reference PATH, --candidate PATH   the datasets (or two positional arguments)\n"
      "  --out DIR                 must not exist; appears whole or not at all (parent created)\n"
      "  --self-compare            assert a reproduction (equal capture content); skips decode\n"
      "  --force-compute           on a reproduction, also compute and require bitwise zeros\n"
      "  --allow-cross-lane        override the lane gate (advisory, never a floor)\n"
      "  --allow-partial           accept partial datasets; compare the shared records\n"
      "  --verify-tensors, --no-verify-tensors   accepted and unused: every tensor and head\n"
      "                            byte is hashed in the very read that computes on it, and\n"
      "                            a digest that differs refuses the compare (seal_failed)\n"
      "  --own-heads               HEAD-1d: replay each hidden side through its own head\n"
      "  --disclose-head-substitution  HEAD-1b: apply the reference head to both sides\n"
      "  --head PATH               head payload to apply (not with --own-heads)\n"
      "  --reference-label L, --candidate-label L   side labels [reference, candidate]\n"
      "  --chunk-positions N       positions per estimator batch and thread, 1 to %d [%d];\n"
      "                            memory and speed only, never a number (--position-block is\n"
      "                            the same option)\n"
      "  --vocab-chunk N           accepted for compatibility and not used: the vocabulary\n"
      "                            chunk (%d) and replay tile (%d rows) are fixed by the\n"
      "                            arithmetic contract, so no flag can move a number\n"
      "  --threads N               worker threads, 1 to %d [all cores; under mpirun, per rank:\n"
      "                            its bound cores, or its share of the machine's]; never\n"
      "                            changes a number\n"
      "  --bootstrap N             context-cluster bootstrap resamples [%d]\n"
      "  --seed S                  bootstrap seed [0]\n"
      "  --no-bootstrap            no confidence interval (uncertainty.method none)\n"
      "  --js / --no-js            Jensen-Shannon divergence [on for logit pairs, off when a\n"
      "                            side is hidden: it replays the head a second time]\n"
      "  --isa NAME                KL and GEMM kernels: auto, scalar, avx2, avx512 [auto];\n"
      "                            every choice gives the same numbers\n"
      "  --device cpu              accepted for compatibility (the only device)\n"
      "  --json                    print the receipt path and headline numbers as JSON\n"
      "  --progress                force the progress bar [shown when stderr is a tty]\n"
      "  --quiet                   print nothing but errors: no progress bar, no summary\n"
      "  -h, --help                show this help\n\n"
      "SOURCE_DATE_EPOCH, when set, fixes created_utc.\n"
      "The MPI build runs as `mpirun -n R fidelis compare ...`: whole records split among\n"
      "the ranks, the same bytes as one process (docs/SCALE.md).\n"
      "exit codes: 0 strict receipt; 2 advisory receipt; 3 refused by a gate, a seal or the\n"
      "data (nothing written; also when DIR exists); 4 bad usage, a REFERENCE or CANDIDATE\n"
      "that cannot be opened as a directory, an unreadable --head, a read or\n"
      "write that failed, out of memory, or output that cannot be written\n",
      FDL_COMPARE_POSITION_BLOCK_MAX, FDL_COMPARE_POSITION_BLOCK_DEFAULT, FDL_NUM_VOCAB_CHUNK,
      FDL_NUM_TILE_ROWS, FDL_POOL_MAX_THREADS, FDL_NUM_BOOTSTRAP_DEFAULT_B);
}

typedef struct {
  fdl_compare_opts o;
  bool json;
  int progress; /* 1 --progress, -1 --quiet, 0 auto */
  bool quiet;   /* --quiet: nothing on stdout, only errors on stderr */
  char created[FDL_CLI_UTC_LEN + 1];
} cli_opts;

static const char *const DEVICES[] = {"cpu", NULL};

/* Returns FDL_CLI_GO to go on, or an exit code. */
static int parse(cli_opts *c, int argc, char **argv, FILE *out, FILE *diag) {
  memset(c, 0, sizeof *c);
  fdl_compare_opts *o = &c->o;
  fdl_compare_opts_default(o);
  bool verify = false, no_verify = false, no_boot = false, js = false, no_js = false,
       progress = false;
  uint64_t vocab_chunk = 0;
  int isa = 0, device = 0;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--reference", &o->reference),
      FDL_CLI_OPT_PATH("--candidate", &o->candidate),
      FDL_CLI_OPT_OUT("--out", &o->out_dir),
      FDL_CLI_OPT_PATH("--head", &o->head_path),
      FDL_CLI_OPT_TEXT("--reference-label", &o->reference_label),
      FDL_CLI_OPT_TEXT("--candidate-label", &o->candidate_label),
      FDL_CLI_OPT_FLAG("--self-compare", &o->self_compare),
      FDL_CLI_OPT_FLAG("--force-compute", &o->force_compute),
      FDL_CLI_OPT_FLAG("--allow-cross-lane", &o->allow_cross_lane),
      FDL_CLI_OPT_FLAG("--allow-partial", &o->allow_partial),
      FDL_CLI_OPT_FLAG("--verify-tensors", &verify),
      FDL_CLI_OPT_FLAG("--no-verify-tensors", &no_verify),
      FDL_CLI_OPT_FLAG("--disclose-head-substitution", &o->disclose_head_substitution),
      FDL_CLI_OPT_FLAG("--own-heads", &o->own_heads),
      FDL_CLI_OPT_NUMBER("--vocab-chunk", &vocab_chunk, 1, UINT32_MAX),
      {"--position-block", "--chunk-positions", FDL_CLI_SIZE, &o->position_block, 1,
       FDL_COMPARE_POSITION_BLOCK_MAX, NULL},
      FDL_CLI_THREADS(&o->threads),
      FDL_CLI_OPT_SIZE("--bootstrap", &o->bootstrap_samples, 2, (uint64_t)1 << 32),
      FDL_CLI_OPT_NUMBER("--seed", &o->seed, 0, (uint64_t)INT64_MAX),
      FDL_CLI_OPT_FLAG("--no-bootstrap", &no_boot),
      FDL_CLI_OPT_FLAG("--js", &js),
      FDL_CLI_OPT_FLAG("--no-js", &no_js),
      FDL_CLI_ISA(&isa),
      {"--device", NULL, FDL_CLI_CHOICE, &device, 0, 0, DEVICES},
      FDL_CLI_OPT_FLAG("--json", &c->json),
      FDL_CLI_OPT_FLAG("--progress", &progress),
      FDL_CLI_OPT_FLAG("--quiet", &c->quiet),
  };
  static const char *const conflicts[] = {
      "--own-heads",
      "--disclose-head-substitution",
      "--own-heads",
      "--head",
      "--verify-tensors",
      "--no-verify-tensors",
      "--js",
      "--no-js",
      "--bootstrap",
      "--no-bootstrap",
      "--progress",
      "--quiet",
      "--json",
      "--quiet",
  };
  const char *pos[2] = {NULL, NULL};
  fdl_cli_spec s = {
      "compare", usage, opts, FDL_CLI_N(opts), conflicts, FDL_CLI_N(conflicts) / 2, pos, 2, 0,
      out,       diag,  0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos && (o->reference || o->candidate))
    return fdl_cli_usage_error(&s, "give the datasets either by position or by flag");
  if (s.npos == 2) o->reference = pos[0], o->candidate = pos[1];
  if (!o->reference || !o->candidate)
    return fdl_cli_usage_error(&s, "a REFERENCE and a CANDIDATE are required");
  if (!o->out_dir) return fdl_cli_usage_error(&s, "--out DIR is required");
  /* --verify-tensors / --no-verify-tensors and --vocab-chunk are parsed (a bad value is still a
   * usage error) but change nothing: see --help. */
  (void)verify, (void)no_verify, (void)vocab_chunk;
  if (no_boot) o->bootstrap = false;
  if (js || no_js) o->js = js ? 1 : 0;
  o->isa = fdl_cli_isa_of[isa];
  c->progress = progress ? 1 : c->quiet ? -1 : 0;
  o->created_utc = fdl_cli_source_date(c->created, sizeof c->created);
  return FDL_CLI_GO;
}

/* Prints s wrapped at `width` columns, every line indented by `indent` spaces. */
static void wrapped(const char *s, int indent, int width) {
  int col = 0;
  while (*s) {
    size_t w = strcspn(s, " ");
    if (col && col + 1 + (int)w > width) {
      printf("\n%*s", indent, "");
      col = 0;
    } else if (col) {
      putchar(' ');
      col++;
    } else {
      printf("%*s", indent, "");
    }
    printf("%.*s", (int)w, s);
    col += (int)w;
    s += w;
    while (*s == ' ') s++;
  }
  putchar('\n');
}

/* The exit code of an outcome (README: 0 strict, 2 advisory, 3 refused, 4 usage). A refusal's
 * follows its cause, so an I/O failure or exhausted memory is 4 like in every other command. */
static int exit_code(const fdl_compare_result *r) {
  switch (fdl_compare_outcome_of(r)) {
  case FDL_COMPARE_STRICT:
    return FDL_EXIT_OK;
  case FDL_COMPARE_ADVISORY:
    return FDL_EXIT_WARN;
  case FDL_COMPARE_BAD_OPTS:
    return FDL_EXIT_USAGE;
  case FDL_COMPARE_REFUSED:
    break;
  }
  return fdl_cli_exit_for(r->refusal.status);
}

static void pm(const char *label, fdl_compare_pm v, double scale, const char *unit) {
  printf("  %-30s %.6f +/- %.6f%s\n", label, scale * v.value, scale * v.se, unit);
}

/* llama-perplexity's KL-divergence table, with its labels, from the receipt's exact block. */
static void llamacpp_section(const fdl_compare_receipt *rc) {
  if (!rc->llamacpp.present) return;
  const fdl_compare_llamacpp *x = &rc->llamacpp;
  printf("\nllama.cpp-compatible statistics, exact float64 (iid errors; the bootstrap CI above is "
         "the headline):\n");
  pm("Mean PPL(Q)", x->ppl_candidate, 1.0, "");
  pm("Mean PPL(base)", x->ppl_reference, 1.0, "");
  printf("  %-30s %.2f%%\n", "Cor(ln PPL(Q), ln PPL(base))", 100.0 * x->logprob_correlation);
  pm("Mean ln(PPL(Q)/PPL(base))", x->ln_ppl_ratio, 1.0, "");
  pm("Mean PPL(Q)/PPL(base)", x->ppl_ratio, 1.0, "");
  printf("  %-30s %.6e +/- %.6e\n", "Mean KLD", x->kld.mean, x->kld.se);
  printf("  KLD max 99.9 99 95 90 median 10 5 1 0.1%% min:\n   %.3e", x->kld.max);
  for (size_t i = 0; i < 9; i++) printf(" %.3e", x->kld.percentiles[i]);
  printf(" %.3e\n", x->kld.min);
  pm("Mean dp", (fdl_compare_pm){x->delta_p.mean, x->delta_p.mean_se}, 100.0, " %");
  pm("RMS dp", (fdl_compare_pm){x->delta_p.rms, x->delta_p.rms_se}, 100.0, " %");
  printf("  dp (%%) max 99.9 99 95 90 75 median 25 10 5 1 0.1%% min:\n   %.3f",
         100.0 * x->delta_p.max);
  for (size_t i = 0; i < 11; i++) printf(" %.3f", 100.0 * x->delta_p.percentiles[i]);
  printf(" %.3f\n", 100.0 * x->delta_p.min);
  pm("Same top p", x->same_top, 100.0, " %");
}

static void summary(const fdl_compare_result *r, double secs) {
  const fdl_compare_receipt *rc = &r->fields;
  printf("fidelis compare: %s, %s (exit %d)\n", rc->comparison_kind, rc->comparability_class,
         exit_code(r));
  const char *sides[2] = {"reference", "candidate"};
  for (int i = 0; i < 2; i++) {
    char b1[FDL_QUOTE_CAP], b2[FDL_QUOTE_CAP], b3[FDL_QUOTE_CAP], b4[FDL_QUOTE_CAP];
    printf("  %-9s  %s  %s  (%s form, lane %s)\n", sides[i],
           fdl_cli_shown(rc->side[i].label, b1, sizeof b1),
           rc->side[i].dataset_id ? fdl_cli_shown(rc->side[i].dataset_id, b2, sizeof b2)
                                  : "(no id)",
           fdl_cli_shown(rc->side[i].form, b3, sizeof b3),
           fdl_cli_shown(rc->side[i].lane, b4, sizeof b4));
  }
  printf("\ndisclosures (%zu):\n", rc->n_disclosures);
  for (size_t i = 0; i < rc->n_disclosures; i++) {
    const char *detail = rc->disclosures[i].detail;
    char b1[FDL_QUOTE_CAP], b2[FDL_QUOTE_CAP], b3[4096];
    printf("  [%s] %s\n", fdl_cli_shown(rc->disclosures[i].severity, b1, sizeof b1),
           fdl_cli_shown(rc->disclosures[i].code, b2, sizeof b2));
    wrapped(fdl_quote_text(detail, detail ? strlen(detail) : 0, b3, sizeof b3), 6, 94);
  }
  printf("\nKL(reference || candidate) in nats over %lld positions in %lld contexts:\n",
         (long long)rc->scored_positions, (long long)rc->contexts);
  printf("  mean     %-14.6e", rc->kl.mean);
  if (!isnan(rc->uncertainty.ci95_low))
    printf("  CI95 [%.6e, %.6e]  (%s, %lld resamples of %lld contexts, seed %lld)",
           rc->uncertainty.ci95_low, rc->uncertainty.ci95_high, rc->uncertainty.method,
           (long long)rc->uncertainty.samples, (long long)rc->uncertainty.clusters,
           (long long)rc->uncertainty.seed);
  else
    printf("  no CI (uncertainty.method %s)", rc->uncertainty.method);
  printf("\n  median   %.6e\n  p95      %.6e\n  p99      %.6e\n  p99.9    %.6e\n  max      %.6e\n",
         rc->kl.median, rc->kl.p95, rc->kl.p99, rc->kl.p99_9, rc->kl.max);
  if (!isnan(rc->top1_agreement)) printf("top-1 agreement  %.4f%%\n", 100.0 * rc->top1_agreement);
  if (rc->has_js) printf("JS mean          %.6e nats\n", rc->js_mean);
  llamacpp_section(rc);
  printf("\nhighest-KL contexts:\n");
  for (size_t i = 0; i < rc->n_high_kld_contexts; i++) {
    const fdl_compare_context *c = &rc->high_kld_contexts[i];
    char b1[FDL_QUOTE_CAP], b2[FDL_QUOTE_CAP];
    printf("  #%-5lld %-14s %-14s mean %.6e  max %.6e  (%lld rows)\n", (long long)c->index,
           fdl_cli_shown(c->window_id, b1, sizeof b1), fdl_cli_shown(c->domain, b2, sizeof b2),
           c->mean, c->max, (long long)c->scored_rows);
  }
  printf("\nwritten (%.1f s):\n  receipt    ", secs);
  fdl_cli_put_text(stdout, r->receipt_path);
  fputs("\n  tokenwise  ", stdout);
  fdl_cli_put_text(stdout, r->tokenwise_path);
  fputc('\n', stdout);
  printf("  receipt_sha256 %s\n", rc->receipt_sha256);
}

static void headline_json(const fdl_compare_result *r, int exit_code, const fdl_err *err,
                          double secs, const fdl_cli_ranks *ranks) {
  json_t *o = json_object();
  json_object_set_new(o, "exit_code", json_integer(exit_code));
  if (!r->receipt) {
    json_t *f = json_object();
    json_object_set_new(f, "code", json_string(fdl_refusal_name(r->refusal.code)));
    json_object_set_new(f, "gate", json_string(fdl_gate_name(r->refusal.gate)));
    json_object_set_new(f, "message", fdl_cli_json_text(err->msg));
    json_object_set_new(f, "remedy",
                        *r->refusal.remedy ? json_string(r->refusal.remedy) : json_null());
    json_object_set_new(o, "refused", f);
  } else {
    const fdl_compare_receipt *rc = &r->fields;
    json_object_set_new(o, "refused", json_null());
    json_object_set_new(o, "receipt", fdl_cli_json_text(r->receipt_path));
    json_object_set_new(o, "tokenwise", fdl_cli_json_text(r->tokenwise_path));
    json_object_set_new(o, "comparison_kind", json_string(rc->comparison_kind));
    json_object_set_new(o, "receipt_sha256", json_string(rc->receipt_sha256));
    json_object_set_new(o, "class", json_string(rc->comparability_class));
    json_object_set_new(o, "key",
                        rc->comparability.key ? json_string(rc->comparability.key) : json_null());
    json_object_set_new(o, "scored_positions", json_integer(rc->scored_positions));
    json_object_set_new(o, "top1_agreement",
                        isnan(rc->top1_agreement) ? json_null() : json_real(rc->top1_agreement));
    /* Whole blocks of the receipt, passed on as written. */
    json_object_set(o, "kl", (json_t *)rc->kl_doc);
    json_object_set(o, "uncertainty", (json_t *)rc->uncertainty_doc);
    json_object_set(o, "js", (json_t *)rc->js_doc);
    json_object_set(o, "high_kld_contexts", (json_t *)rc->high_kld_contexts_doc);
    json_t *codes = json_array();
    for (size_t i = 0; i < rc->n_disclosures; i++)
      if (rc->disclosures[i].code)
        json_array_append_new(codes, json_string(rc->disclosures[i].code));
    json_object_set_new(o, "disclosures", codes);
  }
  json_object_set_new(o, "duration_seconds", json_real(secs));
  fdl_cli_ranks_json(ranks, o);
  fdl_cli_print_json(o, 0);
}

/* One rank's compare: rank 0 alone shows progress and prints (see fdl_cli_ranks). */
static int compare_in(void *arg, fdl_cli_ranks *ranks) {
  cli_opts c = *(cli_opts *)arg;
  int rc;
  if ((rc = fdl_cli_input_dataset("compare", c.o.reference, false)) != 0 ||
      (rc = fdl_cli_input_dataset("compare", c.o.candidate, false)) != 0 ||
      (c.o.head_path && (rc = fdl_cli_input_file("compare", c.o.head_path)) != 0))
    return rc;
  c.o.scale = ranks->sc;
  c.o.threads = fdl_scale_threads(ranks->sc, c.o.threads);
  if (!ranks->lead) c.progress = -1, c.json = false, c.quiet = true;
  fdl_cli_progress prog;
  fdl_cli_progress_init(&prog, "compare", c.progress);
  c.o.progress = fdl_cli_progress_cb;
  c.o.progress_arg = &prog;
  c.o.notice = fdl_cli_notice;
  c.o.notice_arg = "compare";
  fdl_compare_result r;
  fdl_err err = {FDL_OK, ""};
  double t0 = fdl_cli_now();
  fdl_status s = fdl_compare(&c.o, &r, &err);
  fdl_cli_progress_end(&prog);
  double secs = fdl_cli_now() - t0;
  fdl_cli_ranks_time(ranks, secs, c.o.threads);
  if (!ranks->lead) {
    fdl_compare_result_free(&r);
    return 0; /* the exit code is rank 0's (fdl_cli_ranks_close) */
  }
  if (s == FDL_INVALID) {
    fdl_compare_result_free(&r);
    fputs("fidelis compare: ", stderr);
    fdl_cli_put_text(stderr, err.msg);
    fputs("\n(see 'fidelis compare --help')\n", stderr);
    return FDL_EXIT_USAGE;
  }
  rc = exit_code(&r);
  if (s != FDL_OK) fdl_cli_print_refusal(NULL, &r.refusal, &err);
  if (c.json)
    headline_json(&r, rc, &err, secs, ranks);
  else if (s == FDL_OK && !c.quiet)
    summary(&r, secs);
  fdl_compare_result_free(&r);
  return rc;
}

static int work(cli_opts *c) {
  return fdl_cli_ranks_main("compare", compare_in, c);
}

FDL_CLI_COMMAND(fdl_cli_compare, fdl_cli_compare_check, cli_opts, parse, work)
