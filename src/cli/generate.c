/* generate.c - `fidelis generate`: what a model does after given ids, in the forms the
 * attribution commands read: greedy continuation tokens (for `divergence`), the full logits of
 * the last rows (a `full:` path or the `--reference` of `attribute`), their argmaxes through the
 * argmax-only path (a `greedy:` path). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "fidelis/dataset.h"
#include "fidelis/generate.h"
#include "fidelis/json.h"
#include "fidelis/pool.h"
#include "fidelis/tensor.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis generate --model DIR (--ids JSON|@FILE | --panel FILE --context I\n"
          "         --prompt-tokens N) [--path prefill|decode] [--new N --tokens-out FILE]\n"
          "         [--from K] [--logits-out FILE.npy] [--greedy-out FILE] [options]\n\n"
          "Runs the model in DIR (as `fidelis capture` does) over the input ids: a JSON array\n"
          "(or @FILE holding one), or the first N tokens of context I of a pack panel. Then\n"
          "writes any of:\n"
          "  --tokens-out FILE   the --new N greedy continuation tokens, a JSON array (the\n"
          "                      streams `fidelis divergence` compares)\n"
          "  --logits-out FILE   the full logits of rows K..n-1 of the input, float32 .npy\n"
          "                      [n-K, vocab] (a `full:` path or the reference of\n"
          "                      `fidelis attribute`: row i holds the logits after token i)\n"
          "  --greedy-out FILE   the argmaxes of rows K..n-1 through the argmax-only path, a\n"
          "                      JSON array (a `greedy:` path of `fidelis attribute`)\n"
          "K is --from (default n-1: the last row). Greedy ties go to the lowest token id.\n"
          "Continuations re-run the whole sequence at each step: fine for tens of tokens.\n\n"
          "options:\n"
          "  --model DIR          the model directory\n"
          "  --ids JSON|@FILE     the input ids\n"
          "  --panel FILE         a pack panel (JSONL); with --context I and --prompt-tokens N\n"
          "  --path prefill|decode  the engine's path [prefill]\n"
          "  --new N              greedy tokens to append, 1 to 4096 (needs --tokens-out)\n"
          "  --from K             first row of --logits-out/--greedy-out [n-1]\n"
          "  --threads N          1 to %d [all cores]; no bit depends on it\n"
          "  --isa NAME           auto, scalar, avx2, avx512 [auto]; no bit depends on it\n"
          "  -h, --help           show this help\n\n"
          "outputs are written whole or not at all and never overwrite a file.\n\n"
          "exit codes: 0 written; 3 refused (an unsupported or corrupt model, ids outside the\n"
          "vocabulary, an output that exists); 4 bad usage, an input that cannot be opened, a\n"
          "write that failed\n",
          FDL_POOL_MAX_THREADS);
}

static const char *const PATHS[] = {"prefill", "decode", NULL};
static const char *const ISAS[] = {"auto", "scalar", "avx2", "avx512", NULL};
static const fdl_num_isa ISA_OF[] = {FDL_NUM_ISA_AUTO, FDL_NUM_ISA_SCALAR, FDL_NUM_ISA_AVX2,
                                     FDL_NUM_ISA_AVX512};

typedef struct {
  const char *model, *ids, *panel, *tokens_out, *logits_out, *greedy_out;
  uint64_t context, prompt_tokens, n_new, from, threads;
  bool has_context, has_prompt, has_from;
  int path, isa;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  a->context = a->prompt_tokens = a->from = UINT64_MAX;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--model", &a->model),
      FDL_CLI_OPT_TEXT("--ids", &a->ids),
      FDL_CLI_OPT_PATH("--panel", &a->panel),
      FDL_CLI_OPT_NUMBER("--context", &a->context, 0, (uint64_t)INT64_MAX),
      FDL_CLI_OPT_NUMBER("--prompt-tokens", &a->prompt_tokens, 1, (uint64_t)1 << 20),
      {"--path", NULL, FDL_CLI_CHOICE, &a->path, 0, 0, PATHS},
      FDL_CLI_OPT_NUMBER("--new", &a->n_new, 1, 4096),
      FDL_CLI_OPT_PATH("--tokens-out", &a->tokens_out),
      FDL_CLI_OPT_NUMBER("--from", &a->from, 0, (uint64_t)1 << 20),
      FDL_CLI_OPT_PATH("--logits-out", &a->logits_out),
      FDL_CLI_OPT_PATH("--greedy-out", &a->greedy_out),
      FDL_CLI_THREADS(&a->threads),
      {"--isa", NULL, FDL_CLI_CHOICE, &a->isa, 0, 0, ISAS},
  };
  static const char *const conflicts[] = {"--ids",     "--panel", "--ids",
                                          "--context", "--ids",   "--prompt-tokens"};
  fdl_cli_spec s = {"generate", usage, opts, sizeof opts / sizeof *opts, conflicts, 3, NULL, 0,
                    0,          out,   diag};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->model) return fdl_cli_usage_error(&s, "--model DIR is required");
  if (!a->ids && !(a->panel && a->context != UINT64_MAX && a->prompt_tokens != UINT64_MAX))
    return fdl_cli_usage_error(&s, "give --ids, or --panel with --context and --prompt-tokens");
  if (!a->ids && (!a->panel || a->context == UINT64_MAX || a->prompt_tokens == UINT64_MAX))
    return fdl_cli_usage_error(&s, "--panel needs --context and --prompt-tokens");
  if (!a->tokens_out && !a->logits_out && !a->greedy_out)
    return fdl_cli_usage_error(&s, "nothing to write: give --tokens-out, --logits-out or "
                                   "--greedy-out");
  if (!a->tokens_out != !a->n_new)
    return fdl_cli_usage_error(&s, "--new N and --tokens-out FILE go together");
  if (a->from != UINT64_MAX && !a->logits_out && !a->greedy_out)
    return fdl_cli_usage_error(&s, "--from applies to --logits-out and --greedy-out");
  return FDL_CLI_GO;
}

int fdl_cli_generate_check(int argc, char **argv, FILE *out, FILE *diag) {
  args a;
  return parse(&a, argc, argv, out, diag);
}

/* The input ids from --ids or the panel; *n tokens in a new array. */
static int input_ids(const args *a, int32_t **ids, size_t *n) {
  fdl_err err = {FDL_OK, ""};
  if (a->ids) {
    json_t *j = NULL;
    int rc = fdl_cli_read_json("generate", "--ids", a->ids, &j);
    if (rc) return rc;
    size_t k = json_is_array(j) ? json_array_size(j) : 0;
    *ids = k ? malloc(k * sizeof **ids) : NULL;
    for (size_t i = 0; *ids && i < k; i++) {
      const json_t *v = json_array_get(j, i);
      if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX) {
        free(*ids);
        *ids = NULL;
        break;
      }
      (*ids)[i] = (int32_t)json_integer_value(v);
    }
    json_decref(j);
    if (!*ids) {
      fprintf(stderr, "fidelis generate: --ids: expected a nonempty JSON array of token ids "
                      "(integers 0..2147483647)\n");
      return FDL_EXIT_REFUSED;
    }
    *n = k;
    return 0;
  }
  int rc = fdl_cli_input_file("generate", a->panel);
  if (rc) return rc;
  fdl_ds_panel p;
  fdl_status s = fdl_ds_panel_load(a->panel, &p, &err);
  if (s != FDL_OK) {
    fdl_cli_report(&err);
    return fdl_cli_exit_for(s);
  }
  rc = 0;
  if (a->context >= p.n) {
    fprintf(stderr, "fidelis generate: --context %llu: the panel has contexts 0..%zu\n",
            (unsigned long long)a->context, p.n - 1);
    rc = FDL_EXIT_REFUSED;
  } else if (a->prompt_tokens > p.lines[a->context].ntok) {
    fprintf(stderr, "fidelis generate: --prompt-tokens %llu: context %llu has %zu tokens\n",
            (unsigned long long)a->prompt_tokens, (unsigned long long)a->context,
            p.lines[a->context].ntok);
    rc = FDL_EXIT_REFUSED;
  } else {
    *n = (size_t)a->prompt_tokens;
    *ids = malloc(*n * sizeof **ids);
    if (!*ids) rc = FDL_EXIT_USAGE;
    for (size_t i = 0; *ids && i < *n; i++) (*ids)[i] = (int32_t)p.lines[a->context].tokens[i];
  }
  fdl_ds_panel_free(&p);
  return rc;
}

