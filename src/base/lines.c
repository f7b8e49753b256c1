/* lines.c - the line splitter of lines.h. */
#include <string.h>

#include "base/lines.h"

bool fdl_lines_next(fdl_lines *it, const char **line, size_t *n) {
  if (it->pos >= it->len) return false;
  const char *p = it->text + it->pos, *nl = memchr(p, '\n', it->len - it->pos);
  *line = p;
  *n = nl ? (size_t)(nl - p) : it->len - it->pos;
  it->pos += *n + (nl ? 1 : 0);
  it->lineno++;
  return true;
}

bool fdl_line_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return false;
  return true;
}
