/* fetch.c - an hf:// reference resolved to a snapshot of the cache, fetching what is missing.
 *
 * The layout written is huggingface_hub's, so Python tools see the same files: refs/<rev> holds
 * the commit, blobs/<etag> the verified bytes, snapshots/<commit>/<path> a relative link to the
 * blob. A download goes to blobs/<etag>.incomplete (locked, so two processes never write one),
 * resumes from its length with an HTTP Range, is checked against the etag (the LFS sha256 or the
 * git blob id) and only then renamed to its blob name; the snapshot's link is made under a
 * temporary name and renamed into place. Nothing half-written ever carries a final name.
 *
 * Divisions: the context; what is wanted; requests with retries; one file; resolution. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"
#include "base/buf.h"
#include "fidelis/digest.h"
#include "base/path.h"
#include "hub/hub_internal.h"

#define HUB_DEFAULT_ENDPOINT "https://huggingface.co"
/* Tries of one request when the network or the server fails in a way worth retrying. */
#define HUB_TRIES 6
#define HUB_BACKOFF_MAX_S 8.0
/* The largest file fetched: more than any checkpoint shard, less than a disk-filling lie. */
#define HUB_FILE_MAX ((uint64_t)1 << 40)
#define HUB_WALK_DEPTH 32
#define HUB_FILE_URL_MAX 8192
/* Redirects of the endpoint's own (a renamed repository) followed for a file's HEAD. */
#define HUB_HEAD_HOPS 4

/* ---- the context -------------------------------------------------------------------------- */

typedef struct {
  const fdl_hub_ref *ref;
  const fdl_hub_opts *o;
  char *cache;
  char repo_dir[PATH_MAX];
  char endpoint[2048];
  char text[FDL_HUB_FILE_MAX + 2 * FDL_HUB_NAME_MAX + FDL_HUB_REV_MAX + 32]; /* hf://... */
  fdl_hub_http *http;
  fdl_hub_result *r;
} ctx;

static bool env_true(const char *v) {
  return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
               !strcasecmp(v, "on"));
}

static void notice(const ctx *c, const char *fmt, ...) FDL_PRINTF(2, 3);
static void notice(const ctx *c, const char *fmt, ...) {
  if (!c->o->notice) return;
  fdl_err e;
  va_list ap;
  va_start(ap, fmt);
  fdl_failv(&e, FDL_OK, fmt, ap);
  va_end(ap);
  c->o->notice(c->o->notice_arg, e.msg);
}

static fdl_status setup(ctx *c, fdl_err *err) {
  fdl_status s = fdl_hub_cache_dir(c->o->env, c->o->cache, &c->cache, err);
  if (s != FDL_OK) return s;
  char folder[2 * FDL_HUB_NAME_MAX + 16];
  if (!fdl_hub_repo_folder(c->ref, folder, sizeof folder) ||
      !fdl_path_join_to(c->cache, folder, c->repo_dir, sizeof c->repo_dir))
    return fdl_fail(err, FDL_BOUNDS, "%s: the cache path is too long", c->cache);
  fdl_hub_ref_text(c->ref, c->text, sizeof c->text);
  const char *ep = c->o->endpoint ? c->o->endpoint : c->o->env ? c->o->env->endpoint : NULL;
  if (!ep || !*ep) ep = HUB_DEFAULT_ENDPOINT;
  size_t n = strlen(ep);
  while (n && ep[n - 1] == '/') n--;
  if (n == 0 || n >= sizeof c->endpoint)
    return fdl_fail(err, FDL_INVALID, "the Hub endpoint is empty or longer than %zu bytes",
                    sizeof c->endpoint - 1);
  memcpy(c->endpoint, ep, n);
  c->endpoint[n] = '\0';
  fdl_hub_origin o;
  if ((s = fdl_hub_origin_of(c->endpoint, &o, err)) != FDL_OK)
    return fdl_err_prefix(err, "the Hub endpoint (--endpoint or HF_ENDPOINT)");
  return FDL_OK;
}

/* ---- what is wanted ----------------------------------------------------------------------- */

static bool is_literal(const char *pat) {
  return !strpbrk(pat, "*?[");
}

static bool wanted(const ctx *c, const char *file) {
  const char *p = c->ref->path;
  size_t pn = strlen(p);
  if (pn && strcmp(file, p) && !(!strncmp(file, p, pn) && file[pn] == '/')) return false;
  if (!c->o->n_include) return true;
  for (size_t i = 0; i < c->o->n_include; i++)
    if (fnmatch(c->o->include[i], file, 0) == 0) return true;
  return false;
}

