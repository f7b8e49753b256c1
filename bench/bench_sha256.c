/* bench_sha256.c - hashes files with fdl_sha256_file and prints "<hex>  <path>  <bytes>  <secs>"
 * per file, so bench/run-sha256.sh can compare it with `openssl dgst -sha256`. */
#include <stdio.h>
#include <time.h>

#include "bench_clock.h"
#include "fidelis/fidelis.h"

int main(int argc, char **argv) {
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
