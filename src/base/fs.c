/* fs.c - the library's one copy of each file-system helper (see base/fs.h): the regular-file
 * open, resolving a named file, dirname, mkdir -p, remove-tree and the staging directory. (The
 * rule for a file of a model directory, which knows the Hugging Face cache, is in src/hub/.)
 *
 * Divisions: opening; paths and directories; staging directories. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/cleanup.h"
#include "base/path.h"
#include "base/sys.h"

/* A staging tree is at most a dataset deep (datasets refuse more than 64 levels); the bound
 * keeps a hostile tree from exhausting the stack or the descriptor table. */
#define FS_REMOVE_MAX_DEPTH 128
/* Attempts at a fresh staging name before giving up (each collision is another writer). */
#define FS_STAGE_ATTEMPTS 100

/* ---- opening ------------------------------------------------------------------------------ */

static const char *kind_name(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISSOCK(m)) return "a socket";
  return "something else";
}

fdl_status fdl_open_regular(const char *path, bool follow, int *fd_out, uint64_t *size,
                            fdl_err *err) {
  if (!path || !*path) return fdl_fail(err, FDL_INVALID, "empty path, expected a file");
  /* O_NONBLOCK: opening a FIFO for reading would otherwise block until a writer appears, before
   * the S_ISREG check below could refuse it. It has no effect on reads of regular files. */
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow ? 0 : O_NOFOLLOW);
  int fd = fdl_sys_open(path, flags);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP && !follow)
      return fdl_fail(err, FDL_PATH, "%s: is a symbolic link (refused here)", path);
    return fdl_fail(err, FDL_IO, "%s: cannot open: %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return fdl_fail(err, FDL_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return fdl_fail(err, FDL_IO, "%s: is %s, not a regular file", path, kind_name(st.st_mode));
  }
  *fd_out = fd;
  if (size) *size = (uint64_t)st.st_size;
  return FDL_OK;
}

fdl_status fdl_resolve_named(const char *path, char **resolved, fdl_err *err) {
  *resolved = NULL;
  if (!path || !*path) return fdl_fail(err, FDL_INVALID, "empty path, expected a file");
  char buf[PATH_MAX];
  if (!realpath(path, buf))
    return fdl_fail(err, FDL_IO, "%s: cannot resolve: %s", path, strerror(errno));
  if (!(*resolved = fdl_strdup(buf))) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  return FDL_OK;
}

/* ---- paths and directories ---------------------------------------------------------------- */

bool fdl_dirname(const char *path, char *out, size_t cap) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--; /* "a/b/" names a/b */
  while (n > 0 && path[n - 1] != '/') n--; /* drop the last name */
  while (n > 1 && path[n - 1] == '/') n--; /* "a//b" */
  if (n >= cap) {
    if (cap) out[0] = '\0';
    return false;
  }
  memcpy(out, path, n);
  out[n] = '\0';
  return true;
}

fdl_status fdl_mkdirs(const char *path, fdl_err *err) {
  size_t n = strlen(path);
  if (n == 0) return fdl_fail(err, FDL_INVALID, "mkdir: empty path");
  char *p = fdl_strdup(path);
  if (!p) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  fdl_status s = FDL_OK;
  for (size_t i = 1; i <= n && s == FDL_OK; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    if (p[i - 1] == '/') continue; /* "a//b", or a trailing slash */
    char saved = p[i];
    p[i] = '\0';
    /* 0777: the umask, not the library, decides who may read an output. */
    if (fdl_sys_mkdir(p, 0777) != 0 && errno != EEXIST)
      s = fdl_fail(err, FDL_IO, "%s: cannot create directory: %s", p, strerror(errno));
    p[i] = saved;
  }
  struct stat st;
  if (s == FDL_OK && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)))
    s = fdl_fail(err, FDL_IO, "%s: exists and is not a directory", path);
  free(p);
  return s;
}

static fdl_status remove_at(int dirfd, const char *name, int depth, fdl_err *err);

/* Removes every entry of the open directory fd; keeps going past failures. */
static fdl_status empty_dir(int fd, const char *name, int depth, fdl_err *err) {
  int dup_fd = dup(fd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  if (!d) {
    int e = errno;
    if (dup_fd >= 0) close(dup_fd);
    return fdl_fail(err, FDL_IO, "%s: cannot list for removal: %s", name, strerror(e));
  }
  fdl_status first = FDL_OK;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    fdl_status s = remove_at(fd, e->d_name, depth + 1, first == FDL_OK ? err : NULL);
    if (first == FDL_OK) first = s;
  }
  closedir(d);
  return first;
}

