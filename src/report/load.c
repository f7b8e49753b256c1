/* load.c - reads a receipt directory and verifies everything the page will draw from: the
 * receipt's seal and schema, tokenwise-kld.npy against the receipt's digest, and (when the
 * llama.cpp-compatible block is there) each of its arrays against the block's digests.
 *
 * Each file is read once into memory and both hashed and parsed from that one copy, so what is
 * verified is exactly what is drawn. A content failure is not an error of the call: the receipt
 * comes back untrusted with the reason, and the page says so. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/path.h"
#include "fidelis/digest.h"
#include "base/fs.h"
#include "json/json.h"
#include "fidelis/tensor.h"
#include "base/sys.h"
#include "report/rpt.h"
#include "digest/seal_json.h"

/* Arrays far above any panel are refused before they are read. */
#define ARRAY_MAX_BYTES ((size_t)1 << 32)

static const char *const LLAMA_ARRAYS[3] = FDL_COMPARE_LLAMACPP_ARRAYS;

static bool untrusted(fdl_rpt_receipt *r, const char *fmt, ...) FDL_PRINTF(2, 3);
static bool untrusted(fdl_rpt_receipt *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->why, sizeof r->why, fmt, ap);
  va_end(ap);
  r->trusted = false;
  return false;
}

/* Reads dir/name, checks its SHA-256 against want_hex and opens it as .npy: a 1-D array of n
 * elements of dtype (or n unknown: *n_io == 0, then set). false: r->why says what failed; a
 * machine failure is in *st. */
static bool read_array(fdl_rpt_receipt *r, const char *name, const char *want_hex, fdl_dtype dtype,
                       size_t *n_io, void **out, fdl_status *st, fdl_err *err) {
  char path[4096];
  if (!fdl_path_join_to(r->dir, name, path, sizeof path))
    return untrusted(r, "%s/%s: path too long", r->dir, name);
  char *data = NULL;
  size_t len = 0;
  fdl_err e = {FDL_OK, ""};
  fdl_status s = fdl_read_file(path, ARRAY_MAX_BYTES, &data, &len, &e);
  /* A file that cannot be opened or read is the machine's failure (exit 4, no page); a file
   * that reads but is not what the receipt sealed is the receipt's (a red page). */
  if (s == FDL_NOMEM || s == FDL_IO) {
    *st = fdl_fail(err, s, "%s", e.msg);
    return false;
  }
  if (s != FDL_OK) return untrusted(r, "%s: cannot be read: %s", name, e.msg);
  bool ok = false;
  char hex[FDL_SHA256_HEX_BUF];
  fdl_npy *npy = NULL;
  if ((s = fdl_sha256_buf_hex(data, len, hex, &e)) != FDL_OK) {
    *st = fdl_fail(err, s, "%s", e.msg);
    goto done;
  }
  if (strcmp(hex, want_hex)) {
    untrusted(r,
              "%s: its SHA-256 is %s but the receipt records %s: the array is not the one "
              "the receipt sealed",
              name, hex, want_hex);
    goto done;
  }
  if ((s = fdl_npy_open_mem(data, len, &npy, &e)) != FDL_OK) {
    if (s == FDL_NOMEM)
      *st = fdl_fail(err, s, "%s", e.msg);
    else
      untrusted(r, "%s: %s", name, e.msg);
    goto done;
  }
  const fdl_tensor *t = fdl_npy_tensor(npy);
  bool dt_ok = t->dtype == dtype || (dtype == FDL_DTYPE_U8 && t->dtype == FDL_DTYPE_BOOL);
  if (!dt_ok || t->ndim != 1 || (*n_io && (size_t)t->shape[0] != *n_io)) {
    untrusted(r, "%s: expected a 1-D %s array of %zu values, found %s with %d dimension(s)", name,
              fdl_dtype_name(dtype), *n_io, fdl_dtype_name(t->dtype), t->ndim);
    goto done;
  }
  size_t n = (size_t)t->shape[0], esz = fdl_dtype_size(dtype);
  void *copy = fdl_malloc(n ? n * esz : 1);
  if (!copy) {
    *st = fdl_fail(err, FDL_NOMEM, "out of memory for %s", name);
    goto done;
  }
  if (dtype == FDL_DTYPE_F64) {
    /* The file is little-endian whatever the host is. */
    double *dst = copy;
    for (size_t i = 0; i < n; i++) {
      uint64_t u = 0;
      for (int k = 7; k >= 0; k--) u = (u << 8) | t->data[i * 8 + (size_t)k];
      memcpy(&dst[i], &u, sizeof u);
      if (!isfinite(dst[i])) {
        free(copy);
        untrusted(r, "%s: value %zu is not finite", name, i);
        goto done;
      }
    }
  } else {
    memcpy(copy, t->data, n);
  }
  *out = copy;
  *n_io = n;
  ok = true;
done:
  fdl_npy_close(npy);
  free(data);
  return ok;
}

