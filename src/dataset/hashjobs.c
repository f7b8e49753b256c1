/* hashjobs.c - SHA-256 of many files and byte ranges, in parallel.
 *
 * Sealed validation hashes each tensor byte twice (the whole file for checksums.txt and the
 * record's sha256, the tensor's range for its content digest). A job reads its file once and
 * feeds both digests, so I/O stays at one pass; the second digest's CPU is spread over cores.
 * Jobs are independent tasks of the shared pool, each owns its result slot: the thread count
 * decides who hashes a job, never what any result is. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataset/ds_internal.h"
#include "fidelis/pool.h"
#include "base/sys.h"

/* Big enough that read syscalls vanish next to hashing, small enough to stay cache-resident. */
#define DS_HASH_CHUNK ((size_t)1 << 20)
#define DS_MAX_THREADS 256u

static void job_fail(ds_hash_job *j, fdl_status s, const char *msg) {
  j->status = s;
  /* Truncating a long message is fine: it is a diagnostic, not data. */
  size_t n = strlen(msg);
  if (n >= sizeof j->msg) n = sizeof j->msg - 1;
  memcpy(j->msg, msg, n);
  j->msg[n] = '\0';
}

/* Resolves [offset, +length) against the file size; false when it lies past the end. */
static bool resolve(uint64_t size, uint64_t off, uint64_t len, uint64_t *end) {
  if (off > size || (len != UINT64_MAX && len > size - off)) return false;
  *end = len == UINT64_MAX ? size : off + len;
  return true;
}

/* Scans n bytes of the second range that follow what was scanned before; elements may straddle
 * two reads. Stops looking after the first hit. */
static void scan(void *arg, const uint8_t *p, size_t n) {
  ds_hash_job *j = arg;
  size_t es = fdl_dtype_size(j->scan_dtype);
  if (!j->scan || !es || es > sizeof j->carry_ || j->nonfinite) return;
  while (n && j->carry_n_) {
    j->carry_[j->carry_n_++] = *p++, n--;
    if (j->carry_n_ < es) continue;
    j->carry_n_ = 0;
    if (fdl_tensor_first_nonfinite(j->carry_, j->scan_dtype, 1, NULL) == 0) {
      j->nonfinite = true, j->nonfinite_at = j->scanned_;
      return;
    }
    j->scanned_++;
  }
  size_t whole = n / es;
  uint64_t at = fdl_tensor_first_nonfinite(p, j->scan_dtype, whole, NULL);
  if (at != UINT64_MAX) {
    j->nonfinite = true, j->nonfinite_at = j->scanned_ + at;
    return;
  }
  j->scanned_ += whole;
  memcpy(j->carry_, p + whole * es, n - whole * es);
  j->carry_n_ = n - whole * es;
}

static void run_one(int rootfd, ds_hash_job *j, uint8_t *buf, fdl_sha256_ctx *ctx,
                    fdl_sha256_ctx *ctx2) {
  fdl_err err;
  int fd;
  bool missing;
  if (fdl_ds_open_at(rootfd, j->rel, &fd, &missing, &err) != FDL_OK) {
    job_fail(j, err.status, err.msg);
    return;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    close(fd);
    job_fail(j, FDL_IO, "cannot stat");
    return;
  }
  uint64_t size = (uint64_t)st.st_size;
  j->file_size = size;
  uint64_t end1, end2 = 0;
  bool ok = resolve(size, j->offset, j->length, &end1) &&
            (!j->has2 || resolve(size, j->offset2, j->length2, &end2));
  if (!ok) {
    close(fd);
    char msg[200];
    snprintf(msg, sizeof msg,
             "%s: truncated: a byte range lies past the end of the file (%llu "
             "bytes)",
             j->rel, (unsigned long long)size);
    job_fail(j, FDL_BOUNDS, msg);
    return;
  }
  /* One read of the union of the ranges feeds both digests. */
  uint64_t lo = j->offset, hi = end1;
  if (j->has2) {
    if (j->offset2 < lo) lo = j->offset2;
    if (end2 > hi) hi = end2;
  }
  (void)posix_fadvise(fd, (off_t)lo, (off_t)(hi - lo), POSIX_FADV_SEQUENTIAL);
  const fdl_sha256_span spans[2] = {{j->offset, end1 - j->offset, ctx, NULL, NULL},
                                    {j->offset2, end2 - j->offset2, ctx2, scan, j}};
  uint64_t got = 0;
  fdl_status s = fdl_sha256_fd_spans(fd, j->rel, lo, hi, spans, j->has2 ? 2 : 1, buf, DS_HASH_CHUNK,
                                     &got, &err);
  if (s != FDL_OK) {
    job_fail(j, s, err.msg);
  } else if (got != hi - lo) {
    s = FDL_IO;
    job_fail(j, FDL_IO, "file shrank while being hashed");
  }
  close(fd);
  fdl_sha256 d, d2;
  /* Finishing also resets the contexts for the next job, even after a failure. */
  fdl_status fs = fdl_sha256_final(ctx, &d, &err);
  fdl_status fs2 = j->has2 ? fdl_sha256_final(ctx2, &d2, &err) : FDL_OK;
  if (s != FDL_OK) return;
  if (fs != FDL_OK || fs2 != FDL_OK) {
    job_fail(j, fs != FDL_OK ? fs : fs2, err.msg);
    return;
  }
  fdl_sha256_hex(&d, j->hex);
  if (j->has2) fdl_sha256_hex(&d2, j->hex2);
  j->status = FDL_OK;
}

