/* fsio.c - file access below a dataset root that never follows a symlink.
 *
 * A dataset is untrusted input: a symlink anywhere below its root could point the validator
 * (or a consumer) at host files. Every open here walks the relative path one component at a
 * time with openat(O_NOFOLLOW), so nothing below the root is ever followed, not just the final
 * component.
 *
 * Divisions: opening and reading; the tree walk; the credential guard. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/ds_internal.h"
#include "json/json.h"
#include "base/path.h"
#include "base/order.h"
#include "base/sys.h"

/* ---- opening and reading ------------------------------------------------------------------ */

fdl_status fdl_ds_open_at(int rootfd, const char *rel, int *fd, bool *missing, fdl_err *err) {
  if (missing) *missing = false;
  size_t len = strlen(rel);
  if (len >= DS_MAX_PATH || !fdl_relpath_ok(rel, len, false))
    return fdl_fail(err, FDL_PATH, "%s: not a relative path inside the dataset root", rel);
  char buf[DS_MAX_PATH];
  memcpy(buf, rel, len + 1);
  int dir = rootfd;
  char *seg = buf;
  for (;;) {
    char *slash = strchr(seg, '/');
    if (slash) *slash = '\0';
    if (seg[0] == '\0' || !strcmp(seg, ".")) {
      if (!slash) break;
      seg = slash + 1;
      continue;
    }
    /* The last component gets O_NONBLOCK: a FIFO in an untrusted tree would otherwise block the
     * open until a writer appeared, before fstat below could refuse it. */
    int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | (slash ? O_DIRECTORY : O_NONBLOCK);
    int next = fdl_sys_openat(dir, seg, flags);
    int e = errno;
    if (dir != rootfd) close(dir);
    if (next < 0) {
      if (e == ELOOP || (e == ENOTDIR && slash))
        return fdl_fail(err, FDL_PATH,
                        "%s: a component is a symbolic link or not a directory "
                        "(refused, PATH-4)",
                        rel);
      if (e == ENOENT && missing) *missing = true;
      return fdl_fail(err, FDL_IO, "%s: cannot open: %s", rel, strerror(e));
    }
    dir = next;
    if (!slash) break;
    seg = slash + 1;
  }
  if (dir == rootfd) return fdl_fail(err, FDL_PATH, "%s: names the dataset root itself", rel);
  struct stat st;
  if (fstat(dir, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(dir);
    return fdl_fail(err, FDL_IO, "%s: not a regular file", rel);
  }
  *fd = dir;
  return FDL_OK;
}

ds_kind fdl_ds_kind_at(int rootfd, const char *rel) {
  size_t len = strlen(rel);
  if (len >= DS_MAX_PATH || !fdl_relpath_ok(rel, len, false)) return DS_OTHER;
  char buf[DS_MAX_PATH];
  memcpy(buf, rel, len + 1);
  char *last = strrchr(buf, '/');
  int dir = rootfd;
  const char *name = buf;
  if (last) {
    *last = '\0';
    /* Walk the parent components without following anything. */
    char *seg = buf;
    for (;;) {
      char *slash = strchr(seg, '/');
      if (slash) *slash = '\0';
      if (seg[0] && strcmp(seg, ".")) {
        int next = fdl_sys_openat(dir, seg, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
        int e = errno;
        if (dir != rootfd) close(dir);
        if (next < 0) return (e == ELOOP || e == ENOTDIR) ? DS_SYMLINK : DS_ABSENT;
        dir = next;
      }
      if (!slash) break;
      seg = slash + 1;
    }
    name = last + 1;
  }
  struct stat st;
  int rc = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW);
  if (dir != rootfd) close(dir);
  if (rc != 0) return DS_ABSENT;
  if (S_ISLNK(st.st_mode)) return DS_SYMLINK;
  if (S_ISREG(st.st_mode)) return DS_REGULAR;
  if (S_ISDIR(st.st_mode)) return DS_DIRECTORY;
  return DS_OTHER;
}

fdl_status fdl_ds_read_at(int rootfd, const char *rel, size_t max, char **out, size_t *len,
                          bool *missing, fdl_err *err) {
  int fd;
  fdl_status s = fdl_ds_open_at(rootfd, rel, &fd, missing, err);
  if (s != FDL_OK) return s;
  s = fdl_read_fd(fd, rel, max, out, len, err);
  close(fd);
  return s;
}

fdl_status fdl_ds_load_json_at(int rootfd, const char *rel, json_t **out, bool *missing,
                               fdl_err *err) {
  char *text;
  size_t len;
  fdl_status s = fdl_ds_read_at(rootfd, rel, FDL_JSON_MAX_FILE_BYTES, &text, &len, missing, err);
  if (s != FDL_OK) return s;
  s = fdl_json_parse(text, len, NULL, out, err);
  free(text);
  if (s != FDL_OK) fdl_err_prefix(err, "%s", rel);
  return s;
}

fdl_status fdl_ds_sha256_at(int rootfd, const char *rel, char *hex, uint64_t *size, fdl_err *err) {
  ds_hash_job job;
  memset(&job, 0, sizeof job);
  job.rel = rel;
  job.length = UINT64_MAX;
  fdl_status s = fdl_ds_hash_jobs_run(rootfd, &job, 1, 1, err);
  if (s != FDL_OK) return s;
  if (job.status != FDL_OK) return fdl_fail(err, job.status, "%s", job.msg);
  memcpy(hex, job.hex, DS_HEX_LEN + 1);
  if (size) *size = job.file_size;
  return FDL_OK;
}

/* ---- the tree walk ----------------------------------------------------------------------- */

static fdl_status push(ds_tree *t, int which, const char *path, fdl_err *err) {
  char ***arr = which == 0 ? &t->files : which == 1 ? &t->symlinks : &t->others;
  size_t *n = which == 0 ? &t->n_files : which == 1 ? &t->n_symlinks : &t->n_others;
  if (*n >= DS_MAX_FILES)
    return fdl_fail(err, FDL_TOO_LARGE, "dataset holds more than %zu entries", DS_MAX_FILES);
  if (!FDL_GROW(*arr, *n, t->cap_[which], 64))
    return fdl_fail(err, FDL_NOMEM, "out of memory listing the dataset");
  char *copy = fdl_strdup(path);
  if (!copy) return fdl_fail(err, FDL_NOMEM, "out of memory listing the dataset");
  (*arr)[(*n)++] = copy;
  return FDL_OK;
}

/* Remembers where the walk failed (the innermost failure, which is the first one recorded). */
static fdl_status walk_failed(ds_tree *t, const char *at, fdl_status s) {
  if (!t->fail_at[0]) snprintf(t->fail_at, sizeof t->fail_at, "%s", at);
  return s;
}

static fdl_status walk_dir(int dirfd, char *prefix, size_t plen, int depth, ds_tree *t,
                           fdl_err *err) {
  if (depth > DS_MAX_DEPTH)
    return walk_failed(t, prefix,
                       fdl_fail(err, FDL_TOO_LARGE, "%s: nested deeper than %d directories", prefix,
                                DS_MAX_DEPTH));
  int fd = dup(dirfd);
  if (fd < 0)
    return walk_failed(t, prefix,
                       fdl_fail(err, FDL_IO, "%s: cannot list: %s", prefix, strerror(errno)));
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return walk_failed(t, prefix,
                       fdl_fail(err, FDL_IO, "%s: cannot list: %s", prefix, strerror(errno)));
  }
  fdl_status s = FDL_OK;
  struct dirent *e;
  while (s == FDL_OK && (e = readdir(d)) != NULL) {
    const char *name = e->d_name;
    if (!strcmp(name, ".") || !strcmp(name, "..")) continue;
    size_t nlen = strlen(name);
    if (plen + nlen + 2 > DS_MAX_PATH) {
      s = walk_failed(t, prefix,
                      fdl_fail(err, FDL_TOO_LARGE, "%s/%s: path longer than %d bytes", prefix, name,
                               DS_MAX_PATH));
      break;
    }
    size_t mark = plen;
    if (plen) prefix[plen++] = '/';
    memcpy(prefix + plen, name, nlen + 1);
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      s = walk_failed(t, prefix,
                      fdl_fail(err, FDL_IO, "%s: cannot stat: %s", prefix, strerror(errno)));
    } else if (S_ISLNK(st.st_mode)) {
      s = push(t, 1, prefix, err);
    } else if (S_ISREG(st.st_mode)) {
      s = push(t, 0, prefix, err);
    } else if (S_ISDIR(st.st_mode)) {
      int sub = fdl_sys_openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_DIRECTORY);
      if (sub < 0) {
        s = walk_failed(
            t, prefix,
            fdl_fail(err, FDL_IO, "%s: cannot open directory: %s", prefix, strerror(errno)));
      } else {
        s = walk_dir(sub, prefix, plen + nlen, depth + 1, t, err);
        close(sub);
      }
    } else {
      s = push(t, 2, prefix, err);
    }
    plen = mark;
    prefix[plen] = '\0';
  }
  closedir(d);
  return s;
}