/* The digest a receipt records for an array: 64 lowercase hex, or NULL. */
static const char *digest_of(const char *s) {
  return s && fdl_sha256_hex_ok(s, strlen(s)) ? s : NULL;
}

static bool load_contexts(fdl_rpt_receipt *r, fdl_status *st, fdl_err *err) {
  size_t n = r->d.n_per_context, first = 0;
  if (n == 0) return true; /* nothing per context */
  r->ctx = fdl_calloc(n, sizeof *r->ctx);
  if (!r->ctx) {
    *st = fdl_fail(err, FDL_NOMEM, "out of memory for %zu contexts", n);
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    const fdl_compare_context *c = &r->d.per_context[i];
    fdl_rpt_ctx *x = &r->ctx[i];
    if (c->scored_rows < 0) return untrusted(r, "per_context[%zu].scored_rows is not a count", i);
    x->rows = (size_t)c->scored_rows;
    if (x->rows > r->n - first)
      return untrusted(r, "per_context rows add up to more than the %zu tokenwise values", r->n);
    x->first = first;
    first += x->rows;
    if (c->index == FDL_COMPARE_NO_INT)
      return untrusted(r, "per_context[%zu].index is not an integer", i);
    x->index = (long long)c->index;
    x->mean = c->mean;
    x->lo = c->ci95_low;
    x->hi = c->ci95_high;
    x->ci_sealed = isfinite(x->lo) && isfinite(x->hi);
    x->domain = -1;
    const char *dom = c->domain;
    if (dom && *dom) {
      size_t k = 0;
      while (k < r->ndomains && strcmp(r->domains[k], dom)) k++;
      if (k == r->ndomains && r->ndomains < FDL_RPT_MAX_DOMAINS) r->domains[r->ndomains++] = dom;
      if (k == FDL_RPT_MAX_DOMAINS) r->domains_cut = true;
    }
  }
  r->nctx = n;
  if (first != r->n)
    return untrusted(r, "per_context rows add up to %zu but tokenwise-kld.npy holds %zu values",
                     first, r->n);
  /* Colours follow the sorted domain names, so the same domain gets the same colour on every
   * page of the same panel. */
  for (size_t a = 1; a < r->ndomains; a++)
    for (size_t b = a; b > 0 && strcmp(r->domains[b - 1], r->domains[b]) > 0; b--) {
      const char *t = r->domains[b];
      r->domains[b] = r->domains[b - 1];
      r->domains[b - 1] = t;
    }
  for (size_t i = 0; i < n; i++) {
    const char *dom = r->d.per_context[i].domain;
    for (size_t k = 0; dom && k < r->ndomains; k++)
      if (!strcmp(r->domains[k], dom)) r->ctx[i].domain = (int)k;
    if (dom && *dom && r->ctx[i].domain < 0) r->ctx[i].domain = FDL_RPT_MAX_DOMAINS - 1;
  }
  return true;
}

static bool load_llama(fdl_rpt_receipt *r, fdl_status *st, fdl_err *err) {
  const fdl_compare_llamacpp *b = &r->d.llamacpp;
  if (!b->present) return true; /* an older receipt */
  if (!b->schema || strcmp(b->schema, FDL_COMPARE_LLAMACPP_SCHEMA))
    return untrusted(r, "fidelis_extensions.llamacpp_compatible is not a %s block",
                     FDL_COMPARE_LLAMACPP_SCHEMA);
  if (b->n == FDL_COMPARE_NO_INT || (size_t)b->n != r->n)
    return untrusted(r, "fidelis_extensions.llamacpp_compatible.n is not the %zu scored rows",
                     r->n);
  void **dst[3] = {(void **)&r->lp_ref, (void **)&r->lp_cand, (void **)&r->top1};
  for (int k = 0; k < 3; k++) {
    const char *hex = digest_of(b->arrays[k]);
    if (!hex)
      return untrusted(r, "fidelis_extensions.llamacpp_compatible.arrays has no SHA-256 for %s",
                       LLAMA_ARRAYS[k]);
    size_t len = r->n;
    if (!read_array(r, LLAMA_ARRAYS[k], hex, k < 2 ? FDL_DTYPE_F64 : FDL_DTYPE_U8, &len, dst[k], st,
                    err))
      return false;
    if (len != r->n) return untrusted(r, "%s: length differs from the receipt", LLAMA_ARRAYS[k]);
  }
  r->llama = true;
  return true;
}

