/* base/lines.h - walking a text buffer line by line: the one splitter of checksums.txt and of
 * the JSON Lines panels. A line is the bytes before a '\n' (the last one may lack it); a blank
 * line is nothing but spaces, tabs or a CR, what Python's str.strip() would discard. */
#ifndef FDL_BASE_LINES_H
#define FDL_BASE_LINES_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
  const char *text;
  size_t len, pos;
  size_t lineno; /* 1-based number of the line last returned */
} fdl_lines;

static inline fdl_lines fdl_lines_of(const char *text, size_t len) {
  return (fdl_lines){text, len, 0, 0};
}

/* The next line, blank ones included, without its '\n'; false at the end of the text. */
bool fdl_lines_next(fdl_lines *it, const char **line, size_t *n);
bool fdl_line_blank(const char *s, size_t n);

#endif
