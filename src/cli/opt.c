/* opt.c - the one option parser: every command describes its options in a table and this file
 * reads argv against it, so numbers, paths, repeats and conflicts are judged the same way
 * everywhere. It only reads argv; it opens nothing and starts no work (the fuzz target
 * fuzz/fuzz_cli.c drives it through each command's check function). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

const char *const fdl_cli_isas[] = {"auto", "scalar", "avx2", "avx512", NULL};
const fdl_num_isa fdl_cli_isa_of[] = {FDL_NUM_ISA_AUTO, FDL_NUM_ISA_SCALAR, FDL_NUM_ISA_AVX2,
                                      FDL_NUM_ISA_AVX512};

int fdl_cli_parse_u64(const char *s, uint64_t max, uint64_t *out) {
  /* Digits only: strtoull alone would take leading blanks, a sign ("-1" wraps to 2^64-1) and
   * an empty string (0). */
  if (!s || !*s) return -1;
  for (const char *p = s; *p; p++)
    if (*p < '0' || *p > '9') return -1;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > max) return -1;
  *out = v;
  return 0;
}

int fdl_cli_usage_error(const fdl_cli_spec *s, const char *fmt, ...) {
  FILE *d = s->diag ? s->diag : stderr;
  char msg[FDL_ERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* The words came from argv: every byte through the quoting rule (docs/MESSAGES.md). */
  fprintf(d, "fidelis %s: ", s->cmd);
  fdl_cli_put_text(d, msg);
  fprintf(d, "\n(see 'fidelis %s --help')\n", s->cmd);
  return FDL_EXIT_USAGE;
}

int fdl_cli_created_utc(const fdl_cli_spec *s, const char *t, char out[FDL_CLI_UTC_LEN + 1]) {
  if (!fdl_utc_valid(t))
    return fdl_cli_usage_error(
        s, "--created-utc '%s': expected a real UTC time written YYYY-MM-DDTHH:MM:SSZ", t);
  memcpy(out, t, FDL_CLI_UTC_LEN + 1);
  return FDL_CLI_GO;
}

int fdl_cli_split_paths(const char *cmd, const char *value, int argc, char **argv, char **rest,
                        int *nrest, const char **paths, size_t *npaths, FILE *diag) {
  int k = 0;
  bool ended = false;
  for (int i = 0; i < argc; i++) {
    if (!ended && strcmp(argv[i], "--") == 0) ended = true;
    if (!ended && i > 0 && strcmp(argv[i], "--path") == 0) {
      if (i + 1 >= argc || !argv[i + 1][0]) {
        fprintf(diag ? diag : stderr,
                "fidelis %s: --path needs a value %s\n\n(see 'fidelis %s --help')\n", cmd, value,
                cmd);
        return FDL_EXIT_USAGE;
      }
      paths[(*npaths)++] = argv[++i];
      continue;
    }
    rest[k++] = argv[i];
  }
  *nrest = k;
  return FDL_CLI_GO;
}

static bool is_help(const char *a) {
  return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* The table entry for "--name" or "--name=value" (value then points past '='), or -1. */
static long find(const fdl_cli_spec *s, const char *a, const char **value) {
  for (size_t k = 0; k < s->n_opts; k++) {
    const char *names[2] = {s->opts[k].name, s->opts[k].alias};
    for (int j = 0; j < 2; j++) {
      size_t n = names[j] ? strlen(names[j]) : 0;
      if (!n || strncmp(a, names[j], n) || (a[n] != '\0' && a[n] != '=')) continue;
      *value = a[n] ? a + n + 1 : NULL;
      return (long)k;
    }
  }
  return -1;
}

static long index_of(const fdl_cli_spec *s, const char *name) {
  for (size_t k = 0; k < s->n_opts; k++)
    if (!strcmp(s->opts[k].name, name)) return (long)k;
  return -1;
}

/* Stores one value; FDL_CLI_GO or the usage exit code. name is the spelling the user typed. */
static int store(const fdl_cli_spec *s, const fdl_cli_opt *o, const char *name, const char *v) {
  switch (o->kind) {
  case FDL_CLI_FLAG:
    *(bool *)o->dest = true;
    return FDL_CLI_GO;
  case FDL_CLI_NUMBER:
  case FDL_CLI_SIZE:
  case FDL_CLI_UINT: {
    uint64_t x;
    if (fdl_cli_parse_u64(v, o->max, &x) || x < o->min)
      return fdl_cli_usage_error(s, "%s '%s': expected a whole number from %llu to %llu", name, v,
                                 (unsigned long long)o->min, (unsigned long long)o->max);
    if (o->kind == FDL_CLI_SIZE)
      *(size_t *)o->dest = (size_t)x;
    else if (o->kind == FDL_CLI_UINT)
      *(unsigned *)o->dest = (unsigned)x;
    else
      *(uint64_t *)o->dest = x;
    return FDL_CLI_GO;
  }
  case FDL_CLI_TEXT:
  case FDL_CLI_PATH:
  case FDL_CLI_OUT:
    *(const char **)o->dest = v;
    return FDL_CLI_GO;
  case FDL_CLI_CHOICE:
    for (int i = 0; o->choices[i]; i++)
      if (!strcmp(v, o->choices[i])) {
        *(int *)o->dest = i;
        return FDL_CLI_GO;
      }
    {
      FILE *d = s->diag ? s->diag : stderr;
      fprintf(d, "fidelis %s: %s '%s': expected one of", s->cmd, name, v);
      for (int i = 0; o->choices[i]; i++) fprintf(d, " %s", o->choices[i]);
      fprintf(d, "\n(see 'fidelis %s --help')\n", s->cmd);
    }
    return FDL_EXIT_USAGE;
  }
  return fdl_cli_usage_error(s, "%s: unknown option kind (a fidelis bug)", name);
}

int fdl_cli_parse_sub(fdl_cli_spec *s, int argc, char **argv) {
  const char *sub = strchr(s->cmd, ' ');
  if (argc < 2 || !sub) {
    s->usage(s->diag ? s->diag : stderr);
    return FDL_EXIT_USAGE;
  }
  if (is_help(argv[1])) {
    s->usage(s->out ? s->out : stdout);
    return FDL_EXIT_OK;
  }
  if (strcmp(argv[1], sub + 1)) {
    char group[64];
    snprintf(group, sizeof group, "%.*s", (int)(sub - s->cmd), s->cmd);
    fdl_cli_spec g = *s;
    g.cmd = group;
    return fdl_cli_usage_error(&g, "unknown subcommand '%s' (the one subcommand is %s)", argv[1],
                               sub + 1);
  }
  return fdl_cli_parse(s, 2, argc, argv);
}

typedef struct {
  const char *name; /* "--out", or "argument 2" */
  const char *path; /* as given */
  char *where;      /* fdl_path_where */
  bool out;
} place;

/* Refuses an output that is, or is inside, an input or another output. The paths are resolved
 * as far as they exist (so a symlink or ".." cannot hide it); an input that does not exist is
 * left to the command, which reports it. */
static int places_ok(const fdl_cli_spec *s, const unsigned char *seen) {
  place pl[FDL_CLI_MAX_OPTS + 8];
  char argname[8][16];
  size_t n = 0, nout = 0;
  for (size_t k = 0; k < s->n_opts; k++) {
    const fdl_cli_opt *o = &s->opts[k];
    if (!seen[k] || (o->kind != FDL_CLI_PATH && o->kind != FDL_CLI_OUT)) continue;
    pl[n++] = (place){o->name, *(const char **)o->dest, NULL, o->kind == FDL_CLI_OUT};
  }
  for (size_t i = 0; i < s->npos && i < 8; i++) {
    snprintf(argname[i], sizeof argname[i], "argument %zu", i + 1);
    pl[n++] = (place){argname[i], s->pos[i], NULL, (s->pos_out >> i) & 1u};
  }
  for (size_t i = 0; i < n; i++) nout += pl[i].out;
  int rc = FDL_CLI_GO;
  if (!nout) return rc;
  for (size_t i = 0; i < n && rc == FDL_CLI_GO; i++)
    if (!(pl[i].where = fdl_path_where(pl[i].path)))
      rc = fdl_cli_usage_error(s,
                               "%s: cannot resolve where the path is (out of memory or no "
                               "working directory)",
                               pl[i].name);
  for (size_t i = 0; i < n && rc == FDL_CLI_GO; i++) {
    if (!pl[i].out) continue;
    for (size_t j = 0; j < n && rc == FDL_CLI_GO; j++) {
      if (j == i || (!pl[j].out && access(pl[j].where, F_OK) != 0)) continue;
      if (!fdl_path_within(pl[i].where, pl[j].where)) continue;
      char q1[FDL_QUOTE_CAP], q2[FDL_QUOTE_CAP];
      bool same = !strcmp(pl[i].where, pl[j].where);
      rc = fdl_cli_usage_error(
          s, "%s %s %s %s %s %s: %s", pl[i].name, fdl_quote_str(pl[i].path, q1, sizeof q1),
          same ? "is the same path as" : "lies inside", pl[j].out ? "the output" : "the input",
          pl[j].name, fdl_quote_str(pl[j].path, q2, sizeof q2),
          pl[j].out ? "each output needs its own place" : "an output never goes inside an input");
    }
  }
  for (size_t i = 0; i < n; i++) free(pl[i].where);
  return rc;
}

int fdl_cli_parse(fdl_cli_spec *s, int first, int argc, char **argv) {
  s->npos = 0;
  if (s->n_opts > FDL_CLI_MAX_OPTS)
    return fdl_cli_usage_error(s, "option table too large (a fidelis bug)");
  /* --help wins wherever it is, so a half-typed command line still gets its help. */
  for (int i = first; i < argc && strcmp(argv[i], "--"); i++)
    if (is_help(argv[i])) {
      s->usage(s->out ? s->out : stdout);
      return FDL_EXIT_OK;
    }
  unsigned char seen[FDL_CLI_MAX_OPTS] = {0};
  bool options_done = false;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    bool option = !options_done && a[0] == '-' && a[1] != '\0';
    if (option && !strcmp(a, "--")) {
      options_done = true;
      continue;
    }
    if (!option) {
      if (!*a) return fdl_cli_usage_error(s, "an empty argument is not a path");
      if (s->npos >= s->max_pos) return fdl_cli_usage_error(s, "unexpected argument '%s'", a);
      s->pos[s->npos++] = a;
      continue;
    }
    const char *v = NULL;
    long k = find(s, a, &v);
    if (k < 0) return fdl_cli_usage_error(s, "unknown option '%s'", a);
    const fdl_cli_opt *o = &s->opts[k];
    /* Messages name the option as typed ("--chunk-positions", not its other spelling). */
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
    if (seen[k]) return fdl_cli_usage_error(s, "%s is given more than once", o->name);
    seen[k] = 1;
    if (o->kind == FDL_CLI_FLAG) {
      if (v) return fdl_cli_usage_error(s, "%s takes no value", name);
    } else {
      if (!v) {
        if (i + 1 >= argc) return fdl_cli_usage_error(s, "%s needs a value", name);
        v = argv[++i];
      }
      if (!*v) return fdl_cli_usage_error(s, "%s needs a value, not an empty string", name);
    }
    int rc = store(s, o, name, v);
    if (rc != FDL_CLI_GO) return rc;
  }
  for (size_t p = 0; p < s->n_conflicts; p++) {
    long x = index_of(s, s->conflicts[2 * p]), y = index_of(s, s->conflicts[2 * p + 1]);
    /* A misspelt pair would silently allow what it should forbid: fail every run instead, so
     * the first test of the command shows it. */
    if (x < 0 || y < 0)
      return fdl_cli_usage_error(s,
                                 "conflict %s/%s names an option not in the table (a fidelis "
                                 "bug)",
                                 s->conflicts[2 * p], s->conflicts[2 * p + 1]);
    if (seen[x] && seen[y])
      return fdl_cli_usage_error(s, "%s and %s cannot be used together", s->opts[x].name,
                                 s->opts[y].name);
  }
  return places_ok(s, seen);
}
