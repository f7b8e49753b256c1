/* common.c - what every command shares after parsing: opening the inputs named on the command
 * line, the one mapping from a library status to an exit code, refusal lines, and the final
 * check that stdout really received what was printed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

void fdl_cli_report(const fdl_err *err) {
  fprintf(stderr, "fidelis: (%s) ", fdl_status_name(err->status));
  fdl_cli_put_text(stderr, err->msg);
  fputc('\n', stderr);
}

int fdl_cli_failed(const fdl_err *err, fdl_status s) {
  fdl_cli_report(err);
  return fdl_cli_exit_for(s);
}

const char *fdl_cli_shown(const char *s, char *buf, size_t cap) {
  if (!s) return "-";
  size_t n = strlen(s);
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
  fdl_cli_put_text(stderr, message);
  fputc('\n', stderr);
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

int fdl_cli_exit_for(fdl_status s) {
  switch (s) {
  case FDL_OK:
    return FDL_EXIT_OK;
  case FDL_IO:    /* a read or write failed under us */
  case FDL_NOMEM: /* the machine, not the input, is short */
    return FDL_EXIT_USAGE;
  case FDL_PARSE:
  case FDL_BOUNDS:
  case FDL_UNSUPPORTED:
  case FDL_INVALID:
  case FDL_EXISTS:
  case FDL_MISMATCH:
  case FDL_NONFINITE:
  case FDL_PATH:
  case FDL_REFUSED:
  case FDL_TOO_LARGE:
    return FDL_EXIT_REFUSED;
  }
  return FDL_EXIT_REFUSED;
}

void fdl_cli_print_refusal(const char *cmd, const fdl_refusal *r, const fdl_err *err) {
  if (cmd) fprintf(stderr, "fidelis %s: ", cmd);
  /* REFUSED only for what the inputs hold (exit 3); a read, write or memory failure (exit 4)
   * is the machine's, and says so. */
  fprintf(stderr,
          "%s [%s]: ", fdl_cli_exit_for(err->status) == FDL_EXIT_REFUSED ? "REFUSED" : "FAILED",
          r->code != FDL_REF_NONE ? fdl_refusal_name(r->code) : fdl_status_name(err->status));
  if (r->gate != FDL_GATE_NONE) fprintf(stderr, "gate %s: ", fdl_gate_name(r->gate));
  fdl_cli_put_text(stderr, err->msg);
  fputc('\n', stderr);
  if (r->remedy[0]) {
    fputs("  remedy: ", stderr);
    fdl_cli_put_text(stderr, r->remedy);
    fputc('\n', stderr);
  }
}

int fdl_cli_refused(const char *cmd, const fdl_refusal *r, fdl_status s, fdl_refusal_code fallback,
                    const fdl_err *err) {
  fdl_refusal ref = {s, FDL_REF_NONE, FDL_GATE_NONE, ""};
  if (r) ref = *r, ref.status = s;
  if (ref.code == FDL_REF_NONE) ref.code = fdl_refusal_code_for(s, fallback);
  fdl_cli_print_refusal(cmd, &ref, err);
  return fdl_cli_exit_for(s);
}

/* Why an open of a named input failed, in words a user can act on. */
static int input_failed(const char *cmd, const char *path, const char *what, int e) {
  char q[FDL_QUOTE_CAP];
  fprintf(stderr, "fidelis %s: %s: cannot open %s: %s\n", cmd, fdl_quote_str(path, q, sizeof q),
          what, e == ELOOP ? "too many levels of symbolic links" : strerror(e));
  return FDL_EXIT_USAGE;
}

static const char *kind_of(mode_t m) {
  return S_ISREG(m)    ? "a regular file"
         : S_ISDIR(m)  ? "a directory"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISSOCK(m) ? "a socket"
                       : "not a file";
}

/* Opens path as a directory without blocking (a FIFO is refused by O_DIRECTORY before any open
 * of the FIFO itself could wait for a writer). Returns the fd or -1 after reporting. */
static int open_dir(const char *cmd, const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) return fd;
  int e = errno;
  struct stat st;
  char q[FDL_QUOTE_CAP];
  if (e == ENOTDIR && stat(path, &st) == 0)
    fprintf(stderr, "fidelis %s: %s: expected a directory, found %s\n", cmd,
            fdl_quote_str(path, q, sizeof q), kind_of(st.st_mode));
  else
    input_failed(cmd, path, "the directory", e);
  return -1;
}

int fdl_cli_input_dir(const char *cmd, const char *path) {
  int fd = open_dir(cmd, path);
  if (fd < 0) return FDL_EXIT_USAGE;
  close(fd);
  return 0;
}

int fdl_cli_input_dataset(const char *cmd, const char *path, bool need_manifest) {
  int fd = open_dir(cmd, path);
  if (fd < 0) return FDL_EXIT_USAGE;
  struct stat st;
  int rc = need_manifest ? fstatat(fd, "fidelity-dataset.json", &st, AT_SYMLINK_NOFOLLOW) : 0;
  int e = errno;
  close(fd);
  if (rc != 0) {
    /* The directory was opened: what it holds is not a dataset, a refusal like any other
     * broken content (validate reports the same case as a bad_schema finding). */
    char q[FDL_QUOTE_CAP];
    fprintf(stderr, "fidelis %s: %s: not a fidelity dataset (fidelity-dataset.json: %s)\n", cmd,
            fdl_quote_str(path, q, sizeof q), strerror(e));
    return FDL_EXIT_REFUSED;
  }
  return 0;
}

