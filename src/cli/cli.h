/* cli.h - shared declarations of the fidelis command-line layer.
 *
 * Every command follows one shape: an option table (fdl_cli_opt) read by one parser
 * (fdl_cli_parse: numbers, paths, repeats, conflicts, --help), then its named inputs opened
 * (fdl_cli_input_*), then the library call, whose status becomes an exit code through one
 * mapping (fdl_cli_exit_for). main closes stdout and turns a lost write into exit 4. The rule
 * itself is written once, in README.md ("Exit codes"). */
#ifndef FIDELIS_CLI_H
#define FIDELIS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Every command's file has the whole public tier and the private helpers below from here, and
 * includes only the other private headers it reaches into. */
#include "fidelis/fidelis.h"
#include "base/refusal.h"
#include "base/fs.h"
#include "base/path.h"
#include "base/quote.h"
#include "base/utc.h"
#include "json/json.h"

/* Exit codes shared with the reference tools (README.md, "Exit codes"). */
enum {
  FDL_EXIT_OK = 0,
  FDL_EXIT_WARN = 2,    /* finished, with warnings or an advisory result */
  FDL_EXIT_REFUSED = 3, /* the inputs were read and what they hold is refused */
  FDL_EXIT_USAGE = 4,   /* could not run: usage, an unopenable input, lost output, memory */
};

/* fdl_cli_parse's "no exit yet: go on with the work". */
#define FDL_CLI_GO (-1)

typedef struct {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
  /* Parses argv as run would and stops before any work: FDL_CLI_GO or an exit code. */
  int (*check)(int argc, char **argv, FILE *out, FILE *diag);
} fdl_cli_command;

/* A command that is its parse, then its work: run_fn(T *a) once parse_fn(T *a, argc, argv, out,
 * diag) says go. Defines the command's run (cmd_fn) and its check (check_fn: the parse alone). */
#define FDL_CLI_COMMAND(cmd_fn, check_fn, T, parse_fn, run_fn)                                     \
  FDL_CLI_COMMAND_FREE(cmd_fn, check_fn, T, parse_fn, run_fn, fdl_cli_keep)
/* The same for a parse that allocates: free_fn(T *a) runs after check and run alike, whatever
 * the parse returned, so a parse makes *a freeable before anything can fail. */
#define FDL_CLI_COMMAND_FREE(cmd_fn, check_fn, T, parse_fn, run_fn, free_fn)                       \
  int check_fn(int argc, char **argv, FILE *out, FILE *diag) {                                     \
    T a;                                                                                           \
    int rc = parse_fn(&a, argc, argv, out, diag);                                                  \
    free_fn(&a);                                                                                   \
    return rc;                                                                                     \
  }                                                                                                \
  int cmd_fn(int argc, char **argv) {                                                              \
    T a;                                                                                           \
    int rc = parse_fn(&a, argc, argv, NULL, NULL);                                                 \
    if (rc == FDL_CLI_GO) rc = run_fn(&a);                                                         \
    free_fn(&a);                                                                                   \
    return rc;                                                                                     \
  }
/* FDL_CLI_COMMAND's free_fn: its parse allocates nothing. */
static inline void fdl_cli_keep(const void *a) {
  (void)a;
}

/* The command table (commands.c). */
const fdl_cli_command *fdl_cli_commands(size_t *n);

/* Each command's run and check (fdl_cli_command's), in its own file. */
#define FDL_CLI_DECLARE(run_fn, check_fn)                                                          \
  int run_fn(int argc, char **argv);                                                               \
  int check_fn(int argc, char **argv, FILE *out, FILE *diag)

