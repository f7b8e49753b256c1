/* schema.h - one interpreter for the JSON schemas fidelis transcribes (internal to libfidelis).
 *
 * A schema is data: an object table (fdl_schema_obj) lists its fields (fdl_schema_field), each
 * a key, a type, flags (required, nullable, non-empty, bounds) and what the type takes: a
 * pattern, an enum list, bounds, item counts, the items' descriptor, a nested object table. A
 * table may be closed and may end with a C rule over the whole object; a RULE field puts a C rule
 * at its place in the order: the cross-field rules that are not a field's own.
 *
 * fdl_schema_check walks a parsed document against a table in one of two dialects. Findings (the
 * fidelity dataset's JSON Schema): every violation is reported, worded by the interpreter ("PATH:
 * is required", "PATH: 'x' is not one of [a, b]"); a closed table allows only its fields' keys.
 * First (Kiln's checker): the walk stops at the first violation, reported with the field's own
 * words (msg); a table with keys is closed Kiln's way, every key required, in the keys' order. */
#ifndef FIDELIS_JSON_SCHEMA_H
#define FIDELIS_JSON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "fidelis/status.h"

/* A path labels a finding; a longer one is cut. */
#define FDL_SCHEMA_PATH_CAP 256

typedef enum {
  FDL_SCHEMA_STR,   /* a string: flags NUL, MIN1; pattern */
  FDL_SCHEMA_INT,   /* an integer >= min (and <= max with MAX) */
  FDL_SCHEMA_NUM,   /* a number; first: finite, and bounded by MIN, XMIN, MAX */
  FDL_SCHEMA_BOOL,  /* a boolean */
  FDL_SCHEMA_NULL,  /* null only */
  FDL_SCHEMA_ENUM,  /* one of vals (a string) */
  FDL_SCHEMA_TRUE,  /* the boolean true */
  FDL_SCHEMA_FALSE, /* the boolean false */
  FDL_SCHEMA_OBJ,   /* an object: obj; with no key, the object itself against obj too */
  FDL_SCHEMA_ARR,   /* an array of min..max items (max 0: unbounded), each checked by items */
  FDL_SCHEMA_EACH, /* when an array, each item checked by items (an earlier ARR checked the rest) */
  FDL_SCHEMA_RULE  /* rule(value); with no key, rule(the object) */
} fdl_schema_type;

enum {
  FDL_SCHEMA_REQ = 1u,     /* findings: a missing key is a finding */
  FDL_SCHEMA_NUL = 2u,     /* null is allowed */
  FDL_SCHEMA_MIN1 = 4u,    /* a non-empty string */
  FDL_SCHEMA_MIN = 8u,     /* NUM: >= min */
  FDL_SCHEMA_XMIN = 16u,   /* NUM: > min */
  FDL_SCHEMA_MAX = 32u,    /* INT, NUM: <= max */
  FDL_SCHEMA_KEYMSG = 64u, /* first: reported at the object's path as "key: msg" */
  FDL_SCHEMA_TUPLE = 128u  /* ARR: item i checked by items[i] (prefixItems), max items */
};

/* A string pattern: a predicate and the words a finding says it wanted. */
typedef struct {
  bool (*ok)(const char *s, size_t n);
  const char *text;
} fdl_schema_pattern;

typedef struct fdl_schema_run fdl_schema_run;
typedef struct fdl_schema_obj fdl_schema_obj;

typedef struct fdl_schema_field {
  const char *key; /* NULL in an array's items descriptor and in an object RULE */
  unsigned char type, flags;
  const fdl_schema_pattern *pattern;    /* STR: NULL for any string */
  const char *const *vals;              /* ENUM: NULL-terminated */
  int64_t min, max;                     /* INT, NUM: bounds; ARR, RULE: item counts */
  const struct fdl_schema_field *items; /* ARR (NULL: any items), EACH */
  const fdl_schema_obj *obj;            /* OBJ */
  void (*rule)(fdl_schema_run *r, const struct fdl_schema_field *f, const json_t *v,
               const char *path); /* RULE */
  const char *msg; /* first: what a violation says, a format given (long long) min and max */
} fdl_schema_field;

struct fdl_schema_obj {
  const fdl_schema_field *fields;
  size_t n;
  bool closed;             /* findings: additionalProperties false, the fields' keys allowed */
  const char *const *keys; /* first: the closed key set, NULL-terminated (NULL: open) */
  /* The cross-field rules, after the fields (NULL: none). */
  void (*after)(fdl_schema_run *r, const json_t *o, const char *path);
};

