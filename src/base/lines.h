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
  const char *line; /* the line last returned: n bytes, without its '\n' */
  size_t n;
  size_t lineno; /* its 1-based number */
} fdl_lines;

static inline fdl_lines fdl_lines_of(const char *text, size_t len) {
  return (fdl_lines){text, len, 0, NULL, 0, 0};
}

/* Moves to the next line that is not blank; false at the end of the text. Both readers skip
 * blank lines, so skipping them is written here once; lineno still counts them. */
bool fdl_lines_next(fdl_lines *it);

#endif
