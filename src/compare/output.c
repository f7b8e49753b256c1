/* output.c - staging and publishing (section 8.1). The staging directory (fdl_stage_open, named
 * FDL_STAGE_PREFIX "<pid>-..." beside --out) is created before any work: creating it is the
 * check that --out can be written at all. Every file is written into it and it becomes --out by
 * one no-replace rename, so --out appears whole (array and receipt) or not at all. An existing
 * --out, even an empty directory or a symlink to one, is refused (a documented divergence from
 * the reference, which writes into it and renames over). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare/cmp.h"
#include "compare/compare_json.h"
#include "base/sys.h"

#define NO_REPLACE_REMEDY                                                                          \
  "choose another --out, or move the existing one away; fidelis never writes into or over an "     \
  "existing output"

fdl_status fdl_cmp_stage_open(const fdl_compare_opts *o, cmp_stage *st, fdl_refusal *r,
                              fdl_err *err) {
  memset(st, 0, sizeof *st);
  /* The reference creates the parent of --out when needed. */
  fdl_status s =
      fdl_stage_open(&st->st, o->out_dir, FDL_STAGE_MAKE_PARENTS, o->notice, o->notice_arg, err);
  if (s == FDL_EXISTS)
    return fdl_cmp_refuse(r, err, FDL_REF_DESTINATION_EXISTS, FDL_GATE_CLI, NO_REPLACE_REMEDY,
                          "--out %s", fdl_err_msg(err));
  if (s != FDL_OK)
    return fdl_cmp_refuse(r, err, FDL_REF_WRITE_FAILED, FDL_GATE_CLI, CMP_REMEDY_WRITE,
                          "--out %s cannot be created (checked before any work): %s", o->out_dir,
                          fdl_err_msg(err));
  st->npy = fdl_cmp_path_join(st->st.path, FDL_COMPARE_TOKENWISE_NAME, NULL);
  st->receipt = fdl_cmp_path_join(st->st.path, FDL_COMPARE_RECEIPT_NAME, NULL);
  static const char *const names[3] = FDL_COMPARE_LLAMACPP_ARRAYS;
  for (int i = 0; i < 3; i++)
    if (!(st->extra[i] = fdl_cmp_path_join(st->st.path, names[i], NULL)))
      return fdl_fail(err, FDL_NOMEM, "out of memory");
  if (!st->npy || !st->receipt) return fdl_fail(err, FDL_NOMEM, "out of memory");
  return FDL_OK;
}

static fdl_status write_npy(const char *path, fdl_dtype dt, size_t n, const void *data, char *hex,
                            uint64_t *bytes, fdl_refusal *r, fdl_err *err) {
  int64_t shape[1] = {(int64_t)n};
  fdl_sha256 d;
  uint64_t size = 0;
  if (fdl_npy_write(path, dt, 1, shape, data, err) != FDL_OK ||
      fdl_sha256_file(path, &d, &size, err) != FDL_OK)
    return fdl_cmp_refuse(r, err, FDL_REF_WRITE_FAILED, FDL_GATE_PUBLISH, CMP_REMEDY_WRITE, "%s",
                          fdl_err_msg(err));
  fdl_sha256_hex(&d, hex);
  if (bytes) *bytes = size;
  return FDL_OK;
}

fdl_status fdl_cmp_stage_tokenwise(cmp_stage *st, const cmp_estimate *e, cmp_tokenwise_info *tw,
                                   fdl_refusal *r, fdl_err *err) {
  memset(tw, 0, sizeof *tw);
  fdl_status s =
      write_npy(st->npy, FDL_DTYPE_F64, e->n_rows, e->kl, tw->sha256, &tw->bytes, r, err);
  if (s != FDL_OK || !e->lp_ref) return s;
  if ((s = write_npy(st->extra[0], FDL_DTYPE_F64, e->n_rows, e->lp_ref, tw->lp_ref_sha256, NULL, r,
                     err)) != FDL_OK ||
      (s = write_npy(st->extra[1], FDL_DTYPE_F64, e->n_rows, e->lp_cand, tw->lp_cand_sha256, NULL,
                     r, err)) != FDL_OK ||
      (s = write_npy(st->extra[2], FDL_DTYPE_U8, e->n_rows, e->top1, tw->top1_sha256, NULL, r,
                     err)) != FDL_OK)
    return s;
  tw->extra = true;
  return FDL_OK;
}

fdl_status fdl_cmp_stage_commit(cmp_stage *st, const json_t *receipt, const char *out_dir,
                                char **receipt_path, char **tokenwise_path, fdl_refusal *r,
                                fdl_err *err) {
  if (fdl_json_write_file(st->receipt, receipt, FDL_JSON_PRETTY, err) != FDL_OK)
    return fdl_cmp_refuse(r, err, FDL_REF_WRITE_FAILED, FDL_GATE_PUBLISH, CMP_REMEDY_WRITE, "%s",
                          fdl_err_msg(err));
  char *tp = fdl_cmp_path_join(out_dir, FDL_COMPARE_TOKENWISE_NAME, NULL);
  char *rp = fdl_cmp_path_join(out_dir, FDL_COMPARE_RECEIPT_NAME, NULL);
  fdl_status s = FDL_OK;
  if (!tp || !rp) {
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  } else if ((s = fdl_stage_commit(&st->st, err)) != FDL_OK) {
    s = fdl_cmp_refuse(r, err, s == FDL_EXISTS ? FDL_REF_DESTINATION_EXISTS : FDL_REF_WRITE_FAILED,
                       FDL_GATE_PUBLISH, NO_REPLACE_REMEDY, "%s", fdl_err_msg(err));
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
  for (int i = 0; i < 3; i++) free(st->extra[i]);
  memset(st, 0, sizeof *st);
}
