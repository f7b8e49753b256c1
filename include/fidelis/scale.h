/* fidelis/scale.h - the seam between fidelis and a distributed engine (docs/SCALE.md).
 *
 * compare and capture call these functions in every build. The plain build links single.c, a
 * group of one process in which every call is a no-op; the MPI build (-DFDL_MPI=ON) links mpi.c
 * into the `fidelis` program, where the group is MPI_COMM_WORLD. A NULL group is one process,
 * so the library's callers that know nothing of MPI pass nothing.
 *
 * Work is split by whole records: the item at position i of a list (compare's shared contexts,
 * capture's panel records) belongs to rank i mod size (fdl_scale_mine). Every collective below
 * must be reached by every rank in the same order; a failure is shared with fdl_scale_agree,
 * after which every rank leaves by the same path. */
#ifndef FIDELIS_SCALE_H
#define FIDELIS_SCALE_H

#include <stdbool.h>
#include <stddef.h>

#include "refusal.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#ifdef __cplusplus
}
#endif
#endif

typedef struct fdl_scale fdl_scale;

/* Joins the process group (MPI_Init_thread in the MPI build) and returns it in *out; the plain
 * build returns NULL, one process. fault (tests only, docs/SCALE.md; NULL or "" for none) makes
 * this rank fail on purpose once it has loaded its inputs: "oom" as exhausted memory would at
 * its first agreement, "alloc:N" or "io:N" its Nth
 * allocation or I/O call after its first agreement, "kill" ends it by SIGKILL there. */
FDL_API fdl_status fdl_scale_open(const char *fault, fdl_scale **out, fdl_err *err);
/* Leaves the group (MPI_Finalize) and frees it; NULL is fine. */
FDL_API void fdl_scale_close(fdl_scale *sc);
/* Whether this program was built with MPI (the --json summary then states the ranks). */
FDL_API bool fdl_scale_built(void);
/* This process's rank, 0 .. size - 1 (0 for NULL). */
FDL_API int fdl_scale_rank(const fdl_scale *sc);
/* The number of ranks (1 for NULL). */
FDL_API int fdl_scale_size(const fdl_scale *sc);
/* The worker threads a rank runs: requested when it is not 0; otherwise the CPUs the rank is
 * bound to, or when it is not bound, the machine's online CPUs shared among the ranks on this
 * machine (at least 1), so R ranks on one machine do not oversubscribe it. */
FDL_API unsigned fdl_scale_threads(const fdl_scale *sc, unsigned requested);

/* Whether item i of a list belongs to this rank: i mod size == rank. */
static inline bool fdl_scale_mine(const fdl_scale *sc, size_t i) {
  return i % (size_t)fdl_scale_size(sc) == (size_t)fdl_scale_rank(sc);
}

/* Collective. Every rank passes its own status (and, when it failed, its refusal and message);
 * every rank returns the status of the lowest failing rank, with that rank's refusal (r may be
 * NULL) and message in err, prefixed "rank K of R" when there is more than one rank; FDL_OK
 * when none failed. */
FDL_API fdl_status fdl_scale_agree(const fdl_scale *sc, fdl_status s, fdl_refusal *r, fdl_err *err);
/* Collective: *differs is the lowest rank whose text (at most 64 bytes) is not rank 0's, or -1
 * when every rank has the same. */
FDL_API fdl_status fdl_scale_same(const fdl_scale *sc, const char *text, int *differs,
                                  fdl_err *err);
/* Collective: every rank's n bytes OR-ed together, in place on every rank. */
FDL_API fdl_status fdl_scale_or(const fdl_scale *sc, void *bytes, size_t n, fdl_err *err);
/* Point to point: n bytes to rank `to`, or from rank `from` (sizes agreed in advance). */
FDL_API fdl_status fdl_scale_send(const fdl_scale *sc, int to, const void *p, size_t n,
                                  fdl_err *err);
FDL_API fdl_status fdl_scale_recv(const fdl_scale *sc, int from, void *p, size_t n, fdl_err *err);
/* Collective: rank 0 gets every rank's v in all[0 .. size - 1] (all is ignored elsewhere). */
FDL_API fdl_status fdl_scale_gather_f64(const fdl_scale *sc, double v, double *all, fdl_err *err);
/* Collective: rank 0's v on every rank. */
FDL_API int fdl_scale_bcast_int(const fdl_scale *sc, int v);

#ifdef __cplusplus
}
#endif
#endif