static fdl_status remove_at(int dirfd, const char *name, int depth, fdl_err *err) {
  struct stat st;
  if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? FDL_OK
                           : fdl_fail(err, FDL_IO, "%s: cannot stat: %s", name, strerror(errno));
  if (!S_ISDIR(st.st_mode)) {
    if (fdl_sys_unlinkat(dirfd, name, 0) != 0 && errno != ENOENT)
      return fdl_fail(err, FDL_IO, "%s: cannot remove: %s", name, strerror(errno));
    return FDL_OK;
  }
  if (depth > FS_REMOVE_MAX_DEPTH)
    return fdl_fail(err, FDL_BOUNDS, "%s: more than %d levels deep; not removed", name,
                    FS_REMOVE_MAX_DEPTH);
  int fd = fdl_sys_openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
  if (fd < 0)
    return fdl_fail(err, FDL_IO, "%s: cannot open for removal: %s", name, strerror(errno));
  fdl_status s = empty_dir(fd, name, depth, err);
  close(fd);
  if (fdl_sys_unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT && s == FDL_OK)
    s = fdl_fail(err, FDL_IO, "%s: cannot remove directory: %s", name, strerror(errno));
  return s;
}

fdl_status fdl_remove_tree_at(int dirfd, const char *name, fdl_err *err) {
  return remove_at(dirfd, name, 0, err);
}

/* ---- staging directories ------------------------------------------------------------------ */

/* The pid in a staging name, or 0 when name is not one of ours. */
static long stage_owner(const char *name) {
  size_t k = strlen(FDL_STAGE_PREFIX);
  if (strncmp(name, FDL_STAGE_PREFIX, k)) return 0;
  char *end;
  errno = 0;
  long pid = strtol(name + k, &end, 10);
  if (errno || end == name + k || *end != '-' || pid <= 0) return 0;
  return pid;
}

/* A staging directory is stale when its owner is gone: the pid no longer exists (kill says
 * ESRCH) and nobody holds the lock its owner keeps on it (which also protects an owner in
 * another pid namespace sharing this directory). */
static bool stale(int parent_fd, const char *name, long pid) {
  if (pid == (long)getpid()) return false;
  if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) return false;
  int fd = fdl_sys_openat(parent_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
  if (fd < 0) return false;
  bool unlocked = flock(fd, LOCK_EX | LOCK_NB) == 0;
  close(fd);
  return unlocked;
}

/* Removes the stale staging directories in parent_fd and says so. Best effort: a failure here
 * never stops the new output. */
static void sweep(int parent_fd, const char *parent, fdl_notice_fn notice, void *arg) {
  int fd = dup(parent_fd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    long pid = stage_owner(e->d_name);
    if (!pid || !stale(parent_fd, e->d_name, pid)) continue;
    fdl_err re = {FDL_OK, ""};
    fdl_status s = fdl_remove_tree_at(parent_fd, e->d_name, &re);
    if (!notice) continue;
    /* Through fdl_fail: a long name is cut to the message size, as every message is. */
    fdl_err note;
    if (s == FDL_OK)
      fdl_fail(&note, FDL_OK,
               "removed %s/%s, a staging directory left by process %ld, which is gone", parent,
               e->d_name, pid);
    else
      fdl_fail(&note, s,
               "could not fully remove %s/%s, a staging directory left by process %ld: %s", parent,
               e->d_name, pid, re.msg);
    notice(arg, note.msg);
  }
  closedir(d);
}

/* A name nobody else is using now: the pid says whose it is, the suffix keeps one process's
 * concurrent stages apart (mkdirat fails with EEXIST on a collision, and we try again). */
static void stage_name(char *out, size_t cap, unsigned attempt, const void *salt) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)salt ^
               ((uint64_t)attempt << 48);
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL; /* a 64-bit finalizer mix, so nearby inputs give unlike names */
  x ^= x >> 33;
  snprintf(out, cap, "%s%ld-%08lx", FDL_STAGE_PREFIX, (long)getpid(),
           (unsigned long)(x & 0xffffffffu));
}

static void stage_release(fdl_stage *st) {
  if (st->path) fdl_cleanup_forget(st->path);
  if (st->dirfd >= 0) close(st->dirfd);
  if (st->parent_fd >= 0) close(st->parent_fd);
  free(st->path);
  free(st->target);
  st->path = st->target = NULL;
  st->dirfd = st->parent_fd = -1;
}

