/* sys.h - internal to libfidelis: the one door through which the library allocates memory and
 * makes the file-system calls that can fail on a healthy machine (open, read, write, fsync,
 * rename, mkdir, mmap). Every call site in src/ outside src/cli/ goes through it, so a test can
 * make the Nth allocation or the Nth I/O call fail (base/sys.c, as SQLite does with its syscall
 * table) and check that each failure gives a clean error with nothing left behind.
 *
 * Memory from these allocators is released with plain free(). */
#ifndef FDL_BASE_SYS_H
#define FDL_BASE_SYS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The most one write() call is asked to move. Linux moves at most 0x7ffff000 bytes per call and
 * other systems cap near INT_MAX; 1 GiB stays under every such limit, so a large buffer is
 * written as a loop of whole calls instead of relying on short writes. */
#define FDL_SYS_WRITE_MAX ((size_t)1 << 30)

void *fdl_malloc(size_t n);
void *fdl_calloc(size_t n, size_t size);
void *fdl_realloc(void *p, size_t n);
/* Makes room for need elements in the array *arrp (void ** in effect, of *cap elements of elem
 * bytes): the capacity doubles, from first for an empty array, until they fit. False, with the
 * array and *cap untouched, when memory or size_t runs out. FDL_GROW makes room for element n
 * and names the array once:
 *   if (!FDL_GROW(v->items, v->n, v->cap, 16)) return fdl_fail(err, FDL_NOMEM, "...");
 * "Double until it fits" is written here once, not at each growing array or buffer. */
bool fdl_grow(void *arrp, size_t need, size_t *cap, size_t elem, size_t first);
#define FDL_GROW(arr, n, cap, first) fdl_grow(&(arr), (n) + 1, &(cap), sizeof *(arr), (first))
char *fdl_strdup(const char *s);
char *fdl_strndup(const char *s, size_t n); /* s[0..n) and a NUL */
void *fdl_aligned_alloc(size_t align, size_t n);
/* n bytes (0 is fine) on transparent huge pages where the kernel grants them: a buffer of
 * hundreds of megabytes written once (the estimator window, a float32 head) otherwise costs a
 * page fault per 4 KiB on first touch, a quarter of a compare's time on a virtual machine;
 * huge pages make that 512 times fewer. Released with free(). */
void *fdl_huge_alloc(size_t n);
/* Brackets a jansson parse (json/read.c): fault injection neither counts nor fails jansson's
 * allocations inside it, because jansson 2.14's lexer does not survive a failed allocation (it
 * drops the failure and then reads out of bounds or asserts; akheron/jansson issue 362). Costs
 * one thread-local store. */
void fdl_sys_json_parsing(bool on);

int fdl_sys_open(const char *path, int flags, ...);
int fdl_sys_openat(int dirfd, const char *path, int flags, ...);
ssize_t fdl_sys_read(int fd, void *buf, size_t n);
ssize_t fdl_sys_pread(int fd, void *buf, size_t n, off_t off);
ssize_t fdl_sys_write(int fd, const void *buf, size_t n);
int fdl_sys_fsync(int fd);
int fdl_sys_syncfs(int fd); /* every file of fd's filesystem, data and metadata */
int fdl_sys_rename(const char *from, const char *to);
/* renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE); -1 with ENOSYS where the kernel
 * headers lack it. */
int fdl_sys_rename_noreplace(const char *from, const char *to);
int fdl_sys_mkdir(const char *path, mode_t mode);
int fdl_sys_mkdirat(int dirfd, const char *path, mode_t mode);
int fdl_sys_unlinkat(int dirfd, const char *path, int flags);
void *fdl_sys_mmap(void *addr, size_t n, int prot, int flags, int fd, off_t off);

/* The CPU's "model name" from /proc/cpuinfo into out, or "unknown": best effort, never failed
 * by fault injection (it only describes the machine; num/replay_id.c). */
void fdl_sys_cpu_name(char *out, size_t cap);

#endif
