/* output.c - staging and publishing (section 8.1). Both files are written into a
 * `.compare-staging-XXXXXX` directory beside --out, then moved in with no-replace renames, the
 * array first so that a receipt never exists without its array. An existing output file is
 * never replaced (a documented divergence from the reference, which renames over). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compare/cmp.h"
#include "base/sys.h"

#define NO_REPLACE_REMEDY                                                                          \
  "choose another --out, or move the existing outputs away; fidelis never overwrites a receipt"

static char *parent_of(const char *path) {
  size_t n = strlen(path);
  while (n > 1 && path[n - 1] == '/') n--;
  while (n > 0 && path[n - 1] != '/') n--;
  while (n > 1 && path[n - 1] == '/') n--;
  if (n == 0) return fdl_strdup(".");
  char *p = fdl_malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, path, n);
  p[n] = '\0';
  return p;
}

/* mkdir -p: the reference creates the parent of --out when needed. */
static int make_dirs(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0) return S_ISDIR(st.st_mode) ? 0 : -1;
  char *parent = parent_of(path);
  if (!parent) return -1;
  int rc = strcmp(parent, path) ? make_dirs(parent) : 0;
  free(parent);
  if (rc) return rc;
  return fdl_sys_mkdir(path, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

fdl_status fdl_cmp_output_precheck(const char *out_dir, cmp_refusal *r, fdl_err *err) {
  struct stat st; /* stat, not lstat: a symlink to a directory is a fine --out */
  if (stat(out_dir, &st) == 0 && !S_ISDIR(st.st_mode))
    return fdl_cmp_refuse(r, err, "destination_exists", "cli", NO_REPLACE_REMEDY,
                          "--out %s exists and is not a directory", out_dir);
  const char *names[2] = {FDL_COMPARE_TOKENWISE_NAME, FDL_COMPARE_RECEIPT_NAME};
  for (int i = 0; i < 2; i++) {
    char *p = fdl_cmp_path_join(out_dir, names[i], NULL);
    if (!p) return fdl_fail(err, FDL_NOMEM, "out of memory");
    bool exists = fdl_path_exists(p);
    if (exists)
      fdl_cmp_refuse(r, err, "destination_exists", "cli", NO_REPLACE_REMEDY, "%s already exists",
                     p);
    free(p);
    if (exists) return FDL_REFUSED;
  }
  return FDL_OK;
}

fdl_status fdl_cmp_stage_open(const char *out_dir, cmp_stage *st, cmp_refusal *r, fdl_err *err) {
  memset(st, 0, sizeof *st);
  char *parent = parent_of(out_dir);
  if (!parent) return fdl_fail(err, FDL_NOMEM, "out of memory");
  if (make_dirs(parent)) {
    int e = errno;
    fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE, "cannot create %s: %s",
                   parent, strerror(e));
    free(parent);
    return FDL_REFUSED;
  }
  st->dir = fdl_cmp_path_join(parent, ".compare-staging-XXXXXX", NULL);
  free(parent);
  if (!st->dir) return fdl_fail(err, FDL_NOMEM, "out of memory");
  if (!mkdtemp(st->dir)) {
    int e = errno;
    fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE,
                   "cannot create staging directory %s: %s", st->dir, strerror(e));
    free(st->dir);
    st->dir = NULL;
    return FDL_REFUSED;
  }
  st->npy = fdl_cmp_path_join(st->dir, FDL_COMPARE_TOKENWISE_NAME, NULL);
  st->receipt = fdl_cmp_path_join(st->dir, FDL_COMPARE_RECEIPT_NAME, NULL);
  if (!st->npy || !st->receipt) return fdl_fail(err, FDL_NOMEM, "out of memory");
  return FDL_OK;
}

fdl_status fdl_cmp_stage_tokenwise(cmp_stage *st, const cmp_estimate *e, cmp_tokenwise_info *tw,
                                   cmp_refusal *r, fdl_err *err) {
  int64_t shape[1] = {(int64_t)e->n_rows};
  fdl_err we = {FDL_OK, ""};
  if (fdl_npy_write(st->npy, FDL_DTYPE_F64, 1, shape, e->kl, &we) != FDL_OK)
    return fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE, "%s", we.msg);
  fdl_sha256 d;
  if (fdl_sha256_file(st->npy, &d, &tw->bytes, &we) != FDL_OK)
    return fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE, "%s", we.msg);
  fdl_sha256_hex(&d, tw->sha256);
  return FDL_OK;
}

fdl_status fdl_cmp_stage_commit(cmp_stage *st, const json_t *receipt, const char *out_dir,
                                char **receipt_path, char **tokenwise_path, cmp_refusal *r,
                                fdl_err *err) {
  fdl_err we = {FDL_OK, ""};
  if (fdl_json_write_file(st->receipt, receipt, FDL_JSON_PRETTY, &we) != FDL_OK)
    return fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE, "%s", we.msg);
  /* --out made here is removed again if publishing fails: a refusal leaves nothing behind. */
  struct stat ost;
  bool made_out = stat(out_dir, &ost) != 0;
  if (make_dirs(out_dir)) {
    int e = errno;
    return fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE,
                          "cannot create --out %s: %s", out_dir, strerror(e));
  }
  char *tp = fdl_cmp_path_join(out_dir, FDL_COMPARE_TOKENWISE_NAME, NULL);
  char *rp = fdl_cmp_path_join(out_dir, FDL_COMPARE_RECEIPT_NAME, NULL);
  fdl_status s = FDL_OK;
  if (!tp || !rp) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  } else if (fdl_rename_noreplace(st->npy, tp, &we) != FDL_OK) {
    s = fdl_cmp_refuse(r, err, we.status == FDL_EXISTS ? "destination_exists" : "write_failed",
                       "publish", NO_REPLACE_REMEDY, "%s", we.msg);
  } else if (fdl_rename_noreplace(st->receipt, rp, &we) != FDL_OK) {
    /* The array we just placed is ours and has no receipt: take it back. */
    if (fdl_sys_rename(tp, st->npy) != 0) unlink(tp);
    s = fdl_cmp_refuse(r, err, we.status == FDL_EXISTS ? "destination_exists" : "write_failed",
                       "publish", NO_REPLACE_REMEDY, "%s", we.msg);
  }
  if (s == FDL_OK) {
    *receipt_path = rp;
    *tokenwise_path = tp;
  } else {
    free(rp);
    free(tp);
    if (made_out) rmdir(out_dir);
  }
  return s;
}

void fdl_cmp_stage_cleanup(cmp_stage *st) {
  if (st->npy) unlink(st->npy);
  if (st->receipt) unlink(st->receipt);
  if (st->dir) rmdir(st->dir);
  free(st->npy);
  free(st->receipt);
  free(st->dir);
  memset(st, 0, sizeof *st);
}
