/* cache.c - the Hugging Face cache as it is on disk: where it is, what a snapshot is, and the
 * one rule for following a snapshot's links (into the same repository's blobs/, nowhere else).
 *
 * Divisions: the cache folder; snapshots; the link rule; files of a model directory; refs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sys.h"
#include "fidelis/digest.h"
#include "base/path.h"
#include "base/quote.h"
#include "hub/hub_internal.h"

/* ---- the cache folder --------------------------------------------------------------------- */

static const char *set(const char *v) {
  return v && *v ? v : NULL;
}

int fdl_hub_home_file(const fdl_hub_env *env, const char *name, char *out, size_t cap) {
  const char *v;
  if ((v = set(env->hf_home))) return snprintf(out, cap, "%s/%s", v, name);
  if ((v = set(env->xdg_cache_home))) return snprintf(out, cap, "%s/huggingface/%s", v, name);
  if ((v = set(env->home))) return snprintf(out, cap, "%s/.cache/huggingface/%s", v, name);
  return -1;
}

fdl_status fdl_hub_cache_dir(const fdl_hub_env *env, const char *override, char **dir,
                             fdl_err *err) {
  static const fdl_hub_env none;
  if (!env) env = &none;
  *dir = NULL;
  const char *v = override ? override : set(env->hub_cache);
  char buf[PATH_MAX];
  int n = v ? snprintf(buf, sizeof buf, "%s", v) : fdl_hub_home_file(env, "hub", buf, sizeof buf);
  if (n < 0)
    return fdl_fail(err, FDL_INVALID,
                    "no Hugging Face cache: set HF_HUB_CACHE or HF_HOME (HOME is not set)");
  if (n == 0 || (size_t)n >= sizeof buf)
    return fdl_fail(err, FDL_BOUNDS, "the Hugging Face cache path is longer than %d bytes",
                    PATH_MAX - 1);
  if (!(*dir = fdl_strdup(buf))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  return FDL_OK;
}

/* ---- snapshots ---------------------------------------------------------------------------- */

bool fdl_hub_repo_folder_name(const char *s, size_t n) {
  static const char *const kinds[] = {"models--", "datasets--", "spaces--"};
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    size_t k = strlen(kinds[i]);
    if (n > k && !strncmp(s, kinds[i], k)) return true;
  }
  return false;
}

/* In an absolute resolved path, the first <repo folder>/snapshots/<rev>: *repo_end is the
 * length up to the repository folder's end, *snap_end up to the revision's end. */
static bool snapshot_root(const char *real, size_t *repo_end, size_t *snap_end) {
  static const char mark[] = "/snapshots/";
  for (const char *p = strstr(real, mark); p; p = strstr(p + 1, mark)) {
    const char *start = p;
    while (start > real && start[-1] != '/') start--;
    const char *rev = p + sizeof mark - 1;
    size_t rn = strcspn(rev, "/");
    if (!rn || !fdl_hub_repo_folder_name(start, (size_t)(p - start))) continue;
    *repo_end = (size_t)(p - real);
    *snap_end = (size_t)(rev + rn - real);
    return true;
  }
  return false;
}

bool fdl_hub_snapshot_identity(const char *path, char repo[2 * FDL_HUB_NAME_MAX + 2],
                               char commit[FDL_HUB_COMMIT_LEN + 1]) {
  char real[PATH_MAX], dir[PATH_MAX];
  size_t repo_end, snap_end;
  /* a file of a snapshot resolves into blobs/: its folder says which snapshot it is in */
  bool found = realpath(path, real) && snapshot_root(real, &repo_end, &snap_end);
  if (!found && fdl_dirname(path, dir, sizeof dir))
    found = realpath(dir[0] ? dir : ".", real) && snapshot_root(real, &repo_end, &snap_end);
  if (!found) return false;
  const char *rev = real + repo_end + sizeof "/snapshots/" - 1;
  size_t rn = snap_end - (size_t)(rev - real);
  if (rn != FDL_HUB_COMMIT_LEN || !fdl_hex_lower(rev, rn)) return false;
  const char *folder = real + repo_end;
  while (folder > real && folder[-1] != '/') folder--;
  const char *org = strstr(folder, "--") + 2; /* after the kind, which snapshot_root checked */
  const char *sep = strstr(org, "--");
  if (!sep || sep >= real + repo_end) return false;
  size_t on = (size_t)(sep - org), nn = (size_t)(real + repo_end - sep - 2);
  if (!on || !nn || on > FDL_HUB_NAME_MAX || nn > FDL_HUB_NAME_MAX) return false;
  snprintf(repo, 2 * FDL_HUB_NAME_MAX + 2, "%.*s/%.*s", (int)on, org, (int)nn, sep + 2);
  memcpy(commit, rev, FDL_HUB_COMMIT_LEN);
  commit[FDL_HUB_COMMIT_LEN] = '\0';
  return true;
}

