/* generate.c - `fidelis generate`: what a model does after given ids, in the forms the
 * attribution commands read: greedy continuation tokens (for `divergence`), the full logits of
 * the last rows (a `full:` path or the `--reference` of `attribute`), their argmaxes through the
 * argmax-only path (a `greedy:` path); or, with --precision float64, the float64 oracle's logits
 * to measure the float32 engine against. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "attr/kiln_json.h"
#include "dataset/dataset_json.h"
#include "json/get.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis generate --model DIR (--ids JSON|@FILE | --prompt TEXT|@FILE |\n"
          "         --request FILE | --panel FILE --context I --prompt-tokens N)\n"
          "         [--path prefill|decode]\n"
          "         [--new N --tokens-out FILE [--stop IDS|none] [--stream]]\n"
          "         [--rows last|steps|all] [--logits-out FILE.npy]\n"
          "         [--greedy-out FILE] [--ids-out FILE] [--precision float32|float64]\n"
          "         [options]\n\n"
          "Runs the model in DIR (as `fidelis capture` does) over the input ids: a JSON array\n"
          "(or @FILE holding one), text encoded by the model's own tokenizer (its BOS/EOS\n"
          "added and special-token text matched, as `fidelis tokenize` does by default), the\n"
          "input_token_ids of a first-divergence request (`fidelis divergence`), or the first\n"
          "N tokens of context I of a pack panel. When DIR has a tokenizer, the prompt and\n"
          "the continuation are also printed as text (escaped). Then writes any of:\n"
          "  --tokens-out FILE   the --new N greedy continuation tokens, a JSON array (the\n"
          "                      streams `fidelis divergence` compares)\n"
          "  --logits-out FILE   the full logits of the --rows, float32 .npy [rows, vocab]: the\n"
          "                      last row is the reference of `fidelis attribute`, the steps\n"
          "                      rows a `full:` path; float64 .npy with --precision float64\n"
          "  --greedy-out FILE   the argmaxes of the --rows through the argmax-only path, a JSON\n"
          "                      array (a `greedy:` path of `fidelis attribute`)\n"
          "  --ids-out FILE      the input ids, a JSON array\n"
          "Row i holds what the model predicts after input token i. --rows: last (the last\n"
          "row; the default), steps (with --request: every forced step, from the last prompt\n"
          "token to the end), all. Greedy ties go to the lowest token id. A continuation runs\n"
          "the prompt once and then one position per token, the KV cache carried: linear in\n"
          "--new. It stops after the model's end-of-sequence token (generation_config.json's\n"
          "eos_token_id, else config.json's, or the GGUF's), or after one of --stop.\n\n"
          "options:\n"
          "  --model DIR          the model directory, a Hugging Face cache snapshot, or\n"
          "                       hf://ORG/NAME@REV (docs/HUB.md)\n"
          "  --ids JSON|@FILE     the input ids\n"
          "  --prompt TEXT|@FILE  the input as UTF-8 text (@FILE: the file's bytes as is)\n"
          "  --request FILE       a kiln.hf-next-token-request.v1: its input_token_ids\n"
          "  --panel FILE         a pack panel (JSONL); with --context I and --prompt-tokens N\n"
          "  --path prefill|decode  the engine's path [prefill]\n"
          "  --new N              greedy tokens to append, at most; 1 to 4096 (needs\n"
          "                       --tokens-out)\n"
          "  --stop IDS|none      the ids that end a continuation, comma-separated, instead of\n"
          "                       the model's end-of-sequence ids; none: always --new tokens\n"
          "  --stream             print each new token as it is chosen\n"
          "  --rows WHICH         last, steps or all [last]\n"
          "  --precision P        float32 (the capture engine) or float64 (the oracle: the\n"
          "                       same model in double throughout, slow, for measuring the\n"
          "                       engine; whole context at once, so it writes --logits-out\n"
          "                       and --ids-out only and refuses --new, --tokens-out,\n"
          "                       --greedy-out and --path decode) [float32]\n"
          "  --threads N          1 to %d [all cores]; no bit depends on it\n"
          "  --isa NAME           auto, scalar, avx2, avx512 [auto]; no bit depends on "
          "it\n" FDL_CLI_HUB_HELP "  -h, --help           show this help\n\n"
          "outputs are written whole or not at all and never overwrite a file.\n\n"
          "exit codes: 0 written; 3 refused (an unsupported or corrupt model, ids outside the\n"
          "vocabulary, a malformed request, text that is not UTF-8 or a model without a\n"
          "tokenizer for --prompt, an output that exists); 4 bad usage, an input that\n"
          "cannot be opened, a write that failed\n",
          FDL_POOL_MAX_THREADS);
}

static const char *const PATHS[] = {"prefill", "decode", NULL};
static const char *const ROWS[] = {"last", "steps", "all", NULL};
enum { ROWS_LAST, ROWS_STEPS, ROWS_ALL };
static const char *const PRECISIONS[] = {"float32", "float64", NULL};

typedef struct {
  const char *model, *ids, *prompt, *request, *panel, *tokens_out, *logits_out, *greedy_out,
      *ids_out, *stop;
  uint64_t context, prompt_tokens, n_new;
  unsigned threads;
  int path, isa, rows, f64;
  bool rows_given, stream;
  fdl_cli_hub hub;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  a->context = a->prompt_tokens = UINT64_MAX;
  a->rows = -1;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--model", &a->model),
      FDL_CLI_HUB_OPTS(&a->hub),
      FDL_CLI_OPT_TEXT("--ids", &a->ids),
      FDL_CLI_OPT_TEXT("--prompt", &a->prompt),
      FDL_CLI_OPT_PATH("--request", &a->request),
      FDL_CLI_OPT_PATH("--panel", &a->panel),
      FDL_CLI_OPT_NUMBER("--context", &a->context, 0, (uint64_t)INT64_MAX),
      FDL_CLI_OPT_NUMBER("--prompt-tokens", &a->prompt_tokens, 1, (uint64_t)1 << 20),
      {"--path", NULL, FDL_CLI_CHOICE, &a->path, 0, 0, PATHS},
      FDL_CLI_OPT_NUMBER("--new", &a->n_new, 1, 4096),
      FDL_CLI_OPT_OUT("--tokens-out", &a->tokens_out),
      FDL_CLI_OPT_TEXT("--stop", &a->stop),
      FDL_CLI_OPT_FLAG("--stream", &a->stream),
      {"--rows", NULL, FDL_CLI_CHOICE, &a->rows, 0, 0, ROWS},
      FDL_CLI_OPT_OUT("--logits-out", &a->logits_out),
      FDL_CLI_OPT_OUT("--greedy-out", &a->greedy_out),
      FDL_CLI_OPT_OUT("--ids-out", &a->ids_out),
      FDL_CLI_THREADS(&a->threads),
      FDL_CLI_ISA(&a->isa),
      {"--precision", NULL, FDL_CLI_CHOICE, &a->f64, 0, 0, PRECISIONS},
  };
  static const char *const conflicts[] = {
      "--ids",    "--panel",   "--ids",    "--context",      "--ids",    "--prompt-tokens",
      "--prompt", "--ids",     "--prompt", "--request",      "--prompt", "--panel",
      "--prompt", "--context", "--prompt", "--prompt-tokens"};
  fdl_cli_spec s = {
      "generate", usage, opts, FDL_CLI_N(opts), conflicts, FDL_CLI_N(conflicts) / 2, NULL, 0, 0,
      out,        diag,  0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->model) return fdl_cli_usage_error(&s, "--model DIR is required");
  bool by_panel = a->panel || a->context != UINT64_MAX || a->prompt_tokens != UINT64_MAX;
  if (!a->ids && !a->prompt && !a->request && !by_panel)
    return fdl_cli_usage_error(&s, "give --ids, --prompt, --request, or --panel with --context "
                                   "and --prompt-tokens");
  if (by_panel && (!a->panel || a->context == UINT64_MAX || a->prompt_tokens == UINT64_MAX))
    return fdl_cli_usage_error(&s, "--panel, --context and --prompt-tokens go together");
  if (!a->tokens_out && !a->logits_out && !a->greedy_out && !a->ids_out)
    return fdl_cli_usage_error(&s, "nothing to write: give --tokens-out, --logits-out, "
                                   "--greedy-out or --ids-out");
  if (!a->tokens_out != !a->n_new)
    return fdl_cli_usage_error(&s, "--new N and --tokens-out FILE go together");
  if ((a->stop || a->stream) && !a->n_new)
    return fdl_cli_usage_error(&s, "--stop and --stream apply to a continuation (--new N)");
  a->rows_given = a->rows >= 0;
  if (a->rows_given && !a->logits_out && !a->greedy_out)
    return fdl_cli_usage_error(&s, "--rows applies to --logits-out and --greedy-out");
  if (!a->rows_given) a->rows = ROWS_LAST;
  if (a->rows == ROWS_STEPS && !a->request)
    return fdl_cli_usage_error(&s, "--rows steps needs --request (the prompt's length)");
  /* The oracle is one whole-context pass with no argmax path: what needs the float32 engine's
   * decode or greedy paths is refused rather than silently computed in float32. */
  if (a->f64 && (a->tokens_out || a->greedy_out || a->path))
    return fdl_cli_usage_error(&s, "--precision float64 writes --logits-out and --ids-out only "
                                   "(the oracle runs the whole context at once); --new, "
                                   "--tokens-out, --greedy-out and --path decode need float32");
  return FDL_CLI_GO;
}

