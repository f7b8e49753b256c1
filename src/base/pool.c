/* pool.c - fixed-size thread pool running indexed tasks (see fidelis/pool.h).
 *
 * Workers wait for the generation counter to move, then claim task indices from one atomic
 * counter. Claims are strictly increasing, which is what makes the "lowest failing task wins"
 * rule exact: when a failure at index f is recorded, every index below f has already been
 * claimed and will run to completion.
 *
 * Waiting spins first, then sleeps. A decode step dispatches dozens of small runs a few
 * microseconds apart; waking a sleeping thread through the kernel costs 10 to 50 us in a VM,
 * more than such a run, so a pool that always slept made two threads slower than one
 * (issue 24). A worker spins for about SPIN_ROUNDS pauses after its last run before it sleeps,
 * and the caller spins as long for its workers to finish. The handshake: the caller publishes
 * the run and then the generation, and wakes sleepers only when one has announced itself
 * (sleepers); a worker announces itself before re-reading the generation under the mutex. Both
 * sides use sequentially consistent atomics, so one of them always sees the other's write. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/pool.h"
#include "base/sys.h"

/* About 30 to 100 us of pause instructions. */
#define SPIN_ROUNDS 4096

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct fdl_pool_impl {
  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers wait here for a new generation */
  pthread_cond_t idle; /* the caller waits here for the workers to finish */
  pthread_t *tids;
  unsigned nworkers;    /* threads - 1 */
  atomic_ulong gen;     /* bumped once per run, after the run is published */
  atomic_uint busy;     /* workers still inside the current run */
  atomic_uint sleepers; /* workers blocked (or about to block) on wake */
  atomic_int stop;
  /* The current run; written by the caller before bumping gen. */
  fdl_pool_task fn;
  void *arg;
  size_t ntasks;
  atomic_size_t next;
  atomic_size_t fail_index; /* SIZE_MAX while no task failed */
  fdl_status fail_status;   /* guarded by mu */
  fdl_err fail_err;         /* guarded by mu */
};

typedef struct {
  fdl_pool_impl *impl;
  unsigned worker;
} worker_arg;

unsigned fdl_pool_cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) return 1;
  if (n > FDL_POOL_MAX_THREADS) return FDL_POOL_MAX_THREADS;
  return (unsigned)n;
}

static void record_failure(fdl_pool_impl *p, size_t index, fdl_status s, const fdl_err *e) {
  pthread_mutex_lock(&p->mu);
  if (index < atomic_load(&p->fail_index)) {
    atomic_store(&p->fail_index, index);
    p->fail_status = s;
    memcpy(&p->fail_err, e, sizeof *e);
  }
  pthread_mutex_unlock(&p->mu);
}

static void work(fdl_pool_impl *p, unsigned worker) {
  fdl_err e;
  for (;;) {
    size_t i = atomic_fetch_add(&p->next, 1);
    if (i >= p->ntasks || i > atomic_load(&p->fail_index)) return;
    e.status = FDL_OK;
    e.msg[0] = '\0';
    fdl_status s = p->fn(p->arg, i, worker, &e);
    if (s != FDL_OK) {
      if (e.status == FDL_OK) fdl_fail(&e, s, "task %zu failed without a message", i);
      record_failure(p, i, s, &e);
    }
  }
}

/* Waits for gen to move past seen (or stop): spinning, then asleep on the condition variable. */
static bool wait_for_run(fdl_pool_impl *p, unsigned long seen) {
  for (unsigned r = 0; r < SPIN_ROUNDS; r++) {
    if (atomic_load(&p->stop)) return false;
    if (atomic_load(&p->gen) != seen) return true;
    cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->sleepers, 1);
  while (!atomic_load(&p->stop) && atomic_load(&p->gen) == seen)
    pthread_cond_wait(&p->wake, &p->mu);
  atomic_fetch_sub(&p->sleepers, 1);
  pthread_mutex_unlock(&p->mu);
  return !atomic_load(&p->stop);
}