int fdl_cli_input_file(const char *cmd, const char *path) {
  fdl_err err = {FDL_OK, ""};
  char *real = NULL;
  int fd = -1;
  uint64_t size;
  fdl_status s = fdl_resolve_named(path, &real, &err);
  /* a file of a Hugging Face cache snapshot: a link into its blobs/ only, the bytes its name */
  if (s == FDL_OK) s = fdl_hub_check_named(path, real, &err);
  if (s == FDL_OK) s = fdl_open_regular(real, false, &fd, &size, &err);
  free(real);
  if (s != FDL_OK) {
    fprintf(stderr, "fidelis %s: (%s) ", cmd, fdl_status_name(err.status));
    fdl_cli_put_text(stderr, err.msg);
    fputc('\n', stderr);
    return FDL_EXIT_USAGE;
  }
  close(fd);
  return 0;
}

bool fdl_cli_put(const char *s, size_t n) {
  return fwrite(s, 1, n, stdout) == n;
}

int fdl_cli_close_stdout(int rc) {
  /* A full disk or a closed pipe shows only here for buffered output: fwrite succeeded into the
   * buffer, the flush (or the close) is what fails. Checking ferror too catches a write that
   * failed earlier and was not looked at. */
  bool failed = ferror(stdout) != 0;
  errno = 0;
  if (fflush(stdout) != 0) failed = true;
  int e = errno;
  if (fclose(stdout) != 0 && !failed) {
    failed = true;
    e = errno;
  }
  if (!failed) return rc;
  fprintf(stderr, "fidelis: cannot write standard output%s%s; the output is incomplete\n",
          e ? ": " : "", e ? strerror(e) : "");
  return FDL_EXIT_USAGE;
}

int fdl_cli_read_arg(const char *cmd, const char *opt, const char *v, char **text, size_t *len) {
  fdl_err err = {FDL_OK, ""};
  if (v[0] == '@') {
    if (fdl_cli_input_file(cmd, v + 1) != 0) return FDL_EXIT_USAGE;
    if (fdl_read_file(v + 1, FDL_JSON_MAX_FILE_BYTES, text, len, &err) != FDL_OK) {
      fdl_err_prefix(&err, "%s", opt);
      fdl_cli_report(&err);
      return FDL_EXIT_USAGE;
    }
    return 0;
  }
  *len = strlen(v);
  *text = strdup(v);
  return *text ? 0 : FDL_EXIT_USAGE;
}

int fdl_cli_read_json(const char *cmd, const char *opt, const char *v, json_t **out) {
  char *text = NULL;
  size_t len = 0;
  int rc = fdl_cli_read_arg(cmd, opt, v, &text, &len);
  if (rc) return rc;
  fdl_err err = {FDL_OK, ""};
  const fdl_json_read_opts o = {.max_depth = 0, .kiln_strict = true};
  fdl_status s = fdl_json_parse(text, len, &o, out, &err);
  free(text);
  if (s != FDL_OK) {
    fdl_err_prefix(&err, "%s", opt);
    return fdl_cli_failed(&err, s);
  }
  return 0;
}

int fdl_cli_load_json(const char *cmd, const char *path, json_t **doc) {
  if (fdl_cli_input_file(cmd, path) != 0) return FDL_EXIT_USAGE;
  fdl_err err = {FDL_OK, ""};
  const fdl_json_read_opts o = {.max_depth = 0, .kiln_strict = true};
  fdl_status s = fdl_json_load_file(path, &o, doc, &err);
  return s == FDL_OK ? 0 : fdl_cli_failed(&err, s);
}

int fdl_cli_load_matrix(const char *cmd, const char *what, const char *path, const char *tensor,
                        fdl_attr_matrix *m) {
  if (fdl_cli_input_file(cmd, path) != 0) return FDL_EXIT_USAGE;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_attr_matrix_read(path, tensor, m, &err);
  if (s == FDL_OK) return 0;
  if (what) fdl_err_prefix(&err, "%s", what);
  return fdl_cli_failed(&err, s);
}

fdl_status fdl_cli_put_json(json_t *j, unsigned flags, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = j ? fdl_json_dump(j, flags, &b, err) : fdl_fail(err, FDL_NOMEM, "out of memory");
  /* a pretty dump ends in its own newline */
  if (s == FDL_OK) printf("%s%s", b.data, flags & FDL_JSON_PRETTY ? "" : "\n");
  fdl_buf_free(&b);
  json_decref(j);
  return s;
}

int fdl_cli_print_json(json_t *j, unsigned flags) {
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_cli_put_json(j, flags, &err);
  return s == FDL_OK ? FDL_EXIT_OK : fdl_cli_failed(&err, s);
}

int fdl_cli_input_tokenizer(const char *cmd, const char *path) {
  struct stat st; /* a model directory (following links) is taken as it is */
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : fdl_cli_input_file(cmd, path);
}

int fdl_cli_input_model(const char *cmd, const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return fdl_cli_input_file(cmd, path);
  return fdl_cli_input_dir(cmd, path);
}
