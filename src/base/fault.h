/* fault.h - internal to libfidelis, for tests only: fault injection in the allocation and I/O
 * door of base/sys.c (as SQLite does with its syscall table). A test counts the calls one run
 * makes, then re-runs it failing the Nth allocation (ENOMEM) or the Nth I/O call (EIO, ENOSPC,
 * ENOMEM as that call would really fail) for every N, and checks that each run gives a clean
 * error, leaks nothing and leaves nothing behind (tests/test_faults.c, docs/TESTING.md).
 *
 * This is the library's one piece of global mutable state: a few atomics, off by default and
 * touched only by these functions. While disarmed each door call pays one relaxed atomic load.
 * Counting is process-wide, so a test that wants a reproducible N runs the library on one
 * thread. */
#ifndef FDL_BASE_FAULT_H
#define FDL_BASE_FAULT_H

#include <stdbool.h>
#include <stdint.h>

typedef enum {
  FDL_FAULT_ALLOC, /* fdl_malloc, fdl_calloc, fdl_realloc, fdl_strdup, fdl_aligned_alloc, and
                      jansson's allocations once a fault has been armed */
  FDL_FAULT_IO,    /* fdl_sys_open ... fdl_sys_mmap */
  FDL_FAULT_KINDS
} fdl_fault_kind;

/* Restarts both counters at zero and arms kind: its nth call from now (1-based) fails, once;
 * n == 0 only counts. The first call also routes jansson's allocations through fdl_malloc. */
void fdl_fault_arm(fdl_fault_kind kind, uint64_t n);
/* Stops counting and failing (the default state). */
void fdl_fault_disarm(void);
/* Calls of kind since the last fdl_fault_arm (0 while disarmed). */
uint64_t fdl_fault_count(fdl_fault_kind kind);
/* Whether the armed failure has happened since the last fdl_fault_arm. */
bool fdl_fault_fired(void);

#endif
