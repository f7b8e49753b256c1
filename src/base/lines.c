/* lines.c - the line splitter of lines.h. */
#include <string.h>

#include "base/lines.h"

static bool blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
  return true;
}

bool fdl_lines_next(fdl_lines *it) {
  do {
    if (it->pos >= it->len) return false;
    const char *p = it->text + it->pos, *nl = memchr(p, '\n', it->len - it->pos);
    it->line = p;
    it->n = nl ? (size_t)(nl - p) : it->len - it->pos;
    it->pos += it->n + (nl ? 1 : 0);
    it->lineno++;
  } while (blank(it->line, it->n));
  return true;
}
