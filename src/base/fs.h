/* base/fs.h - reading untrusted files and writing outputs that appear whole or not at all
 * (private tier: the library, the CLI, the tests; fs.c opens, resolves, makes and removes
 * directories and stages them, file.c maps, reads and writes files).
 *
 * This header is the one place for the library's file-system rules (docs/DATASET.md, "Files
 * and directories"): one regular-file open, one way to resolve a file the user named, one
 * dirname, one mkdir -p, one remove-tree, one staging directory. (A model directory's files,
 * which may be links into the Hugging Face cache: fdl_model_member in fidelis/hub.h.)
 *
 * Single files are staged in a temporary file beside the target (same directory, O_EXCL, mode
 * 0666 less the umask), fsynced, and linked into place only if the target does not exist; an
 * existing output is never overwritten. Whole outputs (a dataset, a receipt with its array, a
 * synthetic pair) are built in a staging directory and published by one no-replace rename.
 * Inputs are mapped read-only (fdl_map, public in fidelis/file.h); a zero-length file maps to a
 * non-NULL empty view. */
#ifndef FIDELIS_BASE_FS_H
#define FIDELIS_BASE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fidelis/file.h"
#include "fidelis/pool.h"
#include "fidelis/status.h"

/* ---- opening files ------------------------------------------------------------------------ */

/* Opens path read-only, non-blocking (so a FIFO cannot hang the open) and close-on-exec, and
 * refuses anything but a regular file (FIFO, device, socket, directory: FDL_IO). With follow
 * false a symbolic link as the last component is refused (FDL_PATH); with follow true it is
 * followed. *size receives the size at open (may be NULL). The caller closes *fd. */
fdl_status fdl_open_regular(const char *path, bool follow, int *fd, uint64_t *size, fdl_err *err);

/* A file the user named on the command line may be a symbolic link (a Hugging Face cache
 * snapshot links every file into blobs/): resolves every link in path once (realpath) into a
 * new string *resolved, to be opened with follow false and recorded as the provenance. Files
 * found inside a dataset are never resolved this way (PATH-4). FDL_IO when path cannot be
 * resolved (missing, a loop). Release *resolved with free(). */
fdl_status fdl_resolve_named(const char *path, char **resolved, fdl_err *err);

/* The rule for a file of a model directory (which may be a Hugging Face cache snapshot) is
 * fdl_model_member, in fidelis/hub.h. */

/* Maps path read-only. Refuses directories, devices and symlinks (the final component). A file
 * of at most FDL_MAP_COPY_MAX bytes is read into memory instead: on a virtual machine the page
 * faults of a fresh mapping cost more than copying a few megabytes (docs/PERFORMANCE.md). */
#define FDL_MAP_COPY_MAX ((size_t)16 << 20)
fdl_status fdl_map_file(const char *path, fdl_map *m, fdl_err *err);
/* Hands bytes [off, off + n) of a mapping back to the kernel (whole pages inside the range):
 * they leave the process's resident set and are read again from the file if touched. A reader
 * that moves forward through a file once calls it behind its cursor, so a file far larger than
 * memory is read with a bounded footprint. A no-op for a copied file (its bytes would be lost). */
void fdl_map_release(const fdl_map *m, size_t off, size_t n);
/* The same checks, but the file is always read into memory on huge pages, whatever its size: for
 * data that several threads stream many times (a model's weights), where reading a file mapping
 * of 4 KiB pages from two threads measured slower than from one (docs/PERFORMANCE.md). The
 * reading is spread over pool's workers (NULL: the calling thread alone). */
fdl_status fdl_map_file_resident(const char *path, fdl_pool *pool, fdl_map *m, fdl_err *err);
void fdl_unmap(fdl_map *m);

/* Reads a whole file into a malloc'd NUL-terminated buffer, refusing files above max_bytes. */
fdl_status fdl_read_file(const char *path, size_t max_bytes, char **out, size_t *len, fdl_err *err);

/* Reads an open regular file, freshly opened (its fstat size is what is read; a size of 0, as
 * /proc files report, is read to the end instead), into a
 * malloc'd NUL-terminated buffer; name is used in messages. The caller keeps and closes fd. */
fdl_status fdl_read_fd(int fd, const char *name, size_t max_bytes, char **out, size_t *len,
                       fdl_err *err);

