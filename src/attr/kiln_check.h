/* attr/kiln_check.h - the Kiln checker's shared walker (kiln*.c only, not installed): a context
 * that names the file, messages that name the JSON path, and the rules more than one record kind
 * uses (KILN-ATTRIBUTION.md §1, §5, §6, §8, §10, §14). */
#ifndef FIDELIS_ATTR_KILN_CHECK_H
#define FIDELIS_ATTR_KILN_CHECK_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <jansson.h>

#include "fidelis/digest.h"
#include "fidelis/kiln.h"
#include "fidelis/status.h"

typedef struct {
  const char *name; /* the file, as messages show it */
  fdl_err *err;
} fdl_kiln_ctx;

/* FDL_INVALID "NAME: PATH: message". */
fdl_status fdl_kiln_bad(const fdl_kiln_ctx *c, const char *path, const char *fmt, ...)
    FDL_PRINTF(3, 4);

/* jansson never reads a bool as an integer, so this is Kiln's "int, not bool" (§1). */
static inline bool fdl_kiln_is_int(const json_t *v) {
  return json_is_integer(v);
}

static inline bool fdl_kiln_is_sha(const json_t *v) {
  if (!json_is_string(v)) return false;
  const char *s = json_string_value(v);
  size_t n = json_string_length(v), p = sizeof FDL_SEAL_KILN_PREFIX - 1;
  return n == p + 64 && memcmp(s, FDL_SEAL_KILN_PREFIX, p) == 0 && fdl_hex_lower(s + p, 64);
}

static inline bool fdl_kiln_nonempty_str(const json_t *v) {
  return json_is_string(v) && json_string_length(v) > 0;
}

static inline bool fdl_kiln_str_eq(const json_t *v, const char *want) {
  return json_is_string(v) && json_string_length(v) == strlen(want) &&
         strcmp(json_string_value(v), want) == 0;
}

static inline bool fdl_kiln_finite_num(const json_t *v) {
  if (json_is_integer(v)) return true;
  return json_is_real(v) && isfinite(json_real_value(v));
}

static inline double fdl_kiln_num(const json_t *v) {
  return json_is_integer(v) ? (double)json_integer_value(v) : json_real_value(v);
}

/* The key set of obj is exactly keys[0..n). */
fdl_status fdl_kiln_closed(const fdl_kiln_ctx *c, const char *path, const json_t *obj,
                           const char *const *keys, size_t n);
#define FDL_CLOSED(c, path, obj, ...)                                                              \
  fdl_kiln_closed((c), (path), (obj), (const char *const[]){__VA_ARGS__},                          \
                  sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
/* An object of exactly the given keys, each a canonical digest. */
fdl_status fdl_kiln_digests(const fdl_kiln_ctx *c, const char *path, const json_t *o,
                            const char *const *keys, size_t n);
#define FDL_DIGESTS(c, path, obj, ...)                                                             \
  fdl_kiln_digests((c), (path), (obj), (const char *const[]){__VA_ARGS__},                         \
                   sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

fdl_status fdl_kiln_want_sha(const fdl_kiln_ctx *c, const char *path, const json_t *v);
fdl_status fdl_kiln_want_token(const fdl_kiln_ctx *c, const char *path, const json_t *v);
fdl_status fdl_kiln_want_tokens(const fdl_kiln_ctx *c, const char *path, const json_t *v, size_t lo,
                                size_t hi);
fdl_status fdl_kiln_want_positive(const fdl_kiln_ctx *c, const char *path, const json_t *v);
/* §14's _path_from_repository text rule: nonempty, no NUL, not absolute, no ".." component. */
fdl_status fdl_kiln_want_rel_path(const fdl_kiln_ctx *c, const char *path, const json_t *v);
/* A string member equal to want; names path.key. */
fdl_status fdl_kiln_want_const_str(const fdl_kiln_ctx *c, const char *path, const json_t *o,
                                   const char *key, const char *want);
/* An integer member in lo..hi. */
fdl_status fdl_kiln_want_int_in(const fdl_kiln_ctx *c, const char *path, const json_t *o,
                                const char *key, json_int_t lo, json_int_t hi);
/* A ".." component anywhere ("..", "../a", "a/..", "a/../b"); "a..b" is a plain name. */
bool fdl_kiln_has_dotdot(const char *s);

/* ---- the request (kiln_request.c, §5, §6) ---------------------------------------------------- */
fdl_status fdl_kiln_check_request(const fdl_kiln_ctx *c, const json_t *r);
fdl_status fdl_kiln_check_source_pair(const fdl_kiln_ctx *c, const char *path, const json_t *src);
fdl_status fdl_kiln_check_model_identity(const fdl_kiln_ctx *c, const char *path, const json_t *m);

/* ---- provenance blocks of v2 results (kiln_prov.c, §10, §12-§14) ---------------------------- */
fdl_status fdl_kiln_check_process(const fdl_kiln_ctx *c, const char *path, const json_t *pr);
fdl_status fdl_kiln_check_arm(const fdl_kiln_ctx *c, const char *path, const json_t *a,
                              const char *proc);
fdl_status fdl_kiln_check_v2_common(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_check_binary_request(const fdl_kiln_ctx *c, const json_t *doc);

/* ---- the record kinds ------------------------------------------------------------------------ */
/* HF evidence (§8; layer mode adds the four boundary keys) (kiln_oracle.c). */
fdl_status fdl_kiln_check_hf_evidence(const fdl_kiln_ctx *c, const char *path, const json_t *ev,
                                      bool layer);
fdl_status fdl_kiln_check_oracle_v1(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_check_oracle_v2(const fdl_kiln_ctx *c, const json_t *doc);
/* kiln_path.c */
fdl_status fdl_kiln_check_observed(const fdl_kiln_ctx *c, const char *path, const json_t *obs);
fdl_status fdl_kiln_check_comparison(const fdl_kiln_ctx *c, const char *path, const json_t *cmp,
                                     json_int_t hf_argmax);
fdl_status fdl_kiln_check_graph(const fdl_kiln_ctx *c, const char *path, const json_t *g);
fdl_status fdl_kiln_check_path_v1(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_check_path_v2(const fdl_kiln_ctx *c, const json_t *doc);
/* kiln_layer.c */
void fdl_kiln_boundary_name(size_t i, char *out, size_t cap);
fdl_status fdl_kiln_check_layer_v1(const fdl_kiln_ctx *c, const json_t *doc);
fdl_status fdl_kiln_check_layer_v2(const fdl_kiln_ctx *c, const json_t *doc);
/* kiln_fidelis.c */
fdl_status fdl_kiln_check_fidelis_attr(const fdl_kiln_ctx *c, const json_t *doc);

#endif
