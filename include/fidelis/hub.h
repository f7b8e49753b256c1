/* fidelis/hub.h - Hugging Face Hub inputs: hf://ORG/NAME@REV, the local Hugging Face cache read
 * in place, and fetching into that cache (docs/HUB.md).
 *
 * The cache is the one huggingface_hub keeps ($HF_HUB_CACHE, else $HF_HOME/hub, else
 * ~/.cache/huggingface/hub): a repository folder models--ORG--NAME holding refs/<branch> (the
 * commit a branch pointed at), blobs/<etag> (the bytes, named by their LFS sha256 or their git
 * blob id) and snapshots/<commit>/<path>, relative symbolic links into blobs/. fidelis reads a
 * snapshot where it is: a link is followed only when it leads to a regular file in the same
 * repository's blobs/, and a blob's bytes are checked against its name when read.
 *
 * Divisions: references; the cache; blobs; fetching. */
#ifndef FIDELIS_HUB_H
#define FIDELIS_HUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- references --------------------------------------------------------------------------- */

#define FDL_HUB_SCHEME "hf://"
/* Bounds of a reference's parts (the Hub's own limit on a name part is 96 characters). */
#define FDL_HUB_NAME_MAX 96
#define FDL_HUB_REV_MAX 128
#define FDL_HUB_FILE_MAX 1024
/* A commit: 40 lowercase hex digits. */
#define FDL_HUB_COMMIT_LEN 40

typedef enum { FDL_HUB_MODEL = 0, FDL_HUB_DATASET = 1 } fdl_hub_kind;

/* hf://[datasets/]ORG/NAME[@REV][/PATH]: a repository, a revision (a branch, a tag or a commit;
 * "main" when absent; no '/' in it) and optionally a file or folder inside it. */
typedef struct {
  fdl_hub_kind kind;
  char repo[2 * FDL_HUB_NAME_MAX + 2]; /* "ORG/NAME" */
  char rev[FDL_HUB_REV_MAX + 1];
  char path[FDL_HUB_FILE_MAX + 1]; /* "" for the whole repository */
} fdl_hub_ref;

/* True when s starts with hf://. */
FDL_API bool fdl_hub_is_uri(const char *s);
/* Parses uri; FDL_INVALID naming the part that is wrong (ORG and NAME: letters, digits, '-',
 * '_', '.', not starting with '.' or '-'; REV: the same set plus none of "..", ':' or '/';
 * PATH: relative, no "..", no empty part). */
FDL_API fdl_status fdl_hub_parse(const char *uri, fdl_hub_ref *ref, fdl_err *err);
/* A relative path inside a repository, as the Hub names files: non-empty, at most
 * FDL_HUB_FILE_MAX bytes, no leading '/', no empty, "." or ".." part, no backslash or control
 * byte. */
FDL_API bool fdl_hub_file_name_ok(const char *name, size_t n);

/* ---- the environment ---------------------------------------------------------------------- */

/* What the environment says, as the front end read it (the library reads no environment): each
 * the variable's value, or NULL when unset. huggingface_hub's variables, same meanings. */
typedef struct {
  const char *hub_cache;      /* HF_HUB_CACHE: the cache folder */
  const char *hf_home;        /* HF_HOME: the cache is $HF_HOME/hub, the token $HF_HOME/token */
  const char *xdg_cache_home; /* XDG_CACHE_HOME: else $XDG_CACHE_HOME/huggingface/... */
  const char *home;           /* HOME: else ~/.cache/huggingface/... */
  const char *endpoint;       /* HF_ENDPOINT: the Hub or a mirror */
  const char *token;          /* HF_TOKEN */
  const char *token_path;     /* HF_TOKEN_PATH: the token file */
  const char *offline;        /* HF_HUB_OFFLINE: 1, true, yes or on forbid the network */
} fdl_hub_env;

/* ---- the cache ---------------------------------------------------------------------------- */

/* The cache folder: override if not NULL, else HF_HUB_CACHE, HF_HOME/hub,
 * XDG_CACHE_HOME/huggingface/hub or HOME/.cache/huggingface/hub from env (may be NULL). Newly
 * allocated (free()). */
FDL_API fdl_status fdl_hub_cache_dir(const fdl_hub_env *env, const char *override, char **dir,
                                     fdl_err *err);

/* What a cache snapshot says about itself: for a directory at (or a path below)
 * <cache>/models--ORG--NAME/snapshots/<commit>, repo "ORG/NAME" and the commit; false for any
 * other path. */
FDL_API bool fdl_hub_snapshot_identity(const char *path, char repo[2 * FDL_HUB_NAME_MAX + 2],
                                       char commit[FDL_HUB_COMMIT_LEN + 1]);

