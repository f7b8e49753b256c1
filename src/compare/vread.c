/* vread.c - reading a tensor file for compute so that what is verified is what is computed.
 *
 * Every byte of the file is copied once out of the mapping into memory this process owns, and
 * that copy alone feeds the digests (whole file, payload, tensor content) and the widening to
 * float32, or is itself what is computed on (a head kept as stored). A file rewritten in place
 * while it is mapped can therefore change only both the digest and the numbers, never one without
 * the other; a digest that differs from the manifest at the end refuses the whole compare. The
 * tensor must be read in order (rows may come in any number of calls); the bytes around it are
 * hashed when first reached and at the end. */
#include <string.h>

#include "compare/cmp.h"
#include "base/sys.h"

/* Bytes copied per step: small enough to stay in L1/L2 between the copy, the hash and the
 * widening. */
#define VREAD_STEP ((size_t)64 << 10)
/* The mapping behind the cursor goes back to the kernel in pieces of this size: a compare's
 * resident set is then what it computes on, not that plus every byte it read (two 1.2 GB heads
 * mapped and copied were 2.4 GB more; issue 24). */
#define VREAD_RELEASE ((uint64_t)32 << 20)

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VREAD_LITTLE_ENDIAN 1
#else
#define VREAD_LITTLE_ENDIAN 0
#endif

fdl_status fdl_cmp_vread_begin(cmp_vread *v, const fdl_safetensors *st, const fdl_tensor *t,
                               fdl_err *err) {
  memset(v, 0, sizeof *v);
  v->t = t;
  v->st = st;
  v->base = t->data - t->offset; /* the mapping starts at file byte 0 */
  v->size = fdl_safetensors_file_size(st);
  v->data_start = fdl_safetensors_data_start(st);
  /* The payload digest covers the data section; when the tensor is all of it, the payload and
   * content digests are one and the same stream. */
  v->payload_is_content = t->offset == v->data_start && t->offset + t->nbytes == v->size;
  fdl_status s = fdl_sha256_new(&v->file, err);
  if (s == FDL_OK) s = fdl_sha256_new(&v->content, err);
  if (s == FDL_OK && !v->payload_is_content) s = fdl_sha256_new(&v->payload, err);
  if (s != FDL_OK) fdl_cmp_vread_free(v);
  return s;
}

void fdl_cmp_vread_free(cmp_vread *v) {
  fdl_sha256_free(v->file);
  fdl_sha256_free(v->payload);
  fdl_sha256_free(v->content);
  v->file = v->payload = v->content = NULL;
}

/* Feeds the digests that cover file bytes [pos, pos + n), held in the private copy p. */
static fdl_status feed(cmp_vread *v, const uint8_t *p, size_t n, fdl_err *err) {
  uint64_t pos = v->pos, c0 = v->t->offset, c1 = c0 + v->t->nbytes;
  fdl_status s = FDL_OK;
  if (v->payload && pos + n > v->data_start) {
    uint64_t a = pos > v->data_start ? pos : v->data_start;
    s = fdl_sha256_update(v->payload, p + (a - pos), (size_t)(pos + n - a), err);
  }
  /* The file and content digests of the same bytes, as one interleaved pair. */
  if (s == FDL_OK && pos < c1 && pos + n > c0) {
    uint64_t a = pos > c0 ? pos : c0, b = pos + n < c1 ? pos + n : c1;
    s = fdl_sha256_update2(v->file, p, n, v->content, p + (a - pos), (size_t)(b - a), err);
  } else if (s == FDL_OK) {
    s = fdl_sha256_update(v->file, p, n, err);
  }
  v->pos += n;
  if (v->pos - v->released >= VREAD_RELEASE) {
    fdl_safetensors_release(v->st, v->released, v->pos - v->released);
    v->released = v->pos;
  }
  return s;
}

/* Hashes file bytes from where the reading stands up to end, through a private copy. */
static fdl_status hash_to(cmp_vread *v, uint64_t end, fdl_err *err) {
  uint8_t buf[VREAD_STEP];
  fdl_status s = FDL_OK;
  while (s == FDL_OK && v->pos < end) {
    size_t n = end - v->pos < VREAD_STEP ? (size_t)(end - v->pos) : VREAD_STEP;
    memcpy(buf, v->base + v->pos, n);
    s = feed(v, buf, n, err);
  }
  return s;
}

/* Swaps a little-endian element of es bytes into host order (a no-op on x86). */
static void to_host(uint8_t *p, size_t n, size_t es) {
  if (VREAD_LITTLE_ENDIAN || es == 1) return;
  for (size_t i = 0; i < n; i++, p += es)
    for (size_t a = 0, z = es - 1; a < z; a++, z--) {
      uint8_t t = p[a];
      p[a] = p[z];
      p[z] = t;
    }
}

/* Copies n elements starting at element first into copy (the hashed bytes), a step at a time;
 * with widen, each step is then widened into out. */
static fdl_status read_elems(cmp_vread *v, size_t first, size_t n, uint8_t *raw, float *out,
                             fdl_err *err) {
  size_t es = fdl_dtype_size(v->t->dtype);
  uint64_t at = v->t->offset + (uint64_t)first * es;
  if (at < v->pos)
    return fdl_fail(err, FDL_INVALID, "tensor '%s': elements read out of order", v->t->name);
  fdl_status s = hash_to(v, at, err);
  uint8_t buf[VREAD_STEP];
  fdl_tensor view = *v->t;
  size_t per = VREAD_STEP / es;
  for (size_t k = 0; s == FDL_OK && k < n; k += per) {
    size_t m = n - k < per ? n - k : per;
    /* Bytes kept as stored (raw, or F32 on a little-endian host) are copied straight into the
     * memory that is computed on; everything else widens from buf. */
    uint8_t *copy = raw                                                   ? raw + k * es
                    : v->t->dtype == FDL_DTYPE_F32 && VREAD_LITTLE_ENDIAN ? (uint8_t *)(out + k)
                                                                          : buf;
    memcpy(copy, v->base + v->pos, m * es);
    s = feed(v, copy, m * es, err);
    if (s == FDL_OK && raw) to_host(copy, m, es);
    if (s == FDL_OK && copy == buf) {
      view.data = buf;
      fdl_tensor_widen_f32(&view, 0, m, out + k);
    }
  }
  return s;
}

fdl_status fdl_cmp_vread_rows(cmp_vread *v, size_t first, size_t n, float *out, fdl_err *err) {
  return read_elems(v, first, n, NULL, out, err);
}

fdl_status fdl_cmp_vread_raw(cmp_vread *v, size_t first, size_t n, void *out, fdl_err *err) {
  return read_elems(v, first, n, out, NULL, err);
}

fdl_status fdl_cmp_vread_end(cmp_vread *v, cmp_vread_digests *d, fdl_err *err) {
  fdl_status s = hash_to(v, v->size, err);
  fdl_sha256 x;
  if (s == FDL_OK && (s = fdl_sha256_final(v->file, &x, err)) == FDL_OK)
    fdl_sha256_hex(&x, d->file);
  if (s == FDL_OK && (s = fdl_sha256_final(v->content, &x, err)) == FDL_OK)
    fdl_sha256_hex(&x, d->content);
  if (s == FDL_OK && v->payload && (s = fdl_sha256_final(v->payload, &x, err)) == FDL_OK)
    fdl_sha256_hex(&x, d->payload);
  if (s == FDL_OK && !v->payload) memcpy(d->payload, d->content, sizeof d->payload);
  return s;
}
