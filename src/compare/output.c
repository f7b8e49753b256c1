/* output.c - staging and publishing (section 8.1). The staging directory (fdl_stage_open, named
 * FDL_STAGE_PREFIX "<pid>-..." beside --out) is created before any work: creating it is the
 * check that --out can be written at all. Both files are written into it and it becomes --out by
 * one no-replace rename, so --out appears whole (array and receipt) or not at all. An existing
 * --out, even an empty directory or a symlink to one, is refused (a documented divergence from
 * the reference, which writes into it and renames over). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/cmp.h"
#include "base/sys.h"

#define NO_REPLACE_REMEDY                                                                          \
  "choose another --out, or move the existing one away; fidelis never writes into or over an "     \
  "existing output"

fdl_status fdl_cmp_stage_open(const fdl_compare_opts *o, cmp_stage *st, fdl_refusal *r,
                              fdl_err *err) {
  memset(st, 0, sizeof *st);
  fdl_err we = {FDL_OK, ""};
  /* The reference creates the parent of --out when needed. */
  fdl_status s =
      fdl_stage_open(&st->st, o->out_dir, FDL_STAGE_MAKE_PARENTS, o->notice, o->notice_arg, &we);
  if (s == FDL_EXISTS)
    return fdl_cmp_refuse(r, err, "destination_exists", "cli", NO_REPLACE_REMEDY, "--out %s",
                          we.msg);
  if (s != FDL_OK)
    return fdl_cmp_refuse(r, err, "write_failed", "cli", CMP_REMEDY_WRITE,
                          "--out %s cannot be created (checked before any work): %s", o->out_dir,
                          we.msg);
  st->npy = fdl_cmp_path_join(st->st.path, FDL_COMPARE_TOKENWISE_NAME, NULL);
  st->receipt = fdl_cmp_path_join(st->st.path, FDL_COMPARE_RECEIPT_NAME, NULL);
  if (!st->npy || !st->receipt) return fdl_fail(err, FDL_NOMEM, "out of memory");
  return FDL_OK;
}

fdl_status fdl_cmp_stage_tokenwise(cmp_stage *st, const cmp_estimate *e, cmp_tokenwise_info *tw,
                                   fdl_refusal *r, fdl_err *err) {
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
                                char **receipt_path, char **tokenwise_path, fdl_refusal *r,
                                fdl_err *err) {
  fdl_err we = {FDL_OK, ""};
  if (fdl_json_write_file(st->receipt, receipt, FDL_JSON_PRETTY, &we) != FDL_OK)
    return fdl_cmp_refuse(r, err, "write_failed", "publish", CMP_REMEDY_WRITE, "%s", we.msg);
  char *tp = fdl_cmp_path_join(out_dir, FDL_COMPARE_TOKENWISE_NAME, NULL);
  char *rp = fdl_cmp_path_join(out_dir, FDL_COMPARE_RECEIPT_NAME, NULL);
  fdl_status s = FDL_OK;
  if (!tp || !rp) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  } else if (fdl_stage_commit(&st->st, &we) != FDL_OK) {
    s = fdl_cmp_refuse(r, err, we.status == FDL_EXISTS ? "destination_exists" : "write_failed",
                       "publish", NO_REPLACE_REMEDY, "%s", we.msg);
  }
  if (s == FDL_OK) {
    *receipt_path = rp;
    *tokenwise_path = tp;
  } else {
    free(rp);
    free(tp);
  }
  return s;
}

void fdl_cmp_stage_cleanup(cmp_stage *st) {
  fdl_stage_abort(&st->st);
  free(st->npy);
  free(st->receipt);
  memset(st, 0, sizeof *st);
}
