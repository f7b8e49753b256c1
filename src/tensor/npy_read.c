/* npy_read.c - reading .npy files (format 1.0 and 2.0, C order, little-endian) strictly.
 *
 * numpy evaluates the header dict as a Python literal; fidelis instead parses the one shape of
 * literal numpy and other writers produce: {'descr': STR, 'fortran_order': BOOL, 'shape': TUPLE}
 * in any key order, each key once, spaces or tabs between tokens, an optional trailing comma,
 * then space padding and a final '\n'. Python-2-era "3L" integers are accepted (numpy still
 * reads them); anything else a Python literal allows is refused.
 *
 * Divisions: the descr table; the dict parser; open/close. */
#include <stdlib.h>
#include <string.h>

#include "fidelis/tensor.h"
#include "tensor/tensor_internal.h"
#include "base/sys.h"

/* Longer than any header numpy writes for a supported dtype (its own reader stops at 10000). */
#define NPY_MAX_HEADER 65536u
#define MEM_LABEL "<memory>"

struct fdl_npy {
  fdl_map map;  /* the file, when opened by path */
  bool mapped;  /* map must be released on close */
  fdl_tensor t; /* the array */
};

/* ---- descr table ------------------------------------------------------------------------- */

/* One-byte types carry no byte order: numpy writes '|' and accepts '<'. */
static const struct {
  char kind;
  int size;
  fdl_dtype dtype;
} DESCRS[] = {
    {'b', 1, FDL_DTYPE_BOOL}, {'u', 1, FDL_DTYPE_U8},  {'i', 1, FDL_DTYPE_I8},
    {'u', 2, FDL_DTYPE_U16},  {'i', 2, FDL_DTYPE_I16}, {'u', 4, FDL_DTYPE_U32},
    {'i', 4, FDL_DTYPE_I32},  {'u', 8, FDL_DTYPE_U64}, {'i', 8, FDL_DTYPE_I64},
    {'f', 2, FDL_DTYPE_F16},  {'f', 4, FDL_DTYPE_F32}, {'f', 8, FDL_DTYPE_F64},
};

static fdl_status parse_descr(const char *s, size_t n, const char *file, fdl_dtype *out,
                              fdl_err *err) {
  char shown[FDL_QUOTE_CAP];
  fdl_quote(s, n, shown, sizeof shown);
  if (n == 3 && s[0] == '>' && s[2] != '1')
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: descr %s is big-endian (only little-endian arrays are read)", file, shown);
  if (n == 3 && (s[0] == '<' || s[0] == '|' || s[0] == '>') && s[2] >= '1' && s[2] <= '8') {
    int size = s[2] - '0';
    bool order_ok = size == 1 || s[0] == '<';
    for (size_t i = 0; order_ok && i < sizeof DESCRS / sizeof DESCRS[0]; i++) {
      if (DESCRS[i].kind == s[1] && DESCRS[i].size == size) {
        *out = DESCRS[i].dtype;
        return FDL_OK;
      }
    }
  }
  return fdl_fail(err, FDL_UNSUPPORTED,
                  "%s: unsupported descr %s (expected a little-endian bool, integer or float "
                  "such as '<f8', '<f4', '<f2', '<i8', '|u1', '|b1')",
                  file, shown);
}

/* ---- the dict parser --------------------------------------------------------------------- */

typedef struct {
  const char *p, *end;
  const char *file;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

static bool eat(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

static fdl_status bad_dict(cursor *c, const char *what, fdl_err *err) {
  return fdl_fail(err, FDL_PARSE, "%s: header dict: %s", c->file, what);
}

/* A quoted string without escapes; s/n point into the header. */
static bool parse_str(cursor *c, const char **s, size_t *n) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
  char q = *c->p++;
  const char *start = c->p;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || (unsigned char)*c->p < 0x20) return false;
    c->p++;
  }
  if (c->p >= c->end) return false;
  *s = start;
  *n = (size_t)(c->p - start);
  c->p++;
  return true;
}

