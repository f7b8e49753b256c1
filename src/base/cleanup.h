/* cleanup.h - what a stopping signal must not leave behind: the staging that
 * fdl_cleanup_on_signals (base/fs.h) removes. */
#ifndef FDL_BASE_CLEANUP_H
#define FDL_BASE_CLEANUP_H

#include <stdbool.h>

/* Between fdl_cleanup_hold and fdl_cleanup_release a stopping signal's sweep waits: a path
 * created and registered (fdl_cleanup_add_held) in between is never missed by a signal that
 * arrives after it exists. Keep the held stretch short (a create and its registration). */
void fdl_cleanup_hold(void);
/* Registers path (a staging directory when dir, else a temporary file) for removal on those
 * signals, until fdl_cleanup_forget(path). Best effort: a full list skips the path (a later
 * run's sweep still finds a staging directory of a process that is gone). */
void fdl_cleanup_add_held(const char *path, bool dir);
void fdl_cleanup_release(void);
void fdl_cleanup_forget(const char *path);

#endif
