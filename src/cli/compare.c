/* compare.c - `fidelis compare REFERENCE CANDIDATE --out DIR`: options, the refusal lines of
 * the reference (`REFUSED [code]: gate G: message` + `  remedy: ...`), the human summary or the
 * --json headline, and the exit code (0 strict, 2 advisory, 3 refused, 4 usage). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "fidelis/compare.h"
#include "fidelis/pool.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: fidelis compare [options] REFERENCE CANDIDATE --out DIR\n"
      "       fidelis compare --reference A --candidate B --out DIR [options]\n\n"
      "Compares two sealed fidelity datasets: runs the gate ladder, computes the token-wise\n"
      "KL(reference || candidate) over the full vocabulary in float64 (or proves it is exactly\n"
      "zero by hash), and writes DIR/tokenwise-kld.npy and the sealed "
      "DIR/comparison-receipt.json.\n"
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
      "  --chunk-positions N       positions per estimator batch and thread [%d]; memory and\n"
      "                            speed only, never a number (--position-block is the same)\n"
      "  --vocab-chunk N           accepted for compatibility and not used: the vocabulary\n"
      "                            chunk (%d) and replay tile (%d rows) are fixed by the\n"
      "                            arithmetic contract, so no flag can move a number\n"
      "  --threads N               worker threads [all cores]; never changes a number\n"
      "  --bootstrap N             context-cluster bootstrap resamples [%d]\n"
      "  --seed S                  bootstrap seed [0]\n"
      "  --no-bootstrap            no confidence interval (uncertainty.method none)\n"
      "  --js / --no-js            Jensen-Shannon divergence [on for logit pairs, off when a\n"
      "                            side is hidden: it replays the head a second time]\n"
      "  --isa NAME                KL kernel: auto, scalar, avx2, avx512 [auto]; same numbers\n"
      "  --device cpu              accepted for compatibility (the only device)\n"
      "  --json                    print the receipt path and headline numbers as JSON\n"
      "  --progress / --quiet      force / silence the progress bar [when stderr is a tty]\n"
      "  -h, --help                show this help\n\n"
      "SOURCE_DATE_EPOCH, when set, fixes created_utc.\n"
      "exit codes: 0 strict receipt; 2 advisory receipt; 3 refused (nothing written);\n"
      "4 bad usage\n",
      FDL_COMPARE_POSITION_BLOCK_DEFAULT, FDL_NUM_VOCAB_CHUNK, FDL_NUM_TILE_ROWS,
      FDL_NUM_BOOTSTRAP_DEFAULT_B);
}

typedef struct {
  fdl_compare_opts o;
  bool json;
  int progress; /* 1 --progress, -1 --quiet, 0 auto */
  char created[32];
} cli_opts;

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "fidelis compare: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return FDL_EXIT_USAGE;
}

static int size_opt(const char *v, const char *name, uint64_t min, uint64_t max, size_t *out) {
  uint64_t x;
  if (fdl_cli_parse_u64(v, max, &x) || x < min) return bad_usage("bad value for %s", name);
  *out = (size_t)x;
  return 0;
}

static const struct {
  const char *name;
  size_t off;
  bool value;
} FLAGS[] = {
    {"--self-compare", offsetof(fdl_compare_opts, self_compare), true},
    {"--force-compute", offsetof(fdl_compare_opts, force_compute), true},
    {"--allow-cross-lane", offsetof(fdl_compare_opts, allow_cross_lane), true},
    {"--allow-partial", offsetof(fdl_compare_opts, allow_partial), true},
    {"--disclose-head-substitution", offsetof(fdl_compare_opts, disclose_head_substitution), true},
    {"--own-heads", offsetof(fdl_compare_opts, own_heads), true},
    {"--no-bootstrap", offsetof(fdl_compare_opts, bootstrap), false},
};

