/* file.c - mapped inputs and staged outputs.
 *
 * Divisions: mapping and reading untrusted files; staged outputs (temp + fsync + link, never
 * overwrite); directory renames without replacement. The open, dirname and staging directories
 * they use are in fs.c. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fs.h"
#include "fidelis/pool.h"
#include "base/cleanup.h"
#include "base/sys.h"

/* ---- inputs ------------------------------------------------------------------------------ */

/* Reads of a resident copy run in pieces of this size, spread over the caller's pool: the copy's
 * cost is the kernel faulting in and zeroing fresh pages, which in these VMs runs at about
 * 0.4 GB/s per thread on memory the host has not backed yet, and two threads fault twice as fast
 * as one (docs/PERFORMANCE.md). */
#define COPY_PIECE ((size_t)64 << 20)

typedef struct {
  int fd;
  const char *path;
  uint8_t *p;
  size_t size;
} copy_job;

/* Piece i of the file, read exactly; a file that changes size meanwhile is refused, as a
 * mapping's reader would see a truncation fault. */
static fdl_status copy_piece(void *arg, size_t i, unsigned worker, fdl_err *err) {
  (void)worker;
  const copy_job *j = arg;
  size_t at = i * COPY_PIECE, end = j->size - at < COPY_PIECE ? j->size : at + COPY_PIECE;
  while (at < end) {
    ssize_t r = fdl_sys_pread(j->fd, j->p + at, end - at, (off_t)at);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0)
      return fdl_fail(err, FDL_IO, "%s: read failed at byte %zu: %s", j->path, at, strerror(errno));
    if (r == 0)
      return fdl_fail(err, FDL_IO,
                      "%s: file shrank while being read (ended before byte %zu of %zu)", j->path,
                      at, j->size);
    at += (size_t)r;
  }
  return FDL_OK;
}

/* Reads exactly size bytes of fd (which it closes) into a buffer on huge pages, the pieces on
 * pool's workers (NULL: on this thread). */
static fdl_status copy_in(int fd, const char *path, size_t size, fdl_pool *pool, fdl_map *m,
                          fdl_err *err) {
  copy_job j = {fd, path, fdl_huge_alloc(size), size};
  if (!j.p) {
    close(fd);
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory for %zu bytes", path, size);
  }
  size_t pieces = (size - 1) / COPY_PIECE + 1;
  fdl_status s = FDL_OK;
  if (pool)
    s = fdl_pool_run(pool, pieces, copy_piece, &j, err);
  else
    for (size_t i = 0; s == FDL_OK && i < pieces; i++) s = copy_piece(&j, i, 0, err);
  close(fd);
  if (s != FDL_OK) {
    free(j.p);
    return s;
  }
  *m = (fdl_map){.data = j.p, .size = size, .priv_ = j.p, .copied_ = true};
  return FDL_OK;
}

static fdl_status map_file(const char *path, size_t copy_max, fdl_pool *pool, fdl_map *m,
                           fdl_err *err) {
  static const uint8_t empty[1] = {0};
  int fd = -1; /* set by fdl_open_regular on success; initialised for -O3 flow analysis */
  uint64_t st_size = 0;
  fdl_status s = fdl_open_regular(path, false, &fd, &st_size, err);
  if (s != FDL_OK) return s;
  if (st_size > (uint64_t)SIZE_MAX) {
    close(fd);
    return fdl_fail(err, FDL_BOUNDS, "%s: file too large to map", path);
  }
  size_t size = (size_t)st_size;
  if (size == 0) {
    close(fd);
    *m = (fdl_map){.data = empty};
    return FDL_OK;
  }
  if (size <= copy_max) return copy_in(fd, path, size, pool, m, err);
  void *p = fdl_sys_mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (p == MAP_FAILED) return fdl_fail(err, FDL_IO, "%s: cannot map: %s", path, strerror(e));
  *m = (fdl_map){.data = p, .size = size, .priv_ = p};
  return FDL_OK;
}

fdl_status fdl_map_file(const char *path, fdl_map *m, fdl_err *err) {
  return map_file(path, FDL_MAP_COPY_MAX, NULL, m, err);
}

fdl_status fdl_map_file_resident(const char *path, fdl_pool *pool, fdl_map *m, fdl_err *err) {
  return map_file(path, SIZE_MAX, pool, m, err);
}

void fdl_map_release(const fdl_map *m, size_t off, size_t n) {
  if (!m || !m->priv_ || m->copied_ || off >= m->size) return;
  long pg = sysconf(_SC_PAGESIZE);
  size_t page = pg > 0 ? (size_t)pg : 4096, end = n > m->size - off ? m->size : off + n;
  size_t a = (off + page - 1) / page * page, b = end / page * page;
  if (b > a) (void)madvise((uint8_t *)m->priv_ + a, b - a, MADV_DONTNEED); /* a hint */
}

