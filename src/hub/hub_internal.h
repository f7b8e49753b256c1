/* hub_internal.h - internal to libfidelis: the parts of the Hub client behind fidelis/hub.h.
 *
 * One responsibility per file: ref.c (hf:// references and repository file names), cache.c
 * (where the cache is, what a snapshot is, the link rule), blob.c (a blob's bytes against its
 * name), policy.c (which hosts a request may go to and which get the token), token.c (where the
 * token comes from), revision.c (the revision API's JSON), http.c (one request through
 * libcurl, redirects judged hop by hop), fetch.c (resolution and downloads into the cache). */
#ifndef FDL_HUB_INTERNAL_H
#define FDL_HUB_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fidelis/hub.h"
#include "base/fs.h"

/* ---- ref.c -------------------------------------------------------------------------------- */

/* "models--ORG--NAME" or "datasets--ORG--NAME" into out (cap bytes); false when it does not fit. */
bool fdl_hub_repo_folder(const fdl_hub_ref *ref, char *out, size_t cap);
/* The reference written back as hf://..., for messages. */
void fdl_hub_ref_text(const fdl_hub_ref *ref, char *out, size_t cap);

/* ---- cache.c ------------------------------------------------------------------------------ */

/* huggingface_hub's home folder, $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
 * $HOME/.cache/huggingface, with "/name" after it, into out: snprintf's count, or -1 when none of
 * the three is set. The cache (name "hub") and the token file (name "token") live there. */
int fdl_hub_home_file(const fdl_hub_env *env, const char *name, char *out, size_t cap);

/* The commit rev names in the repository folder: rev itself when it is a commit with a
 * snapshot, else refs/<rev> when it holds a commit with a snapshot. */
bool fdl_hub_local_commit(const char *repo_dir, const char *rev,
                          char commit[FDL_HUB_COMMIT_LEN + 1]);
/* Whether s[0..n) is a repository's folder name in the cache: models--, datasets-- or spaces--
 * and more. */
bool fdl_hub_repo_folder_name(const char *s, size_t n);
/* Writes refs/<rev> = commit, staged and renamed into place. */
fdl_status fdl_hub_write_ref(const char *repo_dir, const char *rev, const char *commit,
                             fdl_err *err);
/* True when snapshot/name is a file of the snapshot: a regular file, or a link the link rule
 * accepts to a regular file. */
bool fdl_hub_snapshot_has(const char *snapshot, const char *name);

/* ---- blob.c ------------------------------------------------------------------------------- */

/* The file at path (any name) checked against want: 64 hex, its sha256; 40 hex, its git blob
 * id. FDL_MISMATCH naming both. */
fdl_status fdl_hub_blob_verify_as(const char *path, const char *want, fdl_err *err);

/* ---- policy.c ----------------------------------------------------------------------------- */

/* Where a URL goes: scheme, host (lowercase, at most 255 bytes) and port. */
typedef struct {
  bool https;
  char host[256];
  unsigned port;
} fdl_hub_origin;

/* Parses an absolute http(s) URL; FDL_INVALID otherwise (another scheme, no host, user info). */
fdl_status fdl_hub_origin_of(const char *url, fdl_hub_origin *o, fdl_err *err);
bool fdl_hub_same_origin(const fdl_hub_origin *a, const fdl_hub_origin *b);
/* Whether a request (a redirect) may go to target when the endpoint is ep: the endpoint's own
 * origin, or over https the Hub's hosts (huggingface.co, hf.co and their subdomains). Never a
 * step down from https to http. */
bool fdl_hub_host_allowed(const fdl_hub_origin *ep, const fdl_hub_origin *target);

/* ---- token.c ------------------------------------------------------------------------------ */

/* The token: $HF_TOKEN, else the file $HF_TOKEN_PATH, $HF_HOME/token or
 * ~/.cache/huggingface/token. *token NULL when there is none. A token that is not printable
 * ASCII without spaces is FDL_INVALID (the message never shows it). Release with
 * fdl_hub_token_free. */
fdl_status fdl_hub_token(const fdl_hub_env *env, char **token, fdl_err *err);
/* Wipes, then frees, a string that holds a credential (a token, an Authorization header). */
void fdl_hub_token_free(char *token);

/* ---- revision.c --------------------------------------------------------------------------- */

/* The most files a revision may list, and the most bytes its JSON may have. */
#define FDL_HUB_MAX_FILES 100000
#define FDL_HUB_MAX_REVISION_BYTES ((size_t)32 << 20)

typedef struct {
  char sha[FDL_HUB_COMMIT_LEN + 1];
  char **files; /* siblings[].rfilename, each checked by fdl_hub_file_name_ok */
  size_t n;
} fdl_hub_revision;

/* Parses GET /api/models/REPO/revision/REV: {"sha": 40 hex, "siblings": [{"rfilename": ...}]}.
 * FDL_PARSE naming what is wrong; a duplicated or unsafe file name is refused. */
fdl_status fdl_hub_revision_parse(const char *buf, size_t len, fdl_hub_revision *r, fdl_err *err);
void fdl_hub_revision_free(fdl_hub_revision *r);

/* ---- http.c ------------------------------------------------------------------------------- */

typedef struct fdl_hub_http fdl_hub_http;

typedef struct {
  long status;                              /* of the last hop */
  char repo_commit[FDL_HUB_COMMIT_LEN + 1]; /* X-Repo-Commit of the first hop, or "" */
  char etag[72];                            /* X-Linked-Etag, else ETag, of the first hop */
  uint64_t size;                            /* X-Linked-Size, else Content-Length (first) */
  bool has_size;
  uint64_t range_start; /* Content-Range of a 206 */
  bool has_range;
  unsigned retry_after; /* seconds, of a 429 or 503 */
  bool retryable;       /* a transport error or a status worth another try */
  char location[2048];  /* a redirect not followed: where it leads, resolved; else "" */
} fdl_hub_reply;

/* Gets the body bytes of a 2xx answer; returns false to stop the transfer. */
typedef bool (*fdl_hub_sink)(void *arg, const fdl_hub_reply *rep, const void *p, size_t n);

/* endpoint: the base URL every request starts from; token (may be NULL) is sent only to it. */
fdl_status fdl_hub_http_open(const char *endpoint, const char *token, fdl_hub_http **h,
                             fdl_err *err);
void fdl_hub_http_close(fdl_hub_http *h);
/* One request: GET (or HEAD), from byte `from` when > 0, redirects followed hop by hop (at most
 * 8) when follow, each judged by fdl_hub_host_allowed before any connection to it (FDL_PATH
 * otherwise). The status is in rep; FDL_IO for a transport error (rep->retryable says whether
 * trying again may help). The body of a non-2xx answer is dropped. */
fdl_status fdl_hub_http_get(fdl_hub_http *h, const char *url, bool head, bool follow, uint64_t from,
                            fdl_hub_sink sink, void *arg, fdl_hub_reply *rep, fdl_err *err);
/* True when url is at the endpoint's origin (where the token may go). */
bool fdl_hub_http_at_endpoint(const fdl_hub_http *h, const char *url);
/* URL-escapes one path segment into a new string (free()); NULL when out of memory. */
char *fdl_hub_http_escape(fdl_hub_http *h, const char *s);

#endif
