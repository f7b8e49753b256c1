/* bench_gemm.c - fidelis' own GEMM (contract fdl-gemm-1) against OpenBLAS sgemm on the same
 * generated operands, one line of key=value pairs per run.
 *
 *   bench_gemm fidelis|openblas --m M --n N --k K --type bf16|f16|f32 [--threads T]
 *              [--isa auto|scalar|avx2|avx512] [--reps R] [--check]
 *              [--kc KC,...] [--nb NB,...] [--task-rows R,...] [--task-cols C,...]
 *
 * C = A . B^T with A [m x k] float32 and B [n x k] stored as --type. Both are generated from
 * per-row splitmix64 streams (sum of four uniforms, about N(0, 1); B scaled by 1/16), so both
 * modes see the same values whatever the thread count, and their checksums agree to rounding.
 *
 *  fidelis   one fdl_gemm context (fdl_gemm_new(isa, threads)) reads B as stored. One warm-up
 *            call, then --reps timed calls. --kc, --nb, --task-rows and --task-cols override
 *            the context's cut through fdl_gemm_tuning_set (speed only, never a bit); each takes
 *            a comma-separated list, and every combination is timed (warm-up included) on the
 *            same operands and printed as its own line: a tuning sweep in one process, so the
 *            operands are generated once. --check compares the four corners and 64
 *            pseudo-random elements of C with fdl_gemm_dot_ref bit for bit (after every
 *            combination) and exits 1 on any difference.
 *  openblas  B is widened to float32 while it is generated (not timed: a user of OpenBLAS stores
 *            the float32 copy, and the typed copy is never held, so peak RSS is that user's),
 *            then cblas_sgemm(RowMajor, NoTrans, Trans, ...) with openblas_set_num_threads(T),
 *            one warm-up, --reps timed calls. core= is openblas_get_corename() (it follows
 *            OPENBLAS_CORETYPE on a DYNAMIC_ARCH build).
 *
 * Figures: seconds (best rep), seconds_mean, gflops = 2 m n k / seconds, cpu_util (process CPU
 * time / (wall time x threads) over the timed reps: below 1 means idle or preempted workers),
 * checksum (sum of C in float64, row-major order), peak_rss_mib (getrusage ru_maxrss). Large
 * arrays are 2 MiB aligned with MADV_HUGEPAGE in both modes. */
#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_clock.h"
#include "num/gemm_run.h"
#include "fidelis/pool.h"
#include "fidelis/tensor.h"
#include "num/gemm.h"

static const char usage[] =
    "usage: bench_gemm fidelis|openblas --m M --n N --k K --type bf16|f16|f32 [--threads T]\n"
    "                  [--isa auto|scalar|avx2|avx512] [--reps R] [--check]\n"
    "                  [--kc KC,...] [--nb NB,...] [--task-rows R,...] [--task-cols C,...]\n"
    "  C [m x n] = A [m x k] float32 . B [n x k]^T, B stored as --type; prints key=value pairs.\n"
    "  --threads T   workers (default 0 = every online CPU)\n"
    "  --isa         fidelis kernel (default auto); fidelis mode only\n"
    "  --reps R      timed calls after one warm-up (default 3); seconds= is the best\n"
    "  --check       fidelis: compare corners and 64 random elements with fdl_gemm_dot_ref\n"
    "                bit for bit, exit 1 on a difference\n"
    "  --kc, --nb, --task-rows, --task-cols\n"
    "                fidelis: override the blocking and task shape (fdl_gemm_tuning_set);\n"
    "                comma-separated lists sweep every combination, one line each\n";

typedef enum { MODE_FIDELIS, MODE_OPENBLAS } bench_mode;

enum { T_KC, T_NB, T_ROWS, T_COLS, MAX_LIST = 16 };
static const char *const tune_opt[4] = {"--kc", "--nb", "--task-rows", "--task-cols"};

typedef struct {
  bench_mode mode;
  size_t m, n, k, reps;
  fdl_gemm_type type;
  unsigned threads;
  fdl_num_isa isa;
  int isa_given, check;
  /* The cuts to try: tune[T_KC..T_COLS] lists of ntune[] values each (0 values: the
   * context's default); every combination is one line of output. */
  size_t tune[4][MAX_LIST], ntune[4];
} opts;

/* ---- arguments ------------------------------------------------------------------------ */

static int bad(const char *fmt, const char *what) {
  fprintf(stderr, "bench_gemm: ");
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\n%s", usage);
  return 2;
}

static int parse_size(const char *s, size_t *out) {
  if (!s || *s < '0' || *s > '9') return 0;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > SIZE_MAX) return 0;
  *out = (size_t)v;
  return 1;
}