void fdl_unmap(fdl_map *m) {
  if (!m) return;
  if (m->priv_ && m->copied_)
    free(m->priv_);
  else if (m->priv_)
    munmap(m->priv_, m->size);
  *m = (fdl_map){0};
}

fdl_status fdl_read_fd(int fd, const char *name, size_t max_bytes, char **out, size_t *len,
                       fdl_err *err) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fdl_fail(err, FDL_IO, "%s: cannot stat: %s", name, strerror(errno));
  if ((uint64_t)st.st_size > (uint64_t)max_bytes)
    return fdl_fail(err, FDL_BOUNDS, "%s: %lld bytes exceeds the %zu-byte limit for this file",
                    name, (long long)st.st_size, max_bytes);
  /* The fstat size is what is read. A size of 0 may still hold bytes (Linux's /proc and /sys
   * report 0 and make their text on read): then read to the end, growing up to max_bytes. */
  bool sized = st.st_size > 0;
  size_t cap = sized ? (size_t)st.st_size : 4096, got = 0;
  char *p = fdl_malloc(cap + 1);
  if (!p) return fdl_fail(err, FDL_NOMEM, "%s: out of memory reading %zu bytes", name, cap);
  fdl_status s = FDL_OK;
  while (!(sized && got == cap)) {
    if (got == cap) {
      size_t ncap = cap > max_bytes / 2 ? max_bytes : cap * 2;
      char *q = ncap > cap ? fdl_realloc(p, ncap + 1) : NULL;
      if (!q) {
        s = ncap > cap ? fdl_fail(err, FDL_NOMEM, "%s: out of memory", name)
                       : fdl_fail(err, FDL_BOUNDS, "%s: more than the %zu-byte limit for this file",
                                  name, max_bytes);
        break;
      }
      p = q, cap = ncap;
    }
    ssize_t r = fdl_sys_read(fd, p + got, cap - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (r == 0 && sized)) {
      int e = r < 0 ? errno : 0;
      s = sized ? fdl_fail(err, FDL_IO, "%s: short read at byte %zu of %zu%s%s", name, got, cap,
                           e ? ": " : "", e ? strerror(e) : "")
                : fdl_fail(err, FDL_IO, "%s: read failed at byte %zu: %s", name, got, strerror(e));
      break;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  if (s != FDL_OK) {
    free(p);
    return s;
  }
  p[got] = '\0';
  *out = p;
  if (len) *len = got;
  return FDL_OK;
}

fdl_status fdl_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
                         fdl_err *err) {
  int fd = -1;
  fdl_status s = fdl_open_regular(path, false, &fd, NULL, err);
  if (s != FDL_OK) return s;
  s = fdl_read_fd(fd, path, max_bytes, out, len, err);
  close(fd);
  return s;
}

/* ---- staged outputs ---------------------------------------------------------------------- */

bool fdl_path_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

static void fsync_dir_of(const char *path) {
  char d[PATH_MAX];
  if (!fdl_dirname(path, d, sizeof d)) return;
  int fd = fdl_sys_open(d[0] ? d : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    (void)fdl_sys_fsync(fd);
    close(fd);
  }
}

/* True when a directory of path is one of this process's staging directories
 * (FDL_STAGE_PREFIX "<our pid>-..."), which fdl_stage_commit makes durable as a whole. */
static bool in_stage(const char *path) {
  size_t k = strlen(FDL_STAGE_PREFIX);
  char own[32];
  int n = snprintf(own, sizeof own, "%ld-", (long)getpid());
  for (const char *p = path; (p = strstr(p, FDL_STAGE_PREFIX)); p += k)
    if ((p == path || p[-1] == '/') && !strncmp(p + k, own, (size_t)n) && strchr(p, '/'))
      return true;
  return false;
}