/* The first named file (the reference's path, a literal --include) the snapshot lacks, or NULL. */
static const char *first_missing(const ctx *c, const char *snapshot) {
  if (c->ref->path[0]) {
    char *p = fdl_path_join(snapshot, c->ref->path);
    struct stat st;
    bool dir = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
    free(p);
    if (!dir && !fdl_hub_snapshot_has(snapshot, c->ref->path)) return c->ref->path;
  }
  for (size_t i = 0; i < c->o->n_include; i++)
    if (is_literal(c->o->include[i]) && wanted(c, c->o->include[i]) &&
        !fdl_hub_snapshot_has(snapshot, c->o->include[i]))
      return c->o->include[i];
  return NULL;
}

/* Counts the snapshot's files that are wanted (bounded walk, links not entered). */
static void count_files(const ctx *c, const char *dir, const char *rel, int depth, size_t *n) {
  if (depth > HUB_WALK_DEPTH || *n >= FDL_HUB_MAX_FILES) return;
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && *n < FDL_HUB_MAX_FILES) {
    if (e->d_name[0] == '.') continue;
    char path[PATH_MAX], sub[FDL_HUB_FILE_MAX + 2];
    if (!fdl_path_join_to(dir, e->d_name, path, sizeof path) ||
        (size_t)snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= sizeof sub)
      continue;
    struct stat st;
    if (lstat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode))
      count_files(c, path, sub, depth + 1, n);
    else if (wanted(c, sub))
      (*n)++;
  }
  closedir(d);
}

/* ---- requests with retries ---------------------------------------------------------------- */

static void pause_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* Whether to try again after attempt k (0-based) failed as rep says; waits if so. */
static bool again(const ctx *c, const char *what, int k, const fdl_hub_reply *rep,
                  const fdl_err *e) {
  if (!rep->retryable || k + 1 >= HUB_TRIES) return false;
  double wait = 0.25 * (double)(1u << k);
  if (wait > HUB_BACKOFF_MAX_S) wait = HUB_BACKOFF_MAX_S;
  if (rep->retry_after) wait = rep->retry_after;
  if (rep->status >= 400)
    notice(c, "%s: the endpoint answered %ld; try %d of %d in %.2f s", what, rep->status, k + 2,
           HUB_TRIES, wait);
  else
    notice(c, "%s: %s; try %d of %d in %.2f s", what, e->msg, k + 2, HUB_TRIES, wait);
  pause_s(wait);
  return true;
}

/* A refusal for a final non-success answer. */
static fdl_status answer_failed(const ctx *c, const char *what, long status, fdl_err *err) {
  if (status == 401 || status == 403)
    return fdl_fail(err, FDL_REFUSED,
                    "%s: the endpoint answered %ld: %s needs a token that may read it (set "
                    "HF_TOKEN or log in so that the token file exists; the token is sent to %s "
                    "only)",
                    what, status, c->ref->repo, c->endpoint);
  if (status == 404)
    return fdl_fail(err, FDL_IO,
                    "%s: the endpoint answered 404: no such repository, revision "
                    "or file at %s (a private repository also answers 404 without "
                    "a token)",
                    what, c->endpoint);
  return fdl_fail(err, FDL_IO, "%s: the endpoint answered %ld", what, status);
}

static bool collect(void *arg, const fdl_hub_reply *rep, const void *p, size_t n) {
  (void)rep;
  fdl_buf *b = arg;
  fdl_buf_append(b, p, n);
  return fdl_buf_status(b) == FDL_OK;
}

/* One GET into b, redirects followed, or, when b is NULL, a HEAD whose redirects head_file
 * judges; tried again while again() says so. The last try's status, and its error in err. */
static fdl_status request(ctx *c, const char *what, const char *url, fdl_buf *b, fdl_hub_reply *rep,
                          fdl_err *err) {
  for (int k = 0;; k++) {
    fdl_err e = {FDL_OK, ""};
    if (b) fdl_buf_reset(b); /* a retried answer starts over */
    fdl_status s = fdl_hub_http_get(c->http, url, !b, b != NULL, 0, b ? collect : NULL, b, rep, &e);
    if ((s == FDL_OK && !rep->retryable) || (s != FDL_OK && s != FDL_IO) ||
        !again(c, what, k, rep, &e)) {
      if (s != FDL_OK) *err = e;
      return s;
    }
  }
}

