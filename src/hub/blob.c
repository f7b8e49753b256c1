/* blob.c - a cache blob's bytes against its name: the name is the LFS sha256 (64 hex) or the
 * git blob id (40 hex: sha1 of "blob <size>\0" and the bytes) of what it holds.
 *
 * A reader that hashes what it reads checks the digest it has (fdl_hub_blob_check_sha256) or the
 * bytes it holds (fdl_hub_blob_check_buf); a reader that does not uses the separate pass
 * (fdl_hub_blob_check_file). SHA-1 is the one-shot libcrypto API, like sha256.c (and for the
 * same reason: no provider start-up). */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/sha.h>

#include "base/sys.h"
#include "fidelis/digest.h"
#include "base/quote.h"
#include "hub/hub_internal.h"

#define BLOB_READ_CHUNK ((size_t)1 << 20)

int fdl_hub_blob_kind(const char *real, char hex[65]) {
  const char *name = strrchr(real, '/');
  if (!name || name - real < 6 || memcmp(name - 6, "/blobs", 6)) return 0;
  name++;
  size_t n = strlen(name);
  if ((n != 64 && n != 40) || !fdl_hex_lower(name, n)) return 0;
  /* the folder above blobs/ is a repository's: models--, datasets-- or spaces-- */
  const char *repo_end = name - 7, *repo = repo_end;
  while (repo > real && repo[-1] != '/') repo--;
  if (!fdl_hub_repo_folder_name(repo, (size_t)(repo_end - repo))) return 0;
  if (hex) memcpy(hex, name, n + 1);
  return (int)n;
}

static void to_hex(const unsigned char *d, size_t n, char *hex) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    hex[2 * i] = digits[d[i] >> 4];
    hex[2 * i + 1] = digits[d[i] & 15];
  }
  hex[2 * n] = '\0';
}

static void git_header(SHA_CTX *c, uint64_t n) {
  char head[40];
  int k = snprintf(head, sizeof head, "blob %" PRIu64, n);
  SHA1_Init(c);
  SHA1_Update(c, head, (size_t)k + 1); /* with its NUL */
}

fdl_status fdl_hub_git_blob_id(const void *data, size_t n, char hex[41], fdl_err *err) {
  (void)err;
  SHA_CTX c;
  unsigned char d[SHA_DIGEST_LENGTH];
  git_header(&c, n);
  SHA1_Update(&c, data, n);
  SHA1_Final(d, &c);
  to_hex(d, sizeof d, hex);
  return FDL_OK;
}

static fdl_status mismatch(const char *real, const char *kind, const char *got, const char *want,
                           fdl_err *err) {
  char q[FDL_QUOTE_CAP];
  return fdl_fail(err, FDL_MISMATCH,
                  "%s: the bytes read have %s %s, but the Hub names this file %s: corrupt "
                  "(a cached blob: remove it and fetch again)",
                  fdl_quote_str(real, q, sizeof q), kind, got, want);
}

fdl_status fdl_hub_blob_check_buf(const char *real, const void *data, size_t len, fdl_err *err) {
  char want[65], got[65];
  int k = fdl_hub_blob_kind(real, want);
  if (k == 0) return FDL_OK;
  if (k == 40) {
    fdl_hub_git_blob_id(data, len, got, err);
    return strcmp(got, want) ? mismatch(real, "git blob id", got, want, err) : FDL_OK;
  }
  fdl_status s = fdl_sha256_buf_hex(data, len, got, err);
  if (s != FDL_OK) return s;
  return strcmp(got, want) ? mismatch(real, "sha256", got, want, err) : FDL_OK;
}

/* The git blob id of a file, streamed. */
static fdl_status git_id_file(const char *real, char hex[41], fdl_err *err) {
  int fd = -1;
  uint64_t size = 0;
  fdl_status s = fdl_open_regular(real, true, &fd, &size, err);
  if (s != FDL_OK) return s;
  unsigned char *buf = fdl_malloc(BLOB_READ_CHUNK);
  if (!buf) {
    close(fd);
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  SHA_CTX c;
  git_header(&c, size);
  uint64_t got = 0;
  for (;;) {
    ssize_t n = fdl_sys_read(fd, buf, BLOB_READ_CHUNK);
    if (n < 0) {
      s = fdl_fail(err, FDL_IO, "%s: read failed: %s", real, strerror(errno));
      break;
    }
    if (n == 0) break;
    SHA1_Update(&c, buf, (size_t)n);
    got += (uint64_t)n;
  }
  close(fd);
  free(buf);
  unsigned char d[SHA_DIGEST_LENGTH];
  SHA1_Final(d, &c);
  if (s == FDL_OK && got != size)
    s = fdl_fail(err, FDL_IO, "%s: changed size while read (%" PRIu64 " of %" PRIu64 " bytes)",
                 real, got, size);
  if (s == FDL_OK) to_hex(d, sizeof d, hex);
  return s;
}

fdl_status fdl_hub_blob_verify_as(const char *path, const char *want, fdl_err *err) {
  char got[65];
  size_t k = strlen(want);
  fdl_status s = FDL_OK;
  if (k == 40) {
    if ((s = git_id_file(path, got, err)) != FDL_OK) return s;
    return strcmp(got, want) ? mismatch(path, "git blob id", got, want, err) : FDL_OK;
  }
  fdl_sha256 d;
  if ((s = fdl_sha256_file(path, &d, NULL, err)) != FDL_OK) return s;
  fdl_sha256_hex(&d, got);
  return strcmp(got, want) ? mismatch(path, "sha256", got, want, err) : FDL_OK;
}

fdl_status fdl_hub_blob_check_file(const char *real, fdl_err *err) {
  char want[65];
  return fdl_hub_blob_kind(real, want) ? fdl_hub_blob_verify_as(real, want, err) : FDL_OK;
}

fdl_status fdl_hub_blob_check_sha256(const char *real, const char *sha256_hex, fdl_err *err) {
  char want[65];
  int k = fdl_hub_blob_kind(real, want);
  if (k == 0) return FDL_OK;
  if (k == 40) return fdl_hub_blob_check_file(real, err);
  return strcmp(sha256_hex, want) ? mismatch(real, "sha256", sha256_hex, want, err) : FDL_OK;
}