FDL_CLI_DECLARE(fdl_cli_verify, fdl_cli_verify_check);
FDL_CLI_DECLARE(fdl_cli_json, fdl_cli_json_check);
FDL_CLI_DECLARE(fdl_cli_tensor, fdl_cli_tensor_check);
FDL_CLI_DECLARE(fdl_cli_compare, fdl_cli_compare_check);
FDL_CLI_DECLARE(fdl_cli_synth, fdl_cli_synth_check);
FDL_CLI_DECLARE(fdl_cli_capture, fdl_cli_capture_check);
FDL_CLI_DECLARE(fdl_cli_generate, fdl_cli_generate_check);
FDL_CLI_DECLARE(fdl_cli_pack, fdl_cli_pack_check);
FDL_CLI_DECLARE(fdl_cli_validate, fdl_cli_validate_check);
FDL_CLI_DECLARE(fdl_cli_inspect, fdl_cli_inspect_check);
FDL_CLI_DECLARE(fdl_cli_logits, fdl_cli_logits_check);
FDL_CLI_DECLARE(fdl_cli_layers, fdl_cli_layers_check);
FDL_CLI_DECLARE(fdl_cli_check, fdl_cli_check_check);
FDL_CLI_DECLARE(fdl_cli_divergence, fdl_cli_divergence_check);
FDL_CLI_DECLARE(fdl_cli_attribute, fdl_cli_attribute_check);
FDL_CLI_DECLARE(fdl_cli_model, fdl_cli_model_check);
FDL_CLI_DECLARE(fdl_cli_quantize, fdl_cli_quantize_check);
FDL_CLI_DECLARE(fdl_cli_report_page, fdl_cli_report_page_check);
FDL_CLI_DECLARE(fdl_cli_tokenize, fdl_cli_tokenize_check);
FDL_CLI_DECLARE(fdl_cli_panel, fdl_cli_panel_check);
FDL_CLI_DECLARE(fdl_cli_fetch, fdl_cli_fetch_check);
/* tensor_gguf.c: `tensor ls` of a GGUF file (real: the resolved path to open). */
int fdl_cli_tensor_gguf(const char *path, const char *real, bool as_json);

/* ---- option tables and the one parser (opt.c) ------------------------------------------- */

typedef enum {
  FDL_CLI_FLAG,   /* no value: *(bool *)dest = true */
  FDL_CLI_NUMBER, /* a decimal integer in [min, max]: *(uint64_t *)dest */
  FDL_CLI_SIZE,   /* the same, a count for a size_t field: *(size_t *)dest */
  FDL_CLI_UINT,   /* the same for an unsigned field (max at most UINT_MAX): *(unsigned *)dest */
  FDL_CLI_TEXT,   /* a non-empty string: *(const char **)dest */
  FDL_CLI_PATH,   /* a non-empty path the command reads: *(const char **)dest */
  FDL_CLI_OUT,    /* a non-empty path the command writes: *(const char **)dest */
  FDL_CLI_CHOICE, /* one of choices (NULL-terminated): *(int *)dest = its index */
} fdl_cli_kind;

typedef struct {
  const char *name;  /* "--threads" */
  const char *alias; /* another spelling of the same option, or NULL */
  fdl_cli_kind kind;
  void *dest;
  uint64_t min, max;          /* FDL_CLI_NUMBER, FDL_CLI_SIZE, FDL_CLI_UINT */
  const char *const *choices; /* FDL_CLI_CHOICE */
} fdl_cli_opt;

/* Table rows, one per kind, so a table reads as a list of names. */
#define FDL_CLI_OPT_FLAG(name, dest)                                                               \
  { (name), NULL, FDL_CLI_FLAG, (dest), 0, 0, NULL }
#define FDL_CLI_OPT_PATH(name, dest)                                                               \
  { (name), NULL, FDL_CLI_PATH, (dest), 0, 0, NULL }
#define FDL_CLI_OPT_OUT(name, dest)                                                                \
  { (name), NULL, FDL_CLI_OUT, (dest), 0, 0, NULL }
#define FDL_CLI_OPT_SIZE(name, dest, lo, hi)                                                       \
  { (name), NULL, FDL_CLI_SIZE, (dest), (lo), (hi), NULL }
#define FDL_CLI_OPT_TEXT(name, dest)                                                               \
  { (name), NULL, FDL_CLI_TEXT, (dest), 0, 0, NULL }
#define FDL_CLI_OPT_NUMBER(name, dest, lo, hi)                                                     \
  { (name), NULL, FDL_CLI_NUMBER, (dest), (lo), (hi), NULL }

/* The most options one command has; a table above it is refused as a bug. */
#define FDL_CLI_MAX_OPTS 48
/* --threads is the same option everywhere: 1 to the pool's limit, into an unsigned threads
 * field; absent (0) means every core. */
#define FDL_CLI_THREADS(dest)                                                                      \
  { "--threads", NULL, FDL_CLI_UINT, (dest), 1, FDL_POOL_MAX_THREADS, NULL }

/* --isa is the same option everywhere: the kernels by name; fdl_cli_isa_of[choice] is its
 * fdl_num_isa. Every choice gives the same bits. */
extern const char *const fdl_cli_isas[];
extern const fdl_num_isa fdl_cli_isa_of[];
#define FDL_CLI_ISA(dest)                                                                          \
  { "--isa", NULL, FDL_CLI_CHOICE, (dest), 0, 0, fdl_cli_isas }