static fdl_status get_revision(ctx *c, fdl_hub_revision *rev, fdl_err *err) {
  char *esc = fdl_hub_http_escape(c->http, c->ref->rev);
  char url[4096];
  if (!esc) return fdl_fail(err, FDL_NOMEM, "out of memory");
  snprintf(url, sizeof url, "%s/api/%s/%s/revision/%s", c->endpoint,
           c->ref->kind == FDL_HUB_DATASET ? "datasets" : "models", c->ref->repo, esc);
  free(esc);
  fdl_buf b;
  fdl_hub_reply rep;
  fdl_buf_init(&b, FDL_HUB_MAX_REVISION_BYTES);
  fdl_status s = request(c, c->text, url, &b, &rep, err);
  if (s == FDL_OK && fdl_buf_status(&b) != FDL_OK)
    s = fdl_fail(err, FDL_TOO_LARGE, "%s: the revision answer is larger than %zu bytes", c->text,
                 FDL_HUB_MAX_REVISION_BYTES);
  else if (s == FDL_OK && rep.status != 200)
    s = answer_failed(c, c->text, rep.status, err);
  else if (s == FDL_OK && (s = fdl_hub_revision_parse(b.data ? b.data : "", b.len, rev, err)))
    fdl_err_prefix(err, "%s", c->text);
  fdl_buf_free(&b);
  return s;
}

/* ---- one file ----------------------------------------------------------------------------- */

typedef struct {
  const ctx *c;
  const char *file;
  int fd;
  uint64_t from, have, size;
  bool started;
  fdl_err *err;
  fdl_status s;
} sink_state;

static bool write_sink(void *arg, const fdl_hub_reply *rep, const void *p, size_t n) {
  sink_state *w = arg;
  if (!w->started) {
    w->started = true;
    if (rep->status == 206 && (!rep->has_range || rep->range_start != w->from)) {
      w->s =
          fdl_fail(w->err, FDL_PARSE,
                   "%s: a partial answer from byte %" PRIu64 ", but byte %" PRIu64 " was asked for",
                   w->file, rep->range_start, w->from);
      return false;
    }
    if (rep->status != 206 && w->have) { /* the whole file again: start over */
      if (ftruncate(w->fd, 0) != 0 || lseek(w->fd, 0, SEEK_SET) != 0) {
        w->s = fdl_fail(w->err, FDL_IO, "%s: cannot restart the download: %s", w->file,
                        strerror(errno));
        return false;
      }
      w->have = 0;
    }
  }
  if (n > w->size - w->have) {
    w->s = fdl_fail(w->err, FDL_BOUNDS,
                    "%s: the endpoint sent more than the %" PRIu64 " bytes it announced", w->file,
                    w->size);
    return false;
  }
  if (fdl_sys_write(w->fd, p, n) != (ssize_t)n) {
    w->s = fdl_fail(w->err, FDL_IO, "%s: cannot write the download: %s", w->file, strerror(errno));
    return false;
  }
  w->have += n;
  if (w->c->o->progress) w->c->o->progress(w->c->o->progress_arg, w->file, w->have, w->size);
  return true;
}

/* The endpoint's own answer for the file: its LFS redirect is not followed (its headers name the
 * file), but a redirect without an etag (a renamed repository) is, within the endpoint's
 * origin. */
static fdl_status head_file(ctx *c, const char *url, const char *file, fdl_hub_reply *rep,
                            fdl_err *err) {
  char cur[HUB_FILE_URL_MAX];
  snprintf(cur, sizeof cur, "%s", url);
  fdl_status s = FDL_OK;
  for (int hop = 0; s == FDL_OK; hop++) {
    if ((s = request(c, file, cur, NULL, rep, err)) != FDL_OK) return s;
    if (rep->status < 300 || rep->status >= 400 || rep->etag[0]) break;
    if (hop >= HUB_HEAD_HOPS || !rep->location[0] ||
        !fdl_hub_http_at_endpoint(c->http, rep->location))
      return fdl_fail(err, FDL_PARSE,
                      "%s: the endpoint redirects (%ld) without naming the file's etag, to %s "
                      "(followed only within the endpoint, at most %d times)",
                      file, rep->status, rep->location[0] ? rep->location : "nowhere",
                      HUB_HEAD_HOPS);
    snprintf(cur, sizeof cur, "%s", rep->location);
  }
  if (rep->status != 200 && !(rep->status >= 300 && rep->status < 400))
    return answer_failed(c, file, rep->status, err);
  size_t en = strlen(rep->etag);
  if ((en != 64 && en != 40) || !fdl_hex_lower(rep->etag, en))
    return fdl_fail(err, FDL_PARSE,
                    "%s: the endpoint's X-Linked-Etag/ETag is not a sha256 or a git blob id "
                    "(40 or 64 lowercase hex), so the file cannot be verified",
                    file);
  if (!rep->has_size || rep->size > HUB_FILE_MAX)
    return fdl_fail(err, FDL_PARSE,
                    "%s: the endpoint gave no size (X-Linked-Size or Content-Length) or one "
                    "above %" PRIu64 " bytes",
                    file, HUB_FILE_MAX);
  return FDL_OK;
}