/* Returns -1 to go on, or an exit code. */
static int parse(int argc, char **argv, cli_opts *c) {
  fdl_compare_opts *o = &c->o;
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    if (fdl_cli_is_help(a)) {
      usage(stdout);
      return FDL_EXIT_OK;
    }
    /* Accepted for the reference CLI's spelling; every tensor is always hashed in the read that
     * computes on it, so neither can change anything. */
    if (!strcmp(a, "--verify-tensors") || !strcmp(a, "--no-verify-tensors")) continue;
    bool flag = false;
    for (size_t k = 0; k < sizeof FLAGS / sizeof *FLAGS; k++)
      if (!strcmp(a, FLAGS[k].name)) {
        *(bool *)((char *)o + FLAGS[k].off) = FLAGS[k].value;
        flag = true;
      }
    if (flag) continue;
    if (!strcmp(a, "--json")) {
      c->json = true;
    } else if (!strcmp(a, "--progress")) {
      c->progress = 1;
    } else if (!strcmp(a, "--quiet")) {
      c->progress = -1;
    } else if (!strcmp(a, "--js")) {
      o->js = 1;
    } else if (!strcmp(a, "--no-js")) {
      o->js = 0;
    } else if (a[0] != '-' || !strcmp(a, "-")) {
      if (npos == 2) return bad_usage("unexpected argument '%s'", a);
      pos[npos++] = a;
    } else {
      static const char *const valued[] = {
          "--reference",   "--candidate",       "--out",
          "--head",        "--reference-label", "--candidate-label",
          "--vocab-chunk", "--chunk-positions", "--position-block",
          "--threads",     "--bootstrap",       "--seed",
          "--isa",         "--device"};
      size_t k = 0;
      int m = 0;
      for (; k < sizeof valued / sizeof *valued; k++)
        if ((m = fdl_cli_value(argc, argv, &i, valued[k], &v)) != 0) break;
      if (m < 0) return bad_usage("%s needs a value", valued[k]);
      if (m == 0) return bad_usage("unknown option '%s'", a);
      const char *n = valued[k];
      uint64_t x;
      int rc = 0;
      if (!strcmp(n, "--reference")) {
        o->reference = v;
      } else if (!strcmp(n, "--candidate")) {
        o->candidate = v;
      } else if (!strcmp(n, "--out")) {
        o->out_dir = v;
      } else if (!strcmp(n, "--head")) {
        o->head_path = v;
      } else if (!strcmp(n, "--reference-label")) {
        o->reference_label = v;
      } else if (!strcmp(n, "--candidate-label")) {
        o->candidate_label = v;
      } else if (!strcmp(n, "--vocab-chunk") || !strcmp(n, "--chunk-positions") ||
                 !strcmp(n, "--position-block")) {
        /* Any integer parses; a value out of range is the reference's compute refusal. */
        bool vcb = !strcmp(n, "--vocab-chunk");
        size_t unused_chunk;
        if ((rc = size_opt(v, n, 0, UINT64_MAX, vcb ? &unused_chunk : &o->position_block)))
          return rc;
        if (!(vcb ? unused_chunk : o->position_block)) {
          fprintf(stderr, "REFUSED [%s]: gate compute: %s must be a positive integer\n",
                  vcb ? "bad_vocab_chunk" : "bad_position_block", n);
          fprintf(stderr, "  remedy: %s\n",
                  vcb ? "a --vocab-chunk from 1 to 1048576" : "a --position-block from 1 to 4096");
          return FDL_EXIT_REFUSED;
        }
      } else if (!strcmp(n, "--threads")) {
        size_t t;
        rc = size_opt(v, n, 1, FDL_POOL_MAX_THREADS, &t);
        o->threads = (unsigned)t;
      } else if (!strcmp(n, "--bootstrap")) {
        rc = size_opt(v, n, 2, (uint64_t)1 << 32, &o->bootstrap_samples);
        o->bootstrap = true;
      } else if (!strcmp(n, "--seed")) {
        if (fdl_cli_parse_u64(v, (uint64_t)INT64_MAX, &x)) return bad_usage("bad --seed '%s'", v);
        o->seed = x;
      } else if (!strcmp(n, "--isa")) {
        if (!strcmp(v, "auto"))
          o->isa = FDL_NUM_ISA_AUTO;
        else if (!strcmp(v, "scalar"))
          o->isa = FDL_NUM_ISA_SCALAR;
        else if (!strcmp(v, "avx2"))
          o->isa = FDL_NUM_ISA_AVX2;
        else if (!strcmp(v, "avx512"))
          o->isa = FDL_NUM_ISA_AVX512;
        else
          return bad_usage("unknown --isa '%s' (auto, scalar, avx2, avx512)", v);
      } else if (!strcmp(n, "--device")) {
        if (strcmp(v, "cpu")) return bad_usage("--device %s: fidelis computes on the cpu", v);
      }
      if (rc) return rc;
    }
  }
  if (npos >= 1 && !o->reference) o->reference = pos[0], pos[0] = NULL;
  if (npos >= 2 && !o->candidate) o->candidate = pos[1], pos[1] = NULL;
  if (pos[0] || pos[1]) return bad_usage("%s", "give the datasets either by position or by flag");
  if (!o->reference || !o->candidate)
    return bad_usage("%s", "a REFERENCE and a CANDIDATE are required");
  if (!o->out_dir) return bad_usage("%s", "--out DIR is required");
  o->created_utc = fdl_cli_source_date(c->created, sizeof c->created);
  return -1;
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

