/* cli.h - shared declarations of the fidelis command-line layer. */
#ifndef FIDELIS_CLI_H
#define FIDELIS_CLI_H

#include "fidelis/fidelis.h"

/* Exit codes shared with the reference tools. */
enum {
  FDL_EXIT_OK = 0,
  FDL_EXIT_WARN = 2,
  FDL_EXIT_REFUSED = 3,
  FDL_EXIT_USAGE = 4,
};

typedef struct {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} fdl_cli_command;

int fdl_cli_verify(int argc, char **argv);
int fdl_cli_json(int argc, char **argv);
int fdl_cli_tensor(int argc, char **argv);

/* Prints "fidelis: (NAME) message" for a failed call. */
void fdl_cli_report(const fdl_err *err);
/* True when arg is --help or -h. */
int fdl_cli_is_help(const char *arg);

#endif