/* "v1,v2,..." of positive integers, at most MAX_LIST. */
static int parse_list(const char *s, size_t *out, size_t *n) {
  char buf[512];
  if (strlen(s) >= sizeof buf) return 0;
  strcpy(buf, s);
  *n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (*n == MAX_LIST || !parse_size(tok, &out[*n]) || out[*n] == 0) return 0;
    (*n)++;
  }
  return *n > 0;
}

static int parse_args(int argc, char **argv, opts *o) {
  memset(o, 0, sizeof *o);
  o->reps = 3;
  o->type = FDL_GEMM_BF16;
  int have_type = 0;
  if (argc < 2) return bad("%s", "a mode is required");
  if (strcmp(argv[1], "fidelis") == 0)
    o->mode = MODE_FIDELIS;
  else if (strcmp(argv[1], "openblas") == 0)
    o->mode = MODE_OPENBLAS;
  else
    return bad("unknown mode '%s'", argv[1]);
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--check") == 0) {
      o->check = 1;
      continue;
    }
    if (i + 1 >= argc) return bad("%s needs a value", a);
    const char *v = argv[++i];
    size_t x = 0;
    size_t *dst = strcmp(a, "--m") == 0      ? &o->m
                  : strcmp(a, "--n") == 0    ? &o->n
                  : strcmp(a, "--k") == 0    ? &o->k
                  : strcmp(a, "--reps") == 0 ? &o->reps
                                             : NULL;
    int ti = -1;
    for (int j = 0; j < 4; j++)
      if (strcmp(a, tune_opt[j]) == 0) ti = j;
    if (ti >= 0) {
      if (!parse_list(v, o->tune[ti], &o->ntune[ti]))
        return bad("%s needs positive integers, comma-separated (at most 16)", a);
    } else if (dst) {
      if (!parse_size(v, &x) || x == 0) return bad("%s needs a positive integer", a);
      *dst = x;
    } else if (strcmp(a, "--threads") == 0) {
      if (!parse_size(v, &x) || x > FDL_POOL_MAX_THREADS || x > INT_MAX)
        return bad("--threads needs an integer 0..%s", "1024");
      o->threads = (unsigned)x;
    } else if (strcmp(a, "--type") == 0) {
      if (strcmp(v, "bf16") == 0)
        o->type = FDL_GEMM_BF16;
      else if (strcmp(v, "f16") == 0)
        o->type = FDL_GEMM_F16;
      else if (strcmp(v, "f32") == 0)
        o->type = FDL_GEMM_F32;
      else
        return bad("unknown --type '%s'", v);
      have_type = 1;
    } else if (strcmp(a, "--isa") == 0) {
      if (strcmp(v, "auto") == 0)
        o->isa = FDL_NUM_ISA_AUTO;
      else if (strcmp(v, "scalar") == 0)
        o->isa = FDL_NUM_ISA_SCALAR;
      else if (strcmp(v, "avx2") == 0)
        o->isa = FDL_NUM_ISA_AVX2;
      else if (strcmp(v, "avx512") == 0)
        o->isa = FDL_NUM_ISA_AVX512;
      else
        return bad("unknown --isa '%s'", v);
      o->isa_given = 1;
    } else {
      return bad("unknown option '%s'", a);
    }
  }
  if (!o->m || !o->n || !o->k || !have_type)
    return bad("%s", "--m, --n, --k and --type are required");
  if (o->mode == MODE_OPENBLAS && (o->isa_given || o->check || o->ntune[T_KC] || o->ntune[T_NB] ||
                                   o->ntune[T_ROWS] || o->ntune[T_COLS]))
    return bad("%s", "--isa, --check and the tuning options are for fidelis mode");
  if (o->mode == MODE_OPENBLAS && (o->m > INT_MAX || o->n > INT_MAX || o->k > INT_MAX))
    return bad("%s", "openblas mode needs m, n and k below 2^31 (blasint)");
  if (o->m > SIZE_MAX / 4 / o->k || o->n > SIZE_MAX / 4 / o->k || o->m > SIZE_MAX / 4 / o->n)
    return bad("%s", "the operands do not fit in memory");
  return 0;
}

/* ---- operands ------------------------------------------------------------------------- */

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Sum of four 16-bit uniforms, centred and scaled to variance 1 (|x| < 3.47). The sum is an
 * integer below 2^18, so its conversion is exact. */
