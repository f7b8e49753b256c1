/* json/json.h - strict JSON reading and Python-compatible canonical JSON writing.
 *
 * The private tier (docs/layers.tsv): jansson stays out of the installed headers, so the calls
 * on json_t trees are for the areas, the CLI, the tests and the fuzzers. Values are jansson
 * trees (json_t). The reader refuses what Python's json module and the
 * upstream tools refuse, and more: duplicate keys, NaN/Infinity, invalid UTF-8, a leading BOM,
 * trailing garbage, nesting deeper than a bound, integers outside int64. Ints and floats stay
 * distinct (json_integer vs json_real).
 *
 * The writer reproduces Python's
 *   json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=A, allow_nan=False)
 * byte for byte, and with FDL_JSON_PRETTY the file form json.dumps(..., indent=2) + "\n". */
#ifndef FIDELIS_JSON_H
#define FIDELIS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "fidelis/float_repr.h"
#include "fidelis/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Default nesting bound: deep enough for every upstream format, shallow enough for any stack. */
#define FDL_JSON_DEFAULT_MAX_DEPTH 64
/* Largest JSON document fidelis reads from a file (manifests, receipts). */
#define FDL_JSON_MAX_FILE_BYTES (256u * 1024u * 1024u)

typedef struct {
  int max_depth;    /* 0 means FDL_JSON_DEFAULT_MAX_DEPTH */
  bool kiln_strict; /* also refuse float literals that are not exactly their double's repr,
                       nonzero literals that underflow to 0; and read -0.0 as +0.0 (Kiln) */
  bool allow_nul;   /* accept \u0000 inside strings (json canon, as Python does); otherwise a
                       string holding U+0000 is refused: names and paths are C strings */
} fdl_json_read_opts;

/* Memory the reader may spend on a document of n bytes: FDL_JSON_MEM_FACTOR * n +
 * FDL_JSON_MEM_BASE, estimated from its values before any is built (jansson spends about 230
 * bytes on an empty object, so `[{},{},...]` would otherwise take 77 times its size). Above
 * it: FDL_TOO_LARGE, naming the counts. */
#define FDL_JSON_MEM_FACTOR 16u
#define FDL_JSON_MEM_BASE (64u * 1024u * 1024u)

/* Parses exactly one JSON value from buf[0..len). On success *out is a new reference. */
fdl_status fdl_json_parse(const char *buf, size_t len, const fdl_json_read_opts *opts, json_t **out,
                          fdl_err *err);
/* Reads and parses a file (at most FDL_JSON_MAX_FILE_BYTES); messages name the path. */
fdl_status fdl_json_load_file(const char *path, const fdl_json_read_opts *opts, json_t **out,
                              fdl_err *err);

enum {
  FDL_JSON_ASCII = 1u << 0,  /* ensure_ascii=True: \uXXXX (lowercase), surrogate pairs */
  FDL_JSON_PRETTY = 1u << 1, /* indent=2, ": " separator, trailing "\n" */
};

/* Appends the canonical text of v to out. Fails (FDL_NONFINITE) on NaN/Inf reals and
 * (FDL_INVALID) on strings that are not valid UTF-8. */
fdl_status fdl_json_dump(const json_t *v, unsigned flags, fdl_buf *out, fdl_err *err);
/* Writes the canonical text to a new file (staged, never overwrites). */
fdl_status fdl_json_write_file(const char *path, const json_t *v, unsigned flags, fdl_err *err);

/* Appends n integers to list: v holds int32_t when elem is 4, int64_t (or uint64_t, read as its
 * int64_t) when elem is 8. Gives list, or NULL with list released when list is NULL or memory
 * runs out, so a short array is never written. */
json_t *fdl_json_append_ints(json_t *list, const void *v, size_t n, size_t elem);

/* A value built by a run of sets or appends whose results were or-ed into bad: v itself, or NULL
 * (v released) when any of them failed, so a document short of a member is never written. v
 * may be NULL: a set on NULL fails and frees its value. */
static inline json_t *fdl_json_built(json_t *v, int bad) {
  if (!bad) return v;
  json_decref(v);
  return NULL;
}

/* A value built for the caller: on FDL_OK it becomes *out (the caller's reference), otherwise it
 * is released. Returns s. */
static inline fdl_status fdl_json_hand_over(fdl_status s, json_t *v, json_t **out) {
  if (s != FDL_OK) {
    json_decref(v);
    return s;
  }
  *out = v;
  return FDL_OK;
}

#ifdef __cplusplus
}
#endif
#endif