/* The entries of a table: of options, or of conflicts (pairs: FDL_CLI_N(conflicts) / 2). */
#define FDL_CLI_N(table) (sizeof(table) / sizeof((table)[0]))

typedef struct {
  const char *cmd;         /* "compare", "tensor ls": names the command in messages */
  void (*usage)(FILE *);   /* the --help text */
  const fdl_cli_opt *opts; /* the table */
  size_t n_opts;
  const char *const *conflicts; /* pairs of option names that cannot go together */
  size_t n_conflicts;           /* number of pairs */
  const char **pos;             /* receives the positional arguments */
  size_t max_pos;               /* capacity of pos */
  size_t npos;                  /* out: how many were given */
  FILE *out, *diag; /* --help goes to out, usage errors to diag (NULL: stdout, stderr) */
  unsigned pos_out; /* bit i set: positional i is an output (else an input) */
} fdl_cli_spec;

/* Reads argv[first..argc) against the table. Refuses, as usage errors (exit 4, with a message
 * naming the word): unknown options, a missing or empty value, a number out of range or not in
 * plain decimal, an option given twice (by either spelling), a conflicting pair, an empty
 * positional, more positionals than max_pos. "--" ends the options; "-" is a positional.
 * --help or -h anywhere before "--" prints usage to out and returns 0. Also refused, before
 * any work: an output (FDL_CLI_OUT, or a positional marked in pos_out) that is, or lies inside,
 * an input (FDL_CLI_PATH or another positional) or another output, wherever the paths lead
 * (fdl_path_where). Otherwise FDL_CLI_GO. */
int fdl_cli_parse(fdl_cli_spec *s, int first, int argc, char **argv);
/* A command of one subcommand, s->cmd = "GROUP SUB": no word prints usage to diag (exit 4),
 * --help or -h usage to out (0), another word than SUB is a usage error; otherwise
 * fdl_cli_parse from argv[2]. */
int fdl_cli_parse_sub(fdl_cli_spec *s, int argc, char **argv);
/* Prints "fidelis CMD: message" and a pointer to --help on diag; returns FDL_EXIT_USAGE. */
int fdl_cli_usage_error(const fdl_cli_spec *s, const char *fmt, ...) FDL_PRINTF(2, 3);
/* Takes every "--path VALUE" out of argv (the one option that repeats) into paths[*npaths...]
 * and leaves the rest, in order, in rest (argc entries; *nrest of them). Options after "--" are
 * left alone. A --path without a value: a usage error naming what the value is (value). */
int fdl_cli_split_paths(const char *cmd, const char *value, int argc, char **argv, char **rest,
                        int *nrest, const char **paths, size_t *npaths, FILE *diag);
/* A decimal integer in [0, max], digits only; 0 ok, -1 otherwise. */
int fdl_cli_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* "YYYY-MM-DDTHH:MM:SSZ" without its NUL. */
#define FDL_CLI_UTC_LEN FDL_UTC_LEN
/* --created-utc T: checks that T is a real UTC time (fdl_utc_valid: the calendar included, no
 * February 30, no hour 25) and copies it to out; FDL_CLI_GO, or a usage error naming T. */
int fdl_cli_created_utc(const fdl_cli_spec *s, const char *t, char out[FDL_CLI_UTC_LEN + 1]);

/* ---- exit codes, inputs and stdout (common.c) -------------------------------------------- */

/* The exit code for a library status once the named inputs are open: 0 for FDL_OK; 4 when the
 * command could not do its work (FDL_IO, FDL_NOMEM); 3 for every refusal of what was read. */
int fdl_cli_exit_for(fdl_status s);
/* A named dataset: 0 when path opens as a directory (and, with need_manifest, holds
 * fidelity-dataset.json). Otherwise reports what the path is instead and returns
 * FDL_EXIT_USAGE (cannot be opened as a directory) or FDL_EXIT_REFUSED (no manifest in it).
 * Never blocks on a FIFO. Commands whose library call reports a missing manifest with its own
 * finding (validate, compare) pass need_manifest false. */
int fdl_cli_input_dataset(const char *cmd, const char *path, bool need_manifest);
/* A named input directory (openable, a directory): 0, or reports and returns FDL_EXIT_USAGE. */
int fdl_cli_input_dir(const char *cmd, const char *path);
/* A model: a directory (fdl_cli_input_dir) or a regular file (a GGUF; fdl_cli_input_file). */
int fdl_cli_input_model(const char *cmd, const char *path);
/* A named input file: resolved once (it may be a symlink: fdl_resolve_named), then opened as
 * the library does (fdl_open_regular: regular files only, never blocking), then let go. 0, or
 * reports and returns FDL_EXIT_USAGE. */