fdl_status fdl_ds_tree_walk(int rootfd, ds_tree *t, fdl_err *err) {
  memset(t, 0, sizeof *t);
  char prefix[DS_MAX_PATH];
  prefix[0] = '\0';
  fdl_status s = walk_dir(rootfd, prefix, 0, 0, t, err);
  if (s != FDL_OK) {
    char at[sizeof t->fail_at];
    memcpy(at, t->fail_at, sizeof at);
    fdl_ds_tree_free(t);
    memcpy(t->fail_at, at, sizeof at);
    return s;
  }
  if (t->n_files) qsort(t->files, t->n_files, sizeof *t->files, fdl_order_cstr);
  if (t->n_symlinks) qsort(t->symlinks, t->n_symlinks, sizeof *t->symlinks, fdl_order_cstr);
  if (t->n_others) qsort(t->others, t->n_others, sizeof *t->others, fdl_order_cstr);
  return FDL_OK;
}

void fdl_ds_tree_free(ds_tree *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n_files; i++) free(t->files[i]);
  for (size_t i = 0; i < t->n_symlinks; i++) free(t->symlinks[i]);
  for (size_t i = 0; i < t->n_others; i++) free(t->others[i]);
  free(t->files);
  free(t->symlinks);
  free(t->others);
  memset(t, 0, sizeof *t);
}