/* A request's input_token_ids, checked by the request's own rules first; *first is the row of
 * the last prompt token (the first forced step). */
static int request_ids(const args *a, int32_t **ids, size_t *n, size_t *first) {
  int rc = fdl_cli_input_file("generate", a->request);
  if (rc) return rc;
  fdl_err err = {FDL_OK, ""};
  json_t *doc = NULL;
  fdl_kiln_checked chk;
  fdl_status s = fdl_kiln_check_file_doc(a->request, &chk, &doc, &err);
  if (s == FDL_OK && strcmp(chk.schema, "kiln.hf-next-token-request.v1"))
    s = fdl_fail(&err, FDL_REFUSED, "%s: a %s, expected a kiln.hf-next-token-request.v1",
                 a->request, chk.schema);
  if (s != FDL_OK) {
    json_decref(doc);
    fdl_err_prefix(&err, "--request");
    return fdl_cli_failed(&err, s);
  }
  fdl_kiln_request *rq = malloc(sizeof *rq);
  if (rq) fdl_kiln_request_decode(doc, &chk, rq);
  json_decref(doc);
  /* The checker proved both lists non-empty and every id below the vocabulary: only memory can
   * fail. */
  *ids = rq ? malloc(rq->input_count * sizeof **ids) : NULL;
  for (size_t i = 0; *ids && i < rq->input_count; i++) (*ids)[i] = (int32_t)rq->input[i];
  *n = rq ? rq->input_count : 0;
  *first = rq ? rq->prompt_count - 1 : 0;
  free(rq);
  return *ids ? 0 : FDL_EXIT_USAGE;
}