/* Where findings go: bad(user, path, message). first: stop at the first; stop and status say
 * whether and why the walk stopped (a rule may stop it with another status). */
struct fdl_schema_run {
  void (*bad)(void *user, const char *path, const char *msg);
  void *user;
  bool first;
  bool stop;
  fdl_status status;
};

#define FDL_SCHEMA_N(a) (sizeof(a) / sizeof((a)[0]))
#define FDL_SCHEMA_TABLE(fields, closed, after)                                                    \
  { (fields), FDL_SCHEMA_N(fields), (closed), NULL, (after) }
#define FDL_SCHEMA_CLOSED(fields, ...)                                                             \
  { (fields), FDL_SCHEMA_N(fields), false, (const char *const[]){__VA_ARGS__, NULL}, NULL }
#define FDL_SCHEMA_OPEN(fields)                                                                    \
  { (fields), FDL_SCHEMA_N(fields), false, NULL, NULL }
#define FDL_SCHEMA_KEYS(...)                                                                       \
  { NULL, 0, false, (const char *const[]){__VA_ARGS__, NULL}, NULL }
/* A field, positional: key, type, flags, pattern, vals, min, max, items, obj, rule, msg. */
#define FDL_SF_FULL(k, t, fl, pat, v, lo, hi, it, o, fn, m)                                        \
  { k, t, fl, pat, v, lo, hi, it, o, fn, m }
#define FDL_SF_P(k, t, fl, pat, v, lo, hi, it, m)                                                  \
  FDL_SF_FULL(k, t, fl, pat, v, lo, hi, it, NULL, NULL, m)
#define FDL_SF_STR(k, fl, pat) FDL_SF_P(k, FDL_SCHEMA_STR, fl, pat, NULL, 0, 0, NULL, NULL)
#define FDL_SF_INT(k, fl, lo) FDL_SF_P(k, FDL_SCHEMA_INT, fl, NULL, NULL, lo, 0, NULL, NULL)
#define FDL_SF_NUM(k, fl) FDL_SF_P(k, FDL_SCHEMA_NUM, fl, NULL, NULL, 0, 0, NULL, NULL)
#define FDL_SF_BOOL(k, fl) FDL_SF_P(k, FDL_SCHEMA_BOOL, fl, NULL, NULL, 0, 0, NULL, NULL)
#define FDL_SF_NULL(k) FDL_SF_P(k, FDL_SCHEMA_NULL, 0, NULL, NULL, 0, 0, NULL, NULL)
#define FDL_SF_ENUM(k, fl, v) FDL_SF_P(k, FDL_SCHEMA_ENUM, fl, NULL, v, 0, 0, NULL, NULL)
#define FDL_SF_CONST(k, fl, s) FDL_SF_ENUM(k, fl, ((const char *const[]){s, NULL}))
#define FDL_SF_IS(k, b)                                                                            \
  FDL_SF_P(k, (b) ? FDL_SCHEMA_TRUE : FDL_SCHEMA_FALSE, 0, NULL, NULL, 0, 0, NULL, NULL)
#define FDL_SF_OBJ(k, fl, t)                                                                       \
  FDL_SF_FULL(k, FDL_SCHEMA_OBJ, fl, NULL, NULL, 0, 0, NULL, t, NULL, NULL)
#define FDL_SF_ARR(k, fl, lo, hi, it) FDL_SF_P(k, FDL_SCHEMA_ARR, fl, NULL, NULL, lo, hi, it, NULL)
#define FDL_SF_EACH(k, it) FDL_SF_P(k, FDL_SCHEMA_EACH, 0, NULL, NULL, 0, 0, it, NULL)
#define FDL_SF_RULE(k, fl, fn)                                                                     \
  FDL_SF_FULL(k, FDL_SCHEMA_RULE, fl, NULL, NULL, 0, 0, NULL, NULL, fn, NULL)

/* The fields of object o (at path, "" for the root) against t: closed keys, then each field in
 * table order, then t->after. */
void fdl_schema_check(fdl_schema_run *r, const json_t *o, const char *path,
                      const fdl_schema_obj *t);
/* One finding: "fmt" formatted, at path (first: the walk stops, FDL_INVALID). */
void fdl_schema_bad(fdl_schema_run *r, const char *path, const char *fmt, ...) FDL_PRINTF(3, 4);
/* Stops the walk with status s (a rule's failure that is not a finding; s already reported). */
void fdl_schema_stop(fdl_schema_run *r, fdl_status s);

#endif
