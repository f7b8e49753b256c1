/* cli.h - shared declarations of the fidelis command-line layer. */
#ifndef FIDELIS_CLI_H
#define FIDELIS_CLI_H

#include <stdio.h>

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
int fdl_cli_compare(int argc, char **argv);
int fdl_cli_synth(int argc, char **argv);
int fdl_cli_pack(int argc, char **argv);
int fdl_cli_validate(int argc, char **argv);
int fdl_cli_inspect(int argc, char **argv);

/* Prints "fidelis: (NAME) message" for a failed call. */
void fdl_cli_report(const fdl_err *err);
/* An fdl_notice_fn: prints "fidelis ARG: note: message" on stderr (arg: the command name),
 * control bytes shown as '?' (the message can name files). */
void fdl_cli_notice(void *arg, const char *message);
/* Writes text from a file or a user (a message, a manifest string) for a human to read: escaped
 * by fdl_quote_text, so it is one line with nothing a terminal acts on. */
void fdl_cli_put_text(FILE *f, const char *s);
/* s (n bytes) as a human listing shows a name or value: bare when that is unambiguous, else
 * its fdl_quote in buf (cap bytes). NULL shows as "-"; "" and "-" themselves come out quoted. */
const char *fdl_cli_shown(const char *s, size_t n, char *buf, size_t cap);
/* A JSON string for s; s that is not UTF-8 (a path can be anything) becomes its escaped text,
 * so a listing or report never fails on it. NULL only when out of memory. */
json_t *fdl_cli_json_text(const char *s);
/* True when arg is --help or -h. */
int fdl_cli_is_help(const char *arg);

/* ---- compare / synth helpers (progress.c) ---------------------------------------------- */

#include <stdbool.h>
#include <stdint.h>

/* A progress line on stderr: shown when mode > 0 (--progress), or mode == 0 and stderr is a
 * terminal; never when mode < 0 (--quiet). */
typedef struct {
  const char *label;
  bool enabled, drawn;
  double t0, last;
} fdl_cli_progress;

double fdl_cli_now(void);
void fdl_cli_progress_init(fdl_cli_progress *p, const char *label, int mode);
/* Matches fdl_compare_progress: arg is the fdl_cli_progress. */
void fdl_cli_progress_cb(void *arg, uint64_t done, uint64_t total);
/* Ends the line if one was drawn. */
void fdl_cli_progress_end(fdl_cli_progress *p);
/* "--name VALUE" or "--name=VALUE" at argv[*i]: 1 matched (value set, *i advanced past a
 * separate value), 0 not this option, -1 the value is missing. */
int fdl_cli_value(int argc, char **argv, int *i, const char *name, const char **value);
/* A decimal integer in [0, max]; 0 ok, -1 otherwise. */
int fdl_cli_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* SOURCE_DATE_EPOCH as "YYYY-MM-DDTHH:MM:SSZ" in buf (cap >= 21), for the created_utc options
 * of pack, synth and compare; NULL when unset or not a plain number (then: the wall clock). */
const char *fdl_cli_source_date(char *buf, size_t cap);

#endif
