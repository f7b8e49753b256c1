/* jget.c - the fidelity seal recipe over jansson documents, path joins, and the scored-row rule
 * shared by pack and validate. (The getters are json/get.h's; Python's truthiness, == and
 * repr() json/py.h's.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/ds_internal.h"
#include "json/json.h"
#include "base/quote.h"
#include "base/sys.h"
#include "digest/seal_json.h"

/* ---- paths ------------------------------------------------------------------------------- */

bool fdl_ds_join_norm(const char *base, const char *rel, char *out, size_t cap) {
  /* Segment offsets of the output, so ".." can pop one. */
  size_t starts[DS_MAX_DEPTH * 4];
  size_t depth = 0, len = 0;
  const char *parts[2] = {base ? base : "", rel ? rel : ""};
  if (!cap) return false;
  out[0] = '\0';
  for (int p = 0; p < 2; p++) {
    const char *s = parts[p];
    while (*s) {
      const char *slash = strchr(s, '/');
      size_t n = slash ? (size_t)(slash - s) : strlen(s);
      if (n == 0 || (n == 1 && s[0] == '.')) {
        /* nothing */
      } else if (n == 2 && s[0] == '.' && s[1] == '.') {
        if (depth == 0) return false;
        len = starts[--depth];
        out[len ? len - 1 : 0] = '\0';
        if (len) len--;
      } else {
        if (depth >= sizeof starts / sizeof starts[0]) return false;
        size_t need = len + (len ? 1 : 0) + n + 1;
        if (need > cap) return false;
        if (len) out[len++] = '/';
        starts[depth++] = len;
        memcpy(out + len, s, n);
        len += n;
        out[len] = '\0';
      }
      if (!slash) break;
      s = slash + 1;
    }
  }
  return depth > 0;
}

/* ---- seals ------------------------------------------------------------------------------- */

fdl_status fdl_ds_seal(json_t *doc, const char *field, fdl_err *err) {
  return fdl_seal_apply(doc, FDL_SEAL_FIDELITY_BLANK, field, err);
}

fdl_status fdl_ds_seal_ok(const json_t *doc, const char *field, bool *ok, bool *present,
                          fdl_err *err) {
  *ok = false;
  const json_t *v = json_object_get(doc, field);
  *present = json_is_string(v);
  if (!*present) return FDL_OK;
  char computed[FDL_SEAL_BUF];
  fdl_status s = fdl_seal_compute(doc, FDL_SEAL_FIDELITY_BLANK, field, computed, err);
  if (s != FDL_OK) return s;
  *ok = !strcmp(computed, json_string_value(v)) &&
        json_string_length(v) == strlen(json_string_value(v));
  return FDL_OK;
}

/* ---- scored rows and masks --------------------------------------------------------------- */

int64_t fdl_ds_scored_rows(const uint8_t *mask, int64_t len, int64_t score_from, int64_t *rows) {
  int64_t kept = 0;
  for (int64_t i = 0; i + 1 < len; i++) {
    if (i < score_from) continue;
    if (mask && (!mask[i] || !mask[i + 1])) continue;
    if (rows) rows[kept] = i;
    kept++;
  }
  return kept;
}

fdl_status fdl_ds_mask_from_npy(const void *data, size_t size, const char *label, uint8_t **mask,
                                int64_t *len, fdl_err *err) {
  fdl_npy *npy;
  fdl_status s = fdl_npy_open_mem(data, size, &npy, err);
  if (s != FDL_OK) return fdl_err_prefix(err, "%s", label);
  const fdl_tensor *t = fdl_npy_tensor(npy);
  int64_t n = -1;
  if (t->ndim == 1)
    n = t->shape[0];
  else if (t->ndim == 2 && t->shape[0] == 1)
    n = t->shape[1];
  size_t esz = fdl_dtype_size(t->dtype);
  bool dtype_ok = t->dtype == FDL_DTYPE_BOOL || t->dtype == FDL_DTYPE_U8 ||
                  t->dtype == FDL_DTYPE_I8 || t->dtype == FDL_DTYPE_I32 ||
                  t->dtype == FDL_DTYPE_I64;
  if (n < 0 || !dtype_ok) {
    fdl_npy_close(npy);
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: an attention mask is a 1-D (or [1, L]) array of bool, u1, i1, i4 or i8",
                    label);
  }
  uint8_t *m = fdl_malloc(n ? (size_t)n : 1);
  if (!m) {
    fdl_npy_close(npy);
    return fdl_fail(err, FDL_NOMEM, "%s: out of memory", label);
  }
  for (int64_t i = 0; i < n; i++) {
    const uint8_t *e = t->data + (size_t)i * esz;
    uint8_t nz = 0;
    for (size_t k = 0; k < esz; k++) nz |= e[k];
    m[i] = nz ? 1 : 0;
  }
  fdl_npy_close(npy);
  *mask = m;
  *len = n;
  return FDL_OK;
}
