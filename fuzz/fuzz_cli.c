/* fuzz_cli.c - every command's option parser, fed argv vectors made from the input: the words
 * are NUL-separated, the first names the command. Only the parse-only entry points
 * (fdl_cli_command.check) run, so no input is opened and no work starts. The parsers must never
 * crash, must answer with "go on", 0 (help) or 4 (usage), and must never let an empty word
 * through: an empty path or value is a usage error wherever it appears. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* More words than any real command line needs; the rest of the input is ignored. */
#define MAX_WORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  char *argv[MAX_WORDS + 1];
  int argc = 0;
  for (size_t at = 0; at <= size && argc < MAX_WORDS;) {
    argv[argc++] = text + at;
    at += strlen(text + at) + 1;
  }
  argv[argc] = NULL;
  size_t n;
  const fdl_cli_command *cmds = fdl_cli_commands(&n);
  const fdl_cli_command *cmd = NULL;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(argv[0], cmds[i].name)) cmd = &cmds[i];
  if (cmd) {
    FILE *sink = fopen("/dev/null", "w");
    if (sink) {
      int rc = cmd->check(argc, argv, sink, sink);
      if (rc != FDL_CLI_GO && rc != FDL_EXIT_OK && rc != FDL_EXIT_USAGE) {
        fprintf(stderr, "fuzz_cli: %s parser answered %d\n", cmd->name, rc);
        abort();
      }
      for (int i = 1; rc == FDL_CLI_GO && i < argc; i++)
        if (!argv[i][0]) {
          fprintf(stderr, "fuzz_cli: %s accepted an empty word at %d\n", cmd->name, i);
          abort();
        }
      fclose(sink);
    }
  }
  free(text);
  return 0;
}