/* ---- the link rule ------------------------------------------------------------------------ */

bool fdl_hub_blob_target_ok(const char *snap_real, const char *real) {
  size_t repo_end, snap_end;
  if (!snapshot_root(snap_real, &repo_end, &snap_end)) return false;
  char blobs[PATH_MAX];
  if (repo_end + sizeof "/blobs" > sizeof blobs) return false;
  memcpy(blobs, snap_real, repo_end);
  memcpy(blobs + repo_end, "/blobs", sizeof "/blobs");
  return fdl_path_within(real, blobs) && strcmp(real, blobs);
}

fdl_status fdl_hub_check_named(const char *path, const char *real, fdl_err *err) {
  char dir[PATH_MAX], dir_real[PATH_MAX], q[FDL_QUOTE_CAP], q2[FDL_QUOTE_CAP];
  size_t repo_end, snap_end;
  struct stat st;
  bool in_snapshot = fdl_dirname(path, dir, sizeof dir) && realpath(dir[0] ? dir : ".", dir_real) &&
                     snapshot_root(dir_real, &repo_end, &snap_end);
  if (in_snapshot && lstat(path, &st) == 0 && S_ISLNK(st.st_mode) &&
      !fdl_hub_blob_target_ok(dir_real, real))
    return fdl_fail(err, FDL_PATH,
                    "%s is a link in a Hugging Face cache snapshot that leads to %s, outside its "
                    "repository's blobs/ (refused as an escape: a snapshot's files are links "
                    "into blobs/ and nothing else)",
                    fdl_quote_str(path, q, sizeof q), fdl_quote_str(real, q2, sizeof q2));
  return fdl_hub_blob_check_file(real, err);
}

/* ---- files of a model directory ----------------------------------------------------------- */

/* real (resolved) lies inside dir_real, or in the repository's blobs/ when dir_real is a
 * Hugging Face cache snapshot. */
static bool member_target_ok(const char *dir_real, const char *real) {
  if (fdl_path_within(real, dir_real) && strcmp(real, dir_real)) return true;
  return fdl_hub_blob_target_ok(dir_real, real);
}

fdl_status fdl_model_member(const char *dir, const char *name, char **path, fdl_err *err) {
  *path = NULL;
  char *p = fdl_path_join(dir, name);
  if (!p) return fdl_fail(err, FDL_NOMEM, "out of memory");
  char q[FDL_QUOTE_CAP], q2[FDL_QUOTE_CAP];
  struct stat st;
  if (lstat(p, &st) != 0) {
    int e = errno;
    free(p);
    return e == ENOENT ? FDL_OK
                       : fdl_fail(err, FDL_IO, "%s: cannot stat: %s",
                                  fdl_quote_str(name, q, sizeof q), strerror(e));
  }
  if (S_ISREG(st.st_mode)) {
    *path = p;
    return FDL_OK;
  }
  if (!S_ISLNK(st.st_mode)) {
    fdl_status s = fdl_fail(err, FDL_IO, "%s: not a regular file", fdl_quote_str(p, q, sizeof q));
    free(p);
    return s;
  }
  char dir_real[PATH_MAX], real[PATH_MAX];
  fdl_status s = FDL_OK;
  if (!realpath(dir, dir_real) || !realpath(p, real))
    s = fdl_fail(err, FDL_IO, "%s: cannot resolve the link: %s", fdl_quote_str(p, q, sizeof q),
                 strerror(errno));
  else if (!member_target_ok(dir_real, real))
    s = fdl_fail(err, FDL_PATH,
                 "%s is a link to %s, outside the model directory and not a blob of its Hugging "
                 "Face cache repository: refused as an escape (model files are inside MODEL, or "
                 "links from a cache snapshot into its own blobs/)",
                 fdl_quote_str(p, q, sizeof q), fdl_quote_str(real, q2, sizeof q2));
  else if (stat(real, &st) != 0 || !S_ISREG(st.st_mode))
    s = fdl_fail(err, FDL_IO, "%s: the link does not lead to a regular file",
                 fdl_quote_str(p, q, sizeof q));
  free(p);
  if (s == FDL_OK && !(*path = fdl_strdup(real))) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  return s;
}