/* The exit code of an outcome (README: 0 strict, 2 advisory, 3 refused, 4 usage). */
static int exit_code(const fdl_compare_result *r) {
  switch (r->outcome) {
  case FDL_COMPARE_STRICT:
    return FDL_EXIT_OK;
  case FDL_COMPARE_ADVISORY:
    return FDL_EXIT_WARN;
  case FDL_COMPARE_BAD_OPTS:
    return FDL_EXIT_USAGE;
  case FDL_COMPARE_REFUSED:
    break;
  }
  return FDL_EXIT_REFUSED;
}

static double num(const json_t *rc, const char *path) {
  const json_t *v = json_object_get(rc, path);
  return json_number_value(v);
}

static json_t *at(const json_t *o, const char *a, const char *b) {
  return json_object_get(json_object_get(o, a), b);
}

static void summary(const fdl_compare_result *r, double secs) {
  const json_t *rc = r->receipt;
  const char *kind = json_string_value(json_object_get(rc, "comparison_kind"));
  const char *cls = json_string_value(at(rc, "comparability", "class"));
  printf("fidelis compare: %s, %s (exit %d)\n", kind, cls, exit_code(r));
  const char *sides[2] = {"reference", "candidate"};
  for (int i = 0; i < 2; i++) {
    const json_t *s = json_object_get(rc, sides[i]);
    const json_t *label = json_object_get(s, "label"), *id = json_object_get(s, "dataset_id"),
                 *form = json_object_get(s, "form"), *lane = json_object_get(s, "lane");
    char b1[FDL_QUOTE_CAP], b2[FDL_QUOTE_CAP], b3[FDL_QUOTE_CAP], b4[FDL_QUOTE_CAP];
    printf("  %-9s  %s  %s  (%s form, lane %s)\n", sides[i],
           fdl_cli_shown(json_string_value(label), json_string_length(label), b1, sizeof b1),
           json_is_string(id)
               ? fdl_cli_shown(json_string_value(id), json_string_length(id), b2, sizeof b2)
               : "(no id)",
           fdl_cli_shown(json_string_value(form), json_string_length(form), b3, sizeof b3),
           fdl_cli_shown(json_string_value(lane), json_string_length(lane), b4, sizeof b4));
  }
  const json_t *disc = json_object_get(rc, "disclosures");
  printf("\ndisclosures (%zu):\n", json_array_size(disc));
  for (size_t i = 0; i < json_array_size(disc); i++) {
    const json_t *d = json_array_get(disc, i);
    const json_t *sev = json_object_get(d, "severity"), *code = json_object_get(d, "code"),
                 *detail = json_object_get(d, "detail");
    char b1[FDL_QUOTE_CAP], b2[FDL_QUOTE_CAP], b3[4096];
    printf("  [%s] %s\n",
           fdl_cli_shown(json_string_value(sev), json_string_length(sev), b1, sizeof b1),
           fdl_cli_shown(json_string_value(code), json_string_length(code), b2, sizeof b2));
    wrapped(fdl_quote_text(json_string_value(detail), json_string_length(detail), b3, sizeof b3), 6,
            94);
  }
  const json_t *kl = json_object_get(rc, "kl"), *u = json_object_get(rc, "uncertainty");
  long long n = (long long)json_integer_value(at(rc, "measurement_scope", "scored_positions"));
  long long nc = (long long)json_integer_value(at(rc, "measurement_scope", "contexts"));
  printf("\nKL(reference || candidate) in nats over %lld positions in %lld contexts:\n", n, nc);
  printf("  mean     %-14.6e", num(kl, "mean"));
  if (json_is_number(json_object_get(u, "ci95_low")))
    printf("  CI95 [%.6e, %.6e]  (%s, %lld resamples of %lld contexts, seed %lld)",
           num(u, "ci95_low"), num(u, "ci95_high"), json_string_value(json_object_get(u, "method")),
           (long long)json_integer_value(json_object_get(u, "samples")),
           (long long)json_integer_value(json_object_get(u, "clusters")),
           (long long)json_integer_value(json_object_get(u, "seed")));
  else
    printf("  no CI (uncertainty.method %s)", json_string_value(json_object_get(u, "method")));
  printf("\n  median   %.6e\n  p95      %.6e\n  p99      %.6e\n  p99.9    %.6e\n  max      %.6e\n",
         num(kl, "median"), num(kl, "p95"), num(kl, "p99"), num(kl, "p99_9"), num(kl, "max"));
  const json_t *t1 = json_object_get(rc, "top1_agreement");
  if (json_is_number(t1)) printf("top-1 agreement  %.4f%%\n", 100.0 * json_number_value(t1));
  const json_t *js = json_object_get(rc, "js");
  if (json_is_object(js)) printf("JS mean          %.6e nats\n", num(js, "mean"));
  const json_t *high = json_object_get(rc, "high_kld_contexts");
  printf("\nhighest-KL contexts:\n");
  for (size_t i = 0; i < json_array_size(high); i++) {
    const json_t *c = json_array_get(high, i);
    const json_t *dom = json_object_get(c, "domain"), *wid = json_object_get(c, "window_id");
    char b1[FDL_QUOTE_CAP], b2[FDL_QUOTE_CAP];
    printf("  #%-5lld %-14s %-14s mean %.6e  max %.6e  (%lld rows)\n",
           (long long)json_integer_value(json_object_get(c, "index")),
           fdl_cli_shown(json_string_value(wid), json_string_length(wid), b1, sizeof b1),
           fdl_cli_shown(json_string_value(dom), json_string_length(dom), b2, sizeof b2),
           num(c, "mean"), num(c, "max"),
           (long long)json_integer_value(json_object_get(c, "scored_rows")));
  }
  printf("\nwritten (%.1f s):\n  receipt    ", secs);
  fdl_cli_put_text(stdout, r->receipt_path);
  fputs("\n  tokenwise  ", stdout);
  fdl_cli_put_text(stdout, r->tokenwise_path);
  fputc('\n', stdout);
  printf("  receipt_sha256 %s\n", json_string_value(json_object_get(rc, "receipt_sha256")));
}

