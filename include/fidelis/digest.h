/* fidelis/digest.h - SHA-256 (libcrypto EVP, streamed), seal recipes, checksums.txt.
 *
 * Two seal recipes recur in the upstream formats (shared/spec/README.md):
 *  - fidelity: the seal field is set to "" and the canonical JSON is raw UTF-8; bare hex.
 *  - kiln: the seal field is removed and the canonical JSON is ASCII; "sha256:<hex>". */
#ifndef FIDELIS_DIGEST_H
#define FIDELIS_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDL_SHA256_HEX_LEN 64
/* A hex digest and its NUL: the size of every buffer that holds one. */
#define FDL_SHA256_HEX_BUF (FDL_SHA256_HEX_LEN + 1)

typedef struct {
  uint8_t bytes[32];
} fdl_sha256;

/* Writes 64 lowercase hex digits and a NUL into hex[FDL_SHA256_HEX_BUF]. */
FDL_API void fdl_sha256_hex(const fdl_sha256 *d, char *hex);
/* Parses exactly 64 lowercase hex digits. */
FDL_API bool fdl_sha256_from_hex(const char *hex, size_t len, fdl_sha256 *d);
/* The one hex check: true when s[0..n) is all lowercase hex digits ("0-9a-f"), the only
 * spelling of a digest the formats accept. n == 0 is true. */
FDL_API bool fdl_hex_lower(const char *s, size_t n);
/* True when s[0..n) is a SHA-256 digest as the formats write it: exactly 64 lowercase hex. */
FDL_API bool fdl_sha256_hex_ok(const char *s, size_t n);

typedef struct fdl_sha256_ctx fdl_sha256_ctx; /* opaque streaming state */

FDL_API fdl_status fdl_sha256_new(fdl_sha256_ctx **ctx, fdl_err *err);
FDL_API fdl_status fdl_sha256_update(fdl_sha256_ctx *ctx, const void *p, size_t n, fdl_err *err);
/* Two updates at once, of contexts a and b (distinct) with their own bytes: the same digests as
 * two fdl_sha256_update calls, about twice as fast where the CPU has the SHA extensions (the two
 * chains are interleaved; digest/sha256x2.h). For the bytes of one read that feed two digests. */
FDL_API fdl_status fdl_sha256_update2(fdl_sha256_ctx *a, const void *pa, size_t na,
                                      fdl_sha256_ctx *b, const void *pb, size_t nb, fdl_err *err);
/* Finishes and resets ctx so it can be reused. */
FDL_API fdl_status fdl_sha256_final(fdl_sha256_ctx *ctx, fdl_sha256 *out, fdl_err *err);
FDL_API void fdl_sha256_free(fdl_sha256_ctx *ctx);

FDL_API fdl_status fdl_sha256_buf(const void *p, size_t n, fdl_sha256 *out, fdl_err *err);
/* The same, spelt as lowercase hex into hex (FDL_SHA256_HEX_BUF bytes). */
FDL_API fdl_status fdl_sha256_buf_hex(const void *p, size_t n, char *hex, fdl_err *err);
/* Streams a file of any size; *size (optional) receives the byte count. The path is opened with
 * fdl_open_regular (links followed): anything but a regular file is FDL_IO. */
FDL_API fdl_status fdl_sha256_file(const char *path, fdl_sha256 *out, uint64_t *size, fdl_err *err);
/* Hashes bytes [offset, offset+len) of a file, streamed. Short file: FDL_BOUNDS. */
FDL_API fdl_status fdl_sha256_file_range(const char *path, uint64_t offset, uint64_t len,
                                         fdl_sha256 *out, fdl_err *err);

/* One byte range of a file, [offset, offset + length), and the context that digests it. */
typedef struct {
  uint64_t offset, length;
  fdl_sha256_ctx *ctx;
  /* Optional: shown the very bytes fed to ctx, in order, so a check (a scan for non-finite
   * values, say) runs on the read that is hashed. */
  void (*see)(void *arg, const uint8_t *p, size_t n);
  void *see_arg;
} fdl_sha256_span;

