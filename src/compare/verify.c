/* verify.c - the tensor digests of a compare, checked on the bytes that were read.
 *
 * A compare validates each side with its capture tensors and head payload left unhashed
 * (validate's defer_tensor_hashes); those files are hashed instead in the read that feeds the
 * estimator (vread.c), and checked here against the manifest. Files the estimator did not read
 * (records outside the intersection, heads no gate applied, every tensor of a hash proof) are
 * hashed by fdl_cmp_verify_rest, so nothing a dataset lists goes unverified. */
#include <string.h>
#include <unistd.h>

#include "compare/cmp.h"
#include "base/quote.h"
#include "fidelis/pool.h"
#include "base/sys.h"

/* Read size for the files hashed apart from compute. */
#define VERIFY_READ_CHUNK ((size_t)1 << 20)

#define REMEDY_CHANGED                                                                             \
  "none: the bytes differ from what the dataset was sealed with (changed after validation, or "    \
  "corrupt); validate the dataset again, then fetch or repair it"

static fdl_status mismatch(fdl_refusal *r, fdl_err *err, const char *who, const char *what,
                           const char *rel, const char *got, const char *want) {
  char q[FDL_QUOTE_CAP];
  return fdl_cmp_refuse(r, err, FDL_REF_SEAL_FAILED, FDL_GATE_SEAL, REMEDY_CHANGED,
                        "%s %s (%s): the bytes as read hash to %s, the manifest says %s", who, what,
                        fdl_quote_str(rel, q, sizeof q), got, want && *want ? want : "(none)");
}

fdl_status fdl_cmp_check_record(const cmp_side *s, size_t at, const cmp_vread_digests *d,
                                fdl_refusal *r, fdl_err *err) {
  const fdl_ds_capture_record *rec = &s->ds.records[at];
  const char *rel = rec->file ? rec->file : "";
  char what[64];
  snprintf(what, sizeof what, "record %lld", (long long)rec->index);
  if (!fdl_cmp_streq(d->file, rec->sha256))
    return mismatch(r, err, s->who, what, rel, d->file, rec->sha256);
  if (!fdl_cmp_streq(d->content, rec->tensor_content_sha256))
    return mismatch(r, err, s->who, what, rel, d->content, rec->tensor_content_sha256);
  if (!fdl_cmp_empty(rec->payload_sha256) && !fdl_cmp_streq(d->payload, rec->payload_sha256))
    return mismatch(r, err, s->who, what, rel, d->payload, rec->payload_sha256);
  return FDL_OK;
}

fdl_status fdl_cmp_check_head(const cmp_side *s, const cmp_vread_digests *d, fdl_refusal *r,
                              fdl_err *err) {
  const char *rel = s->m->head.file ? s->m->head.file : "";
  if (!fdl_cmp_streq(d->content, s->m->head.tensor_content_sha256))
    return mismatch(r, err, s->who, "head", rel, d->content,
                    fdl_cmp_str0(s->m->head.tensor_content_sha256));
  if (!fdl_cmp_empty(s->m->head.file_sha256) && !fdl_cmp_streq(d->file, s->m->head.file_sha256))
    return mismatch(r, err, s->who, "head", rel, d->file, s->m->head.file_sha256);
  return FDL_OK;
}

/* Hashes one whole tensor file that compute did not read into d. The header is parsed from a
 * mapping (only its pages are touched); the bytes are hashed with pread, so a multi-gigabyte
 * head that no gate applied costs no resident memory. */
static fdl_status hash_file(const char *path, const char *key, cmp_vread_digests *d, char *why,
                            size_t why_cap) {
  fdl_safetensors *st = NULL;
  fdl_err e = {FDL_OK, ""};
  fdl_status s = fdl_safetensors_open(path, &st, &e);
  const fdl_tensor *t = s == FDL_OK ? fdl_safetensors_find(st, key ? key : "") : NULL;
  if (s == FDL_OK && !t) s = fdl_fail(&e, FDL_PARSE, "tensor key '%s' is absent", key ? key : "");
  uint64_t c0 = 0, cn = 0, start = 0, size = 0;
  if (s == FDL_OK) {
    c0 = t->offset, cn = t->nbytes;
    start = fdl_safetensors_data_start(st), size = fdl_safetensors_file_size(st);
  }
  fdl_safetensors_close(st);
  fdl_sha256_ctx *ctx[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3 && s == FDL_OK; i++) s = fdl_sha256_new(&ctx[i], &e);
  int fd = -1;
  uint64_t fsize = 0, got = 0;
  if (s == FDL_OK) s = fdl_open_regular(path, false, &fd, &fsize, &e);
  uint8_t *buf = s == FDL_OK ? fdl_malloc(VERIFY_READ_CHUNK) : NULL;
  if (s == FDL_OK && !buf) s = fdl_fail(&e, FDL_NOMEM, "out of memory for a read buffer");
  if (s == FDL_OK) {
    const fdl_sha256_span spans[3] = {{.offset = 0, .length = size, .ctx = ctx[0]},
                                      {.offset = start, .length = size - start, .ctx = ctx[1]},
                                      {.offset = c0, .length = cn, .ctx = ctx[2]}};
    s = fdl_sha256_fd_spans(fd, path, 0, size, spans, 3, buf, VERIFY_READ_CHUNK, &got, &e);
    if (s == FDL_OK && (got != size || fsize != size))
      s = fdl_fail(&e, FDL_IO, "%s changed size while being hashed", path);
  }
  free(buf);
  if (fd >= 0) close(fd);
  char *hex[3] = {d->file, d->payload, d->content};
  for (int i = 0; i < 3; i++) {
    fdl_sha256 x;
    if (ctx[i] && fdl_sha256_final(ctx[i], &x, s == FDL_OK ? &e : NULL) == FDL_OK && s == FDL_OK)
      fdl_sha256_hex(&x, hex[i]);
    fdl_sha256_free(ctx[i]);
  }
  if (s != FDL_OK) snprintf(why, why_cap, "%s", e.msg);
  return s;
}

