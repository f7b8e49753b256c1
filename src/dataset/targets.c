/* targets.c - the token each scored row predicts, for statistics that need the target (the
 * llama.cpp-compatible block of a comparison). The token file and the mask are read once and
 * the digests are checked on those very bytes, so a target never comes from a file other than
 * the one the seal covers. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset/ds_internal.h"
#include "json/json.h"
#include "base/path.h"
#include "base/sys.h"

static fdl_status read_ids(int rootfd, const char *rel, int64_t **ids, size_t *n, fdl_err *err) {
  char *bytes;
  size_t len;
  bool missing;
  fdl_status s = fdl_ds_read_at(rootfd, rel, DS_MAX_SMALL_FILE, &bytes, &len, &missing, err);
  if (s != FDL_OK) return s;
  json_t *doc = NULL;
  s = fdl_json_parse(bytes, len, NULL, &doc, err);
  free(bytes);
  if (s != FDL_OK) return fdl_err_prefix(err, "%s", rel);
  s = fdl_json_int_array(doc, INT64_MIN, INT64_MAX, ids, n);
  json_decref(doc);
  return s == FDL_OK ? FDL_OK
         : s == FDL_NOMEM
             ? fdl_fail(err, s, "%s: out of memory", rel)
             : fdl_fail(err, s, "%s: a token file holds one JSON array of integer ids", rel);
}

static fdl_status read_mask(int rootfd, const char *rel, const char *want, int64_t num_tokens,
                            uint8_t **mask, int64_t *mlen, fdl_err *err) {
  char *bytes;
  size_t len;
  bool missing, headerless;
  fdl_status s = fdl_ds_read_at(rootfd, rel, DS_MAX_SMALL_FILE, &bytes, &len, &missing, err);
  if (s != FDL_OK) return s;
  char hex[FDL_SHA256_HEX_BUF];
  if ((s = fdl_sha256_buf_hex(bytes, len, hex, err)) == FDL_OK && want && strcmp(want, hex))
    s = fdl_fail(err, FDL_MISMATCH, "%s hashes to %s, the panel record says %s", rel, hex, want);
  if (s == FDL_OK) s = fdl_ds_mask_load(bytes, len, num_tokens, rel, mask, mlen, &headerless, err);
  free(bytes);
  return s;
}

static bool rel_of(const char *path, char *out, size_t cap) {
  return path && path[0] && fdl_relpath_ok(path, strlen(path), false) &&
         fdl_ds_join_norm("", path, out, cap);
}

fdl_status fdl_ds_panel_targets(const char *root, const fdl_dataset *ds, size_t at,
                                int64_t **targets, size_t *n, fdl_err *err) {
  if (!ds || at >= ds->n_panel_records)
    return fdl_fail(err, FDL_INVALID, "panel record %zu does not exist", at);
  const fdl_ds_panel_record *pr = &ds->panel_records[at];
  char rel[DS_MAX_PATH], mrel[DS_MAX_PATH];
  if (!rel_of(pr->token_file, rel, sizeof rel))
    return fdl_fail(err, FDL_INVALID, "panel record %" PRId64 ": token_file is not a usable path",
                    pr->index);
  if (pr->attention_mask_file && !rel_of(pr->attention_mask_file, mrel, sizeof mrel))
    return fdl_fail(err, FDL_INVALID,
                    "panel record %" PRId64 ": attention_mask_file is not a usable path",
                    pr->index);
  int64_t score_from = ds->m.panel.scoring_window.score_from;
  int rootfd = fdl_sys_open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (rootfd < 0) return fdl_fail(err, FDL_IO, "cannot open dataset %s: %s", root, strerror(errno));
  int64_t *ids = NULL, *rows = NULL;
  uint8_t *mask = NULL;
  size_t len = 0;
  int64_t mlen = 0;
  char hex[FDL_SHA256_HEX_BUF];
  fdl_status s = read_ids(rootfd, rel, &ids, &len, err);
  if (s == FDL_OK && (s = fdl_ds_token_digest(ids, len, false, hex, err)) == FDL_OK &&
      (!pr->token_ids_json_sha256 || strcmp(hex, pr->token_ids_json_sha256)))
    s = fdl_fail(err, FDL_MISMATCH, "%s: the ids hash to %s, the panel record says %s", rel, hex,
                 pr->token_ids_json_sha256 ? pr->token_ids_json_sha256 : "nothing");
  if (s == FDL_OK && pr->attention_mask_file) {
    s = read_mask(rootfd, mrel, pr->attention_mask_sha256, (int64_t)len, &mask, &mlen, err);
    if (s == FDL_OK && mlen != (int64_t)len)
      s = fdl_fail(err, FDL_MISMATCH, "%s has %" PRId64 " entries for %zu tokens", mrel, mlen, len);
  }
  close(rootfd);
  int64_t kept = 0;
  if (s == FDL_OK) {
    kept = fdl_ds_scored_rows(mask, (int64_t)len, score_from, NULL);
    if (kept != pr->prediction_positions)
      s = fdl_fail(err, FDL_MISMATCH,
                   "panel record %" PRId64 ": the tokens and mask score %" PRId64
                   " positions, prediction_positions says %" PRId64,
                   pr->index, kept, pr->prediction_positions);
  }
  if (s == FDL_OK && !(rows = fdl_malloc((kept ? (size_t)kept : 1) * sizeof *rows)))
    s = fdl_fail(err, FDL_NOMEM, "out of memory for %" PRId64 " targets", kept);
  if (s == FDL_OK) {
    (void)fdl_ds_scored_rows(mask, (int64_t)len, score_from, rows);
    for (int64_t j = 0; j < kept; j++) rows[j] = ids[rows[j] + 1];
    *targets = rows;
    *n = (size_t)kept;
    rows = NULL;
  }
  free(rows);
  free(ids);
  free(mask);
  return s;
}
