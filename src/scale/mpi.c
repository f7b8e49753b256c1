/* mpi.c - the group as MPI_COMM_WORLD (see fidelis/scale.h), linked into the `fidelis` program of
 * the MPI build only (-DFDL_MPI=ON). MPI's default error handler aborts the job on a communication
 * failure, and Open MPI aborts every rank when one dies: a lost rank never leaves the others
 * waiting, and rank 0 never publishes without every rank's agreement.
 *
 * Test hook (docs/SCALE.md): the fault fdl_scale_open is given (the CLI passes FDL_MPI_FAULT
 * from one rank's environment) makes that rank fail on purpose at its first agreement: "oom"
 * as exhausted memory would, "alloc:N" or "io:N" at its Nth allocation or I/O call from there
 * (base/fault.h), "kill" by SIGKILL there. */
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/sys.h"
#include "fidelis/pool.h"
#include "fidelis/scale.h"

/* The test hook's fault, armed when the rank first reaches an agreement: after every rank has
 * loaded its inputs, so the failure lands in the rank's own records. */
typedef struct {
  bool pending, kill, oom;
  fdl_fault_kind kind;
  uint64_t n;
} scale_fault;

struct fdl_scale {
  int rank, size, local_size;
  scale_fault *fault; /* NULL: none */
};

/* A rank that waits for the others (its share done first, or rank 0 still writing) polls its
 * request this often and sleeps in between, rather than spinning a core the busy ranks need:
 * MPI's blocking calls poll without sleeping, and with more ranks than cores that spinning
 * takes the computing ranks' time. */
#define SCALE_POLL_NS 200000L

/* Messages go in pieces MPI's int counts can hold. */
#define SCALE_PIECE ((size_t)1 << 30)

static fdl_status mpi_failed(fdl_err *err, int rc, const char *what) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  return fdl_fail(err, FDL_IO, "MPI %s failed: %s", what, text);
}

/* Completes a nonblocking call started with rc, sleeping between polls. */
static fdl_status wait_quietly(int rc, MPI_Request *req, const char *what, fdl_err *err) {
  int done = 0;
  while (rc == MPI_SUCCESS && (rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS &&
         !done) {
    struct timespec ts = {0, SCALE_POLL_NS};
    nanosleep(&ts, NULL);
  }
  return rc == MPI_SUCCESS ? FDL_OK : mpi_failed(err, rc, what);
}

static fdl_status parse_fault(fdl_scale *sc, const char *f, fdl_err *err) {
  if (!f || !*f) return FDL_OK;
  char *end = NULL;
  bool kill = !strcmp(f, "kill"), oom = !strcmp(f, "oom"), alloc = !strncmp(f, "alloc:", 6),
       io = !strncmp(f, "io:", 3);
  unsigned long long n = alloc || io ? strtoull(f + (alloc ? 6 : 3), &end, 10) : 0;
  if (!kill && !oom && (!n || !end || *end))
    return fdl_fail(err, FDL_INVALID, "FDL_MPI_FAULT '%s': expected oom, alloc:N, io:N or kill", f);
  if (!(sc->fault = fdl_calloc(1, sizeof *sc->fault)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  *sc->fault = (scale_fault){.pending = true,
                             .kill = kill,
                             .oom = oom,
                             .kind = alloc ? FDL_FAULT_ALLOC : FDL_FAULT_IO,
                             .n = (uint64_t)n};
  return FDL_OK;
}

/* Returns the status the rank now has: "oom" fails it as exhausted memory would. */
static fdl_status fire_fault(const fdl_scale *sc, fdl_status s, fdl_err *err) {
  scale_fault *f = sc->fault;
  if (!f || !f->pending) return s;
  f->pending = false;
  if (f->kill) raise(SIGKILL);
  if (f->oom)
    return s != FDL_OK ? s : fdl_fail(err, FDL_NOMEM, "out of memory (FDL_MPI_FAULT=oom)");
  fdl_fault_arm(f->kind, f->n);
  return s;
}

fdl_status fdl_scale_open(const char *fault, fdl_scale **out, fdl_err *err) {
  *out = NULL;
  int provided = 0, rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) return mpi_failed(err, rc, "MPI_Init_thread");
  fdl_scale *sc = fdl_calloc(1, sizeof *sc);
  if (!sc) {
    MPI_Finalize();
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  MPI_Comm local;
  MPI_Comm_rank(MPI_COMM_WORLD, &sc->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &sc->size);
  sc->local_size = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) ==
      MPI_SUCCESS) {
    MPI_Comm_size(local, &sc->local_size);
    MPI_Comm_free(&local);
  }
  fdl_status s = parse_fault(sc, fault, err);
  if (s != FDL_OK) {
    fdl_scale_close(sc);
    return s;
  }
  *out = sc;
  return FDL_OK;
}

void fdl_scale_close(fdl_scale *sc) {
  if (!sc) return;
  if (sc->fault) fdl_fault_disarm();
  free(sc->fault);
  free(sc);
  MPI_Finalize();
}

bool fdl_scale_built(void) {
  return true;
}

int fdl_scale_rank(const fdl_scale *sc) {
  return sc ? sc->rank : 0;
}

int fdl_scale_size(const fdl_scale *sc) {
  return sc ? sc->size : 1;
}

unsigned fdl_scale_threads(const fdl_scale *sc, unsigned requested) {
  if (requested || !sc) return requested;
  unsigned online = fdl_pool_cpu_count();
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int bound = CPU_COUNT(&set);
    if (bound > 0 && (unsigned)bound < online) return (unsigned)bound;
  }
  unsigned share = online / (unsigned)(sc->local_size > 0 ? sc->local_size : 1);
  return share ? share : 1;
}