typedef struct {
  const cmp_side *side;
  size_t at;     /* record position, or SIZE_MAX for the head */
  fdl_status st; /* of hashing */
  char why[FDL_ERR_MSG_MAX];
  cmp_vread_digests d;
} rest_job;

static fdl_status rest_task(void *arg, size_t i, unsigned worker, fdl_err *err) {
  (void)worker;
  (void)err; /* a job's failure lands in the job, reported in order afterwards */
  rest_job *j = &((rest_job *)arg)[i];
  const cmp_side *s = j->side;
  const char *rel, *key;
  char *path;
  if (j->at == SIZE_MAX) {
    rel = s->m->head.file ? s->m->head.file : "";
    key = s->m->head.tensor_key;
    path = fdl_cmp_path_join(s->root, rel, NULL);
  } else {
    const fdl_ds_capture_record *rec = &s->ds.records[j->at];
    rel = rec->file ? rec->file : "";
    key = rec->key;
    path = fdl_cmp_path_join(s->root, s->capture_dir, rel);
  }
  if (!path) {
    j->st = FDL_NOMEM;
    snprintf(j->why, sizeof j->why, "out of memory");
    return FDL_OK;
  }
  j->st = hash_file(path, key, &j->d, j->why, sizeof j->why);
  free(path);
  return FDL_OK;
}

fdl_status fdl_cmp_verify_rest(const cmp_side *sides[2], const bool *const read[2],
                               const bool head_read[2], unsigned threads, fdl_refusal *r,
                               fdl_err *err) {
  size_t n = 0;
  for (int i = 0; i < 2; i++) n += sides[i]->ds.n_records + 1;
  rest_job *jobs = fdl_calloc(n ? n : 1, sizeof *jobs);
  if (!jobs) return fdl_fail(err, FDL_NOMEM, "out of memory verifying the unread tensors");
  n = 0;
  for (int i = 0; i < 2; i++) {
    for (size_t k = 0; k < sides[i]->ds.n_records; k++)
      if (!read[i] || !read[i][k]) jobs[n++] = (rest_job){.side = sides[i], .at = k};
    if (sides[i]->head_payload && !head_read[i])
      jobs[n++] = (rest_job){.side = sides[i], .at = SIZE_MAX};
  }
  fdl_pool pool;
  memset(&pool, 0, sizeof pool);
  fdl_status s = n ? fdl_pool_init(&pool, threads, err) : FDL_OK;
  if (s == FDL_OK && n) s = fdl_pool_run(&pool, n, rest_task, jobs, err);
  fdl_pool_free(&pool);
  for (size_t i = 0; s == FDL_OK && i < n; i++) {
    const rest_job *j = &jobs[i];
    if (j->st == FDL_NOMEM) {
      s = fdl_fail(err, FDL_NOMEM, "out of memory verifying the unread tensors");
    } else if (j->st != FDL_OK) {
      const char *rel = j->at == SIZE_MAX ? j->side->m->head.file : j->side->ds.records[j->at].file;
      s = fdl_cmp_refuse(r, err, FDL_REF_SEAL_FAILED, FDL_GATE_SEAL, REMEDY_CHANGED, "%s %s: %s",
                         j->side->who, rel ? rel : "", j->why);
    } else {
      s = j->at == SIZE_MAX ? fdl_cmp_check_head(j->side, &j->d, r, err)
                            : fdl_cmp_check_record(j->side, j->at, &j->d, r, err);
    }
  }
  free(jobs);
  return s;
}
