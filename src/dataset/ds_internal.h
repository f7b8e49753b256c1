/* ds_internal.h - helpers shared by the dataset module (not installed).
 *
 * Divisions: rooted file access (never follows a symlink below the root); JSON getters with
 * Python truthiness; path resolution; parallel hashing jobs; manifest checks shared by validate
 * and pack. */
#ifndef FIDELIS_DS_INTERNAL_H
#define FIDELIS_DS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/fs.h"
#include "fidelis/dataset.h"
#include "fidelis/digest.h"
#include "fidelis/status.h"
#include "fidelis/tensor.h"
#include "json/get.h"
#include "json/py.h"
#include "dataset/dataset_json.h"

#define DS_HEX_LEN FDL_SHA256_HEX_LEN
/* Largest relative path a dataset may name (the checksums parser has its own, similar bound). */
#define DS_MAX_PATH 4096
/* Deepest directory nesting walked below a dataset root. */
#define DS_MAX_DEPTH 64
/* Most files a dataset root may hold: far above any real panel, low enough to bound memory. */
#define DS_MAX_FILES ((size_t)1 << 24)
/* Largest small file (token list, mask, README) read whole. */
#define DS_MAX_SMALL_FILE ((size_t)64 << 20)
/* Largest checksums.txt read: some ten million lines of about 100 bytes, far above any real
 * dataset, while a runaway file is refused before it exhausts memory. */
#define DS_MAX_CHECKSUMS_BYTES ((size_t)1 << 30)

/* ---- rooted file access ------------------------------------------------------------------ */

typedef enum { DS_ABSENT = 0, DS_REGULAR, DS_DIRECTORY, DS_SYMLINK, DS_OTHER } ds_kind;

/* Opens rel (a PATH-1-clean relative path) below rootfd one component at a time with
 * O_NOFOLLOW, so no symlink anywhere on the way is followed. FDL_PATH for a symlink or a path
 * that is not relative-and-inside; FDL_IO (with *missing true when it does not exist) else. */
fdl_status fdl_ds_open_at(int rootfd, const char *rel, int *fd, bool *missing, fdl_err *err);
/* What rel is, without following a final symlink (intermediate symlinks read as DS_SYMLINK). */
ds_kind fdl_ds_kind_at(int rootfd, const char *rel);
/* Reads a whole regular file (at most max bytes) into a NUL-terminated malloc'd buffer. */
fdl_status fdl_ds_read_at(int rootfd, const char *rel, size_t max, char **out, size_t *len,
                          bool *missing, fdl_err *err);
/* Reads and strictly parses a JSON file below rootfd. */
fdl_status fdl_ds_load_json_at(int rootfd, const char *rel, json_t **out, bool *missing,
                               fdl_err *err);
/* SHA-256 of a whole file below rootfd (size optional). */
fdl_status fdl_ds_sha256_at(int rootfd, const char *rel, char *hex, uint64_t *size, fdl_err *err);

/* Every entry found below a root. */
typedef struct {
  char **files; /* regular files, '/'-separated relative paths, sorted */
  size_t n_files;
  char **symlinks; /* symlinks (file or directory), never entered */
  size_t n_symlinks;
  char **others; /* fifos, sockets, devices */
  size_t n_others;
  size_t cap_[3];
  char fail_at[DS_MAX_PATH]; /* after a failed walk: the entry it stopped at ("" = the root) */
} ds_tree;

/* Walks the tree below rootfd, never following a symlink. FDL_TOO_LARGE past DS_MAX_FILES or
 * DS_MAX_DEPTH. On failure the lists are empty and t->fail_at names the entry. */
fdl_status fdl_ds_tree_walk(int rootfd, ds_tree *t, fdl_err *err);
void fdl_ds_tree_free(ds_tree *t);
/* Binary search in the sorted file list. */
bool fdl_ds_tree_has(const ds_tree *t, const char *rel);

/* Credential guard of §2.1: true when publishing rel would disclose a secret. */
bool fdl_ds_is_credential(const char *rel);

/* ---- JSON ------------------------------------------------------------------------------ */

/* The manifest decoder (model.c): the one place the top manifest's fields are read into
 * fdl_ds_manifest, for fdl_dataset_load and validate's rules. Never fails. */