fdl_status fdl_out_open(fdl_out *o, const char *path, fdl_err *err) {
  memset(o, 0, sizeof *o);
  o->fd = -1;
  if (fdl_path_exists(path))
    return fdl_fail(err, FDL_EXISTS, "%s: already exists (fidelis never overwrites an output)",
                    path);
  o->path = fdl_strdup(path);
  o->staged = in_stage(path);
  size_t n = strlen(path) + 64;
  o->tmp_path = fdl_malloc(n);
  if (!o->path || !o->tmp_path) {
    fdl_out_abort(o);
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  }
  /* The pid plus an attempt counter keeps concurrent writers in one directory apart. */
  for (unsigned attempt = 0; attempt < 100; attempt++) {
    snprintf(o->tmp_path, n, "%s.tmp-%ld-%u", path, (long)getpid(), attempt);
    /* created and registered under the hold: a stopping signal that comes once the file
     * exists finds it registered, and removes it */
    fdl_cleanup_hold();
    o->fd = fdl_sys_open(o->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                         0666 /* the umask decides who may read it */);
    int e = errno;
    if (o->fd >= 0) fdl_cleanup_add_held(o->tmp_path, false);
    fdl_cleanup_release();
    if (o->fd >= 0) return FDL_OK;
    errno = e;
    if (errno != EEXIST) break;
  }
  int e = errno;
  free(o->tmp_path);
  o->tmp_path = NULL;
  fdl_out_abort(o);
  return fdl_fail(err, FDL_IO, "%s: cannot create a temporary file beside it: %s", path,
                  strerror(e));
}

fdl_status fdl_out_write(fdl_out *o, const void *p, size_t n, fdl_err *err) {
  const char *c = p;
  while (n > 0) {
    size_t chunk = n > FDL_SYS_WRITE_MAX ? FDL_SYS_WRITE_MAX : n;
    ssize_t w = fdl_sys_write(o->fd, c, chunk);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return fdl_fail(err, FDL_IO, "%s: write failed: %s", o->path,
                      w < 0 ? strerror(errno) : "no progress");
    c += w;
    n -= (size_t)w;
  }
  return FDL_OK;
}

void fdl_out_abort(fdl_out *o) {
  if (!o) return;
  if (o->fd >= 0) close(o->fd);
  if (o->tmp_path) {
    unlink(o->tmp_path);
    fdl_cleanup_forget(o->tmp_path);
  }
  free(o->tmp_path);
  free(o->path);
  o->fd = -1;
  o->tmp_path = o->path = NULL;
}

/* link() fails with EEXIST instead of replacing, which is the guarantee we want; filesystems
 * without hard links fall back to renameat2(RENAME_NOREPLACE). */
static int move_noreplace(const char *from, const char *to) {
  if (link(from, to) == 0) {
    unlink(from);
    return 0;
  }
  if (errno == EEXIST) return -1;
#ifdef SYS_renameat2
  return fdl_sys_rename_noreplace(from, to);
#else
  return -1;
#endif
}

fdl_status fdl_out_commit(fdl_out *o, fdl_err *err) {
  fdl_status s = FDL_OK;
  if (!o->staged && fdl_sys_fsync(o->fd) != 0) {
    s = fdl_fail(err, FDL_IO, "%s: fsync failed: %s", o->path, strerror(errno));
  } else if (close(o->fd) != 0) {
    o->fd = -1;
    s = fdl_fail(err, FDL_IO, "%s: close failed: %s", o->path, strerror(errno));
  } else {
    o->fd = -1;
    if (move_noreplace(o->tmp_path, o->path) != 0) {
      s = errno == EEXIST
              ? fdl_fail(err, FDL_EXISTS, "%s: appeared while writing; left untouched", o->path)
              : fdl_fail(err, FDL_IO, "%s: cannot move into place: %s", o->path, strerror(errno));
    } else if (!o->staged) {
      fsync_dir_of(o->path);
    }
  }
  fdl_out_abort(o);
  return s;
}

fdl_status fdl_write_file(const char *path, const void *p, size_t n, fdl_err *err) {
  fdl_out o;
  fdl_status s = fdl_out_open(&o, path, err);
  if (s != FDL_OK) return s;
  s = fdl_out_write(&o, p, n, err);
  if (s != FDL_OK) {
    fdl_out_abort(&o);
    return s;
  }
  return fdl_out_commit(&o, err);
}

fdl_status fdl_rename_noreplace(const char *from, const char *to, fdl_err *err) {
#ifdef SYS_renameat2
  if (fdl_sys_rename_noreplace(from, to) == 0) {
    fsync_dir_of(to);
    return FDL_OK;
  }
  if (errno == EEXIST) return fdl_fail(err, FDL_EXISTS, "%s: already exists; left untouched", to);
  if (errno != EINVAL && errno != ENOSYS)
    return fdl_fail(err, FDL_IO, "cannot move %s to %s: %s", from, to, strerror(errno));
#endif
  /* No atomic no-replace rename here: check, then rename (a narrow race, stated). */
  if (fdl_path_exists(to))
    return fdl_fail(err, FDL_EXISTS, "%s: already exists; left untouched", to);
  if (fdl_sys_rename(from, to) != 0)
    return fdl_fail(err, FDL_IO, "cannot move %s to %s: %s", from, to, strerror(errno));
  fsync_dir_of(to);
  return FDL_OK;
}
