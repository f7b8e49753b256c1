/* main.c - the fidelis command: dispatch to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const fdl_cli_command COMMANDS[] = {
    {"verify", "recompute the seal of sealed JSON documents", fdl_cli_verify},
    {"json", "canonical JSON (json canon)", fdl_cli_json},
    {"tensor", "list tensors of safetensors and .npy files (tensor ls)", fdl_cli_tensor},
    {"compare", "compare two fidelity datasets into a sealed receipt", fdl_cli_compare},
    {"synth", "write a synthetic reference/candidate dataset pair", fdl_cli_synth},
    {"pack", "turn per-record dumps into a sealed fidelity dataset", fdl_cli_pack},
    {"validate", "check a fidelity dataset (structural, or sealed with tensors)", fdl_cli_validate},
    {"inspect", "summarise a fidelity dataset", fdl_cli_inspect},
};

static void usage(FILE *f) {
  fprintf(f, "usage: fidelis COMMAND [options] ARGS\n\n"
             "fidelis proves how faithfully an LLM inference stack reproduces a reference.\n\n"
             "commands:\n");
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
  fprintf(f,
          "\n'fidelis COMMAND --help' shows each command's options.\n"
          "exit codes: 0 ok, 2 warnings, 3 refused or mismatch, 4 bad usage or unreadable input\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return FDL_EXIT_OK;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("fidelis %s\n", fdl_version());
    return FDL_EXIT_OK;
  }
  for (size_t i = 0; i < sizeof COMMANDS / sizeof COMMANDS[0]; i++)
    if (!strcmp(argv[1], COMMANDS[i].name)) return COMMANDS[i].run(argc - 1, argv + 1);
  fprintf(stderr, "fidelis: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return FDL_EXIT_USAGE;
}