static fdl_status write_ids(const char *path, const int32_t *v, size_t n, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_buf_putc(&b, '[');
  for (size_t i = 0; i < n; i++) fdl_buf_printf(&b, "%s%d", i ? ", " : "", (int)v[i]);
  fdl_buf_puts(&b, "]\n");
  fdl_status s = fdl_buf_status(&b);
  if (s == FDL_OK)
    s = fdl_write_file(path, b.data, b.len, err);
  else
    fdl_fail(err, s, "%s: out of memory", path);
  fdl_buf_free(&b);
  return s;
}

static fdl_status run(const args *a, fdl_model *m, const int32_t *ids, size_t n, fdl_err *err) {
  fdl_engine_path path = a->path ? FDL_ENGINE_DECODE : FDL_ENGINE_PREFILL;
  size_t vocab = fdl_model_get_info(m)->vocab;
  for (size_t i = 0; i < n; i++)
    if ((size_t)ids[i] >= vocab)
      return fdl_fail(err, FDL_REFUSED, "input id %zu is %d, outside the vocabulary of %zu", i,
                      (int)ids[i], vocab);
  size_t from = a->from == UINT64_MAX ? n - 1 : (size_t)a->from;
  if (from >= n)
    return fdl_fail(err, FDL_INVALID, "--from %zu: the input has rows 0..%zu", from, n - 1);
  fdl_status s = FDL_OK;
  if (a->tokens_out) {
    int32_t *nw = malloc((size_t)a->n_new * sizeof *nw);
    s = nw ? fdl_generate_greedy(m, ids, n, (size_t)a->n_new, path, nw, err)
           : fdl_fail(err, FDL_NOMEM, "out of memory");
    if (s == FDL_OK) s = write_ids(a->tokens_out, nw, (size_t)a->n_new, err);
    free(nw);
  }
  if (s == FDL_OK && (a->logits_out || a->greedy_out)) {
    float *lg = a->logits_out ? malloc(n * vocab * sizeof *lg) : NULL;
    int32_t *gr = a->greedy_out ? malloc(n * sizeof *gr) : NULL;
    fdl_engine_out out = {.logits = lg, .greedy = gr};
    if ((a->logits_out && !lg) || (a->greedy_out && !gr))
      s = fdl_fail(err, FDL_NOMEM, "out of memory for %zu rows of logits", n);
    if (s == FDL_OK) s = fdl_engine_run(m, ids, n, path, &out, err);
    int64_t shape[2] = {(int64_t)(n - from), (int64_t)vocab};
    if (s == FDL_OK && lg)
      s = fdl_npy_write(a->logits_out, FDL_DTYPE_F32, 2, shape, lg + from * vocab, err);
    if (s == FDL_OK && gr) s = write_ids(a->greedy_out, gr + from, n - from, err);
    free(lg);
    free(gr);
  }
  return s;
}

int fdl_cli_generate(int argc, char **argv) {
  args a;
  int rc = parse(&a, argc, argv, NULL, NULL);
  if (rc != FDL_CLI_GO) return rc;
  if ((rc = fdl_cli_input_dir("generate", a.model))) return rc;
  int32_t *ids = NULL;
  size_t n = 0;
  if ((rc = input_ids(&a, &ids, &n))) return rc;
  fdl_err err = {FDL_OK, ""};
  fdl_model *m = NULL;
  fdl_model_opts mo = {.threads = (unsigned)a.threads, .isa = ISA_OF[a.isa]};
  fdl_status s = fdl_model_load(a.model, &mo, &m, &err);
  if (s == FDL_OK) s = run(&a, m, ids, n, &err);
  fdl_model_free(m);
  free(ids);
  if (s != FDL_OK) {
    fdl_err_prefix(&err, "generate");
    fdl_cli_report(&err);
    return fdl_cli_exit_for(s);
  }
  return FDL_EXIT_OK;
}