static void *worker_main(void *varg) {
  worker_arg *wa = varg;
  fdl_pool_impl *p = wa->impl;
  unsigned worker = wa->worker;
  free(wa);
  unsigned long seen = 0;
  while (wait_for_run(p, seen)) {
    seen = atomic_load(&p->gen);
    work(p, worker);
    if (atomic_fetch_sub(&p->busy, 1) == 1) {
      pthread_mutex_lock(&p->mu); /* the caller may be asleep on idle */
      pthread_cond_signal(&p->idle);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

static void stop_workers(fdl_pool_impl *p, unsigned started) {
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (unsigned i = 0; i < started; i++) pthread_join(p->tids[i], NULL);
}

static void destroy_impl(fdl_pool_impl *p) {
  pthread_cond_destroy(&p->idle);
  pthread_cond_destroy(&p->wake);
  pthread_mutex_destroy(&p->mu);
  free(p->tids);
  free(p);
}

fdl_status fdl_pool_init(fdl_pool *pool, unsigned threads, fdl_err *err) {
  memset(pool, 0, sizeof *pool);
  if (threads == 0) threads = fdl_pool_cpu_count();
  if (threads > FDL_POOL_MAX_THREADS)
    return fdl_fail(err, FDL_INVALID, "thread pool: %u threads requested, at most %u supported",
                    threads, (unsigned)FDL_POOL_MAX_THREADS);
  fdl_pool_impl *p = fdl_calloc(1, sizeof *p);
  if (!p) return fdl_fail(err, FDL_NOMEM, "thread pool: out of memory");
  p->nworkers = threads - 1;
  if (p->nworkers && !(p->tids = fdl_calloc(p->nworkers, sizeof *p->tids))) {
    free(p);
    return fdl_fail(err, FDL_NOMEM, "thread pool: out of memory");
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->idle, NULL);
  atomic_init(&p->next, 0);
  atomic_init(&p->fail_index, SIZE_MAX);
  atomic_init(&p->gen, 0);
  atomic_init(&p->busy, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->stop, 0);
  for (unsigned i = 0; i < p->nworkers; i++) {
    worker_arg *wa = fdl_malloc(sizeof *wa);
    int rc = wa ? 0 : -1;
    if (wa) {
      wa->impl = p;
      wa->worker = i + 1;
      rc = pthread_create(&p->tids[i], NULL, worker_main, wa);
      if (rc != 0) free(wa);
    }
    if (rc != 0) {
      stop_workers(p, i);
      destroy_impl(p);
      return fdl_fail(err, FDL_NOMEM, "thread pool: could not start worker %u of %u", i + 1,
                      threads);
    }
  }
  pool->threads = threads;
  pool->impl = p;
  return FDL_OK;
}

fdl_status fdl_pool_run(fdl_pool *pool, size_t ntasks, fdl_pool_task fn, void *arg, fdl_err *err) {
  if (!pool || !pool->impl || !fn)
    return fdl_fail(err, FDL_INVALID, "thread pool: run on an uninitialised pool");
  if (ntasks == 0) return FDL_OK;
  fdl_pool_impl *p = pool->impl;
  p->fn = fn;
  p->arg = arg;
  p->ntasks = ntasks;
  atomic_store(&p->next, 0);
  atomic_store(&p->fail_index, SIZE_MAX);
  p->fail_status = FDL_OK;
  if (p->nworkers) {
    atomic_store(&p->busy, p->nworkers);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_broadcast(&p->wake);
      pthread_mutex_unlock(&p->mu);
    }
  }
  work(p, 0);
  for (unsigned r = 0; r < SPIN_ROUNDS && atomic_load(&p->busy); r++) cpu_relax();
  pthread_mutex_lock(&p->mu);
  while (atomic_load(&p->busy)) pthread_cond_wait(&p->idle, &p->mu);
  fdl_status s = p->fail_status;
  if (s != FDL_OK && err) memcpy(err, &p->fail_err, sizeof *err);
  pthread_mutex_unlock(&p->mu);
  return s;
}

void fdl_pool_free(fdl_pool *pool) {
  if (!pool || !pool->impl) return;
  stop_workers(pool->impl, pool->impl->nworkers);
  destroy_impl(pool->impl);
  pool->impl = NULL;
  pool->threads = 0;
}