/* The link rule of a snapshot, the one place it is decided: real (a resolved link target) may be
 * read as a file of the snapshot whose resolved directory is snap_real when it is a regular
 * file's path inside <repo>/blobs of that snapshot's repository. */
FDL_API bool fdl_hub_blob_target_ok(const char *snap_real, const char *real);

/* The one rule for a file of a model directory (config, index, shards, tokenizer, ...), in
 * every command: dir/name is a regular file, or a symlink that resolves to a regular file
 * inside dir or, when dir is a Hugging Face cache snapshot (<repo>/snapshots/<rev>), inside
 * <repo>/blobs. *path receives the path to open (resolved when it was a link; free()), or NULL
 * when dir/name does not exist. A link anywhere else is FDL_PATH naming where it leads, so
 * nothing from outside the model is read as part of it; a non-regular file is FDL_IO. */
FDL_API fdl_status fdl_model_member(const char *dir, const char *name, char **path, fdl_err *err);

/* A named file (the user typed path, real is its realpath): when path is a link inside a cache
 * snapshot, real must be a blob of that repository (FDL_PATH otherwise, as an escape) and its
 * bytes must match the blob's name (FDL_MISMATCH). Any other path: FDL_OK. */
FDL_API fdl_status fdl_hub_check_named(const char *path, const char *real, fdl_err *err);

/* ---- blobs -------------------------------------------------------------------------------- */

/* The digest a blob's name promises: 64 for an LFS sha256, 40 for a git blob id (sha1 of
 * "blob <size>\0" + bytes), 0 when real is not <repo folder>/blobs/<hex> (models--, datasets--).
 * hex receives the name (may be NULL). */
FDL_API int fdl_hub_blob_kind(const char *real, char hex[65]);
/* The bytes read from real, checked against its blob name (FDL_MISMATCH naming both digests);
 * FDL_OK at once when real is not a blob. */
FDL_API fdl_status fdl_hub_blob_check_buf(const char *real, const void *data, size_t len,
                                          fdl_err *err);
/* The same, reading the file (a separate pass, for readers that do not hash what they read). */
FDL_API fdl_status fdl_hub_blob_check_file(const char *real, fdl_err *err);
/* For a reader that already computed the file's sha256 (hex): an LFS blob is checked against
 * it; a git blob is read again. */
FDL_API fdl_status fdl_hub_blob_check_sha256(const char *real, const char *sha256_hex,
                                             fdl_err *err);
/* The git blob id of n bytes: sha1("blob <n>\0" + bytes), 40 hex digits and a NUL. */
FDL_API fdl_status fdl_hub_git_blob_id(const void *data, size_t n, char hex[41], fdl_err *err);

/* ---- fetching ----------------------------------------------------------------------------- */

/* Told as a file downloads: done of total bytes (total 0 when unknown); file is its name. */
typedef void (*fdl_hub_progress_fn)(void *arg, const char *file, uint64_t done, uint64_t total);

typedef struct {
  const fdl_hub_env *env;     /* the environment's values (NULL: none) */
  const char *endpoint;       /* NULL: env->endpoint, else https://huggingface.co */
  const char *cache;          /* NULL: fdl_hub_cache_dir's rule */
  bool offline;               /* never reach the network (also env->offline true) */
  const char *const *include; /* globs (fnmatch, '*' crosses '/'); NULL: every file */
  size_t n_include;
  bool always_ask;              /* contact the endpoint even when the snapshot is cached */
  fdl_hub_progress_fn progress; /* optional */
  void *progress_arg;
  fdl_notice_fn notice; /* optional: retries, resumed downloads */
  void *notice_arg;
} fdl_hub_opts;

typedef struct {
  char commit[FDL_HUB_COMMIT_LEN + 1];
  char *snapshot; /* <cache>/<repo folder>/snapshots/<commit> (free()) */
  char *path;     /* the snapshot, or the file or folder the reference names in it (free()) */
  size_t files;   /* files of the snapshot that match (present or fetched) */
  size_t fetched; /* of which downloaded now */
  uint64_t fetched_bytes;
  bool from_network; /* the endpoint was asked */
} fdl_hub_result;

/* The snapshot of ref: taken from the cache when it is there (refs/<rev>, or snapshots/<rev>
 * for a commit) unless always_ask; otherwise the revision is resolved to a commit by the
 * endpoint and the missing files (matching include, and ref->path when set) are downloaded into
 * the cache, each verified against its sha256 or git blob id. Offline, a snapshot or a file
 * that is not in the cache is FDL_IO naming it. */
FDL_API fdl_status fdl_hub_resolve(const fdl_hub_ref *ref, const fdl_hub_opts *o, fdl_hub_result *r,
                                   fdl_err *err);
FDL_API void fdl_hub_result_free(fdl_hub_result *r);

#ifdef __cplusplus
}
#endif
#endif