/* The model's tokenizer when DIR has a tokenizer.json, or a GGUF its vocabulary (*tok stays
 * NULL when it has none). One that --prompt needs must load; one that only shows text may fail
 * with a note. */
static int load_tokenizer(const args *a, fdl_tok **tok) {
  fdl_err err = {FDL_OK, ""};
  char *p = NULL;
  struct stat st;
  bool has = false, file = stat(a->model, &st) == 0 && S_ISREG(st.st_mode);
  fdl_status s = file ? fdl_gguf_has_vocab(a->model, &has, &err)
                      : fdl_model_member(a->model, "tokenizer.json", &p, &err);
  has = has || p != NULL;
  free(p);
  if (s == FDL_OK && !has) {
    if (!a->prompt) return 0;
    s = fdl_fail(&err, FDL_REFUSED, "--prompt: %s has no %s to encode the text with (give --ids)",
                 a->model, file ? "vocabulary (tokenizer.ggml.model)" : "tokenizer.json");
  }
  if (s == FDL_OK) s = fdl_tok_load(a->model, tok, &err);
  if (s == FDL_OK) return 0;
  if (!a->prompt) {
    fdl_err_prefix(&err, "no text is shown: the model's tokenizer cannot be loaded");
    fdl_cli_notice("generate", err.msg);
    return 0;
  }
  fdl_err_prefix(&err, "generate");
  return fdl_cli_failed(&err, s);
}