bool fdl_ds_tree_has(const ds_tree *t, const char *rel) {
  if (!t->n_files) return false;
  return bsearch(&rel, t->files, t->n_files, sizeof *t->files, fdl_order_cstr) != NULL;
}

/* ---- the credential guard ---------------------------------------------------------------- */

bool fdl_ds_is_credential(const char *rel) {
  static const char *const NAMES[] = {
      ".hf_token",        "hf_token", ".env",       ".netrc",           ".npmrc",
      ".git-credentials", "id_rsa",   "id_ed25519", "credentials.json", "service-account.json"};
  static const char *const DIRS[] = {".secrets", ".ssh", ".aws", ".gnupg", ".git"};
  static const char *const SUFFIXES[] = {".pem", ".key", ".p12", ".pfx"};
  const char *seg = rel;
  for (;;) {
    const char *slash = strchr(seg, '/');
    size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
    for (size_t i = 0; i < sizeof DIRS / sizeof DIRS[0]; i++)
      if (strlen(DIRS[i]) == n && !memcmp(seg, DIRS[i], n)) return true;
    if (!slash) break;
    seg = slash + 1;
  }
  for (size_t i = 0; i < sizeof NAMES / sizeof NAMES[0]; i++)
    if (!strcmp(seg, NAMES[i])) return true;
  size_t n = strlen(seg);
  for (size_t i = 0; i < sizeof SUFFIXES / sizeof SUFFIXES[0]; i++) {
    size_t k = strlen(SUFFIXES[i]);
    if (n >= k && !strcmp(seg + n - k, SUFFIXES[i])) return true;
  }
  return false;
}