typedef struct {
  int status;
  fdl_refusal r;
  char msg[FDL_ERR_MSG_MAX];
} agree_packet;

fdl_status fdl_scale_agree(const fdl_scale *sc, fdl_status s, fdl_refusal *r, fdl_err *err) {
  if (!sc) return s;
  s = fire_fault(sc, s, err);
  int me = s != FDL_OK ? sc->rank : sc->size, first = sc->size;
  MPI_Request req;
  fdl_status ws =
      wait_quietly(MPI_Iallreduce(&me, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req), &req,
                   "MPI_Iallreduce", err);
  if (ws != FDL_OK) return ws;
  if (first >= sc->size) return FDL_OK;
  agree_packet pk;
  memset(&pk, 0, sizeof pk);
  if (first == sc->rank) {
    pk.status = (int)s;
    if (r) pk.r = *r;
    if (err) snprintf(pk.msg, sizeof pk.msg, "%s", err->msg);
  }
  int rc = MPI_Bcast(&pk, (int)sizeof pk, MPI_BYTE, first, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_failed(err, rc, "MPI_Bcast");
  if (r) *r = pk.r;
  fdl_status got = (fdl_status)pk.status;
  if (err) {
    err->status = got;
    snprintf(err->msg, sizeof err->msg, "%s", pk.msg);
    if (sc->size > 1) fdl_err_prefix(err, "rank %d of %d", first, sc->size);
  }
  return got;
}

#define SCALE_TEXT 65

fdl_status fdl_scale_same(const fdl_scale *sc, const char *text, int *differs, fdl_err *err) {
  *differs = -1;
  if (!sc || sc->size == 1) return FDL_OK;
  char mine[SCALE_TEXT] = {0}, first[SCALE_TEXT] = {0};
  snprintf(mine, sizeof mine, "%s", text);
  memcpy(first, mine, sizeof first);
  int rc = MPI_Bcast(first, SCALE_TEXT, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_failed(err, rc, "MPI_Bcast");
  int me = memcmp(mine, first, SCALE_TEXT) ? sc->rank : sc->size, low = sc->size;
  rc = MPI_Allreduce(&me, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rc != MPI_SUCCESS) return mpi_failed(err, rc, "MPI_Allreduce");
  if (low < sc->size) *differs = low;
  return FDL_OK;
}

fdl_status fdl_scale_or(const fdl_scale *sc, void *bytes, size_t n, fdl_err *err) {
  if (!sc || sc->size == 1) return FDL_OK;
  for (size_t at = 0; at < n; at += SCALE_PIECE) {
    int len = (int)(n - at < SCALE_PIECE ? n - at : SCALE_PIECE);
    int rc = MPI_Allreduce(MPI_IN_PLACE, (unsigned char *)bytes + at, len, MPI_UNSIGNED_CHAR,
                           MPI_BOR, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) return mpi_failed(err, rc, "MPI_Allreduce");
  }
  return FDL_OK;
}

fdl_status fdl_scale_send(const fdl_scale *sc, int to, const void *p, size_t n, fdl_err *err) {
  if (!sc) return fdl_fail(err, FDL_INVALID, "no rank %d in a group of one process", to);
  for (size_t at = 0; at < n; at += SCALE_PIECE) {
    int len = (int)(n - at < SCALE_PIECE ? n - at : SCALE_PIECE);
    MPI_Request req;
    fdl_status ws = wait_quietly(
        MPI_Isend((const unsigned char *)p + at, len, MPI_BYTE, to, 0, MPI_COMM_WORLD, &req), &req,
        "MPI_Isend", err);
    if (ws != FDL_OK) return ws;
  }
  return FDL_OK;
}

fdl_status fdl_scale_recv(const fdl_scale *sc, int from, void *p, size_t n, fdl_err *err) {
  if (!sc) return fdl_fail(err, FDL_INVALID, "no rank %d in a group of one process", from);
  for (size_t at = 0; at < n; at += SCALE_PIECE) {
    int len = (int)(n - at < SCALE_PIECE ? n - at : SCALE_PIECE);
    MPI_Request req;
    fdl_status ws = wait_quietly(
        MPI_Irecv((unsigned char *)p + at, len, MPI_BYTE, from, 0, MPI_COMM_WORLD, &req), &req,
        "MPI_Irecv", err);
    if (ws != FDL_OK) return ws;
  }
  return FDL_OK;
}

fdl_status fdl_scale_gather_f64(const fdl_scale *sc, double v, double *all, fdl_err *err) {
  if (!sc || sc->size == 1) {
    if (all) all[0] = v;
    return FDL_OK;
  }
  MPI_Request req;
  return wait_quietly(MPI_Igather(&v, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req),
                      &req, "MPI_Igather", err);
}

int fdl_scale_bcast_int(const fdl_scale *sc, int v) {
  if (!sc || sc->size == 1) return v;
  MPI_Request req;
  /* A failure keeps this rank's own v (MPI's default error handler has ended the job first). */
  (void)wait_quietly(MPI_Ibcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD, &req), &req, "MPI_Ibcast", NULL);
  return v;
}
