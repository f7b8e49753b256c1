/* tokenize.c - `fidelis tokenize`: text to the model's token ids, or ids back to text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/sys.h"

/* The most text one call reads (a corpus is tokenized in one piece). */
#define TEXT_MAX ((size_t)1 << 30)

static void usage(FILE *f) {
  fputs(
      "usage: fidelis tokenize --tokenizer PATH (--text FILE|- | --string S) [--json]\n"
      "                        [--no-special]\n"
      "       fidelis tokenize --tokenizer PATH --decode IDS [--json]\n\n"
      "Encodes UTF-8 text into the token ids the model's own tokenizer gives (docs/TOKENIZER.md)\n"
      "or decodes ids back into text. PATH is a model directory (its tokenizer.json and\n"
      "tokenizer_config.json), a tokenizer.json, or a .gguf file.\n\n"
      "  --tokenizer PATH  the tokenizer; or hf://ORG/NAME@REV (docs/HUB.md)\n"
      "  --text FILE       the text to encode, byte for byte (- reads standard input)\n"
      "  --string S        the text to encode, given on the command line\n"
      "  --decode IDS      ids to decode, separated by commas or spaces (or @FILE holding\n"
      "                    them); the text is written to stdout as is, with no newline\n"
      "  --no-special      add no BOS/EOS and read special-token text as text (as\n"
      "                    llama-tokenize --no-bos --no-parse-special); by default the\n"
      "                    tokenizer's BOS/EOS are added and special tokens are matched\n"
      "  --json            print {\"ids\": [...]} (or {\"text\": \"...\"} for --decode) with the\n"
      "                    tokenizer's id\n"
      "  --offline         never reach the network for an hf:// input (also HF_HUB_OFFLINE=1)\n"
      "  --endpoint URL    the Hub or a mirror [HF_ENDPOINT, else https://huggingface.co]\n"
      "  -h, --help        show this help\n\n"
      "Without --json the ids are printed on one line, separated by spaces.\n"
      "exit codes: 0 done; 3 refused (a tokenizer fidelis does not run, a malformed tokenizer\n"
      "file, text that is not UTF-8 - the message names the byte offset -, an id outside\n"
      "the vocabulary); 4 bad usage, an input that cannot be opened, out of memory, or\n"
      "output that cannot be written\n",
      f);
}

typedef struct {
  const char *tokenizer, *text, *string, *decode;
  bool json, no_special;
  fdl_cli_hub hub;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--tokenizer", &a->tokenizer),
      FDL_CLI_HUB_OPTS(&a->hub),
      FDL_CLI_OPT_TEXT("--text", &a->text),
      FDL_CLI_OPT_TEXT("--string", &a->string),
      FDL_CLI_OPT_TEXT("--decode", &a->decode),
      FDL_CLI_OPT_FLAG("--json", &a->json),
      FDL_CLI_OPT_FLAG("--no-special", &a->no_special),
  };
  static const char *const conflicts[] = {"--text",   "--string", "--text",       "--decode",
                                          "--string", "--decode", "--no-special", "--decode"};
  fdl_cli_spec s = {"tokenize", usage, opts, FDL_CLI_N(opts), conflicts, 4, NULL, 0, 0,
                    out,        diag,  0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->tokenizer) return fdl_cli_usage_error(&s, "--tokenizer PATH is required");
  if (!a->text && !a->string && !a->decode)
    return fdl_cli_usage_error(&s, "give the text (--text FILE or --string S) or --decode IDS");
  return FDL_CLI_GO;
}

/* Ids separated by commas and/or white space. */
static int parse_ids(const char *s, size_t len, int32_t **ids, size_t *n) {
  size_t cap = 0, k = 0;
  int32_t *v = NULL;
  for (size_t i = 0; i < len;) {
    if (s[i] == ',' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
      i++;
      continue;
    }
    uint64_t x = 0;
    size_t j = i;
    while (j < len && s[j] >= '0' && s[j] <= '9' && x <= INT32_MAX)
      x = x * 10 + (uint64_t)(s[j++] - '0');
    if (j == i || x > INT32_MAX || (j < len && !strchr(", \t\r\n", s[j]))) {
      free(v);
      return (int)(i + 1);
    }
    if (!FDL_GROW(v, k, cap, 64)) {
      free(v);
      return -1;
    }
    v[k++] = (int32_t)x;
    i = j;
  }
  *ids = v;
  *n = k;
  return 0;
}

static int read_text(const char *cmd, const char *path, char **text, size_t *len) {
  fdl_err err = {FDL_OK, ""};
  fdl_status s;
  if (!strcmp(path, "-")) {
    s = fdl_read_fd(0, "standard input", TEXT_MAX, text, len, &err);
  } else {
    int rc = fdl_cli_input_file(cmd, path);
    if (rc) return rc;
    s = fdl_read_file(path, TEXT_MAX, text, len, &err);
  }
  if (s != FDL_OK) {
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  return 0;
}

/* Ids as text, formatted by hand into 64 KiB blocks as they come (printf per id was most of the
 * run's time): "1 2 3\n". */
typedef struct {
  char buf[1 << 16];
  size_t at;
  bool any;
} id_printer;

static bool printer_drain(id_printer *p) {
  bool ok = fdl_cli_put(p->buf, p->at);
  p->at = 0;
  return ok;
}

/* v in decimal at out (at most 10 bytes), two digits per division. */
static size_t put_decimal(uint32_t v, char *out) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                              "34353637383940414243444546474849505152535455565758596061626364656667"
                              "6869707172737475767778798081828384858687888990919293949596979899";
  char tmp[10];
  size_t k = sizeof tmp;
  while (v >= 100) {
    unsigned r = v % 100;
    v /= 100;
    tmp[--k] = pairs[2 * r + 1];
    tmp[--k] = pairs[2 * r];
  }
  if (v >= 10) {
    tmp[--k] = pairs[2 * v + 1];
    tmp[--k] = pairs[2 * v];
  } else {
    tmp[--k] = (char)('0' + v);
  }
  memcpy(out, tmp + k, sizeof tmp - k);
  return sizeof tmp - k;
}

