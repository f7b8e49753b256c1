/* bench_sha256.c - hashes files with fdl_sha256_file and prints "<hex>  <path>  <bytes>  <secs>"
 * per file, so bench/run-sha256.sh can compare it with `openssl dgst -sha256`.
 *   bench_sha256 --pair MIB   two digests of the same MIB MiB in memory (the second 8 bytes in,
 *                             as a file digest and its tensor's content digest are), in 64 KiB
 *                             steps: two fdl_sha256_update calls a step, then one
 *                             fdl_sha256_update2; best of three each, in GB/s of bytes hashed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_clock.h"
#include "fidelis/fidelis.h"

/* Seconds for both digests of p[0, n) and p[8, n), in steps, paired or not. */
static double pair_run(const uint8_t *p, size_t n, int paired) {
  enum { STEP = 64 << 10 };
  fdl_sha256_ctx *a = NULL, *b = NULL;
  fdl_err err;
  fdl_sha256 d;
  if (fdl_sha256_new(&a, &err) != FDL_OK || fdl_sha256_new(&b, &err) != FDL_OK) exit(2);
  double t0 = bench_now();
  for (size_t i = 0; i < n; i += STEP) {
    size_t m = n - i < STEP ? n - i : STEP, o = i ? 0 : 8;
    if (paired)
      fdl_sha256_update2(a, p + i, m, b, p + i + o, m - o, &err);
    else if (fdl_sha256_update(a, p + i, m, &err) == FDL_OK)
      fdl_sha256_update(b, p + i + o, m - o, &err);
  }
  if (fdl_sha256_final(a, &d, &err) != FDL_OK || fdl_sha256_final(b, &d, &err) != FDL_OK) exit(2);
  double t = bench_now() - t0;
  fdl_sha256_free(a);
  fdl_sha256_free(b);
  return t;
}

static int pair(size_t mib) {
  size_t n = mib << 20;
  uint8_t *p = malloc(n ? n : 1);
  if (!p) return 2;
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 2654435761u >> 13);
  double one = 1e300, two = 1e300;
  for (int r = 0; r < 3; r++) {
    double t = pair_run(p, n, 0), u = pair_run(p, n, 1);
    one = t < one ? t : one;
    two = u < two ? u : two;
  }
  printf("pair mib=%zu separate_gbps=%.3f update2_gbps=%.3f ratio=%.3f\n", mib, 2.0 * n / one / 1e9,
         2.0 * n / two / 1e9, one / two);
  free(p);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--pair")) return pair((size_t)strtoul(argv[2], NULL, 10));
  if (argc < 2) {
    fprintf(stderr, "usage: bench_sha256 FILE...\n");
    return 4;
  }
  int rc = 0;
  for (int i = 1; i < argc; i++) {
    fdl_sha256 d;
    uint64_t size = 0;
    fdl_err err;
    double t0 = bench_now();
    if (fdl_sha256_file(argv[i], &d, &size, &err) != FDL_OK) {
      fprintf(stderr, "bench_sha256: (%s) %s\n", fdl_status_name(err.status), err.msg);
      rc = 4;
      continue;
    }
    double dt = bench_now() - t0;
    char hex[FDL_SHA256_HEX_LEN + 1];
    fdl_sha256_hex(&d, hex);
    printf("%s  %s  %llu  %.6f\n", hex, argv[i], (unsigned long long)size, dt);
  }
  return rc;
}
