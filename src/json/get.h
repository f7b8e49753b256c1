/* get.h - the one getter set over parsed JSON (internal to libfidelis).
 *
 * By key: o[key] read as one JSON type, where a key is the whole name (dots included). A
 * missing key, an o that is not an object and a value of another type read the same: NULL, or
 * false with *v untouched. Types are jansson's: an integer is not a real (63 vs 63.0) and a
 * bool is neither; Python's looser rules (truthiness, ==) are json/py.h's.
 *
 * By dotted path ("capture.vocab_size"): each step an object member; a missing step, or a step
 * below a non-object, reads as absent. An empty path is o itself. */
#ifndef FIDELIS_JSON_GET_H
#define FIDELIS_JSON_GET_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "fidelis/status.h"

const char *fdl_json_str(const json_t *o, const char *key);
json_t *fdl_json_obj(const json_t *o, const char *key);
json_t *fdl_json_arr(const json_t *o, const char *key);
/* An integer (not a real, not a bool). */
bool fdl_json_int(const json_t *o, const char *key, int64_t *v);
/* An integer or a real, as a double. */
bool fdl_json_num(const json_t *o, const char *key, double *v);
bool fdl_json_bool(const json_t *o, const char *key, bool *v);

/* The value at path, or NULL. */
const json_t *fdl_json_path(const json_t *o, const char *path);
/* The string at path, or NULL. */
const char *fdl_json_path_str(const json_t *o, const char *path);
/* The integer (int64) / number (integer or real) at path, or dflt. */
int64_t fdl_json_path_int(const json_t *o, const char *path, int64_t dflt);
double fdl_json_path_num(const json_t *o, const char *path, double dflt);
/* A deep copy of the value at path; JSON null when absent. NULL only when out of memory. */
json_t *fdl_json_path_copy(const json_t *o, const char *path);

/* A JSON array of integers, each in [lo, hi], into a new array (*out, *n; *out is never NULL on
 * FDL_OK, even for an empty array). FDL_PARSE: j is not such an array; FDL_NOMEM. The caller
 * writes the message: it knows what the array is. */
fdl_status fdl_json_int_array(const json_t *j, int64_t lo, int64_t hi, int64_t **out, size_t *n);

#endif
