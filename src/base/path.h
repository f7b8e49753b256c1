/* base/path.h - the path rules every manifest and listing obeys (FIDELITY-DATASET §2.1). */
#ifndef FIDELIS_PATH_H
#define FIDELIS_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "fidelis/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* PATH-1 for a relative path string: refuses empty, absolute ('/' or '\\'), a ':' in the first
 * segment, "://", a path that normalises to "." or starts with "..". When allow_dotdot is false
 * any ".." segment is refused. Returns true when acceptable. */
bool fdl_relpath_ok(const char *path, size_t len, bool allow_dotdot);

/* dir + "/" + name, newly allocated (free()); NULL when out of memory. */
char *fdl_path_join(const char *dir, const char *name);
/* The same join into out[cap]; false (out cut) when it does not fit. */
bool fdl_path_join_to(const char *dir, const char *name, char *out, size_t cap);

/* Where a path, existing or not, is on this machine: an absolute path with every existing
 * prefix resolved by realpath (symlinks, "." and "..") and the rest appended with "." and ".."
 * applied lexically. Newly allocated (free()); NULL when out of memory or the working
 * directory cannot be read. */
char *fdl_path_where(const char *path);

/* The last component of path: what follows its last '/', or all of it when it has none (no OS
 * call, unlike basename(3); a trailing '/' leaves ""). */
const char *fdl_path_base(const char *path);

/* Makes s fit a dataset id or a label: every byte outside [A-Za-z0-9._-] becomes '-'. */
void fdl_path_name_safe(char *s);

/* True when the string s ends with suffix (a file or tensor name's extension or tail). */
bool fdl_ends_with(const char *s, const char *suffix);

/* True when inner is outer or lies below it (both as fdl_path_where gives them). */
bool fdl_path_within(const char *inner, const char *outer);

#ifdef __cplusplus
}
#endif
#endif