/* Downloads url into the open, locked tmp (fd) until it holds size bytes. */
static fdl_status download(ctx *c, const char *url, const char *file, int fd, uint64_t size,
                           fdl_err *err) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fdl_fail(err, FDL_IO, "%s: cannot stat: %s", file, strerror(errno));
  sink_state w = {.c = c, .file = file, .fd = fd, .size = size, .err = err};
  w.have = (uint64_t)st.st_size;
  if (w.have > size) {
    if (ftruncate(fd, 0) != 0)
      return fdl_fail(err, FDL_IO, "%s: cannot truncate: %s", file, strerror(errno));
    w.have = 0;
  }
  if (w.have && w.have < size)
    notice(c, "%s: resuming at byte %" PRIu64 " of %" PRIu64, file, w.have, size);
  if (lseek(fd, (off_t)w.have, SEEK_SET) < 0)
    return fdl_fail(err, FDL_IO, "%s: cannot seek: %s", file, strerror(errno));
  bool restarted = false;
  for (int k = 0; w.have < size || size == 0; k++) {
    fdl_hub_reply rep;
    fdl_err e = {FDL_OK, ""};
    w.from = w.have;
    w.started = false;
    w.s = FDL_OK;
    w.err = &e;
    fdl_status s = fdl_hub_http_get(c->http, url, false, true, w.from, write_sink, &w, &rep, &e);
    if (w.s != FDL_OK) {
      *err = e;
      return w.s;
    }
    if (s == FDL_OK && (rep.status == 200 || rep.status == 206) && w.have == size) break;
    if (s == FDL_OK && rep.status == 416 && w.have == size) break;
    if (s == FDL_OK && !rep.retryable && rep.status != 200 && rep.status != 206) {
      if (rep.status == 416 && w.from && !restarted) { /* the partial file is not a prefix */
        restarted = true;
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
          return fdl_fail(err, FDL_IO, "%s: cannot restart: %s", file, strerror(errno));
        w.have = 0;
        continue;
      }
      return answer_failed(c, file, rep.status, err);
    }
    if (s != FDL_OK && s != FDL_IO) {
      *err = e;
      return s;
    }
    if (s == FDL_OK && !rep.retryable) { /* a short answer that ended cleanly */
      rep.retryable = true;
      snprintf(e.msg, sizeof e.msg, "the answer ended at byte %" PRIu64 " of %" PRIu64, w.have,
               size);
    }
    if (!again(c, file, k, &rep, &e)) {
      if (s == FDL_OK) return answer_failed(c, file, rep.status, err);
      *err = e;
      return fdl_err_prefix(
          err, "after %d tries (the partial download is kept and resumed next time)", k + 1);
    }
    if (size == 0) break;
  }
  if (fdl_sys_fsync(fd) != 0)
    return fdl_fail(err, FDL_IO, "%s: fsync failed: %s", file, strerror(errno));
  return FDL_OK;
}

/* snapshot/file -> ../(..)/blobs/etag, made under a temporary name and renamed into place. */
static fdl_status link_file(const char *snapshot, const char *file, const char *etag,
                            fdl_err *err) {
  char dst[PATH_MAX], tmp[PATH_MAX], dir[PATH_MAX], target[PATH_MAX];
  size_t depth = 0, t = 0;
  for (const char *p = file; *p; p++) depth += *p == '/';
  if (!fdl_path_join_to(snapshot, file, dst, sizeof dst) ||
      (size_t)snprintf(tmp, sizeof tmp, "%s.fidelis-link-%ld", dst, (long)getpid()) >= sizeof tmp ||
      3 * (depth + 2) + 7 + strlen(etag) >= sizeof target)
    return fdl_fail(err, FDL_BOUNDS, "%s: path too long for the cache", file);
  for (size_t i = 0; i < depth + 2; i++)
    t += (size_t)snprintf(target + t, sizeof target - t, "../");
  snprintf(target + t, sizeof target - t, "blobs/%s", etag);
  fdl_dirname(dst, dir, sizeof dir);
  fdl_status s = fdl_mkdirs(dir, err);
  if (s != FDL_OK) return s;
  (void)fdl_sys_unlinkat(AT_FDCWD, tmp, 0);
  if (symlink(target, tmp) != 0)
    return fdl_fail(err, FDL_IO, "%s: cannot make the snapshot's link: %s", tmp, strerror(errno));
  if (fdl_sys_rename(tmp, dst) != 0) {
    int e = errno;
    fdl_sys_unlinkat(AT_FDCWD, tmp, 0);
    return fdl_fail(err, FDL_IO, "%s: cannot put the snapshot's link in place: %s", dst,
                    strerror(e));
  }
  return FDL_OK;
}

