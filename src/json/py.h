/* py.h - Python's semantics over parsed JSON (internal to libfidelis).
 *
 * The reference validator and comparator are Python: a missing key reads as None, `if x:` is
 * truthiness, `==` compares 63 and 63.0 as equal (also inside lists and dicts, and True == 1),
 * and messages show values with repr() or str(). Verdicts of validate and compare depend on
 * these rules, so both read them from here and nowhere else. A NULL json_t * is a missing key,
 * which Python's dict.get() reads as None. */
#ifndef FIDELIS_JSON_PY_H
#define FIDELIS_JSON_PY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* bool(v): None, false, 0, 0.0, "", [] and {} are false. */
bool fdl_py_truthy(const json_t *v);
/* a == b as Python compares the values json.load gives: int and float by exact value, bool as
 * the int 0/1, None only with None, containers element by element (dicts by key, any order). */
bool fdl_py_equal(const json_t *a, const json_t *b);
/* repr(v) into out (cap bytes, NUL-terminated): 'text', None, True, 63, 63.0, [1, 'a'],
 * {'k': 1}. Cut with "..." when it does not fit. */
void fdl_py_repr(const json_t *v, char *out, size_t cap);
/* A value as a message shows it: a string by the one quoting rule (base/quote.h: escaped,
 * cut at a character boundary with its full length), anything else as repr(). */
void fdl_py_shown(const json_t *v, char *out, size_t cap);
/* str(v): a string as it is, anything else as repr(v). Cut with "..." when it does not fit. */
void fdl_py_str(const json_t *v, char *out, size_t cap);

#endif