/* A staged output. */
typedef struct {
  int fd;         /* write here */
  char *path;     /* final path (owned) */
  char *tmp_path; /* temporary path (owned) */
  bool staged;    /* inside a staging directory: made durable by fdl_stage_commit, not here */
} fdl_out;

/* Opens a temporary file beside path. FDL_EXISTS if path already exists. */
fdl_status fdl_out_open(fdl_out *o, const char *path, fdl_err *err);
/* Writes all n bytes (retrying short writes). */
fdl_status fdl_out_write(fdl_out *o, const void *p, size_t n, fdl_err *err);
/* fsyncs (unless the file is inside a staging directory, which fdl_stage_commit makes durable
 * as a whole: one syncfs instead of two flushes per file), then moves the temporary file onto
 * the final path without overwriting; on any failure
 * the temporary file is removed and the target is untouched. Always releases o. */
fdl_status fdl_out_commit(fdl_out *o, fdl_err *err);
/* Removes the temporary file and releases o. Safe to call after commit. */
void fdl_out_abort(fdl_out *o);

/* Convenience: stage, write and commit one buffer. */
fdl_status fdl_write_file(const char *path, const void *p, size_t n, fdl_err *err);

/* ---- directories -------------------------------------------------------------------------- */

/* The directory part of path into out: "a/b/c" and "a/b/c/" give "a/b", "/c" gives "/", and a
 * name without a slash gives "" (to open it, use "."). false when it does not fit in cap (out
 * is then ""). */
bool fdl_dirname(const char *path, char *out, size_t cap);

/* mkdir -p: creates path and any missing parents with mode 0777 less the umask; an existing
 * directory is fine, anything else in the way is FDL_IO. */
fdl_status fdl_mkdirs(const char *path, fdl_err *err);

/* rm -r of name inside the directory dirfd, never following a symbolic link (a link is removed,
 * not its target). Missing is fine. Keeps going past failures and reports the first. */
fdl_status fdl_remove_tree_at(int dirfd, const char *name, fdl_err *err);

/* ---- staging directories ------------------------------------------------------------------ */

/* Name prefix of every staging directory: hidden, and never a name a tool takes for an output.
 * The full name is FDL_STAGE_PREFIX "<pid>-<suffix>", pid being the owning process. */
#define FDL_STAGE_PREFIX ".fidelis-staging-"

/* fdl_stage_open flags */
#define FDL_STAGE_MAKE_PARENTS 1u /* create the parent of the target if needed (mkdir -p) */

/* Takes SIGINT, SIGTERM, SIGHUP and SIGQUIT away from every thread the process starts later
 * (the mask is inherited) and gives them to one waiting thread. When one arrives, that thread
 * removes every staging directory and temporary output file the process has open, then lets
 * the signal end the process as it would have (same signal, same status). A program calls it
 * once, first thing in main, before any thread exists; the CLI does. Returns false when the
 * thread cannot be started (the signals then act as before). */
bool fdl_cleanup_on_signals(void);

/* A whole output under construction. */
typedef struct {
  char *target;  /* final path (owned) */
  char *path;    /* the staging directory, beside target (owned); write the output here */
  int dirfd;     /* open on path; holds the owner's lock while the process lives */
  int parent_fd; /* the directory holding both */
} fdl_stage;

/* Refuses an existing target (as anything, including an empty directory or a dangling
 * symlink: FDL_EXISTS), then creates the staging directory beside it, mode 0777 less the umask.
 * Creating it is the check that the output can be written at all, so call this before any
 * heavy work. Before creating it, removes the staging directories in the same parent whose
 * owning process is gone (killed before it could clean up), telling notice about each. */
fdl_status fdl_stage_open(fdl_stage *st, const char *target, unsigned flags, fdl_notice_fn notice,
                          void *notice_arg, fdl_err *err);
/* Publishes the staging directory as target with one no-replace rename: the output appears
 * whole or not at all. On failure the staging directory is removed. Always releases st. */
fdl_status fdl_stage_commit(fdl_stage *st, fdl_err *err);
/* Removes the staging directory and releases st. Safe on a zeroed or committed st. */
void fdl_stage_abort(fdl_stage *st);

/* Moves a staged directory into place, refusing to replace an existing one. */
fdl_status fdl_rename_noreplace(const char *from, const char *to, fdl_err *err);

/* True if path exists (as anything, including a dangling symlink). */
bool fdl_path_exists(const char *path);

#endif
