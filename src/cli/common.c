/* common.c - helpers shared by the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

void fdl_cli_report(const fdl_err *err) {
  fprintf(stderr, "fidelis: (%s) %s\n", fdl_status_name(err->status), err->msg);
}

void fdl_cli_notice(void *arg, const char *message) {
  fprintf(stderr, "fidelis %s: note: ", (const char *)arg);
  for (const unsigned char *p = (const unsigned char *)message; *p; p++)
    fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
  fputc('\n', stderr);
}

int fdl_cli_is_help(const char *arg) {
  return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}