fdl_status fdl_stage_open(fdl_stage *st, const char *target, unsigned flags, fdl_notice_fn notice,
                          void *notice_arg, fdl_err *err) {
  memset(st, 0, sizeof *st);
  st->dirfd = st->parent_fd = -1;
  if (!target || !*target) return fdl_fail(err, FDL_INVALID, "empty output path");
  struct stat ls;
  if (lstat(target, &ls) == 0)
    return fdl_fail(err, FDL_EXISTS,
                    "%s already exists (%s); fidelis never writes into or over an existing output",
                    target,
                    S_ISLNK(ls.st_mode)   ? "a symbolic link"
                    : S_ISDIR(ls.st_mode) ? "a directory"
                                          : "a file");
  size_t n = strlen(target);
  char *parent = fdl_malloc(n + 2);
  st->target = fdl_strdup(target);
  if (!parent || !st->target) {
    free(parent);
    stage_release(st);
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory", target);
  }
  fdl_dirname(target, parent, n + 2);
  const char *shown = parent[0] ? parent : ".";
  fdl_status s = FDL_OK;
  if ((flags & FDL_STAGE_MAKE_PARENTS) && parent[0]) s = fdl_mkdirs(parent, err);
  if (s == FDL_OK) {
    st->parent_fd = fdl_sys_open(shown, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
    if (st->parent_fd < 0)
      s = fdl_fail(err, FDL_IO, "%s: cannot open the directory that is to hold %s: %s", shown,
                   target, strerror(errno));
  }
  if (s == FDL_OK) sweep(st->parent_fd, shown, notice, notice_arg);
  char name[sizeof FDL_STAGE_PREFIX + 48];
  int e = EEXIST;
  /* from the directory's creation to its registration, a stopping signal's sweep waits, so it
   * never misses a directory that exists */
  fdl_cleanup_hold();
  for (unsigned a = 0; s == FDL_OK && a < FS_STAGE_ATTEMPTS && e == EEXIST; a++) {
    stage_name(name, sizeof name, a, st);
    /* 0777: the published output's mode is the umask's decision (mkdtemp would force 0700). */
    e = fdl_sys_mkdirat(st->parent_fd, name, 0777) == 0 ? 0 : errno;
  }
  if (s == FDL_OK && e)
    s = fdl_fail(err, FDL_IO, "cannot create a staging directory in %s for %s: %s", shown, target,
                 strerror(e));
  if (s == FDL_OK) {
    st->dirfd =
        fdl_sys_openat(st->parent_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
    size_t cap = strlen(parent) + sizeof name + 2;
    st->path = fdl_malloc(cap);
    if (st->path)
      snprintf(st->path, cap, "%s%s%s", parent, parent[0] && strcmp(parent, "/") ? "/" : "", name);
    if (st->dirfd < 0 || !st->path) {
      s = st->dirfd < 0 ? fdl_fail(err, FDL_IO, "%s/%s: cannot open the new staging directory: %s",
                                   shown, name, strerror(errno))
                        : fdl_fail(err, FDL_NOMEM, "%s: out of memory", target);
      (void)fdl_remove_tree_at(st->parent_fd, name, NULL);
    } else {
      /* Held until the process ends, however it ends: the sweep of a later run sees it. */
      (void)flock(st->dirfd, LOCK_EX | LOCK_NB);
      fdl_cleanup_add_held(st->path, true); /* removed if a stopping signal comes first */
    }
  }
  fdl_cleanup_release();
  free(parent);
  if (s != FDL_OK) stage_release(st);
  return s;
}

void fdl_stage_abort(fdl_stage *st) {
  if (!st) return;
  if (st->path && st->parent_fd >= 0) {
    (void)fdl_remove_tree_at(st->parent_fd, fdl_path_base(st->path), NULL);
  }
  if (!st->path) { /* zeroed or committed: the descriptors are not ours */
    free(st->target);
    st->target = NULL;
    return;
  }
  stage_release(st);
}

fdl_status fdl_stage_commit(fdl_stage *st, fdl_err *err) {
  if (!st->path) {
    fdl_stage_abort(st);
    return fdl_fail(err, FDL_INVALID, "commit of a staging directory that is not open");
  }
  /* Everything inside must be durable before the name that publishes it: one syncfs of the
   * filesystem, since the files written in here skipped their own fsync (fdl_out.staged). */
  if (fdl_sys_syncfs(st->dirfd) != 0) {
    fdl_status s = fdl_fail(err, FDL_IO, "%s: syncfs failed: %s", st->path, strerror(errno));
    fdl_stage_abort(st);
    return s;
  }
  fdl_status s = fdl_rename_noreplace(st->path, st->target, err);
  if (s != FDL_OK) {
    fdl_stage_abort(st);
    return s;
  }
  stage_release(st);
  return FDL_OK;
}
