/* fidelis/file.h - reading untrusted files and writing outputs that appear whole or not at all.
 *
 * Outputs are staged in a temporary file beside the target (same directory, O_EXCL, mode 0644),
 * fsynced, and linked into place only if the target does not exist; an existing output is never
 * overwritten. Inputs are mapped read-only; a zero-length file maps to a non-NULL empty view. */
#ifndef FIDELIS_FILE_H
#define FIDELIS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A read-only view of a whole file. */
typedef struct {
  const uint8_t *data; /* never NULL after a successful map */
  size_t size;
  void *priv_; /* private: the mapping, or NULL for an empty file */
} fdl_map;

/* Maps path read-only. Refuses directories, devices and symlinks (the final component). */
FDL_API fdl_status fdl_map_file(const char *path, fdl_map *m, fdl_err *err);
FDL_API void fdl_unmap(fdl_map *m);

/* Reads a whole file into a malloc'd NUL-terminated buffer, refusing files above max_bytes. */
FDL_API fdl_status fdl_read_file(const char *path, size_t max_bytes, char **out, size_t *len,
                                 fdl_err *err);

/* Reads an open regular file, freshly opened (its fstat size is what is read), into a
 * malloc'd NUL-terminated buffer; name is used in messages. The caller keeps and closes fd. */
FDL_API fdl_status fdl_read_fd(int fd, const char *name, size_t max_bytes, char **out, size_t *len,
                               fdl_err *err);

/* A staged output. */
typedef struct {
  int fd;         /* write here */
  char *path;     /* final path (owned) */
  char *tmp_path; /* temporary path (owned) */
} fdl_out;

/* Opens a temporary file beside path. FDL_EXISTS if path already exists. */
FDL_API fdl_status fdl_out_open(fdl_out *o, const char *path, fdl_err *err);
/* Writes all n bytes (retrying short writes). */
FDL_API fdl_status fdl_out_write(fdl_out *o, const void *p, size_t n, fdl_err *err);
/* fsyncs, then moves the temporary file onto the final path without overwriting; on any failure
 * the temporary file is removed and the target is untouched. Always releases o. */
FDL_API fdl_status fdl_out_commit(fdl_out *o, fdl_err *err);
/* Removes the temporary file and releases o. Safe to call after commit. */
FDL_API void fdl_out_abort(fdl_out *o);

/* Convenience: stage, write and commit one buffer. */
FDL_API fdl_status fdl_write_file(const char *path, const void *p, size_t n, fdl_err *err);

/* Moves a staged directory into place, refusing to replace an existing one. */
FDL_API fdl_status fdl_rename_noreplace(const char *from, const char *to, fdl_err *err);

/* True if path exists (as anything, including a dangling symlink). */
FDL_API bool fdl_path_exists(const char *path);

#ifdef __cplusplus
}
#endif
#endif
