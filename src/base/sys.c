/* sys.c - the library's allocation and I/O door (see sys.h). */
#include "base/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void *fdl_malloc(size_t n) {
  return malloc(n);
}

void *fdl_calloc(size_t n, size_t size) {
  return calloc(n, size);
}

void *fdl_realloc(void *p, size_t n) {
  return realloc(p, n);
}

char *fdl_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = fdl_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void *fdl_aligned_alloc(size_t align, size_t n) {
  return aligned_alloc(align, n);
}

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int fdl_sys_open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return open(path, flags, mode);
}

int fdl_sys_openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return openat(dirfd, path, flags, mode);
}

ssize_t fdl_sys_read(int fd, void *buf, size_t n) {
  return read(fd, buf, n);
}

ssize_t fdl_sys_pread(int fd, void *buf, size_t n, off_t off) {
  return pread(fd, buf, n, off);
}

ssize_t fdl_sys_write(int fd, const void *buf, size_t n) {
  return write(fd, buf, n);
}

int fdl_sys_fsync(int fd) {
  return fsync(fd);
}

int fdl_sys_rename(const char *from, const char *to) {
  return rename(from, to);
}

int fdl_sys_rename_noreplace(const char *from, const char *to) {
#ifdef SYS_renameat2
  return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */);
#else
  errno = ENOSYS;
  return -1;
#endif
}

int fdl_sys_mkdir(const char *path, mode_t mode) {
  return mkdir(path, mode);
}

int fdl_sys_mkdirat(int dirfd, const char *path, mode_t mode) {
  return mkdirat(dirfd, path, mode);
}

int fdl_sys_unlinkat(int dirfd, const char *path, int flags) {
  return unlinkat(dirfd, path, flags);
}

void *fdl_sys_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off) {
  return mmap(addr, n, prot, flags, fd, off);
}