static float gauss(uint64_t *s) {
  uint64_t z = mix(s);
  int32_t sum = (int32_t)((z & 0xffff) + ((z >> 16) & 0xffff) + ((z >> 32) & 0xffff) + (z >> 48));
  return (float)(sum - 2 * 65535) * (float)(1.0 / (65536.0 * 0.57735026918962576));
}

/* float32 to bfloat16, round to nearest even (finite inputs), as fdl_f32_to_bf16 does. */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* float32 to binary16, round to nearest even (finite inputs; overflow goes to infinity). */
static uint16_t to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x47800000u) return (uint16_t)(sign | 0x7c00u); /* >= 2^16 */
  if (a < 0x38800000u) {                                   /* below 2^-14: subnormal or 0 */
    float x;
    memcpy(&x, &a, sizeof x);
    return (uint16_t)(sign | (uint16_t)lrintf(x * 0x1p24f)); /* exact scale, RNE in lrintf */
  }
  uint32_t r = a - 0x38000000u, h = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
  return (uint16_t)(sign | (h >= 0x7c00u ? 0x7c00u : h));
}

typedef enum { STORE_F32, STORE_BF16, STORE_F16, STORE_WIDE_BF16, STORE_WIDE_F16 } store_kind;

#define GEN_ROWS_PER_TASK 256

typedef struct {
  size_t rows, k;
  uint64_t stream;
  float scale;
  store_kind store;
  void *out; /* [rows x k] */
} gen_args;

/* Row r's values depend only on (stream, r): any thread count and either mode get the same. */
static fdl_status gen_task(void *varg, size_t t, unsigned worker, fdl_err *err) {
  (void)worker, (void)err;
  const gen_args *g = varg;
  size_t r1 = (t + 1) * GEN_ROWS_PER_TASK < g->rows ? (t + 1) * GEN_ROWS_PER_TASK : g->rows;
  for (size_t r = t * GEN_ROWS_PER_TASK; r < r1; r++) {
    uint64_t s = g->stream * 0xd1b54a32d192ed03u ^ (uint64_t)r * 0x9e3779b97f4a7c15u;
    float *f = (float *)g->out + r * g->k;
    uint16_t *h = (uint16_t *)g->out + r * g->k;
    for (size_t c = 0; c < g->k; c++) {
      float x = gauss(&s) * g->scale;
      switch (g->store) {
      case STORE_F32:
        f[c] = x;
        break;
      case STORE_BF16:
        h[c] = to_bf16(x);
        break;
      case STORE_F16:
        h[c] = to_f16(x);
        break;
      case STORE_WIDE_BF16:
        f[c] = fdl_bf16_to_f32(to_bf16(x));
        break;
      case STORE_WIDE_F16:
        f[c] = fdl_f16_to_f32(to_f16(x));
        break;
      }
    }
  }
  return FDL_OK;
}

/* Large arrays: 2 MiB aligned and huge pages where the kernel allows (THP "madvise"), the same
 * in both modes, so TLB misses do not favour either side. */
