/* fidelis/pool.h - a small fixed-size thread pool that runs indexed tasks.
 *
 * The pool exists for determinism by construction: a run is N tasks numbered 0..N-1, each task
 * writes only into slots chosen in advance from its index, and the threads merely decide *who*
 * computes a task. Nothing about a task's result may depend on the worker that ran it, except
 * which per-worker scratch memory it borrows (the worker number is passed for that).
 *
 * Lifecycle: fdl_pool_init starts threads-1 workers (the caller is worker 0 during a run),
 * fdl_pool_run may be called any number of times, fdl_pool_free joins the workers. One run at a
 * time per pool; the pool is not reentrant (a task must not call fdl_pool_run on its own pool).
 *
 * Errors are reported deterministically: when tasks fail, the run stops handing out tasks with
 * a higher index than the lowest failure seen so far, finishes every lower-numbered task, and
 * returns the error of the lowest-numbered failing task, whatever the thread count. */
#ifndef FIDELIS_POOL_H
#define FIDELIS_POOL_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Upper bound on threads in one pool; more is refused (FDL_INVALID), not clamped. */
#define FDL_POOL_MAX_THREADS 1024

/* One task: index in [0, ntasks), worker in [0, threads). Returns FDL_OK or fails via err. */
typedef fdl_status (*fdl_pool_task)(void *arg, size_t index, unsigned worker, fdl_err *err);

typedef struct fdl_pool_impl fdl_pool_impl;

typedef struct {
  unsigned threads;    /* read-only: workers including the caller (>= 1) */
  fdl_pool_impl *impl; /* private */
} fdl_pool;

/* Number of online CPUs (>= 1). */
FDL_API unsigned fdl_pool_cpu_count(void);

/* Starts a pool of `threads` workers; 0 means fdl_pool_cpu_count(). On error *pool is zeroed. */
FDL_API fdl_status fdl_pool_init(fdl_pool *pool, unsigned threads, fdl_err *err);

/* Runs fn(arg, i, worker, err) once for every i in [0, ntasks) and waits for all of them.
 * Returns FDL_OK, or the status of the lowest-numbered failing task with its message in *err. */
FDL_API fdl_status fdl_pool_run(fdl_pool *pool, size_t ntasks, fdl_pool_task fn, void *arg,
                                fdl_err *err);

/* Stops and joins the workers; safe on a zeroed or already-freed pool. */
FDL_API void fdl_pool_free(fdl_pool *pool);

#ifdef __cplusplus
}
#endif
#endif
