/* path.c - PATH-1 rules for relative paths named in manifests and listings, and where a
 * command-line path is (to refuse an output inside an input). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/path.h"
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
  if (p) (void)fdl_path_join_to(dir, name, p, n);
  return p;
}

bool fdl_path_join_to(const char *dir, const char *name, char *out, size_t cap) {
  int n = snprintf(out, cap, "%s/%s", dir, name);
  return n >= 0 && (size_t)n < cap;
}

/* abs (absolute, no trailing '/') resolved as far as it exists; the rest lexically. */
static char *where_abs(const char *abs) {
  char *r = realpath(abs, NULL);
  if (r) return r;
  const char *slash = strrchr(abs, '/');
  const char *base = slash + 1;
  char *parent;
  if (slash == abs) {
    parent = fdl_malloc(2);
    if (parent) memcpy(parent, "/", 2);
  } else {
    char *head = fdl_strndup(abs, (size_t)(slash - abs));
    if (!head) return NULL;
    parent = where_abs(head);
    free(head);
  }
  if (!parent) return NULL;
  if (!*base || !strcmp(base, ".")) return parent;
  if (!strcmp(base, "..")) {
    char *up = strrchr(parent, '/');
    if (up == parent)
      up[1] = '\0';
    else
      *up = '\0';
    return parent;
  }
  char *out = strcmp(parent, "/") ? fdl_path_join(parent, base) : fdl_path_join("", base);
  free(parent);
  return out;
}

char *fdl_path_where(const char *path) {
  char *abs;
  if (path[0] == '/') {
    abs = fdl_strdup(path);
  } else {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return NULL;
    abs = strcmp(cwd, "/") ? fdl_path_join(cwd, path) : fdl_path_join("", path);
  }
  if (!abs) return NULL;
  /* No trailing '/' (and none doubled), so the last component is a name. */
  size_t n = 0;
  for (size_t i = 0; abs[i]; i++)
    if (!(abs[i] == '/' && n && abs[n - 1] == '/')) abs[n++] = abs[i];
  while (n > 1 && abs[n - 1] == '/') n--;
  abs[n] = '\0';
  char *r = where_abs(abs);
  free(abs);
  return r;
}

bool fdl_path_within(const char *inner, const char *outer) {
  size_t n = strlen(outer);
  if (n == 1 && outer[0] == '/') return inner[0] == '/';
  return !strncmp(inner, outer, n) && (inner[n] == '\0' || inner[n] == '/');
}

const char *fdl_path_base(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

void fdl_path_name_safe(char *s) {
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
          *s == '.' || *s == '_' || *s == '-'))
      *s = '-';
}

bool fdl_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !memcmp(s + n - m, suffix, m);
}