static void *alloc_big(size_t bytes) {
  size_t huge = (size_t)2 << 20;
  if (bytes > SIZE_MAX - huge) return NULL;
  bytes = (bytes + huge - 1) / huge * huge;
  void *p = aligned_alloc(huge, bytes ? bytes : huge);
  if (p) (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only: a refusal changes no result */
  return p;
}

static fdl_status generate(fdl_pool *pool, size_t rows, size_t k, uint64_t stream, float scale,
                           store_kind store, void *out, fdl_err *err) {
  gen_args g = {rows, k, stream, scale, store, out};
  return fdl_pool_run(pool, (rows + GEN_ROWS_PER_TASK - 1) / GEN_ROWS_PER_TASK, gen_task, &g, err);
}

/* A, B and C of one run. B is stored as --type (wide = 0) or as its exact float32 widening
 * (wide = 1, the copy a user of OpenBLAS keeps); the typed copy is then never held. */
typedef struct {
  float *a, *c;
  void *b;
  double gen_s; /* generating A and B, first touch of their pages included */
} operands;

static int make_operands(const opts *o, fdl_pool *pool, int wide, operands *op) {
  fdl_err err;
  size_t eb = wide || o->type == FDL_GEMM_F32 ? 4 : 2;
  store_kind sb = o->type == FDL_GEMM_F32    ? STORE_F32
                  : o->type == FDL_GEMM_BF16 ? (wide ? STORE_WIDE_BF16 : STORE_BF16)
                                             : (wide ? STORE_WIDE_F16 : STORE_F16);
  op->a = alloc_big(o->m * o->k * sizeof(float));
  op->b = alloc_big(o->n * o->k * eb);
  op->c = alloc_big(o->m * o->n * sizeof(float));
  if (!op->a || !op->b || !op->c) {
    fprintf(stderr, "bench_gemm: out of memory for the operands (B: %zu bytes)\n",
            o->n * o->k * eb);
    free(op->a), free(op->b), free(op->c);
    return 2;
  }
  double t0 = bench_now();
  if (generate(pool, o->m, o->k, 1, 1.0f, STORE_F32, op->a, &err) != FDL_OK ||
      generate(pool, o->n, o->k, 2, 0.0625f, sb, op->b, &err) != FDL_OK) {
    fprintf(stderr, "bench_gemm: generating the operands: %s\n", err.msg);
    free(op->a), free(op->b), free(op->c);
    return 3;
  }
  op->gen_s = bench_now() - t0;
  return 0;
}

static double checksum(const float *c, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += (double)c[i];
  return s;
}

static const char *type_name(fdl_gemm_type t) {
  return t == FDL_GEMM_BF16 ? "bf16" : t == FDL_GEMM_F16 ? "f16" : "f32";
}

/* ---- timing --------------------------------------------------------------------------- */

typedef struct {
  double best, mean, cpu_util;
} timing;

typedef int (*run_fn)(void *arg);

/* One untimed warm-up call, then reps timed calls. Returns 0, or the failing call's nonzero. */
static int time_reps(run_fn fn, void *arg, size_t reps, unsigned threads, timing *t) {
  int rc = fn(arg);
  if (rc) return rc;
  double sum = 0.0, cpu = 0.0;
  t->best = 1e300;
  for (size_t r = 0; r < reps; r++) {
    double t0 = bench_now(), c0 = bench_cpu_now();
    if ((rc = fn(arg)) != 0) return rc;
    double dt = bench_now() - t0;
    cpu += bench_cpu_now() - c0;
    sum += dt;
    t->best = dt < t->best ? dt : t->best;
  }
  t->mean = sum / (double)reps;
  t->cpu_util = cpu / (sum * (double)threads);
  return 0;
}

static int print_common(const opts *o, unsigned threads, const timing *t, const operands *op) {
  double flops = 2.0 * (double)o->m * (double)o->n * (double)o->k;
  return printf(" type=%s m=%zu n=%zu k=%zu threads=%u reps=%zu seconds=%.4f seconds_mean=%.4f "
                "gflops=%.2f cpu_util=%.3f checksum=%.17g gen_s=%.3f",
                type_name(o->type), o->m, o->n, o->k, threads, o->reps, t->best, t->mean,
                flops / t->best * 1e-9, t->cpu_util, checksum(op->c, o->m * o->n), op->gen_s) < 0
             ? -1
             : 0;
}

/* ---- fidelis -------------------------------------------------------------------------- */

typedef struct {
  fdl_gemm *g;
  const fdl_gemm_args *x;
  fdl_err err;
} fid_call;

static int fid_run(void *arg) {
  fid_call *f = arg;
  return fdl_gemm_run(f->g, f->x, &f->err) == FDL_OK ? 0 : 3;
}

/* The four corners and 64 pseudo-random elements, bit for bit against the contract. */
static int check_elems(const fdl_gemm_args *x, size_t *checked) {
  size_t es = x->b_type == FDL_GEMM_F32 ? 4 : 2, bad_count = 0;
  uint64_t s = 42;
  *checked = 0;
  for (size_t p = 0; p < 68; p++) {
    size_t i = p < 4 ? (p & 1 ? x->m - 1 : 0) : (size_t)(mix(&s) % x->m);
    size_t j = p < 4 ? (p & 2 ? x->n - 1 : 0) : (size_t)(mix(&s) % x->n);
    float want = fdl_gemm_dot_ref(x->a + i * x->lda, (const uint8_t *)x->b + j * x->ldb * es,
                                  x->b_type, x->k);
    float got = x->c[i * x->ldc + j];
    (*checked)++;
    if (memcmp(&want, &got, sizeof want) != 0) {
      if (bad_count++ < 5)
        fprintf(stderr, "bench_gemm: C[%zu][%zu] = %a, the contract gives %a\n", i, j, (double)got,
                (double)want);
    }
  }
  return bad_count ? 1 : 0;
}

static int bench_fidelis(const opts *o, fdl_pool *pool) {
  fdl_err err;
  operands op;
  int rc = make_operands(o, pool, 0, &op);
  if (rc) return rc;
  float *a = op.a, *c = op.c;
  void *b = op.b;
  unsigned threads = pool->threads;
  fdl_pool_free(pool); /* the context starts its own */
  fdl_gemm *g;
  if (fdl_gemm_new(o->isa, o->threads, &g, &err) != FDL_OK) {
    fprintf(stderr, "bench_gemm: %s\n", err.msg);
    return 3;
  }
  fdl_gemm_tuning dflt;
  fdl_gemm_tuning_get(g, o->k, &dflt);
  size_t count[4], combos = 1;
  for (int j = 0; j < 4; j++) combos *= count[j] = o->ntune[j] ? o->ntune[j] : 1;
  fdl_gemm_args x = {o->m, o->n, o->k, a, o->k, b, o->k, o->type, c, o->n, NULL, NULL, 0, NULL};
  fid_call call = {g, &x, {0}};
  for (size_t cb = 0; cb < combos && rc != 2 && rc != 3; cb++) {
    fdl_gemm_tuning t = dflt;
    size_t *field[4] = {&t.blk.kc, &t.blk.nb, &t.task_rows, &t.task_cols};
    for (size_t j = 0, rest = cb; j < 4; rest /= count[j], j++)
      if (o->ntune[j]) *field[j] = o->tune[j][rest % count[j]];
    fdl_gemm_tuning_set(g, &t);
    fdl_gemm_tuning_get(g, o->k, &t); /* as rounded by the context */
    /* NaN everywhere first, so an element a cut fails to write shows in check= and checksum= */
    memset(c, 0xff, o->m * o->n * sizeof *c);
    timing tm;
    if (time_reps(fid_run, &call, o->reps, threads, &tm) != 0) {
      fprintf(stderr, "bench_gemm: fdl_gemm_run: %s\n", call.err.msg);
      rc = 3;
      break;
    }
    size_t checked = 0;
    int mismatch = o->check ? check_elems(&x, &checked) : 0;
    if (printf("mode=fidelis isa=%s contract=%s", fdl_gemm_isa_name(g), FDL_GEMM_CONTRACT) < 0 ||
        print_common(o, threads, &tm, &op) != 0 ||
        printf(" kc=%zu nb=%zu task_rows=%zu task_cols=%zu", t.blk.kc, t.blk.nb, t.task_rows,
               t.task_cols) < 0 ||
        (o->check && printf(" check=%s checked=%zu", mismatch ? "FAILED" : "ok", checked) < 0) ||
        printf(" peak_rss_mib=%.1f\n", bench_peak_rss_mib()) < 0 || fflush(stdout) != 0)
      rc = 2;
    if (mismatch && !rc) rc = 1;
  }
  fdl_gemm_free(g);
  free(a), free(b), free(c);
  return rc;
}

/* ---- OpenBLAS ------------------------------------------------------------------------- */

typedef struct {
  const opts *o;
  const float *a, *b;
  float *c;
} blas_call;

static int blas_run(void *arg) {
  const blas_call *q = arg;
  int m = (int)q->o->m, n = (int)q->o->n, k = (int)q->o->k;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, q->a, k, q->b, k, 0.0f, q->c,
              n);
  return 0;
}