void fdl_ds_manifest_decode(const json_t *m, fdl_ds_manifest *d);
/* The getters are json/get.h's; Python's truthiness, == and repr() json/py.h's (both included
 * above), the same rules compare uses. */

/* ---- paths ------------------------------------------------------------------------------- */

/* Joins rel onto the directory base ("" for the root) and normalises "." and ".." segments.
 * False when the result is empty, the root itself, or outside the root. */
bool fdl_ds_join_norm(const char *base, const char *rel, char *out, size_t cap);

/* ---- hashing jobs ------------------------------------------------------------------------ */

typedef struct {
  const char *rel; /* below the root (borrowed) */
  uint64_t offset; /* first byte */
  uint64_t length; /* bytes to hash; UINT64_MAX = to the end of the file */
  /* An optional second range of the same file, hashed from the same reads: a tensor file's
   * content range next to its whole-file digest costs no second read. */
  bool has2;
  uint64_t offset2, length2;
  /* With scan set, the second range (elements of scan_dtype: F16, BF16, F32 or F64) is also
   * searched for non-finite values in the same read. */
  bool scan;
  fdl_dtype scan_dtype;
  /* results */
  char hex[DS_HEX_LEN + 1];
  char hex2[DS_HEX_LEN + 1];
  uint64_t file_size;
  fdl_status status;
  char msg[256];         /* why status is not FDL_OK */
  bool nonfinite;        /* the scan met a NaN or an infinity */
  uint64_t nonfinite_at; /* its element index inside the second range */
  uint8_t carry_[8];     /* scan state: a partial element split across two reads */
  size_t carry_n_;
  uint64_t scanned_; /* elements scanned so far */
} ds_hash_job;

/* Hashes every job, largest first, on up to `threads` threads (0: one per online CPU). Each
 * job's own failure lands in the job; the return value is an error only for a fault of the
 * run (out of memory, no thread could start). */
fdl_status fdl_ds_hash_jobs_run(int rootfd, ds_hash_job *jobs, size_t n, unsigned threads,
                                fdl_err *err);

/* ---- shared checks ----------------------------------------------------------------------- */

/* JSON-Schema layer of fidelity-dataset.schema.json (rule SCHEMA), one finding per violation. */
void fdl_ds_check_manifest_schema(const json_t *manifest, fdl_ds_report *rep);
/* PATH-1/PATH-3 over every path-valued key of doc, carried by the file `where`. */
void fdl_ds_walk_paths(const json_t *doc, const char *where, fdl_ds_report *rep);

/* Seal helpers: the fidelity recipe, field blanked to "". */
fdl_status fdl_ds_seal(json_t *doc, const char *field, fdl_err *err);
/* FDL_OK and *ok when the document's field recomputes; *present false when the field is absent
 * or not a string. */
fdl_status fdl_ds_seal_ok(const json_t *doc, const char *field, bool *ok, bool *present,
                          fdl_err *err);

/* Scored-row selection (§7.3): row i predicts token i+1 and is kept when mask[i] and mask[i+1]
 * are nonzero and i >= score_from. mask NULL means all ones. Returns the kept count and, when
 * rows is non-NULL, writes the kept row numbers. */
int64_t fdl_ds_scored_rows(const uint8_t *mask, int64_t len, int64_t score_from, int64_t *rows);

/* Reads an attention-mask .npy into a 0/1 byte array (dtypes |b1 |u1 |i1 <i4 <i8, 1-D or
 * [1, L]). */
fdl_status fdl_ds_mask_from_npy(const void *data, size_t size, const char *label, uint8_t **mask,
                                int64_t *len, fdl_err *err);

/* A mask file: an .npy array, or (the reference dataset builder's layout) the raw little-endian
 * bytes of num_tokens int64 or uint8 values with no header, accepted only when its size is
 * exactly that and every value is 0 or 1 (*headerless then true). */
fdl_status fdl_ds_mask_load(const char *bytes, size_t len, int64_t num_tokens, const char *rel,
                            uint8_t **mask, int64_t *mlen, bool *headerless, fdl_err *err);

#endif