static fdl_status fetch_file(ctx *c, const char *commit, const char *snapshot, const char *file,
                             fdl_err *err) {
  char url[HUB_FILE_URL_MAX], blob[PATH_MAX], tmp[PATH_MAX], blobs[PATH_MAX];
  fdl_buf u;
  fdl_buf_init(&u, sizeof url - 1);
  fdl_buf_printf(&u, "%s/%s%s/resolve/%s", c->endpoint,
                 c->ref->kind == FDL_HUB_DATASET ? "datasets/" : "", c->ref->repo, commit);
  for (const char *p = file; *p;) { /* each segment escaped, the '/' kept */
    size_t n = strcspn(p, "/");
    char seg[FDL_HUB_FILE_MAX + 1];
    memcpy(seg, p, n);
    seg[n] = '\0';
    char *esc = fdl_hub_http_escape(c->http, seg);
    fdl_buf_printf(&u, "/%s", esc ? esc : "");
    if (!esc) u.err = FDL_NOMEM;
    free(esc);
    p += n + (p[n] == '/');
  }
  fdl_status s = fdl_buf_status(&u);
  if (s == FDL_OK) memcpy(url, u.data, u.len + 1);
  fdl_buf_free(&u);
  if (s != FDL_OK) return fdl_fail(err, s, "%s: the file's URL is too long", file);
  fdl_hub_reply rep;
  if ((s = head_file(c, url, file, &rep, err)) != FDL_OK) return s;
  if (rep.repo_commit[0] && strcmp(rep.repo_commit, commit))
    return fdl_fail(err, FDL_MISMATCH, "%s: the endpoint answered for commit %s, but %s is at %s",
                    file, rep.repo_commit, c->text, commit);
  if ((size_t)snprintf(blobs, sizeof blobs, "%s/blobs", c->repo_dir) >= sizeof blobs ||
      !fdl_path_join_to(blobs, rep.etag, blob, sizeof blob) ||
      (size_t)snprintf(tmp, sizeof tmp, "%s.incomplete", blob) >= sizeof tmp)
    return fdl_fail(err, FDL_BOUNDS, "%s: the cache path is too long", blobs);
  if ((s = fdl_mkdirs(blobs, err)) != FDL_OK) return s;
  struct stat st;
  if (lstat(blob, &st) != 0 || !S_ISREG(st.st_mode)) {
    int fd = fdl_sys_open(tmp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd < 0) return fdl_fail(err, FDL_IO, "%s: cannot open: %s", tmp, strerror(errno));
    if (flock(fd, LOCK_EX) != 0) { /* another fidelis or Python process downloading it */
      close(fd);
      return fdl_fail(err, FDL_IO, "%s: cannot lock: %s", tmp, strerror(errno));
    }
    if (lstat(blob, &st) == 0 && S_ISREG(st.st_mode)) { /* it finished while we waited */
      close(fd);
    } else {
      s = download(c, url, file, fd, rep.size, err);
      if (s == FDL_OK && (s = fdl_hub_blob_verify_as(tmp, rep.etag, err)) != FDL_OK) {
        fdl_sys_unlinkat(AT_FDCWD, tmp, 0); /* wrong bytes are never resumed */
        fdl_err_prefix(err, "%s: refused, the download was removed", file);
      }
      if (s == FDL_OK && fdl_sys_rename(tmp, blob) != 0)
        s = fdl_fail(err, FDL_IO, "%s: cannot rename into place: %s", blob, strerror(errno));
      close(fd);
      if (s != FDL_OK) return s;
      c->r->fetched++;
      c->r->fetched_bytes += rep.size;
    }
  }
  return link_file(snapshot, file, rep.etag, err);
}

/* ---- resolution --------------------------------------------------------------------------- */