static void print_json(json_t *o) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_err e;
  if (fdl_json_dump(o, 0, &b, &e) == FDL_OK)
    printf("%s\n", b.data);
  else
    fdl_cli_report(&e);
  fdl_buf_free(&b);
}

static void headline_json(const fdl_compare_result *r, const fdl_err *err, double secs) {
  json_t *o = json_object();
  json_object_set_new(o, "exit_code", json_integer(exit_code(r)));
  if (!r->receipt) {
    json_t *f = json_object();
    json_object_set_new(f, "code", json_string(r->code));
    json_object_set_new(f, "gate", json_string(r->gate));
    json_object_set_new(f, "message", fdl_cli_json_text(err->msg));
    json_object_set_new(f, "remedy", *r->remedy ? json_string(r->remedy) : json_null());
    json_object_set_new(o, "refused", f);
  } else {
    const json_t *rc = r->receipt;
    json_object_set_new(o, "refused", json_null());
    json_object_set_new(o, "receipt", fdl_cli_json_text(r->receipt_path));
    json_object_set_new(o, "tokenwise", fdl_cli_json_text(r->tokenwise_path));
    static const char *const copy[] = {"comparison_kind",  "receipt_sha256", "kl",
                                       "top1_agreement",   "uncertainty",    "js",
                                       "high_kld_contexts"};
    for (size_t i = 0; i < sizeof copy / sizeof *copy; i++)
      json_object_set(o, copy[i], json_object_get(rc, copy[i]));
    json_object_set(o, "class", at(rc, "comparability", "class"));
    json_object_set(o, "key", at(rc, "comparability", "key"));
    json_object_set(o, "scored_positions", at(rc, "measurement_scope", "scored_positions"));
    json_t *codes = json_array();
    const json_t *disc = json_object_get(rc, "disclosures");
    for (size_t i = 0; i < json_array_size(disc); i++)
      json_array_append(codes, json_object_get(json_array_get(disc, i), "code"));
    json_object_set_new(o, "disclosures", codes);
  }
  json_object_set_new(o, "duration_seconds", json_real(secs));
  print_json(o);
  json_decref(o);
}

int fdl_cli_compare(int argc, char **argv) {
  cli_opts c;
  memset(&c, 0, sizeof c);
  fdl_compare_opts_default(&c.o);
  int rc = parse(argc, argv, &c);
  if (rc >= 0) return rc;
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
  if (s == FDL_INVALID) {
    fdl_compare_result_free(&r);
    return bad_usage("%s", err.msg);
  }
  if (s != FDL_OK) {
    fprintf(stderr, "REFUSED [%s]: gate %s: %s\n", r.code, r.gate, err.msg);
    if (*r.remedy) fprintf(stderr, "  remedy: %s\n", r.remedy);
  }
  if (c.json)
    headline_json(&r, &err, secs);
  else if (s == FDL_OK)
    summary(&r, secs);
  rc = exit_code(&r);
  fdl_compare_result_free(&r);
  return rc;
}
