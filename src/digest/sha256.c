/* sha256.c - SHA-256 through libcrypto, streamed from memory or files.
 *
 * libcrypto picks the fastest code path (SHA-NI, AVX2) at run time, so fidelis hashes at
 * `openssl dgst` speed; the only thing left to us is feeding it large sequential reads.
 *
 * Why SHA256_Init/Update/Final and not EVP: in OpenSSL 3 the first EVP call initialises the
 * provider machinery (reads openssl.cnf, loads the default provider), 4-6 ms per process on the
 * dev VM, more than `fidelis logits diff` needs for all its work. The one-shot functions call
 * the same assembly (same CPU dispatch, same throughput: docs/PERFORMANCE.md) and touch no
 * provider. They are deprecated in 3.0 but present in every 3.x; if a libcrypto ever drops
 * them, this file is the only one to change. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "fidelis/digest.h"
#include "base/fs.h"
#include "base/sys.h"
#include "digest/sha256x2.h"

/* Large enough that syscall overhead vanishes next to hashing, small enough to stay in L2/L3. */
#define FDL_SHA256_READ_CHUNK ((size_t)2 << 20)

struct fdl_sha256_ctx {
  SHA256_CTX md;
  bool started;
  bool x2; /* the CPU runs fdl_sha256x2_blocks (asked once, at fdl_sha256_new) */
};

void fdl_sha256_hex(const fdl_sha256 *d, char *hex) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < sizeof d->bytes; i++) {
    hex[2 * i] = digits[d->bytes[i] >> 4];
    hex[2 * i + 1] = digits[d->bytes[i] & 15];
  }
  hex[FDL_SHA256_HEX_LEN] = '\0';
}

static int hex_nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool fdl_hex_lower(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (hex_nibble(s[i]) < 0) return false;
  return true;
}

bool fdl_sha256_hex_ok(const char *s, size_t n) {
  return s && n == FDL_SHA256_HEX_LEN && fdl_hex_lower(s, n);
}

bool fdl_sha256_from_hex(const char *hex, size_t len, fdl_sha256 *d) {
  if (!hex || len != FDL_SHA256_HEX_LEN) return false;
  fdl_sha256 tmp;
  for (size_t i = 0; i < sizeof tmp.bytes; i++) {
    int hi = hex_nibble(hex[2 * i]);
    int lo = hex_nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    tmp.bytes[i] = (uint8_t)(hi << 4 | lo);
  }
  if (d) *d = tmp;
  return true;
}

static fdl_status start(fdl_sha256_ctx *ctx, fdl_err *err) {
  if (ctx->started) return FDL_OK;
  if (SHA256_Init(&ctx->md) != 1) return fdl_fail(err, FDL_INVALID, "sha256: SHA256_Init failed");
  ctx->started = true;
  return FDL_OK;
}

fdl_status fdl_sha256_new(fdl_sha256_ctx **out, fdl_err *err) {
  fdl_sha256_ctx *ctx = fdl_calloc(1, sizeof *ctx);
  if (!ctx) return fdl_fail(err, FDL_NOMEM, "sha256: out of memory for a digest context");
  ctx->x2 = fdl_sha256x2_available();
  fdl_status s = start(ctx, err);
  if (s != FDL_OK) {
    fdl_sha256_free(ctx);
    return s;
  }
  *out = ctx;
  return FDL_OK;
}

fdl_status fdl_sha256_update(fdl_sha256_ctx *ctx, const void *p, size_t n, fdl_err *err) {
  if (!ctx) return fdl_fail(err, FDL_INVALID, "sha256: update on a NULL context");
  if (n == 0) return FDL_OK;
  if (!p) return fdl_fail(err, FDL_INVALID, "sha256: update with NULL data of %zu bytes", n);
  fdl_status s = start(ctx, err);
  if (s != FDL_OK) return s;
  if (SHA256_Update(&ctx->md, p, n) != 1)
    return fdl_fail(err, FDL_INVALID, "sha256: SHA256_Update failed");
  return FDL_OK;
}

/* Feeds c through libcrypto until it holds no partial block, or p runs out; the bytes taken. */
static size_t to_boundary(SHA256_CTX *c, const uint8_t *p, size_t n) {
  size_t k = c->num ? SHA256_CBLOCK - c->num : 0;
  if (k > n) k = n;
  if (k) SHA256_Update(c, p, k);
  return k;
}

/* The message length libcrypto keeps (in bits, mod 2^64, as two words) for blocks hashed
 * around it. */
static void count_blocks(SHA256_CTX *c, size_t blocks) {
  uint64_t bits = ((uint64_t)c->Nh << 32 | c->Nl) + (uint64_t)blocks * SHA256_CBLOCK * 8;
  c->Nl = (SHA_LONG)bits;
  c->Nh = (SHA_LONG)(bits >> 32);
}

