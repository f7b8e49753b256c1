/* common.c - what every command shares after parsing: opening the inputs named on the command
 * line, the one mapping from a library status to an exit code, refusal lines, and the final
 * check that stdout really received what was printed. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"

void fdl_cli_report(const fdl_err *err) {
  fprintf(stderr, "fidelis: (%s) %s\n", fdl_status_name(err->status), err->msg);
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
  fprintf(stderr, "REFUSED [%s]: ", r->code[0] ? r->code : fdl_status_name(err->status));
  if (r->gate[0]) fprintf(stderr, "gate %s: ", r->gate);
  fprintf(stderr, "%s\n", err->msg);
  if (r->remedy[0]) fprintf(stderr, "  remedy: %s\n", r->remedy);
}

/* Why an open of a named input failed, in words a user can act on. */
static int input_failed(const char *cmd, const char *path, const char *what, int e) {
  fprintf(stderr, "fidelis %s: %s: cannot open %s: %s\n", cmd, path, what,
          e == ELOOP ? "too many levels of symbolic links" : strerror(e));
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
  if (e == ENOTDIR && stat(path, &st) == 0)
    fprintf(stderr, "fidelis %s: %s: expected a directory, found %s\n", cmd, path,
            kind_of(st.st_mode));
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
    fprintf(stderr, "fidelis %s: %s: not a fidelity dataset (fidelity-dataset.json: %s)\n", cmd,
            path, strerror(e));
    return FDL_EXIT_REFUSED;
  }
  return 0;
}

int fdl_cli_input_file(const char *cmd, const char *path) {
  fdl_map m;
  fdl_err err = {FDL_OK, ""};
  if (fdl_map_file(path, &m, &err) != FDL_OK) {
    fprintf(stderr, "fidelis %s: (%s) %s\n", cmd, fdl_status_name(err.status), err.msg);
    return FDL_EXIT_USAGE;
  }
  fdl_unmap(&m);
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