int fdl_cli_input_file(const char *cmd, const char *path);
/* --tokenizer PATH: a directory, or a file checked as fdl_cli_input_file. 0 or the exit code. */
int fdl_cli_input_tokenizer(const char *cmd, const char *path);
/* Flushes and closes stdout (like gnulib's close_stdout); a lost write is reported on stderr and
 * turns rc into FDL_EXIT_USAGE. Returns the final exit code. */
int fdl_cli_close_stdout(int rc);
/* Prints "fidelis: (NAME) message" for a failed call. */
void fdl_cli_report(const fdl_err *err);
/* A failed library call: fdl_cli_report, then the exit code for its status s. */
int fdl_cli_failed(const fdl_err *err, fdl_status s);
/* An fdl_notice_fn: prints "fidelis ARG: note: message" on stderr (arg: the command name),
 * control bytes shown as '?' (the message can name files). */
void fdl_cli_notice(void *arg, const char *message);
/* Writes text from a file or a user (a message, a manifest string) for a human to read: escaped
 * by fdl_quote_text, so it is one line with nothing a terminal acts on. */
void fdl_cli_put_text(FILE *f, const char *s);
/* s as a human listing shows a name or value: bare when that is unambiguous, else its
 * fdl_quote in buf (cap bytes). NULL shows as "-"; "" and "-" themselves come out quoted. */
const char *fdl_cli_shown(const char *s, char *buf, size_t cap);
/* A JSON string for s; s that is not UTF-8 (a path can be anything) becomes its escaped text,
 * so a listing or report never fails on it. NULL only when out of memory. */
json_t *fdl_cli_json_text(const char *s);
/* An option's value TEXT|@FILE: the text itself, or the bytes of FILE (at most
 * FDL_JSON_MAX_FILE_BYTES; a file that cannot be opened or read is exit 4). 0, or the exit code
 * after a report. */
int fdl_cli_read_arg(const char *cmd, const char *opt, const char *v, char **text, size_t *len);
/* The same value parsed as JSON, strictly (Kiln's rules). */
int fdl_cli_read_json(const char *cmd, const char *opt, const char *v, json_t **out);
/* A JSON file named on the command line (fdl_cli_input_file), read strictly (Kiln's rules). 0,
 * or the exit code after a report. */
int fdl_cli_load_json(const char *cmd, const char *path, json_t **doc);
/* A vector or matrix named on the command line (fdl_cli_input_file, then fdl_attr_matrix_read
 * of tensor, NULL for a file's one), what (or NULL) prefixed to a failure. 0, or the exit code
 * after a report. */
int fdl_cli_load_matrix(const char *cmd, const char *what, const char *path, const char *tensor,
                        fdl_attr_matrix *m);
/* Prints a command's --json result (one line; FDL_JSON_PRETTY: indented) and releases j (NULL:
 * out of memory). FDL_JSON_ASCII: the same value, and no bidi override or C1 control reaches a
 * terminal raw; without it UTF-8 as is. FDL_EXIT_OK, or the exit code after a report. */
int fdl_cli_print_json(json_t *j, unsigned flags);
/* The same print for a caller that reports a failure itself: its status, in err. */
fdl_status fdl_cli_put_json(json_t *j, unsigned flags, fdl_err *err);
/* SOURCE_DATE_EPOCH as "YYYY-MM-DDTHH:MM:SSZ" in buf (cap >= 21), for the created_utc options
 * of pack, synth and compare; NULL when unset or not a plain number (then: the wall clock). */
const char *fdl_cli_source_date(char *buf, size_t cap);
/* Prints a refusal: "REFUSED [code]: gate G: message" and "  remedy: ..." (gate and remedy
 * lines only when set), prefixed by "fidelis CMD: " when cmd is not NULL. */
void fdl_cli_print_refusal(const char *cmd, const fdl_refusal *r, const fdl_err *err);
/* A failed library call as a refusal: r's gate, remedy and code (NULL: none), the code the
 * status's own (fdl_refusal_code_for, else fallback) when r has none. Returns the exit code. */
int fdl_cli_refused(const char *cmd, const fdl_refusal *r, fdl_status s, fdl_refusal_code fallback,
                    const fdl_err *err);
/* Writes n bytes to stdout; false when the write failed (the error indicator stays set, so
 * fdl_cli_close_stdout turns it into exit 4 even where the caller does not look). */
bool fdl_cli_put(const char *s, size_t n);

/* ---- compare / synth helpers (progress.c) ---------------------------------------------- */

