/* common.c - helpers shared by the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

void fdl_cli_report(const fdl_err *err) {
  fprintf(stderr, "fidelis: (%s) ", fdl_status_name(err->status));
  fdl_cli_put_text(stderr, err->msg);
  fputc('\n', stderr);
}

const char *fdl_cli_shown(const char *s, size_t n, char *buf, size_t cap) {
  if (!s) return "-";
  fdl_quote(s, n, buf, cap);
  /* Bare only when nothing was escaped or cut, and it cannot be mistaken for "-" (absent) or a
   * quote: so every printed form maps back to one value. */
  bool bare = n && strcmp(s, "-") && s[0] != '\'' && strlen(buf) == n + 2;
  return bare ? s : buf;
}

void fdl_cli_put_text(FILE *f, const char *s) {
  char shown[8 * FDL_ERR_MSG_MAX];
  s = s ? s : "";
  fputs(fdl_quote_text(s, strlen(s), shown, sizeof shown), f);
}

json_t *fdl_cli_json_text(const char *s) {
  s = s ? s : "";
  size_t n = strlen(s);
  if (fdl_utf8_valid(s, n)) return json_string(s);
  char shown[4 * FDL_ERR_MSG_MAX];
  return json_string(fdl_quote_text(s, n, shown, sizeof shown));
}

int fdl_cli_is_help(const char *arg) {
  return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}
