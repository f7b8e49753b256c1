/* tensor.c - placeholder until the subcommand lands. */
#include <stdio.h>

#include "cli/cli.h"

int fdl_cli_tensor(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "fidelis tensor: unavailable in this build\n");
  return FDL_EXIT_USAGE;
}
