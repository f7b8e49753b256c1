/* path.c - PATH-1 rules for relative paths named in manifests and listings. */
#include <stdio.h>
#include <string.h>

#include "fidelis/path.h"
#include "base/sys.h"

bool fdl_relpath_ok(const char *path, size_t len, bool allow_dotdot) {
  if (len == 0 || memchr(path, '\0', len)) return false;
  if (path[0] == '/' || path[0] == '\\') return false;
  for (size_t i = 0; i + 2 < len; i++)
    if (path[i] == ':' && path[i + 1] == '/' && path[i + 2] == '/') return false;
  /* Walk the '/'-separated segments, tracking depth below the root after normalisation. */
  long depth = 0;
  size_t i = 0;
  bool first = true;
  while (i <= len) {
    size_t j = i;
    while (j < len && path[j] != '/') j++;
    size_t n = j - i;
    const char *seg = path + i;
    if (first && memchr(seg, ':', n)) return false;
    if (n == 2 && seg[0] == '.' && seg[1] == '.') {
      if (!allow_dotdot) return false;
      if (--depth < 0) return false;
    } else if (!(n == 0 || (n == 1 && seg[0] == '.'))) {
      depth++;
    }
    first = false;
    i = j + 1;
  }
  return depth > 0;
}

char *fdl_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = fdl_malloc(n);
  if (p) snprintf(p, n, "%s/%s", dir, name);
  return p;
}
