/* digests.c - the frozen digest preimages of FIDELITY-DATASET §5.1 and §5.2, and the scope
 * digest string of §11.
 *
 * These preimages are identities other tools compare byte for byte: a token list's compact JSON,
 * the newline join of per-record hex, "index:content" lines. Nothing here may change. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/order.h"
#include "base/path.h"
#include "dataset/ds_internal.h"
#include "json/json.h"
#include "base/sys.h"

static fdl_status hash_buf(const fdl_buf *b, char *hex, fdl_err *err) {
  if (fdl_buf_status(b) != FDL_OK)
    return fdl_fail(err, fdl_buf_status(b), "digest: preimage does not fit in memory");
  return fdl_sha256_buf_hex(b->data ? b->data : "", b->len, hex, err);
}

fdl_status fdl_ds_token_ids_json(const int64_t *ids, size_t n, bool legacy, fdl_buf *out,
                                 fdl_err *err) {
  fdl_buf_putc(out, '[');
  for (size_t i = 0; i < n; i++) {
    if (i) fdl_buf_puts(out, legacy ? ", " : ",");
    fdl_buf_printf(out, "%" PRId64, ids[i]);
  }
  fdl_buf_putc(out, ']');
  if (fdl_buf_status(out) != FDL_OK)
    return fdl_fail(err, fdl_buf_status(out), "token ids: %zu ids do not fit in memory", n);
  return FDL_OK;
}

fdl_status fdl_ds_token_digest(const int64_t *ids, size_t n, bool legacy, char *hex, fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = fdl_ds_token_ids_json(ids, n, legacy, &b, err);
  if (s == FDL_OK) s = hash_buf(&b, hex, err);
  fdl_buf_free(&b);
  return s;
}

fdl_status fdl_ds_suite_token_hash(const char *const *hexes, size_t n, bool legacy, char *hex,
                                   fdl_err *err) {
  fdl_buf b;
  fdl_buf_init(&b, 0);
  for (size_t i = 0; i < n; i++) {
    if (i && !legacy) fdl_buf_putc(&b, '\n');
    fdl_buf_puts(&b, hexes[i] ? hexes[i] : "");
  }
  fdl_status s = hash_buf(&b, hex, err);
  fdl_buf_free(&b);
  return s;
}

static int cmp_item(const void *a, const void *b) {
  const fdl_ds_content_item *x = a, *y = b;
  return fdl_order_cmp_i64(x->index, y->index);
}

fdl_status fdl_ds_capture_content_digest(const fdl_ds_content_item *items, size_t n, char *hex,
                                         fdl_err *err) {
  fdl_ds_content_item *sorted = fdl_malloc((n ? n : 1) * sizeof *sorted);
  if (!sorted) return fdl_fail(err, FDL_NOMEM, "capture_content_digest: out of memory");
  if (n) memcpy(sorted, items, n * sizeof *sorted);
  if (n) qsort(sorted, n, sizeof *sorted, cmp_item);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_status s = FDL_OK;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    if (i && sorted[i].index == sorted[i - 1].index) {
      s = fdl_fail(err, FDL_MISMATCH, "duplicate record index %" PRId64, sorted[i].index);
    } else if (!sorted[i].content_sha256 || !sorted[i].content_sha256[0]) {
      s = fdl_fail(err, FDL_MISMATCH,
                   "record %" PRId64 " has no tensor_content_sha256; a container digest is "
                   "not an identity (spec 5.2)",
                   sorted[i].index);
    } else {
      if (i) fdl_buf_putc(&b, '\n');
      fdl_buf_printf(&b, "%" PRId64 ":%s", sorted[i].index, sorted[i].content_sha256);
    }
  }
  if (s == FDL_OK) s = hash_buf(&b, hex, err);
  fdl_buf_free(&b);
  free(sorted);
  return s;
}

/* ---- scope digest ------------------------------------------------------------------------ */

