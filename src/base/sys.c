/* sys.c - the library's allocation and I/O door (see sys.h), and its fault injection for tests
 * (see fault.h). */
#include "base/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/check.h"
#include "base/fault.h"

/* ---- fault injection (test-only) ---------------------------------------------------------
 * The documented exception to "no global mutable state": off by default, atomic, and changed
 * only through fault.h, which no public header exposes. */

static atomic_bool fault_on;
static atomic_bool fault_fired;
static _Atomic uint64_t fault_calls[FDL_FAULT_KINDS];
static _Atomic uint64_t fault_target[FDL_FAULT_KINDS];
static pthread_once_t fault_json_once = PTHREAD_ONCE_INIT;
/* Inside a jansson parse on this thread (see fdl_sys_json_parsing): jansson's allocations are
 * left alone. Thread-local, so a parse on one thread never hides another thread's calls. */
static _Thread_local bool fault_json_parsing;

void fdl_sys_json_parsing(bool on) {
  fault_json_parsing = on;
}

/* Counts one call of kind; true when it is the one to fail. */
static bool fault_hit(fdl_fault_kind kind) {
  if (!atomic_load_explicit(&fault_on, memory_order_relaxed)) return false;
  uint64_t n = atomic_fetch_add(&fault_calls[kind], 1) + 1;
  if (n != atomic_load(&fault_target[kind])) return false;
  atomic_store(&fault_fired, true);
  return true;
}

/* jansson's allocator is process-wide and belongs to the program that links us, so a normal
 * run leaves it alone; only a fault-injection test routes it through fdl_malloc, so that the
 * JSON documents the library builds see the Nth-allocation failures too. Memory from fdl_malloc
 * is plain malloc memory: documents allocated before the switch are still freed correctly. */
static void *fault_json_malloc(size_t n) {
  return fault_json_parsing ? malloc(n) : fdl_malloc(n);
}

static void fault_route_json(void) {
  json_set_alloc_funcs(fault_json_malloc, free);
}

void fdl_fault_arm(fdl_fault_kind kind, uint64_t n) {
  pthread_once(&fault_json_once, fault_route_json);
  fdl_fault_disarm();
  atomic_store(&fault_target[kind], n);
  atomic_store(&fault_fired, false);
  atomic_store(&fault_on, true);
}

void fdl_fault_disarm(void) {
  atomic_store(&fault_on, false);
  for (int k = 0; k < FDL_FAULT_KINDS; k++) {
    atomic_store(&fault_calls[k], 0);
    atomic_store(&fault_target[k], 0);
  }
}

uint64_t fdl_fault_count(fdl_fault_kind kind) {
  return atomic_load(&fault_calls[kind]);
}

bool fdl_fault_fired(void) {
  return atomic_load(&fault_fired);
}

/* An injected I/O failure: errno as the call would really set it on a sick disk or a full one. */
static int io_fail(int e) {
  errno = e;
  return -1;
}

/* ---- allocation ------------------------------------------------------------------------- */

/* An injected allocation failure: NULL with errno ENOMEM, as malloc fails. */
static bool alloc_fails(void) {
  if (!fault_hit(FDL_FAULT_ALLOC)) return false;
  errno = ENOMEM;
  return true;
}

void *fdl_malloc(size_t n) {
  if (alloc_fails()) return NULL;
  return malloc(n);
}

void *fdl_calloc(size_t n, size_t size) {
  if (alloc_fails()) return NULL;
  return calloc(n, size);
}

void *fdl_realloc(void *p, size_t n) {
  if (alloc_fails()) return NULL;
  return realloc(p, n);
}

bool fdl_grow(void *arrp, size_t need, size_t *cap, size_t elem, size_t first) {
  if (need <= *cap) return true;
  size_t nc = *cap ? *cap : first, bytes;
  while (nc < need)
    if (!fdl_size_mul(nc, 2, &nc)) return false;
  if (!fdl_size_mul(nc, elem, &bytes)) return false;
  /* The array pointer is read and written through its bytes: arrp may point at any T *. */
  void *old, *p;
  memcpy(&old, arrp, sizeof old);
  if (!(p = fdl_realloc(old, bytes))) return false;
  memcpy(arrp, &p, sizeof p);
  *cap = nc;
  return true;
}