/* Per-worker scratch: a read buffer and two digest contexts, borrowed by the worker's jobs. */
typedef struct {
  uint8_t *buf;
  fdl_sha256_ctx *ctx, *ctx2;
} scratch;

typedef struct {
  int rootfd;
  ds_hash_job *jobs;
  scratch *scratch;
} run_arg;

static fdl_status task(void *arg, size_t i, unsigned worker, fdl_err *err) {
  (void)err; /* a job's own failure lands in the job, so one bad file never stops the run */
  run_arg *a = arg;
  scratch *w = &a->scratch[worker];
  run_one(a->rootfd, &a->jobs[i], w->buf, w->ctx, w->ctx2);
  return FDL_OK;
}

fdl_status fdl_ds_hash_jobs_run(int rootfd, ds_hash_job *jobs, size_t n, unsigned threads,
                                fdl_err *err) {
  for (size_t i = 0; i < n; i++) {
    jobs[i].status = FDL_IO;
    jobs[i].msg[0] = '\0';
    jobs[i].hex[0] = '\0';
    jobs[i].hex2[0] = '\0';
    jobs[i].nonfinite = false;
    jobs[i].carry_n_ = 0;
    jobs[i].scanned_ = 0;
  }
  if (n == 0) return FDL_OK;
  if (threads == 0) threads = fdl_pool_cpu_count();
  if (threads > DS_MAX_THREADS) threads = DS_MAX_THREADS;
  if (threads > n) threads = (unsigned)n;
  scratch *sc = fdl_calloc(threads, sizeof *sc);
  if (!sc) return fdl_fail(err, FDL_NOMEM, "hashing: out of memory");
  fdl_status s = FDL_OK;
  for (unsigned t = 0; t < threads && s == FDL_OK; t++) {
    sc[t].buf = fdl_malloc(DS_HASH_CHUNK);
    if (!sc[t].buf) s = fdl_fail(err, FDL_NOMEM, "hashing: out of memory for a read buffer");
    if (s == FDL_OK) s = fdl_sha256_new(&sc[t].ctx, err);
    if (s == FDL_OK) s = fdl_sha256_new(&sc[t].ctx2, err);
  }
  fdl_pool pool;
  memset(&pool, 0, sizeof pool);
  if (s == FDL_OK) s = fdl_pool_init(&pool, threads, err);
  if (s == FDL_OK) {
    run_arg a = {rootfd, jobs, sc};
    s = fdl_pool_run(&pool, n, task, &a, err);
  }
  fdl_pool_free(&pool);
  for (unsigned t = 0; t < threads; t++) {
    free(sc[t].buf);
    fdl_sha256_free(sc[t].ctx);
    fdl_sha256_free(sc[t].ctx2);
  }
  free(sc);
  return s;
}