fdl_status fdl_ds_scope_digest(const json_t *scope, fdl_buf *out, fdl_err *err) {
  const json_t *assign = fdl_json_arr(scope, "assignments");
  const char *head = fdl_json_str(scope, "head_policy"),
             *kv = fdl_json_str(scope, "kv_cache_dtype");
  if (!assign || !head || !kv)
    return fdl_fail(err, FDL_INVALID,
                    "scope: assignments, head_policy and kv_cache_dtype are "
                    "needed for scope_digest");
  size_t n = json_array_size(assign);
  char **segs = fdl_calloc(n ? n : 1, sizeof *segs);
  if (!segs) return fdl_fail(err, FDL_NOMEM, "scope: out of memory");
  fdl_status s = FDL_OK;
  for (size_t i = 0; i < n && s == FDL_OK; i++) {
    const json_t *a = json_array_get(assign, i);
    const char *cls = fdl_json_str(a, "tensor_class"), *tr = fdl_json_str(a, "treatment"),
               *fmt = fdl_json_str(a, "format");
    if (!cls || !tr || !fmt) {
      s = fdl_fail(err, FDL_INVALID,
                   "scope.assignments[%zu]: tensor_class, treatment and "
                   "format must be strings",
                   i);
      break;
    }
    fdl_buf seg;
    fdl_buf_init(&seg, 0);
    fdl_buf_printf(&seg, "%s=%s:%s", cls, tr, fmt);
    const json_t *bpw = json_object_get(a, "bits_per_weight");
    if (json_is_integer(bpw)) {
      fdl_buf_printf(&seg, "@%" PRId64, (int64_t)json_integer_value(bpw));
    } else if (json_is_real(bpw)) {
      double x = json_real_value(bpw);
      char repr[FDL_FLOAT_REPR_MAX];
      /* Integral values print without ".0" ("16"); others as Python repr. */
      if (x == (double)(int64_t)x && x > -9e15 && x < 9e15)
        fdl_buf_printf(&seg, "@%" PRId64, (int64_t)x);
      else {
        fdl_float_repr(x, repr);
        fdl_buf_printf(&seg, "@%s", repr);
      }
    } else if (bpw && !json_is_null(bpw)) {
      fdl_buf_free(&seg);
      s = fdl_fail(err, FDL_INVALID, "scope.assignments[%zu].bits_per_weight is not a number", i);
      break;
    }
    if (fdl_buf_status(&seg) != FDL_OK) {
      fdl_buf_free(&seg);
      s = fdl_fail(err, FDL_NOMEM, "scope: out of memory");
      break;
    }
    segs[i] = fdl_buf_take(&seg, NULL);
  }
  if (s == FDL_OK) {
    qsort(segs, n, sizeof *segs, fdl_order_cstr);
    for (size_t i = 0; i < n; i++) {
      if (i) fdl_buf_putc(out, '|');
      fdl_buf_puts(out, segs[i]);
    }
    fdl_buf_printf(out, "|head=%s|kv=%s", head, kv);
    if (fdl_buf_status(out) != FDL_OK) s = fdl_fail(err, FDL_NOMEM, "scope: out of memory");
  }
  for (size_t i = 0; i < n; i++) free(segs[i]);
  free(segs);
  return s;
}

/* ---- tensor-file digests ----------------------------------------------------------------- */

fdl_status fdl_ds_tensor_file_digests(const char *path, const char *key, fdl_ds_tensor_digests *out,
                                      fdl_err *err) {
  fdl_safetensors *st;
  fdl_status s = fdl_safetensors_open(path, &st, err);
  if (s != FDL_OK) return s;
  const fdl_tensor *t = fdl_safetensors_find(st, key);
  if (!t) {
    fdl_safetensors_close(st);
    return fdl_fail(err, FDL_PARSE, "%s: tensor key \"%s\" absent", path, key);
  }
  fdl_ds_tensor_digests r;
  memset(&r, 0, sizeof r);
  r.dtype = t->dtype;
  r.ndim = t->ndim;
  memcpy(r.shape, t->shape, sizeof r.shape);
  uint64_t start = fdl_safetensors_data_start(st), size = fdl_safetensors_file_size(st);
  r.size_bytes = size;
  uint64_t coff = t->offset, clen = t->nbytes;
  fdl_safetensors_close(st);
  /* Hash by path through the job runner: the three ranges, two of them often identical. */
  ds_hash_job jobs[2];
  memset(jobs, 0, sizeof jobs);
  jobs[0].rel = NULL;
  int dirfd = AT_FDCWD;
  /* fdl_ds_open_at wants a relative path below a directory fd: split path into dir + name. */
  char dir[DS_MAX_PATH];
  const char *name = fdl_path_base(path);
  if (!fdl_dirname(path, dir, sizeof dir))
    return fdl_fail(err, FDL_BOUNDS, "%s: path too long", path);
  dirfd = fdl_sys_open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return fdl_fail(err, FDL_IO, "%s: cannot open its directory", path);
  /* One read yields the file and content digests; the payload needs its own only when it is
   * not the content range (never for files the reference writer lays out). */
  jobs[0].rel = name;
  jobs[0].length = UINT64_MAX;
  jobs[0].has2 = true;
  jobs[0].offset2 = coff;
  jobs[0].length2 = clen;
  size_t n = 1;
  bool payload_is_content = coff == start && coff + clen == size;
  if (!payload_is_content) {
    jobs[1].rel = name;
    jobs[1].offset = start;
    jobs[1].length = UINT64_MAX;
    n = 2;
  }
  s = fdl_ds_hash_jobs_run(dirfd, jobs, n, 0, err);
  close(dirfd);
  if (s != FDL_OK) return s;
  for (size_t i = 0; i < n; i++)
    if (jobs[i].status != FDL_OK) return fdl_fail(err, jobs[i].status, "%s: %s", path, jobs[i].msg);
  memcpy(r.file_sha256, jobs[0].hex, sizeof r.file_sha256);
  memcpy(r.content_sha256, jobs[0].hex2, sizeof r.content_sha256);
  memcpy(r.payload_sha256, payload_is_content ? jobs[0].hex2 : jobs[1].hex,
         sizeof r.payload_sha256);
  *out = r;
  return FDL_OK;
}