char *fdl_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = fdl_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

char *fdl_strndup(const char *s, size_t n) {
  char *d = fdl_malloc(n + 1);
  if (d) memcpy(d, s, n), d[n] = '\0';
  return d;
}

/* The huge page size transparent huge pages use on x86-64. */
#define FDL_HUGE_PAGE ((size_t)2 << 20)

void *fdl_huge_alloc(size_t n) {
  if (n > SIZE_MAX - FDL_HUGE_PAGE) return NULL;
  size_t r = (n + FDL_HUGE_PAGE - 1) / FDL_HUGE_PAGE * FDL_HUGE_PAGE;
  void *p = fdl_aligned_alloc(FDL_HUGE_PAGE, r ? r : FDL_HUGE_PAGE);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, r, MADV_HUGEPAGE); /* a hint: refused or unsupported changes nothing */
#endif
  return p;
}

void *fdl_aligned_alloc(size_t align, size_t n) {
  if (alloc_fails()) return NULL;
  return aligned_alloc(align, n);
}

/* ---- I/O -------------------------------------------------------------------------------- */

static mode_t mode_arg(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int fdl_sys_open(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  return fdl_sys_openat(AT_FDCWD, path, flags, mode);
}

int fdl_sys_openat(int dirfd, const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = mode_arg(flags, ap);
  va_end(ap);
  if (fault_hit(FDL_FAULT_IO)) return io_fail(flags & O_CREAT ? ENOSPC : EIO);
  return openat(dirfd, path, flags, mode);
}

ssize_t fdl_sys_read(int fd, void *buf, size_t n) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(EIO);
  return read(fd, buf, n);
}

ssize_t fdl_sys_pread(int fd, void *buf, size_t n, off_t off) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(EIO);
  return pread(fd, buf, n, off);
}

ssize_t fdl_sys_write(int fd, const void *buf, size_t n) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(ENOSPC);
  return write(fd, buf, n);
}

int fdl_sys_fsync(int fd) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(EIO);
  return fsync(fd);
}

int fdl_sys_syncfs(int fd) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(EIO);
  return syncfs(fd);
}

int fdl_sys_rename(const char *from, const char *to) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(ENOSPC);
  return rename(from, to);
}

int fdl_sys_rename_noreplace(const char *from, const char *to) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(ENOSPC);
#ifdef SYS_renameat2
  return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, 1 /* RENAME_NOREPLACE */);
#else
  errno = ENOSYS;
  return -1;
#endif
}

int fdl_sys_mkdir(const char *path, mode_t mode) {
  if (fault_hit(FDL_FAULT_IO)) return io_fail(ENOSPC);
  return mkdir(path, mode);
}

int fdl_sys_mkdirat(int dirfd, const char *path, mode_t mode) {
  return mkdirat(dirfd, path, mode);
}

int fdl_sys_unlinkat(int dirfd, const char *path, int flags) {
  return unlinkat(dirfd, path, flags);
}

void *fdl_sys_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off) {
  if (fault_hit(FDL_FAULT_IO)) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return mmap(addr, n, prot, flags, fd, off);
}

/* /proc/cpuinfo's first processor block is well under this; "model name" is in it. */
#define CPUINFO_HEAD_BYTES 8192

/* Best effort, and deliberately not through the door above: the CPU's name only describes the
 * machine, so a failed read says "unknown" rather than failing the receipt, and the fault-injection
 * test (which requires an absorbed fault to leave the result unchanged) must not reach it. */
void fdl_sys_cpu_name(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[CPUINFO_HEAD_BYTES + 1];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, CPUINFO_HEAD_BYTES - n);
    if (r <= 0) break;
    n += (size_t)r;
    if (n == CPUINFO_HEAD_BYTES) break;
  }
  close(fd);
  buf[n] = '\0';
  for (const char *line = buf; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, "model name", 10)) continue;
    const char *p = strchr(line, ':');
    if (!p) break;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, "\r\n");
    snprintf(out, cap, "%.*s", (int)len, p);
    break;
  }
}
