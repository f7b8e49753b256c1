/* tool_gemm.c - drives fidelis' GEMM from raw files for tests/test_gemm_oracle.py.
 *
 *   tool_gemm --isa scalar|avx2|avx512|auto --type f32|bf16|f16 --m M --n N --k K
 *             --a FILE --b FILE --out FILE [--ref] [--threads T]
 *
 * A is M x K little-endian float32, B is N x K elements of --type (k contiguous, as the GEMM
 * reads them), both without padding; the tool writes C (M x N float32). With --ref every element
 * is fdl_gemm_dot_ref instead of a kernel's. Exit status: 0 done, 2 usage, 3 the ISA cannot run
 * on this CPU, 1 any other error (with a message on stderr). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "num/gemm_run.h"

static int usage(const char *why) {
  fprintf(stderr,
          "tool_gemm: %s\nusage: tool_gemm --isa scalar|avx2|avx512|auto --type f32|bf16|f16 "
          "--m M --n N --k K --a FILE --b FILE --out FILE [--ref] [--threads T]\n",
          why);
  return 2;
}

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

/* A decimal size, all of it digits; -1 when missing or malformed. */
static int size_arg(int argc, char **argv, const char *name, size_t *out) {
  const char *v = arg(argc, argv, name);
  if (!v || !*v || *v == '-' || *v == '+') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (errno || *end || x > SIZE_MAX) return -1;
  *out = (size_t)x;
  return 0;
}

static int mul_ok(size_t a, size_t b, size_t *out) {
  if (a && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}

/* Reads exactly n bytes of path into a new buffer; the file must hold exactly n bytes. */
static void *slurp(const char *path, size_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "tool_gemm: cannot open %s: %s\n", path, strerror(errno));
    return NULL;
  }
  uint8_t *p = malloc(n ? n : 1);
  int extra = 0;
  size_t got = p ? fread(p, 1, n, f) : 0;
  if (p && got == n) extra = fgetc(f) != EOF;
  int bad = ferror(f);
  fclose(f);
  if (!p)
    fprintf(stderr, "tool_gemm: out of memory for %zu bytes of %s\n", n, path);
  else if (bad || got != n || extra)
    fprintf(stderr, "tool_gemm: %s: expected exactly %zu bytes (%s)\n", path, n,
            bad        ? "read error"
            : got != n ? "file too short"
                       : "file too long");
  else
    return p;
  free(p);
  return NULL;
}

static int spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "tool_gemm: cannot create %s: %s\n", path, strerror(errno));
    return -1;
  }
  int ok = fwrite(p, 1, n, f) == n;
  ok &= fflush(f) == 0;
  ok &= fclose(f) == 0;
  if (!ok) fprintf(stderr, "tool_gemm: writing %s failed: %s\n", path, strerror(errno));
  return ok ? 0 : -1;
}

int main(int argc, char **argv) {
  const char *isa_s = arg(argc, argv, "--isa"), *type_s = arg(argc, argv, "--type");
  const char *a_path = arg(argc, argv, "--a"), *b_path = arg(argc, argv, "--b");
  const char *out_path = arg(argc, argv, "--out");
  int ref = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ref")) {
      ref = 1;
      continue;
    }
    static const char *const valued[] = {"--isa", "--type", "--m",   "--n",      "--k",
                                         "--a",   "--b",    "--out", "--threads"};
    size_t v = 0;
    while (v < sizeof valued / sizeof *valued && strcmp(argv[i], valued[v])) v++;
    if (v == sizeof valued / sizeof *valued || i + 1 >= argc) return usage(argv[i]);
    i++;
  }
  size_t m, n, k, threads = 1;
  if (!isa_s || !type_s || !a_path || !b_path || !out_path)
    return usage("--isa, --type, --a, --b and --out are required");
  if (size_arg(argc, argv, "--m", &m) || size_arg(argc, argv, "--n", &n) ||
      size_arg(argc, argv, "--k", &k))
    return usage("--m, --n and --k take a size");
  if (arg(argc, argv, "--threads") &&
      (size_arg(argc, argv, "--threads", &threads) || threads > 1024))
    return usage("--threads takes a count up to 1024");

  fdl_num_isa isa;
  if (!strcmp(isa_s, "scalar"))
    isa = FDL_NUM_ISA_SCALAR;
  else if (!strcmp(isa_s, "avx2"))
    isa = FDL_NUM_ISA_AVX2;
  else if (!strcmp(isa_s, "avx512"))
    isa = FDL_NUM_ISA_AVX512;
  else if (!strcmp(isa_s, "auto"))
    isa = FDL_NUM_ISA_AUTO;
  else
    return usage("unknown --isa");
  fdl_gemm_type type;
  size_t es;
  if (!strcmp(type_s, "f32"))
    type = FDL_GEMM_F32, es = 4;
  else if (!strcmp(type_s, "bf16"))
    type = FDL_GEMM_BF16, es = 2;
  else if (!strcmp(type_s, "f16"))
    type = FDL_GEMM_F16, es = 2;
  else
    return usage("unknown --type");

  size_t a_n, b_n, c_n, a_bytes, b_bytes, c_bytes;
  if (!mul_ok(m, k, &a_n) || !mul_ok(n, k, &b_n) || !mul_ok(m, n, &c_n) ||
      !mul_ok(a_n, 4, &a_bytes) || !mul_ok(b_n, es, &b_bytes) || !mul_ok(c_n, 4, &c_bytes)) {
    fprintf(stderr, "tool_gemm: %zu x %zu x %zu is too large\n", m, n, k);
    return 1;
  }
  float *a = slurp(a_path, a_bytes);
  void *b = a ? slurp(b_path, b_bytes) : NULL;
  float *c = malloc(c_bytes ? c_bytes : 1);
  int rc = 1;
  if (!a || !b || !c) {
    if (a && b) fprintf(stderr, "tool_gemm: out of memory for C\n");
    goto done;
  }
  if (ref) {
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++)
        c[i * n + j] = fdl_gemm_dot_ref(a + i * k, (const uint8_t *)b + j * k * es, type, k);
  } else {
    fdl_gemm *g;
    fdl_err err;
    fdl_status s = fdl_gemm_new(isa, (unsigned)threads, &g, &err);
    if (s != FDL_OK) {
      fprintf(stderr, "tool_gemm: %s\n", err.msg);
      rc = s == FDL_UNSUPPORTED ? 3 : 1;
      goto done;
    }
    fdl_gemm_args x = {m, n, k, a, k, b, k, type, c, n, NULL, NULL, 0, NULL};
    s = fdl_gemm_run(g, &x, &err);
    fdl_gemm_free(g);
    if (s != FDL_OK) {
      fprintf(stderr, "tool_gemm: %s\n", err.msg);
      goto done;
    }
  }
  rc = spit(out_path, c, c_bytes) ? 1 : 0;
done:
  free(a);
  free(b);
  free(c);
  return rc;
}