fdl_status fdl_rpt_load(const char *dir, fdl_rpt_receipt *r, fdl_err *err) {
  memset(r, 0, sizeof *r);
  r->dir = fdl_strdup(dir);
  if (!r->dir) return fdl_fail(err, FDL_NOMEM, "out of memory");
  char path[4096];
  if (!fdl_path_join_to(dir, FDL_REPORT_RECEIPT, path, sizeof path))
    return fdl_fail(err, FDL_BOUNDS, "%s: path too long", dir);
  fdl_err e = {FDL_OK, ""};
  fdl_status s = fdl_json_load_file(path, NULL, &r->doc, &e);
  if (s == FDL_IO || s == FDL_NOMEM) return fdl_fail(err, s, "%s", e.msg);
  if (s != FDL_OK) {
    untrusted(r, "%s: %s", FDL_REPORT_RECEIPT, e.msg);
    return FDL_OK;
  }
  /* Decoded before it is verified: nothing is shown until every check below has passed. */
  if ((s = fdl_cmp_receipt_decode(r->doc, &r->d, err)) != FDL_OK) return s;
  if (!r->d.schema || strcmp(r->d.schema, FDL_COMPARE_SCHEMA)) {
    untrusted(r, "%s: schema is not %s: not a comparison receipt", FDL_REPORT_RECEIPT,
              FDL_COMPARE_SCHEMA);
    return FDL_OK;
  }
  fdl_seal_check sc;
  s = fdl_seal_verify(r->doc, &sc, &e);
  if (s == FDL_NOMEM) return fdl_fail(err, s, "%s", e.msg);
  if (s != FDL_OK) {
    untrusted(r, "%s: the seal cannot be computed: %s", FDL_REPORT_RECEIPT, e.msg);
    return FDL_OK;
  }
  if (!sc.ok) {
    untrusted(r,
              "%s: SEAL FAILED: receipt_sha256 is %s%s%s but the content hashes to %s; the "
              "receipt was changed after it was sealed",
              FDL_REPORT_RECEIPT, sc.stored_string ? "'" : "",
              sc.stored_string ? sc.stored : "not a string", sc.stored_string ? "'" : "",
              sc.computed);
    return FDL_OK;
  }
  /* Only the name the format writes: a receipt must not point the page at another file. */
  const char *tw = r->d.tokenwise.path, *hex = digest_of(r->d.tokenwise.sha256);
  if (!tw || strcmp(tw, FDL_COMPARE_TOKENWISE_NAME) || !hex) {
    untrusted(r, "tokenwise: the receipt does not name tokenwise-kld.npy with a SHA-256");
    return FDL_OK;
  }
  s = FDL_OK;
  r->trusted = true;
  size_t n = 0;
  void *kl = NULL;
  if (!read_array(r, FDL_COMPARE_TOKENWISE_NAME, hex, FDL_DTYPE_F64, &n, &kl, &s, err)) return s;
  r->kl = kl;
  r->n = n;
  int64_t scored = r->d.panel.scored_positions;
  if (scored != (int64_t)n) {
    untrusted(r, "tokenwise-kld.npy holds %zu values but panel.scored_positions is %s", n,
              scored != FDL_COMPARE_NO_INT ? "another number" : "missing");
    return FDL_OK;
  }
  if (!load_contexts(r, &s, err) && s != FDL_OK) return s;
  if (!r->trusted) return FDL_OK;
  if (!load_llama(r, &s, err) && s != FDL_OK) return s;
  return FDL_OK;
}

void fdl_rpt_free(fdl_rpt_receipt *r) {
  if (!r) return;
  free(r->dir);
  fdl_cmp_receipt_free(&r->d);
  json_decref(r->doc);
  free(r->kl);
  free(r->lp_ref);
  free(r->lp_cand);
  free(r->top1);
  free(r->ctx);
  memset(r, 0, sizeof *r);
}