/* The one read-and-hash loop: reads [lo, hi) of fd once, with pread in chunks of buf_len bytes
 * through buf, and feeds every span the bytes of each chunk that fall inside it, so one read
 * serves several digests. hi may be UINT64_MAX (to the end of the file). Stops early at the
 * end of the file: *got (optional) receives the bytes read, which the caller compares with what
 * it expected. name labels error messages. The contexts are not finished. */
FDL_API fdl_status fdl_sha256_fd_spans(int fd, const char *name, uint64_t lo, uint64_t hi,
                                       const fdl_sha256_span *spans, size_t nspans, void *buf,
                                       size_t buf_len, uint64_t *got, fdl_err *err);

/* ---- seals ------------------------------------------------------------------------------ */

typedef enum {
  FDL_SEAL_FIDELITY_BLANK = 0, /* "fidelity-blank-field" */
  FDL_SEAL_KILN_REMOVE = 1,    /* "kiln-remove-field" */
} fdl_seal_recipe;

/* Recipe name as written in shared/vectors/SEALS.tsv. */
FDL_API const char *fdl_seal_recipe_name(fdl_seal_recipe r);

/* Kiln's spelling of a seal is this prefix and the hex digest. */
#define FDL_SEAL_KILN_PREFIX "sha256:"
/* The longer of the two spellings, "sha256:" + 64 hex, and its NUL: every seal fits. */
#define FDL_SEAL_BUF (sizeof FDL_SEAL_KILN_PREFIX - 1 + FDL_SHA256_HEX_BUF)
/* Room kept for a stored value in fdl_seal_check: any seal and a few bytes more, so a stored
 * value that is too long still shows as longer than a seal when displayed. */
#define FDL_SEAL_STORED_SHOWN 80

typedef struct {
  fdl_seal_recipe recipe;
  const char *field;                  /* static string */
  char stored[FDL_SEAL_STORED_SHOWN]; /* what the document holds ("" if absent or not a string;
                                         cut when longer) */
  char computed[FDL_SEAL_BUF];
  bool ok;
  bool stored_present; /* the document has the seal field at all */
  bool stored_string;  /* ... and it is a string */
} fdl_seal_check;

/* Reads the file at path and verifies its seal whichever dialect it is: the schema names the
 * recipe, and a kiln.* document is re-read in Kiln-strict mode before hashing, as Kiln's own
 * loader reads it. FDL_OK means the file was read and res says whether the seal recomputes
 * (res->ok); any other status means it could not be checked (unreadable, not JSON, unknown
 * kind) and res is unchanged. */
FDL_API fdl_status fdl_seal_verify_file(const char *path, fdl_seal_check *res, fdl_err *err);

/* ---- checksums.txt ---------------------------------------------------------------------- */

typedef struct {
  char hex[FDL_SHA256_HEX_LEN + 1];
  char *path; /* owned, relative, '/'-separated */
} fdl_checksum_entry;

typedef struct {
  fdl_checksum_entry *items;
  size_t count;
  size_t cap_;
} fdl_checksums;

FDL_API void fdl_checksums_init(fdl_checksums *c);
FDL_API void fdl_checksums_free(fdl_checksums *c);
/* Adds one entry (copies path). */
FDL_API fdl_status fdl_checksums_add(fdl_checksums *c, const char *hex, const char *path,
                                     fdl_err *err);
/* Parses sha256sum text: "<64 lowercase hex><2 spaces><relative path>\n" lines, blank lines
 * ignored. Refuses short lines, bad separators, non-lowercase hex, duplicate paths and paths that
 * are absolute, empty or escape with "..". Messages name the line number. */
FDL_API fdl_status fdl_checksums_parse(const char *text, size_t len, fdl_checksums *c,
                                       fdl_err *err);
/* Sorts by path (code point order) and appends the file text. Refuses duplicate paths. */
FDL_API fdl_status fdl_checksums_format(fdl_checksums *c, fdl_buf *out, fdl_err *err);
/* The entry for path, or NULL. Requires no particular order. */
FDL_API const fdl_checksum_entry *fdl_checksums_find(const fdl_checksums *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