/* --prompt: the text (or @FILE's bytes) encoded as `fidelis tokenize` does by default. */
static int prompt_ids(const args *a, fdl_tok *tok, int32_t **ids, size_t *n) {
  char *text = NULL;
  size_t len = 0;
  int rc = fdl_cli_read_arg("generate", "--prompt", a->prompt, &text, &len);
  if (rc) return rc;
  fdl_err err = {FDL_OK, ""};
  fdl_status s =
      fdl_tok_encode(tok, text, len, FDL_TOK_ADD_SPECIAL | FDL_TOK_PARSE_SPECIAL, ids, n, &err);
  free(text);
  if (s == FDL_OK && !*n)
    s = fdl_fail(&err, FDL_REFUSED,
                 "the text encodes to no tokens (and the tokenizer adds no "
                 "BOS)");
  if (s == FDL_OK) return 0;
  free(*ids);
  *ids = NULL;
  fdl_err_prefix(&err, "generate: --prompt");
  return fdl_cli_failed(&err, s);
}

/* The input ids from --ids, --prompt, --request or the panel; *n tokens in a new array.
 * *first: the first forced step (requests only). */
static int input_ids(const args *a, fdl_tok *tok, int32_t **ids, size_t *n, size_t *first) {
  fdl_err err = {FDL_OK, ""};
  if (a->prompt) return prompt_ids(a, tok, ids, n);
  if (a->ids) {
    json_t *j = NULL;
    int rc = fdl_cli_read_json("generate", "--ids", a->ids, &j);
    if (rc) return rc;
    int64_t *v = NULL;
    bool ok = fdl_json_int_array(j, 0, INT32_MAX, &v, n) == FDL_OK && *n;
    json_decref(j);
    *ids = ok ? malloc(*n * sizeof **ids) : NULL;
    for (size_t i = 0; *ids && i < *n; i++) (*ids)[i] = (int32_t)v[i];
    free(v);
    if (!*ids) {
      fprintf(stderr, "fidelis generate: --ids: expected a nonempty JSON array of token ids "
                      "(integers 0..2147483647)\n");
      return FDL_EXIT_REFUSED;
    }
    return 0;
  }
  if (a->request) return request_ids(a, ids, n, first);
  int rc = fdl_cli_input_file("generate", a->panel);
  if (rc) return rc;
  fdl_ds_panel p;
  fdl_status s = fdl_ds_panel_load(a->panel, &p, &err);
  if (s != FDL_OK) return fdl_cli_failed(&err, s);
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

/* The ids that end a continuation: --stop's, none, or the model's own. */
#define FDL_GEN_STOP_MAX 16
static fdl_status stop_ids(const args *a, const fdl_model *m, int32_t *stop, size_t *n,
                           fdl_err *err) {
  *n = 0;
  if (!a->stop) return fdl_model_eos(m, a->model, stop, FDL_GEN_STOP_MAX, n, err);
  if (!strcmp(a->stop, "none")) return FDL_OK;
  size_t vocab = fdl_model_get_info(m)->vocab;
  for (const char *p = a->stop;; p++) {
    char id[24];
    size_t len = strcspn(p, ",");
    uint64_t v;
    bool ok = len < sizeof id && *n < FDL_GEN_STOP_MAX;
    if (ok) memcpy(id, p, len), id[len] = '\0';
    if (!ok || fdl_cli_parse_u64(id, vocab - 1, &v))
      return fdl_fail(err, FDL_REFUSED,
                      "--stop %s: expected at most %d comma-separated token ids below %zu, or "
                      "none",
                      a->stop, FDL_GEN_STOP_MAX, vocab);
    stop[(*n)++] = (int32_t)v;
    p += len;
    if (!*p) return FDL_OK;
  }
}

typedef struct {
  const fdl_tok *tok;
  size_t k;
} stream_ctx;

/* --stream: one line per new token, its id and (with a tokenizer) its text, flushed. */
static fdl_status stream_token(void *arg, int32_t id, fdl_err *err) {
  stream_ctx *c = arg;
  printf("  + %-6zu %d", c->k++, (int)id);
  char *text = NULL;
  size_t len = 0;
  fdl_err ignored = {FDL_OK, ""};
  if (c->tok && fdl_tok_decode(c->tok, &id, 1, &text, &len, &ignored) == FDL_OK) {
    char shown[256];
    printf("  %s", fdl_quote_text(text, len, shown, sizeof shown));
  }
  free(text);
  putchar('\n');
  if (fflush(stdout) || ferror(stdout))
    return fdl_fail(err, FDL_IO, "--stream: writing to standard output failed");
  return FDL_OK;
}

/* The runs and their outputs; *cont receives the --new continuation (NULL without one) and
 * *n_cont its length (short of --new when a stop id came). */
static fdl_status run(const args *a, fdl_model *m, const fdl_tok *tok, const int32_t *ids, size_t n,
                      size_t first, int32_t **cont, size_t *n_cont, fdl_err *err) {
  fdl_engine_path path = a->path ? FDL_ENGINE_DECODE : FDL_ENGINE_PREFILL;
  size_t vocab = fdl_model_get_info(m)->vocab;
  for (size_t i = 0; i < n; i++)
    if ((size_t)ids[i] >= vocab)
      return fdl_fail(err, FDL_REFUSED, "input id %zu is %d, outside the vocabulary of %zu", i,
                      (int)ids[i], vocab);
  size_t from = a->rows == ROWS_ALL ? 0 : a->rows == ROWS_STEPS ? first : n - 1;
  fdl_status s = FDL_OK;
  if (a->tokens_out) {
    int32_t stop[FDL_GEN_STOP_MAX], *nw = malloc((size_t)a->n_new * sizeof *nw);
    fdl_generate_opts go = {.n_new = (size_t)a->n_new, .path = path, .stop = stop};
    s = nw ? stop_ids(a, m, stop, &go.n_stop, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
    stream_ctx sc = {tok, 0};
    if (a->stream) go.on_token = stream_token, go.arg = &sc;
    if (s == FDL_OK) s = fdl_generate_greedy(m, ids, n, &go, nw, n_cont, err);
    if (s == FDL_OK) s = write_ids(a->tokens_out, nw, *n_cont, err);
    *cont = nw;
  }
  if (s == FDL_OK && a->f64 && a->logits_out) {
    double *lg = malloc(n * vocab * sizeof *lg);
    s = lg ? fdl_engine_run_f64(m, ids, n, NULL, lg, err)
           : fdl_fail(err, FDL_NOMEM, "out of memory for %zu rows of float64 logits", n);
    int64_t shape[2] = {(int64_t)(n - from), (int64_t)vocab};
    if (s == FDL_OK)
      s = fdl_npy_write(a->logits_out, FDL_DTYPE_F64, 2, shape, lg + from * vocab, err);
    free(lg);
  } else if (s == FDL_OK && (a->logits_out || a->greedy_out)) {
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
  /* Last: the ids need no computing, so nothing is published before the runs succeed. */
  if (s == FDL_OK && a->ids_out) s = write_ids(a->ids_out, ids, n, err);
  return s;
}

/* ids as text, escaped for the terminal (and cut, as every shown value is): what the ids say,
 * not a file to parse. Ids the tokenizer cannot decode are shown as such. */
static void show_text(const fdl_tok *tok, const char *what, const int32_t *ids, size_t n) {
  char *text = NULL;
  size_t len = 0;
  fdl_err err = {FDL_OK, ""};
  printf("  %-13s", what);
  if (fdl_tok_decode(tok, ids, n, &text, &len, &err) == FDL_OK) {
    char shown[8 * FDL_ERR_MSG_MAX];
    fputs(fdl_quote_text(text, len, shown, sizeof shown), stdout);
  } else {
    printf("(not decodable: ");
    fdl_cli_put_text(stdout, err.msg);
    putchar(')');
  }
  putchar('\n');
  free(text);
}

static int generate(const args *given) {
  args a = *given;
  int rc;
  if ((rc = fdl_cli_input_model("generate", a.model))) return rc;
  fdl_tok *tok = NULL;
  if ((rc = load_tokenizer(&a, &tok))) return rc;
  int32_t *ids = NULL, *cont = NULL;
  size_t n = 0, first = 0, n_cont = 0;
  if ((rc = input_ids(&a, tok, &ids, &n, &first))) {
    fdl_tok_free(tok);
    return rc;
  }
  fdl_err err = {FDL_OK, ""};
  fdl_model *m = NULL;
  /* generate records no identity of the model: its files are not digested */
  fdl_model_opts mo = {.threads = a.threads, .isa = fdl_cli_isa_of[a.isa], .skip_digests = true};
  fdl_status s = fdl_model_load(a.model, &mo, &m, &err);
  if (s == FDL_OK) s = run(&a, m, tok, ids, n, first, &cont, &n_cont, &err);
  fdl_model_free(m);
  if (s != FDL_OK) {
    free(ids);
    free(cont);
    fdl_tok_free(tok);
    fdl_err_prefix(&err, "generate");
    return fdl_cli_failed(&err, s);
  }
  const char *outs[][2] = {{"tokens", a.tokens_out},
                           {"logits", a.logits_out},
                           {"greedy", a.greedy_out},
                           {"ids", a.ids_out}};
  printf("fidelis generate: %zu input ids, %s\n", n,
         a.f64    ? "float64 oracle"
         : a.path ? "decode path"
                  : "prefill path");
  if (cont && n_cont < a.n_new)
    printf("  stopped at id %d after %zu of --new %llu tokens\n", (int)cont[n_cont - 1], n_cont,
           (unsigned long long)a.n_new);
  for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
    if (outs[i][1]) {
      printf("  %-7s", outs[i][0]);
      fdl_cli_put_text(stdout, outs[i][1]);
      putchar('\n');
    }
  if (tok) {
    show_text(tok, "prompt", ids, n);
    if (cont) show_text(tok, "continuation", cont, n_cont);
  }
  free(ids);
  free(cont);
  fdl_tok_free(tok);
  return FDL_EXIT_OK;
}

static int work(args *a) {
  int rc;
  a->hub.progress = -(int)a->stream; /* the stream owns stderr's lines then */
  if (!(rc = fdl_cli_hub_input("generate", &a->hub, &a->model, true)) &&
      !(rc = fdl_cli_hub_input("generate", &a->hub, &a->panel, false)) &&
      !(rc = fdl_cli_input_model("generate", a->model)) &&
      !(rc = fdl_cli_hub_file_real(&a->hub, &a->model)))
    rc = generate(a);
  fdl_cli_hub_free(&a->hub);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_generate, fdl_cli_generate_check, args, parse, work)
