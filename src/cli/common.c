/* common.c - helpers shared by the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

void fdl_cli_report(const fdl_err *err) {
  fprintf(stderr, "fidelis: (%s) %s\n", fdl_status_name(err->status), err->msg);
}

int fdl_cli_is_help(const char *arg) {
  return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}
