/* tool_engine.c - runs fidelis' engine over one context for tests/test_engine_*.py.
 *
 *   tool_engine MODEL_DIR --ids 1,2,3 --path prefill|decode [--threads N]
 *               [--isa auto|scalar|avx2|avx512] [--hidden OUT.npy] [--logits OUT.npy]
 *               [--greedy OUT.npy] [--layers OUT.npy] [--repeat R]
 *
 * Writes float32 [n, hidden] and [n, vocab] and int32 [n] arrays. --repeat runs the context R
 * times and prints the best wall time per run on stdout ("seconds S tokens N"), for throughput
 * notes. Exit status: 0 done, 2 usage, 3 the ISA cannot run here, 1 any other error (the
 * library's message on stderr). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fidelis/engine.h"
#include "fidelis/tensor.h"

static int usage(const char *why) {
  fprintf(stderr,
          "tool_engine: %s\nusage: tool_engine MODEL_DIR --ids 1,2,3 --path prefill|decode "
          "[--threads N] [--isa auto|scalar|avx2|avx512] [--hidden F] [--logits F] [--greedy F] "
          "[--layers F] "
          "[--repeat R]\n",
          why);
  return 2;
}

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 2; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static int parse_ids(const char *s, int32_t **ids, size_t *n) {
  size_t cap = 1;
  for (const char *p = s; *p; p++) cap += *p == ',';
  *ids = malloc(cap * sizeof **ids);
  if (!*ids) return -1;
  *n = 0;
  const char *p = s;
  for (;;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 0 || v > INT32_MAX) return -1;
    (*ids)[(*n)++] = (int32_t)v;
    if (*end == 0) return 0;
    if (*end != ',') return -1;
    p = end + 1;
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') return usage("MODEL_DIR first");
  const char *ids_s = arg(argc, argv, "--ids"), *path_s = arg(argc, argv, "--path");
  const char *isa_s = arg(argc, argv, "--isa"), *thr_s = arg(argc, argv, "--threads");
  const char *rep_s = arg(argc, argv, "--repeat");
  const char *ho = arg(argc, argv, "--hidden"), *lo = arg(argc, argv, "--logits");
  const char *go = arg(argc, argv, "--greedy"), *bo = arg(argc, argv, "--layers");
  if (!ids_s || !path_s) return usage("--ids and --path are required");
  fdl_engine_path path;
  if (strcmp(path_s, "prefill") == 0)
    path = FDL_ENGINE_PREFILL;
  else if (strcmp(path_s, "decode") == 0)
    path = FDL_ENGINE_DECODE;
  else
    return usage("--path must be prefill or decode");
  fdl_model_opts o = {.threads = 0, .isa = FDL_NUM_ISA_AUTO};
  if (thr_s) o.threads = (unsigned)strtoul(thr_s, NULL, 10);
  if (isa_s) {
    if (strcmp(isa_s, "scalar") == 0)
      o.isa = FDL_NUM_ISA_SCALAR;
    else if (strcmp(isa_s, "avx2") == 0)
      o.isa = FDL_NUM_ISA_AVX2;
    else if (strcmp(isa_s, "avx512") == 0)
      o.isa = FDL_NUM_ISA_AVX512;
    else if (strcmp(isa_s, "auto") != 0)
      return usage("unknown --isa");
  }
  int repeat = rep_s ? atoi(rep_s) : 1;
  if (repeat < 1) return usage("--repeat must be >= 1");
  int32_t *ids = NULL;
  size_t n = 0;
  if (parse_ids(ids_s, &ids, &n)) {
    free(ids);
    return usage("--ids must be comma-separated non-negative integers");
  }
  fdl_err err = {0};
  fdl_model *m = NULL;
  fdl_status s = fdl_model_load(argv[1], &o, &m, &err);
  if (s) {
    fprintf(stderr, "tool_engine: %s\n", err.msg);
    free(ids);
    return s == FDL_UNSUPPORTED && strstr(err.msg, "cannot run on this CPU") ? 3 : 1;
  }
  const fdl_model_info *in = fdl_model_get_info(m);
  float *h = ho ? malloc(n * in->hidden * sizeof *h) : NULL;
  float *l = lo ? malloc(n * in->vocab * sizeof *l) : NULL;
  int32_t *g = go ? malloc(n * sizeof *g) : NULL;
  float *b = bo ? malloc((in->layers + 2) * in->hidden * sizeof *b) : NULL;
  int rc = 1;
  if ((ho && !h) || (lo && !l) || (go && !g) || (bo && !b)) {
    fprintf(stderr, "tool_engine: out of memory\n");
    goto out;
  }
  fdl_engine_out eo = {h, l, g, b};
  double best = 1e300;
  for (int r = 0; r < repeat; r++) {
    double t0 = now();
    if ((s = fdl_engine_run(m, ids, n, path, &eo, &err))) {
      fprintf(stderr, "tool_engine: %s\n", err.msg);
      goto out;
    }
    double dt = now() - t0;
    best = dt < best ? dt : best;
  }
  if (rep_s) printf("seconds %.6f tokens %zu\n", best, n);
  int64_t sh[2] = {(int64_t)n, (int64_t)in->hidden};
  if (ho && (s = fdl_npy_write(ho, FDL_DTYPE_F32, 2, sh, h, &err))) goto fail;
  sh[1] = (int64_t)in->vocab;
  if (lo && (s = fdl_npy_write(lo, FDL_DTYPE_F32, 2, sh, l, &err))) goto fail;
  if (go && (s = fdl_npy_write(go, FDL_DTYPE_I32, 1, sh, g, &err))) goto fail;
  int64_t bs[2] = {(int64_t)in->layers + 2, (int64_t)in->hidden};
  if (bo && (s = fdl_npy_write(bo, FDL_DTYPE_F32, 2, bs, b, &err))) goto fail;
  rc = 0;
  goto out;
fail:
  fprintf(stderr, "tool_engine: %s\n", err.msg);
out:
  free(h);
  free(l);
  free(g);
  free(b);
  free(ids);
  fdl_model_free(m);
  return rc;
}
