/* common.c - helpers shared by the subcommands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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
