/* bench_logits.c - the library figure for `fidelis logits diff`: reads two raw float32 vectors
 * once, then times fdl_attr_compare_logits (all metrics, the top-10s, two candidate ranks and
 * the digest) over many repetitions. Usage: bench_logits REF.f32 CAND.f32 [REPS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "fidelis/fidelis.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: bench_logits REF.f32 CAND.f32 [REPS]\n");
    return 4;
  }
  int reps = argc > 3 ? atoi(argv[3]) : 200;
  fdl_attr_matrix r, a;
  fdl_err err = {0};
  if (fdl_attr_matrix_read(argv[1], NULL, &r, &err) != FDL_OK ||
      fdl_attr_matrix_read(argv[2], NULL, &a, &err) != FDL_OK || r.cols != a.cols) {
    fprintf(stderr, "bench_logits: %s\n", err.msg);
    return 3;
  }
  const uint64_t cand[2] = {25045, 15787};
  fdl_attr_logits o;
  fdl_attr_candidate c[2];
  double best = 1e30;
  for (int i = 0; i < reps; i++) {
    double t0 = bench_now();
    if (fdl_attr_compare_logits(a.data, r.data, (size_t)a.cols, cand, 2, &o, c, &err) != FDL_OK) {
      fprintf(stderr, "bench_logits: %s\n", err.msg);
      return 3;
    }
    double t = bench_now() - t0;
    if (t < best) best = t;
  }
  printf("library_ms=%.3f vocab=%llu reps=%d argmax=%llu\n", best * 1e3, (unsigned long long)a.cols,
         reps, (unsigned long long)o.argmax);
  fdl_attr_matrix_free(&r);
  fdl_attr_matrix_free(&a);
  return 0;
}