fdl_status fdl_sha256_update2(fdl_sha256_ctx *a, const void *pa, size_t na, fdl_sha256_ctx *b,
                              const void *pb, size_t nb, fdl_err *err) {
  if (!a || !b || a == b || !a->x2 || !b->x2 || na < SHA256_CBLOCK || nb < SHA256_CBLOCK) {
    fdl_status s = fdl_sha256_update(a, pa, na, err);
    return s == FDL_OK ? fdl_sha256_update(b, pb, nb, err) : s;
  }
  if (!pa || !pb) return fdl_fail(err, FDL_INVALID, "sha256: update with NULL data");
  fdl_status s = start(a, err);
  if (s == FDL_OK) s = start(b, err);
  if (s != FDL_OK) return s;
  /* libcrypto takes each stream to a block boundary, the pair of kernels takes the whole blocks
   * both streams have, and libcrypto the rest: the states and counts stay libcrypto's, and
   * SHA256_Final pads as always. */
  const uint8_t *p = pa, *q = pb;
  size_t ka = to_boundary(&a->md, p, na), kb = to_boundary(&b->md, q, nb);
  size_t blocks = 0;
  if (a->md.num == 0 && b->md.num == 0) {
    size_t ba = (na - ka) / SHA256_CBLOCK, bb = (nb - kb) / SHA256_CBLOCK;
    blocks = ba < bb ? ba : bb;
    _Static_assert(sizeof a->md.h[0] == sizeof(uint32_t), "SHA_LONG is a 32-bit word");
    fdl_sha256x2_blocks((uint32_t *)a->md.h, p + ka, (uint32_t *)b->md.h, q + kb, blocks);
    count_blocks(&a->md, blocks);
    count_blocks(&b->md, blocks);
  }
  size_t da = ka + blocks * SHA256_CBLOCK, db = kb + blocks * SHA256_CBLOCK;
  if ((da < na && SHA256_Update(&a->md, p + da, na - da) != 1) ||
      (db < nb && SHA256_Update(&b->md, q + db, nb - db) != 1))
    return fdl_fail(err, FDL_INVALID, "sha256: SHA256_Update failed");
  return FDL_OK;
}

fdl_status fdl_sha256_final(fdl_sha256_ctx *ctx, fdl_sha256 *out, fdl_err *err) {
  if (!ctx || !out) return fdl_fail(err, FDL_INVALID, "sha256: final needs a context and output");
  fdl_status s = start(ctx, err);
  if (s != FDL_OK) return s;
  _Static_assert(sizeof out->bytes == SHA256_DIGEST_LENGTH, "a SHA-256 digest is 32 bytes");
  ctx->started = false;
  if (SHA256_Final(out->bytes, &ctx->md) != 1)
    return fdl_fail(err, FDL_INVALID, "sha256: SHA256_Final failed");
  return FDL_OK;
}

void fdl_sha256_free(fdl_sha256_ctx *ctx) {
  if (!ctx) return;
  free(ctx);
}

fdl_status fdl_sha256_buf(const void *p, size_t n, fdl_sha256 *out, fdl_err *err) {
  if (!out) return fdl_fail(err, FDL_INVALID, "sha256: NULL output");
  if (n && !p) return fdl_fail(err, FDL_INVALID, "sha256: NULL data of %zu bytes", n);
  SHA256_CTX c;
  if (SHA256_Init(&c) != 1 || SHA256_Update(&c, n ? p : "", n) != 1 ||
      SHA256_Final(out->bytes, &c) != 1)
    return fdl_fail(err, FDL_INVALID, "sha256: libcrypto's SHA256 failed");
  return FDL_OK;
}

fdl_status fdl_sha256_buf_hex(const void *p, size_t n, char *hex, fdl_err *err) {
  fdl_sha256 d;
  fdl_status s = fdl_sha256_buf(p, n, &d, err);
  if (s == FDL_OK) fdl_sha256_hex(&d, hex);
  return s;
}

fdl_status fdl_sha256_fd_spans(int fd, const char *name, uint64_t lo, uint64_t hi,
                               const fdl_sha256_span *spans, size_t nspans, void *buf,
                               size_t buf_len, uint64_t *got, fdl_err *err) {
  if (!buf || !buf_len) return fdl_fail(err, FDL_INVALID, "sha256: no read buffer");
  uint8_t *b = buf;
  fdl_status s = FDL_OK;
  uint64_t pos = lo;
  while (pos < hi && pos <= (uint64_t)INT64_MAX) {
    size_t want = hi - pos < buf_len ? (size_t)(hi - pos) : buf_len;
    ssize_t r = fdl_sys_pread(fd, b, want, (off_t)pos);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      s = fdl_fail(err, FDL_IO, "%s: read failed at byte %llu: %s", name, (unsigned long long)pos,
                   strerror(errno));
      break;
    }
    if (r == 0) break; /* end of file: the caller judges a short read */
    uint64_t end = pos + (uint64_t)r;
    /* The spans' parts of this chunk go to the digests two at a time (fdl_sha256_update2),
     * each digest's parts still in order; held is a part waiting for its partner. */
    size_t held = SIZE_MAX, held_n = 0;
    const uint8_t *held_p = NULL;
    for (size_t i = 0; i < nspans && s == FDL_OK; i++) {
      /* The part of [pos, end) inside the span; spans may overlap or leave gaps. */
      uint64_t a = spans[i].offset,
               z = spans[i].length > UINT64_MAX - a ? UINT64_MAX : a + spans[i].length;
      if (a < pos) a = pos;
      if (z > end) z = end;
      if (a >= z) continue;
      if (spans[i].see) spans[i].see(spans[i].see_arg, b + (a - pos), (size_t)(z - a));
      if (held == SIZE_MAX) {
        held = i, held_p = b + (a - pos), held_n = (size_t)(z - a);
        continue;
      }
      s = fdl_sha256_update2(spans[held].ctx, held_p, held_n, spans[i].ctx, b + (a - pos),
                             (size_t)(z - a), err);
      held = SIZE_MAX;
    }
    if (s == FDL_OK && held != SIZE_MAX)
      s = fdl_sha256_update(spans[held].ctx, held_p, held_n, err);
    if (s != FDL_OK) break;
    pos = end;
  }
  if (got) *got = pos - lo;
  return s;
}

