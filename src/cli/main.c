/* main.c - the fidelis command: dispatch to one file per subcommand, then make sure stdout got
 * everything that was printed. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  size_t n;
  const fdl_cli_command *cmds = fdl_cli_commands(&n);
  fprintf(f, "usage: fidelis COMMAND [options] ARGS\n\n"
             "fidelis proves how faithfully an LLM inference stack reproduces a reference.\n\n"
             "commands:\n");
  for (size_t i = 0; i < n; i++) fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].summary);
  fprintf(f, "\n'fidelis COMMAND --help' shows each command's options.\n"
             "exit codes: 0 ok; 2 warnings or an advisory result; 3 refused (the input was read\n"
             "and is malformed, fails a gate, seal or validation rule, or the output exists);\n"
             "4 could not run (bad usage, a named input that cannot be opened, output that\n"
             "cannot be written, out of memory)\n");
}

static int dispatch(int argc, char **argv) {
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
  size_t n;
  const fdl_cli_command *cmds = fdl_cli_commands(&n);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(argv[1], cmds[i].name)) return cmds[i].run(argc - 1, argv + 1);
  char q[FDL_QUOTE_CAP];
  fprintf(stderr, "fidelis: unknown command %s\n\n", fdl_quote_str(argv[1], q, sizeof q));
  usage(stderr);
  return FDL_EXIT_USAGE;
}

int main(int argc, char **argv) {
  /* Before any thread exists: every later thread inherits the blocked signals. */
  (void)fdl_cleanup_on_signals();
  return fdl_cli_close_stdout(dispatch(argc, argv));
}