static bool parse_dim(cursor *c, int64_t *out) {
  skip_ws(c);
  const char *start = c->p;
  uint64_t v = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    if (__builtin_mul_overflow(v, 10u, &v) ||
        __builtin_add_overflow(v, (uint64_t)(*c->p - '0'), &v))
      return false;
    c->p++;
  }
  size_t digits = (size_t)(c->p - start);
  if (digits == 0 || (digits > 1 && *start == '0') || v > (uint64_t)INT64_MAX) return false;
  if (c->p < c->end && *c->p == 'L') c->p++;
  *out = (int64_t)v;
  return true;
}

static fdl_status parse_shape(cursor *c, fdl_tensor *t, fdl_err *err) {
  if (!eat(c, '(')) return bad_dict(c, "'shape' is not a tuple", err);
  t->ndim = 0;
  if (eat(c, ')')) return FDL_OK;
  for (;;) {
    if (t->ndim == FDL_MAX_DIMS)
      return fdl_fail(err, FDL_UNSUPPORTED, "%s: shape has more than %d dimensions", c->file,
                      FDL_MAX_DIMS);
    if (!parse_dim(c, &t->shape[t->ndim]))
      return bad_dict(c, "shape entries must be non-negative decimal integers below 2^63", err);
    t->ndim++;
    bool comma = eat(c, ',');
    if (eat(c, ')')) {
      /* (5) is the integer 5 in Python, not a tuple. */
      if (t->ndim == 1 && !comma) return bad_dict(c, "a 1-tuple shape needs a comma: (N,)", err);
      return FDL_OK;
    }
    if (!comma) return bad_dict(c, "expected ',' or ')' in shape", err);
  }
}

static fdl_status parse_value(cursor *c, int key, bool *fortran, fdl_tensor *t, fdl_err *err) {
  if (key == 0) {
    const char *s;
    size_t n;
    skip_ws(c);
    if (c->p < c->end && *c->p == '[')
      return fdl_fail(err, FDL_UNSUPPORTED, "%s: structured dtypes are not supported", c->file);
    if (!parse_str(c, &s, &n)) return bad_dict(c, "'descr' is not a string", err);
    return parse_descr(s, n, c->file, &t->dtype, err);
  }
  if (key == 1) {
    skip_ws(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && !memcmp(c->p, "True", 4)) {
      *fortran = true;
      c->p += 4;
    } else if (left >= 5 && !memcmp(c->p, "False", 5)) {
      *fortran = false;
      c->p += 5;
    } else {
      return bad_dict(c, "'fortran_order' is not True or False", err);
    }
    return FDL_OK;
  }
  return parse_shape(c, t, err);
}

static fdl_status parse_dict(cursor *c, fdl_tensor *t, fdl_err *err) {
  static const char *const KEYS[3] = {"descr", "fortran_order", "shape"};
  bool seen[3] = {false, false, false};
  bool fortran = false;
  if (!eat(c, '{')) return bad_dict(c, "does not start with '{'", err);
  for (;;) {
    if (eat(c, '}')) break;
    const char *k;
    size_t kn;
    if (!parse_str(c, &k, &kn)) return bad_dict(c, "expected a quoted key or '}'", err);
    int key = -1;
    for (int i = 0; i < 3; i++)
      if (kn == strlen(KEYS[i]) && !memcmp(k, KEYS[i], kn)) key = i;
    if (key < 0) {
      char shown[FDL_QUOTE_CAP];
      fdl_quote(k, kn, shown, sizeof shown);
      return fdl_fail(err, FDL_PARSE,
                      "%s: header dict: unknown key %s (expected descr, fortran_order, shape)",
                      c->file, shown);
    }
    if (seen[key])
      return fdl_fail(err, FDL_PARSE, "%s: header dict: key '%s' appears twice", c->file,
                      KEYS[key]);
    seen[key] = true;
    if (!eat(c, ':')) return bad_dict(c, "expected ':' after a key", err);
    fdl_status s = parse_value(c, key, &fortran, t, err);
    if (s != FDL_OK) return s;
    if (eat(c, ',')) continue;
    if (eat(c, '}')) break;
    return bad_dict(c, "expected ',' or '}' after a value", err);
  }
  skip_ws(c);
  if (c->p != c->end) return bad_dict(c, "unexpected text after '}'", err);
  if (!seen[0] || !seen[1] || !seen[2])
    return bad_dict(c, "missing one of the keys descr, fortran_order, shape", err);
  if (fortran)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: fortran_order is True (only C-order arrays are read)", c->file);
  return FDL_OK;
}