static fdl_status print_batch(void *ctx, const int32_t *ids, size_t n, fdl_err *err) {
  id_printer *p = ctx;
  for (size_t i = 0; i < n; i++) {
    if (p->at > sizeof p->buf - 16 && !printer_drain(p))
      return fdl_fail(err, FDL_IO, "writing the ids to standard output failed");
    if (p->any) p->buf[p->at++] = ' ';
    p->any = true;
    p->at += put_decimal((uint32_t)ids[i], p->buf + p->at);
  }
  return FDL_OK;
}

static int print_json(const fdl_tok *t, const int32_t *ids, size_t n) {
  json_t *a = fdl_json_append_ints(json_array(), ids, n, sizeof *ids), *o = json_object();
  fdl_tok_info info;
  fdl_tok_get_info(t, &info);
  if (o && a) {
    json_object_set_new(o, "ids", a);
    json_object_set_new(o, "count", json_integer((json_int_t)n));
    json_object_set_new(o, "tokenizer", json_string(info.id));
  } else {
    json_decref(a);
  }
  return fdl_cli_print_json(o, FDL_JSON_ASCII);
}

static int tokenize(const args *given) {
  args a = *given;
  int rc;
  if ((rc = fdl_cli_input_tokenizer("tokenize", a.tokenizer)) != 0) return rc;
  char *text = NULL;
  size_t len = 0;
  if (a.text && (rc = read_text("tokenize", a.text, &text, &len)) != 0) return rc;
  if (a.decode && (rc = fdl_cli_read_arg("tokenize", "--decode", a.decode, &text, &len)) != 0)
    return rc;
  fdl_tok *t = NULL;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_tok_load(a.tokenizer, &t, &err);
  if (s != FDL_OK) {
    free(text);
    fdl_err_prefix(&err, "tokenize: %s", a.tokenizer);
    return fdl_cli_failed(&err, s);
  }
  int32_t *ids = NULL;
  size_t n = 0;
  if (a.decode) {
    int bad = parse_ids(text, len, &ids, &n);
    if (bad) {
      fprintf(stderr, "fidelis tokenize: --decode: %s\n",
              bad < 0 ? "out of memory"
                      : "expected ids (decimal, at most 2147483647) separated by "
                        "commas or spaces");
      rc = FDL_EXIT_USAGE;
    } else {
      char *out = NULL;
      size_t olen = 0;
      s = fdl_tok_decode(t, ids, n, &out, &olen, &err);
      if (s != FDL_OK) {
        rc = fdl_cli_failed(&err, s);
      } else if (a.json) {
        json_t *o = json_object();
        if (o) json_object_set_new(o, "text", fdl_cli_json_text(out));
        rc = fdl_cli_print_json(o, FDL_JSON_ASCII);
      } else {
        rc = fdl_cli_put(out, olen) ? FDL_EXIT_OK : FDL_EXIT_USAGE;
      }
      free(out);
    }
  } else {
    const char *src = a.string ? a.string : text;
    size_t slen = a.string ? strlen(a.string) : len;
    unsigned flags = a.no_special ? 0 : FDL_TOK_ADD_SPECIAL | FDL_TOK_PARSE_SPECIAL;
    /* Text output streams (memory stays flat on a corpus); JSON holds the ids for its count. */
    id_printer *pr = a.json ? NULL : malloc(sizeof *pr);
    if (!a.json && !pr) {
      s = fdl_fail(&err, FDL_NOMEM, "out of memory");
    } else if (pr) {
      pr->at = 0;
      pr->any = false;
      s = fdl_tok_encode_each(t, src, slen, flags, print_batch, pr, &err);
    } else {
      s = fdl_tok_encode(t, src, slen, flags, &ids, &n, &err);
    }
    if (s == FDL_OK && pr) {
      pr->buf[pr->at++] = '\n';
      if (!printer_drain(pr))
        s = fdl_fail(&err, FDL_IO, "writing the ids to standard output failed");
    }
    if (s != FDL_OK) {
      fdl_err_prefix(&err, "tokenize: %s", a.text ? a.text : "--string");
      rc = fdl_cli_failed(&err, s);
    } else {
      rc = pr ? FDL_EXIT_OK : print_json(t, ids, n);
    }
    free(pr);
  }
  free(ids);
  free(text);
  fdl_tok_free(t);
  return rc;
}

static int work(args *a) {
  int rc;
  if (!(rc = fdl_cli_hub_input("tokenize", &a->hub, &a->tokenizer, true))) rc = tokenize(a);
  fdl_cli_hub_free(&a->hub);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_tokenize, fdl_cli_tokenize_check, args, parse, work)