/* A progress line on stderr (done/total, elapsed, rate and ETA): shown when mode > 0 (--progress),
 * or mode == 0 and stderr is a terminal; never when mode < 0 (--quiet). */
typedef struct {
  const char *label;
  const char *unit; /* what done counts ("rows" when NULL) */
  bool enabled, drawn;
  double t0, last;
} fdl_cli_progress;

double fdl_cli_now(void);
void fdl_cli_progress_init(fdl_cli_progress *p, const char *label, int mode);
/* Matches fdl_compare_progress: arg is the fdl_cli_progress. */
void fdl_cli_progress_cb(void *arg, uint64_t done, uint64_t total);
/* Ends the line if one was drawn. */
void fdl_cli_progress_end(fdl_cli_progress *p);

/* ---- Hub inputs (hub.c, docs/HUB.md) ------------------------------------------------------ */

/* What a command that takes hf:// inputs was told, and the paths it resolved them to. */
typedef struct {
  bool offline;         /* --offline */
  const char *endpoint; /* --endpoint URL, or NULL */
  const char *cache;    /* --cache DIR (fetch), or NULL */
  bool always_ask;      /* fetch: ask the endpoint even when the snapshot is cached */
  int progress;         /* the command's --progress (1) / --quiet (-1) */
  char *owned[6];
  size_t n;
} fdl_cli_hub;
/* The two options every command with hf:// inputs takes. */
#define FDL_CLI_HUB_OPTS(h)                                                                        \
  FDL_CLI_OPT_FLAG("--offline", &(h)->offline), FDL_CLI_OPT_TEXT("--endpoint", &(h)->endpoint)
/* The --help lines of FDL_CLI_HUB_OPTS. */
#define FDL_CLI_HUB_HELP                                                                           \
  "  --offline            never reach the network for an hf:// input (also HF_HUB_OFFLINE=1)\n"    \
  "  --endpoint URL       the Hub or a mirror [HF_ENDPOINT, else https://huggingface.co]\n"

/* Resolves the reference uri (fdl_hub_resolve with h's options and a download bar); include
 * NULL and model: the files a model is read from. 0, or the exit code after a report. */
int fdl_cli_hub_resolve(const char *cmd, const fdl_cli_hub *h, const char *uri, bool model,
                        const char *const *include, size_t n_include, fdl_hub_result *r);
/* When *path is hf://...: resolves it (docs/HUB.md; model: an implicit fetch of a whole
 * repository takes the files a model is read from) and points *path at the local snapshot path,
 * owned by h. 0, or the exit code after a report. */
int fdl_cli_hub_input(const char *cmd, fdl_cli_hub *h, const char **path, bool model);
void fdl_cli_hub_free(fdl_cli_hub *h);
/* A model that is one file reached through a link (a GGUF in a cache snapshot): *path becomes
 * the file's resolved path (owned by h), which the library opens without following links. Call
 * after the named-input check and after reading the snapshot's identity. 0 or the exit code. */
int fdl_cli_hub_file_real(fdl_cli_hub *h, const char **path);
/* The Hugging Face variables of the environment (HF_HUB_CACHE, HF_HOME, HF_ENDPOINT, HF_TOKEN,
 * HF_TOKEN_PATH, HF_HUB_OFFLINE, XDG_CACHE_HOME, HOME) for the library's options. */
void fdl_cli_hub_env(fdl_hub_env *e);

/* ---- ranks (ranks.c; docs/SCALE.md) --------------------------------------------------- */

/* compare and capture under mpirun: the group, and what the --json summary states of it. */
typedef struct {
  fdl_scale *sc; /* NULL: one process */
  int size;
  bool lead;        /* rank 0: the only rank that prints and writes */
  unsigned threads; /* worker threads per rank */
  double *secs;     /* rank 0: every rank's seconds */
} fdl_cli_ranks;

/* Joins the group (every rank but 0 then prints nothing: stdout and stderr go to /dev/null),
 * runs body on this rank, and leaves the group with rank 0's exit code, the job's one code. */
int fdl_cli_ranks_main(const char *cmd, int (*body)(void *arg, fdl_cli_ranks *rk), void *arg);
/* Collective: rank 0 learns every rank's seconds; threads per rank, 0 for every core. */
void fdl_cli_ranks_time(fdl_cli_ranks *rk, double secs, unsigned threads);
/* Adds ranks, threads_per_rank and rank_seconds to a --json summary (the MPI build only). */
void fdl_cli_ranks_json(const fdl_cli_ranks *rk, json_t *o);

#endif