/* openblas_get_config() as one token (spaces become '_'). */
static void print_token(const char *s) {
  for (; s && *s; s++) putchar(*s == ' ' ? '_' : *s);
}

static int bench_openblas(const opts *o, fdl_pool *pool) {
  operands op;
  int rc = make_operands(o, pool, 1, &op);
  if (rc) return rc;
  float *a = op.a, *b = op.b, *c = op.c;
  unsigned threads = pool->threads;
  fdl_pool_free(pool);
  openblas_set_num_threads((int)threads);
  blas_call q = {o, a, b, c};
  timing tm;
  time_reps(blas_run, &q, o->reps, threads, &tm);
  if (printf("mode=openblas core=%s config=", openblas_get_corename()) < 0) rc = 2;
  print_token(openblas_get_config());
  if (rc || print_common(o, threads, &tm, &op) != 0 ||
      printf(" peak_rss_mib=%.1f\n", bench_peak_rss_mib()) < 0)
    rc = 2;
  free(a), free(b), free(c);
  return rc;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return fputs(usage, stdout) < 0 ? 2 : 0;
  opts o;
  int rc = parse_args(argc, argv, &o);
  if (rc) return rc;
  fdl_pool pool;
  fdl_err err;
  if (fdl_pool_init(&pool, o.threads, &err) != FDL_OK) {
    fprintf(stderr, "bench_gemm: %s\n", err.msg);
    return 3;
  }
  rc = o.mode == MODE_FIDELIS ? bench_fidelis(&o, &pool) : bench_openblas(&o, &pool);
  fdl_pool_free(&pool); /* safe when already freed */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "bench_gemm: cannot write the results\n");
    return 2;
  }
  return rc;
}
