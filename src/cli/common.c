/* common.c - helpers shared by the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void fdl_cli_notice(void *arg, const char *message) {
  fprintf(stderr, "fidelis %s: note: ", (const char *)arg);
  for (const unsigned char *p = (const unsigned char *)message; *p; p++)
    fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, stderr);
  fputc('\n', stderr);
}

int fdl_cli_is_help(const char *arg) {
  return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

/* The environment is read here and nowhere in the library: the time travels as an option. */
const char *fdl_cli_source_date(char *buf, size_t cap) {
  const char *sde = getenv("SOURCE_DATE_EPOCH");
  uint64_t epoch;
  if (!sde || !*sde || fdl_cli_parse_u64(sde, (uint64_t)INT32_MAX * 64, &epoch)) return NULL;
  time_t t = (time_t)epoch;
  struct tm tm;
  if (!gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm)) return NULL;
  return buf;
}
