/* fetch.c - `fidelis fetch hf://ORG/NAME@REV`: a Hub repository into the Hugging Face cache
 * (fdl_hub_resolve; docs/HUB.md). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

/* The most --include patterns (comma-separated). */
#define FETCH_MAX_GLOBS 32

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis fetch hf://[datasets/]ORG/NAME[@REV][/PATH] [options]\n\n"
          "Downloads a Hugging Face Hub repository (or the file or folder PATH in it) at REV\n"
          "(a branch, tag or commit; main when absent) into the Hugging Face cache, in the\n"
          "layout Python tools read: REV is resolved to a commit (refs/REV), each file is\n"
          "verified against its LFS sha256 or git blob id before it gets its name in blobs/,\n"
          "and snapshots/COMMIT/ links to it. Files already there are not downloaded again;\n"
          "an interrupted download resumes. Commands that take hf:// inputs (capture\n"
          "--model, --panel; panel and tokenize --tokenizer) read the same cache.\n\n"
          "options (default in brackets):\n"
          "  --include GLOBS      only files matching one of these comma-separated globs ('*'\n"
          "                       also matches '/') [every file]\n"
          "  --offline            no network: check that the cache holds the revision and every\n"
          "                       file --include names literally (also HF_HUB_OFFLINE=1)\n"
          "  --endpoint URL       the Hub or a mirror [HF_ENDPOINT, else https://huggingface.co];\n"
          "                       redirects go only to its own origin or, over https, to\n"
          "                       huggingface.co and hf.co hosts; the token goes to it alone\n"
          "  --cache DIR          the cache [HF_HUB_CACHE, else HF_HOME/hub, else\n"
          "                       ~/.cache/huggingface/hub]\n"
          "  --progress           a download bar on stderr even when it is not a terminal\n"
          "  --quiet              no download bar\n"
          "  --json               print the result as JSON\n"
          "  -h, --help           show this help\n\n"
          "The token is HF_TOKEN, else the file HF_TOKEN_PATH, HF_HOME/token or\n"
          "~/.cache/huggingface/token; it is never printed.\n\n"
          "exit codes: 0 fetched (or already cached); 3 refused (a download whose bytes do not\n"
          "match its name, a redirect to a host not allowed, 401/403 without a usable token);\n"
          "4 bad usage, the endpoint unreachable or answering an error, offline and not\n"
          "cached, a write that failed\n");
}

typedef struct {
  fdl_cli_hub hub;
  const char *ref;
  const char *include;
  bool json;
  char globs_buf[4096];
  const char *globs[FETCH_MAX_GLOBS];
  size_t n_globs;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  bool progress = false, quiet = false;
  const char *pos[1];
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_TEXT("--include", &a->include), FDL_CLI_HUB_OPTS(&a->hub),
      FDL_CLI_OPT_PATH("--cache", &a->hub.cache), FDL_CLI_OPT_FLAG("--progress", &progress),
      FDL_CLI_OPT_FLAG("--quiet", &quiet),        FDL_CLI_OPT_FLAG("--json", &a->json),
  };
  static const char *const conflicts[] = {"--progress", "--quiet"};
  fdl_cli_spec s = {"fetch", usage, opts, FDL_CLI_N(opts), conflicts, 1, pos, 1, 0, out, diag, 0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 1) return fdl_cli_usage_error(&s, "expected one hf://ORG/NAME@REV");
  a->ref = pos[0];
  if (!fdl_hub_is_uri(a->ref))
    return fdl_cli_usage_error(&s, "'%s' is not a Hub reference (hf://ORG/NAME@REV)", a->ref);
  a->hub.progress = progress ? 1 : quiet ? -1 : 0;
  a->hub.always_ask = true;
  if (a->include) {
    if (strlen(a->include) >= sizeof a->globs_buf)
      return fdl_cli_usage_error(&s, "--include is longer than %zu bytes", sizeof a->globs_buf - 1);
    memcpy(a->globs_buf, a->include, strlen(a->include) + 1);
    for (char *p = a->globs_buf, *next; p; p = next) {
      next = strchr(p, ',');
      if (next) *next++ = '\0';
      if (!*p) return fdl_cli_usage_error(&s, "--include has an empty pattern");
      if (a->n_globs == FETCH_MAX_GLOBS)
        return fdl_cli_usage_error(&s, "--include has more than %d patterns", FETCH_MAX_GLOBS);
      a->globs[a->n_globs++] = p;
    }
  }
  return FDL_CLI_GO;
}

static int work(args *a) {
  fdl_hub_result r;
  int rc = fdl_cli_hub_resolve("fetch", &a->hub, a->ref, false, a->n_globs ? a->globs : NULL,
                               a->n_globs, &r);
  if (rc) return rc;
  if (a->json) {
    json_t *j = json_pack("{s:o, s:s, s:o, s:o, s:I, s:I, s:I, s:b}", "ref",
                          fdl_cli_json_text(a->ref), "commit", r.commit, "snapshot",
                          fdl_cli_json_text(r.snapshot), "path", fdl_cli_json_text(r.path), "files",
                          (json_int_t)r.files, "fetched", (json_int_t)r.fetched, "fetched_bytes",
                          (json_int_t)r.fetched_bytes, "asked_endpoint", r.from_network);
    rc = fdl_cli_print_json(j, FDL_JSON_ASCII);
  } else {
    printf("fidelis fetch: ");
    fdl_cli_put_text(stdout, a->ref);
    printf(" is commit %s\n  snapshot  ", r.commit);
    fdl_cli_put_text(stdout, r.snapshot);
    printf("\n  files     %zu (%zu downloaded now, %llu bytes)%s\n", r.files, r.fetched,
           (unsigned long long)r.fetched_bytes,
           r.from_network ? "" : "; from the cache, the endpoint was not asked");
  }
  fdl_hub_result_free(&r);
  return rc;
}

FDL_CLI_COMMAND(fdl_cli_fetch, fdl_cli_fetch_check, args, parse, work)