/* ---- refs --------------------------------------------------------------------------------- */

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool fdl_hub_local_commit(const char *repo_dir, const char *rev,
                          char commit[FDL_HUB_COMMIT_LEN + 1]) {
  char p[PATH_MAX];
  size_t rn = strlen(rev);
  if (rn == FDL_HUB_COMMIT_LEN && fdl_hex_lower(rev, rn)) {
    snprintf(p, sizeof p, "%s/snapshots/%s", repo_dir, rev);
    if (is_dir(p)) {
      memcpy(commit, rev, FDL_HUB_COMMIT_LEN + 1);
      return true;
    }
  }
  if ((size_t)snprintf(p, sizeof p, "%s/refs/%s", repo_dir, rev) >= sizeof p) return false;
  int fd = -1;
  if (fdl_open_regular(p, false, &fd, NULL, NULL) != FDL_OK) return false;
  char buf[FDL_HUB_COMMIT_LEN + 8];
  ssize_t n = fdl_sys_read(fd, buf, sizeof buf);
  close(fd);
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) n--;
  if (n != FDL_HUB_COMMIT_LEN || !fdl_hex_lower(buf, FDL_HUB_COMMIT_LEN)) return false;
  snprintf(p, sizeof p, "%s/snapshots/%.40s", repo_dir, buf);
  if (!is_dir(p)) return false;
  memcpy(commit, buf, FDL_HUB_COMMIT_LEN);
  commit[FDL_HUB_COMMIT_LEN] = '\0';
  return true;
}

fdl_status fdl_hub_write_ref(const char *repo_dir, const char *rev, const char *commit,
                             fdl_err *err) {
  char dir[PATH_MAX], tmp[PATH_MAX], dst[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/refs", repo_dir);
  if (!fdl_path_join_to(dir, rev, dst, sizeof dst) ||
      (size_t)snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, rev, (long)getpid()) >= sizeof tmp)
    return fdl_fail(err, FDL_BOUNDS, "%s: path too long", dir);
  fdl_status s = fdl_mkdirs(dir, err);
  if (s != FDL_OK) return s;
  int fd = fdl_sys_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) return fdl_fail(err, FDL_IO, "%s: cannot create: %s", tmp, strerror(errno));
  bool ok = fdl_sys_write(fd, commit, FDL_HUB_COMMIT_LEN) == FDL_HUB_COMMIT_LEN;
  int e = errno;
  if (close(fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok && fdl_sys_rename(tmp, dst) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    fdl_sys_unlinkat(AT_FDCWD, tmp, 0);
    return fdl_fail(err, FDL_IO, "%s: cannot write the branch's commit: %s", dst, strerror(e));
  }
  return FDL_OK;
}

bool fdl_hub_snapshot_has(const char *snapshot, const char *name) {
  char *p = fdl_path_join(snapshot, name);
  char snap_real[PATH_MAX], real[PATH_MAX];
  struct stat st;
  bool ok = false;
  if (p && lstat(p, &st) == 0) {
    if (S_ISREG(st.st_mode))
      ok = true;
    else if (S_ISLNK(st.st_mode) && realpath(snapshot, snap_real) && realpath(p, real))
      ok = fdl_hub_blob_target_ok(snap_real, real) && stat(real, &st) == 0 && S_ISREG(st.st_mode);
  }
  free(p);
  return ok;
}