/* The digest of [offset, offset+len) of fd; len == UINT64_MAX means "to EOF". *got receives
 * the bytes hashed. */
static fdl_status hash_fd(int fd, const char *path, uint64_t offset, uint64_t len, fdl_sha256 *out,
                          uint64_t *got, fdl_err *err) {
  fdl_sha256_ctx *ctx = NULL;
  uint8_t *buf = NULL;
  fdl_status s = fdl_sha256_new(&ctx, err);
  if (s == FDL_OK && !(buf = fdl_malloc(FDL_SHA256_READ_CHUNK)))
    s = fdl_fail(err, FDL_NOMEM, "%s: out of memory for the read buffer", path);
  fdl_sha256_span span = {.offset = offset, .length = len, .ctx = ctx};
  uint64_t hi = len > UINT64_MAX - offset ? UINT64_MAX : offset + len;
  if (s == FDL_OK)
    s = fdl_sha256_fd_spans(fd, path, offset, hi, &span, 1, buf, FDL_SHA256_READ_CHUNK, got, err);
  if (s == FDL_OK) s = fdl_sha256_final(ctx, out, err);
  free(buf);
  fdl_sha256_free(ctx);
  return s;
}

fdl_status fdl_sha256_file(const char *path, fdl_sha256 *out, uint64_t *size, fdl_err *err) {
  if (!out) return fdl_fail(err, FDL_INVALID, "sha256: NULL output");
  int fd = -1; /* set by fdl_open_regular on success; initialised for -O3 flow analysis */
  uint64_t st_size = 0;
  /* follow: hashing takes whatever path the caller built (e.g. /proc/self/exe, a link); the
   * regular-file check still keeps FIFOs and devices, which could block or never end, out. */
  fdl_status s = fdl_open_regular(path, true, &fd, &st_size, err);
  if (s != FDL_OK) return s;
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t got = 0;
  fdl_sha256 d;
  /* Read to EOF rather than to st_size, so a file that grows or shrinks while being hashed still
   * gives the digest of the bytes actually read. */
  s = hash_fd(fd, path, 0, UINT64_MAX, &d, &got, err);
  close(fd);
  if (s != FDL_OK) return s;
  *out = d;
  if (size) *size = got;
  return FDL_OK;
}

fdl_status fdl_sha256_file_range(const char *path, uint64_t offset, uint64_t len, fdl_sha256 *out,
                                 fdl_err *err) {
  if (!out) return fdl_fail(err, FDL_INVALID, "sha256: NULL output");
  if (len > UINT64_MAX - offset || offset + len > (uint64_t)INT64_MAX)
    return fdl_fail(err, FDL_BOUNDS, "%s: byte range %llu+%llu overflows a file offset",
                    path ? path : "(null)", (unsigned long long)offset, (unsigned long long)len);
  int fd = -1;
  uint64_t st_size = 0;
  fdl_status s = fdl_open_regular(path, true, &fd, &st_size, err);
  if (s != FDL_OK) return s;
  if (offset + len > st_size) {
    close(fd);
    return fdl_fail(err, FDL_BOUNDS,
                    "%s: byte range [%llu, %llu) lies beyond the end of the file (%llu bytes)",
                    path, (unsigned long long)offset, (unsigned long long)(offset + len),
                    (unsigned long long)st_size);
  }
  (void)posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_SEQUENTIAL);
  uint64_t got = 0;
  fdl_sha256 d;
  s = hash_fd(fd, path, offset, len, &d, &got, err);
  close(fd);
  if (s == FDL_OK && got != len)
    s = fdl_fail(err, FDL_BOUNDS,
                 "%s: file ended after %llu of the %llu bytes requested at offset %llu", path,
                 (unsigned long long)got, (unsigned long long)len, (unsigned long long)offset);
  if (s != FDL_OK) return s;
  *out = d;
  return FDL_OK;
}