static fdl_status set_paths(ctx *c, const char *commit, fdl_err *err) {
  fdl_hub_result *r = c->r;
  memcpy(r->commit, commit, FDL_HUB_COMMIT_LEN + 1);
  size_t n = strlen(c->repo_dir) + sizeof "/snapshots/" + FDL_HUB_COMMIT_LEN;
  if (!(r->snapshot = fdl_malloc(n))) return fdl_fail(err, FDL_NOMEM, "out of memory");
  snprintf(r->snapshot, n, "%s/snapshots/%s", c->repo_dir, commit);
  r->path = c->ref->path[0] ? fdl_path_join(r->snapshot, c->ref->path) : fdl_strdup(r->snapshot);
  return r->path ? FDL_OK : fdl_fail(err, FDL_NOMEM, "out of memory");
}

static fdl_status from_network(ctx *c, fdl_err *err) {
  char *token = NULL;
  fdl_status s = fdl_hub_token(c->o->env, &token, err);
  if (s == FDL_OK) s = fdl_hub_http_open(c->endpoint, token, &c->http, err);
  fdl_hub_token_free(token);
  if (s != FDL_OK) return s;
  c->r->from_network = true;
  fdl_hub_revision rev;
  if ((s = get_revision(c, &rev, err)) != FDL_OK) return s;
  if (strcmp(c->ref->rev, rev.sha)) s = fdl_hub_write_ref(c->repo_dir, c->ref->rev, rev.sha, err);
  if (s == FDL_OK) s = set_paths(c, rev.sha, err);
  if (s == FDL_OK) s = fdl_mkdirs(c->r->snapshot, err);
  for (size_t i = 0; s == FDL_OK && i < rev.n; i++) {
    if (!wanted(c, rev.files[i])) continue;
    c->r->files++;
    if (!fdl_hub_snapshot_has(c->r->snapshot, rev.files[i]))
      s = fetch_file(c, rev.sha, c->r->snapshot, rev.files[i], err);
  }
  const char *missing = s == FDL_OK ? first_missing(c, c->r->snapshot) : NULL;
  if (missing)
    s = fdl_fail(err, FDL_IO, "%s: %s is not a file of %s at commit %s", c->text, missing,
                 c->ref->repo, rev.sha);
  fdl_hub_revision_free(&rev);
  return s;
}

fdl_status fdl_hub_resolve(const fdl_hub_ref *ref, const fdl_hub_opts *o, fdl_hub_result *r,
                           fdl_err *err) {
  memset(r, 0, sizeof *r);
  ctx c = {.ref = ref, .o = o, .r = r};
  fdl_status s = setup(&c, err);
  bool offline = o->offline || (o->env && env_true(o->env->offline));
  char commit[FDL_HUB_COMMIT_LEN + 1];
  bool cached = s == FDL_OK && fdl_hub_local_commit(c.repo_dir, ref->rev, commit);
  if (s == FDL_OK && cached && (offline || !o->always_ask)) {
    s = set_paths(&c, commit, err);
    const char *missing = s == FDL_OK ? first_missing(&c, r->snapshot) : NULL;
    if (s == FDL_OK && !missing) {
      count_files(&c, r->snapshot, "", 0, &r->files);
      free(c.cache);
      return FDL_OK;
    }
    if (s == FDL_OK && offline)
      s = fdl_fail(err, FDL_IO,
                   "%s: %s is not in the cache snapshot %s, and fetching is off (--offline or "
                   "HF_HUB_OFFLINE); fetch it where the endpoint is reachable",
                   c.text, missing, r->snapshot);
    if (s == FDL_OK) {
      free(r->snapshot);
      free(r->path);
      r->snapshot = r->path = NULL;
    }
  } else if (s == FDL_OK && offline) {
    s = fdl_fail(err, FDL_IO,
                 "%s: not in the cache (neither %s/refs/%s nor a snapshot of it), and fetching "
                 "is off (--offline or HF_HUB_OFFLINE); run `fidelis fetch %s` where the "
                 "endpoint is reachable",
                 c.text, c.repo_dir, ref->rev, c.text);
  }
  if (s == FDL_OK) s = from_network(&c, err);
  fdl_hub_http_close(c.http);
  free(c.cache);
  if (s != FDL_OK) fdl_hub_result_free(r);
  return s;
}

void fdl_hub_result_free(fdl_hub_result *r) {
  if (!r) return;
  free(r->snapshot);
  free(r->path);
  r->snapshot = r->path = NULL;
}