/* ---- open -------------------------------------------------------------------------------- */

static fdl_status parse_file(const uint8_t *p, size_t size, const char *file, fdl_tensor *t,
                             fdl_err *err) {
  static const uint8_t MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10)
    return fdl_fail(err, FDL_BOUNDS, "%s: %zu bytes is too short for .npy", file, size);
  if (memcmp(p, MAGIC, 6) != 0)
    return fdl_fail(err, FDL_PARSE, "%s: not an .npy file (magic \\x93NUMPY expected)", file);
  uint64_t hlen, start;
  if (p[6] == 1 && p[7] == 0) {
    hlen = (uint64_t)p[8] | (uint64_t)p[9] << 8;
    start = 10;
  } else if (p[6] == 2 && p[7] == 0) {
    if (size < 12) return fdl_fail(err, FDL_BOUNDS, "%s: truncated .npy 2.0 preamble", file);
    hlen = (uint64_t)p[8] | (uint64_t)p[9] << 8 | (uint64_t)p[10] << 16 | (uint64_t)p[11] << 24;
    start = 12;
  } else {
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: .npy format version %u.%u (1.0 or 2.0 expected)",
                    file, p[6], p[7]);
  }
  if (hlen > NPY_MAX_HEADER)
    return fdl_fail(err, FDL_BOUNDS, "%s: header length %llu exceeds the %u-byte limit", file,
                    (unsigned long long)hlen, NPY_MAX_HEADER);
  if (hlen == 0 || start + hlen > size)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: header of %llu bytes does not fit in the %zu-byte file (truncated?)", file,
                    (unsigned long long)hlen, size);
  if (p[start + hlen - 1] != '\n')
    return fdl_fail(err, FDL_PARSE, "%s: header does not end with a newline", file);
  cursor c = {(const char *)p + start, (const char *)p + start + hlen - 1, file};
  fdl_status s = parse_dict(&c, t, err);
  if (s != FDL_OK) return s;
  uint64_t numel, nbytes;
  if (!fdl_shape_nbytes(t->dtype, t->ndim, t->shape, &numel, &nbytes))
    return fdl_fail(err, FDL_BOUNDS, "%s: shape product times the element size overflows", file);
  uint64_t have = size - (start + hlen);
  if (have != nbytes)
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: data is %llu bytes but shape x %s needs %llu elements = %llu bytes", file,
                    (unsigned long long)have, fdl_dtype_name(t->dtype), (unsigned long long)numel,
                    (unsigned long long)nbytes);
  t->name = "";
  t->offset = start + hlen;
  t->nbytes = nbytes;
  t->data = p + t->offset;
  return FDL_OK;
}

fdl_status fdl_npy_open_mem(const void *data, size_t size, fdl_npy **out, fdl_err *err) {
  static const uint8_t empty[1] = {0};
  fdl_npy *n = fdl_calloc(1, sizeof *n);
  if (!n) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", MEM_LABEL);
  fdl_status s = parse_file(data ? data : empty, data ? size : 0, MEM_LABEL, &n->t, err);
  if (s != FDL_OK) {
    free(n);
    return s;
  }
  *out = n;
  return FDL_OK;
}

fdl_status fdl_npy_open(const char *path, fdl_npy **out, fdl_err *err) {
  fdl_npy *n = fdl_calloc(1, sizeof *n);
  if (!n) return fdl_fail(err, FDL_NOMEM, "%s: out of memory", path);
  fdl_status s = fdl_map_file(path, &n->map, err);
  if (s != FDL_OK) {
    free(n);
    return s;
  }
  n->mapped = true;
  s = parse_file(n->map.data, n->map.size, path, &n->t, err);
  if (s != FDL_OK) {
    fdl_npy_close(n);
    return s;
  }
  *out = n;
  return FDL_OK;
}

void fdl_npy_close(fdl_npy *n) {
  if (!n) return;
  if (n->mapped) fdl_unmap(&n->map);
  free(n);
}

const fdl_tensor *fdl_npy_tensor(const fdl_npy *n) {
  return n ? &n->t : NULL;
}
