/* test_gemm.c - unit tests of fidelis' own GEMM (contract fdl-gemm-1, src/num/gemm_run.h):
 * every kernel against fdl_gemm_dot_ref bit for bit over shapes, leading dimensions and value
 * families (huge, tiny, subnormal, signed zeros, exact cancellation, infinities), determinism over
 * every cut (threads, k-blocks, B blocks, pool tasks, direct sub-range tiles), the float64 error
 * bound, the caller's MXCSR, and argument errors. The independent exact oracle lives in
 * test_gemm_oracle.py.
 *
 *   test_gemm            scalar and every ISA this CPU runs
 *   test_gemm ISA        that ISA only (scalar, avx2, avx512); 77 (a CTest skip) when the CPU
 *                        cannot run it */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#else
#include <fenv.h>
#endif

#include "num/gemm_run.h"
#include "fidelis/tensor.h"
#include "num/gemm.h"

/* ---- the ISAs under test and their contexts ------------------------------------------- */

#define MAX_THREADS 3
static fdl_num_isa isas[3];
static size_t n_isas;
static fdl_gemm *ctx[3][MAX_THREADS]; /* [isa slot][threads - 1] */

/* ---- random values ---------------------------------------------------------------------- */

static uint64_t rng_state = 0x243f6a8885a308d3u;

static uint64_t rnd(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static int irange(int lo, int hi) {
  return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

static int chance(unsigned pct) {
  return rnd() % 100 < pct;
}

static uint32_t fbits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float bitsf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* A binary format: fraction bits and exponent bits (sign on top). */
typedef struct {
  unsigned mbits, ebits;
} fmt;
static const fmt FMT_F32 = {23, 8}, FMT_BF16 = {7, 8}, FMT_F16 = {10, 5};

static fmt fmt_of(fdl_gemm_type t) {
  return t == FDL_GEMM_F32 ? FMT_F32 : t == FDL_GEMM_BF16 ? FMT_BF16 : FMT_F16;
}

static uint32_t sign_bit(fmt f, int neg) {
  return (uint32_t)(neg != 0) << (f.mbits + f.ebits);
}

/* A normal number 2^e * 1.xxx with a random fraction (e clamped to the format's normal range),
 * or with sub set a random nonzero subnormal. */
static uint32_t enc(fmt f, int neg, int e, int sub) {
  int bias = (1 << (f.ebits - 1)) - 1;
  uint32_t man = (uint32_t)rnd() & ((1u << f.mbits) - 1);
  uint32_t ex;
  if (sub) {
    ex = 0;
    if (!man) man = 1;
  } else {
    int b = e + bias;
    ex = (uint32_t)(b < 1 ? 1 : b > 2 * bias ? 2 * bias : b);
  }
  return sign_bit(f, neg) | ex << f.mbits | man;
}

static uint32_t enc_inf(fmt f, int neg) {
  return sign_bit(f, neg) | ((1u << f.ebits) - 1) << f.mbits;
}

static uint32_t enc_nan(fmt f, int neg) { /* quiet, with a random payload */
  uint32_t payload = (uint32_t)rnd() & ((1u << (f.mbits - 1)) - 1);
  return enc_inf(f, neg) | 1u << (f.mbits - 1) | payload;
}

/* A BF16 pattern (8 significant bits) in another format, exactly. */
static uint32_t from_bf16(fmt f, uint32_t h) {
  if (f.mbits == FMT_BF16.mbits) return h;
  if (f.ebits == 8) return h << 16;
  int e = (int)((h >> 7) & 0xff) - 127; /* callers keep e in F16's normal range */
  return (h & 0x8000u) | (uint32_t)(e + 15) << 10 | (h & 0x7fu) << 3;
}

typedef enum {
  V_NORMAL,  /* moderate magnitudes, a few zeros */
  V_HUGE,    /* up to 3.4e38: products overflow to infinity in some chains */
  V_TINY,    /* 1e-45..1e-38 in A: subnormal products and chains */
  V_SUB,     /* subnormal patterns in A and in B (BF16 0x0001..0x007f, F16 0x0001..0x03ff) */
  V_ZERO,    /* many +0 and -0 on both sides */
  V_CANCEL,  /* pairs x*y, x*(-y): every chain returns to exactly +0 after each pair */
  V_SPECIAL, /* infinities and NaNs (quiet, random payloads) among normal values; every NaN
              * result must be the contract's 0x7FC00000 */
  V_KINDS
} vkind;
static const char *const kind_name[V_KINDS] = {"normal",   "huge",   "tiny",   "subnormal",
                                               "signed-0", "cancel", "special"};

/* One element of A (b = 0, f = FMT_F32) or of B (b = 1, f its format) at depth k. prev is the
 * element at k - 1 (the pairs of V_CANCEL). */
static uint32_t gen(fmt f, vkind kind, int b, size_t k, uint32_t prev) {
  int neg = (int)(rnd() & 1);
  switch (kind) {
  case V_NORMAL:
    return chance(2) ? sign_bit(f, neg) : enc(f, neg, irange(-4, 3), 0);
  case V_HUGE:
    if (!b) return chance(50) ? enc(f, neg, irange(110, 127), 0) : enc(f, neg, irange(-2, 2), 0);
    return enc(f, neg, irange(-2, 20), 0);
  case V_TINY:
    if (!b) return chance(50) ? enc(f, neg, 0, 1) : enc(f, neg, irange(-126, -122), 0);
    return enc(f, neg, irange(-3, 3), 0);
  case V_SUB:
    if (!b) return chance(50) ? enc(f, neg, 0, 1) : enc(f, neg, irange(-10, 40), 0);
    return chance(50) ? enc(f, neg, 0, 1) : enc(f, neg, irange(-10, 10), 0);
  case V_ZERO:
    return chance(40) ? sign_bit(f, neg) : enc(f, neg, irange(-3, 3), 0);
  case V_CANCEL:
    /* x and y of 8 significant bits and exponents in [-2, 2]: x*y is exact in float32 and so is
     * every partial sum, so each pair returns the chain to exactly +0. */
    if (k % 2) return b ? prev ^ sign_bit(f, 1) : prev;
    return from_bf16(f, enc(FMT_BF16, neg, irange(-2, 2), 0));
  case V_SPECIAL:
    /* NaNs in A only at even k, in B only at odd k (two NaNs meeting in one step is
     * test_nan_pairs) */
    if (chance(4)) return enc_inf(f, neg);
    if (k % 2 == (size_t)b && chance(3)) return enc_nan(f, neg);
    return chance(4) ? sign_bit(f, neg) : enc(f, neg, irange(-3, 3), 0);
  default:
    return 0;
  }
}

/* ---- a problem: operands with exact-size buffers, the reference, the checks ------------ */

#define SENTINEL 0x7fa5a5a5u /* a signalling NaN no kernel produces */

typedef struct {
  size_t m, n, k, lda, ldb, ldc, boff; /* boff: B starts boff rows into its buffer */
  fdl_gemm_type t;
  float *a;       /* (m - 1) * lda + k floats: ASan sees any read past the last row */
  uint8_t *bbuf;  /* (boff + n - 1) * ldb + k elements */
  float *c;       /* m * ldc */
  uint32_t *want; /* m * n: fdl_gemm_dot_ref's bits */
} prob;

typedef struct {
  size_t lda, ldb, ldc, boff; /* extra elements per row, and B's row offset */
} pad;
static const pad TIGHT = {0, 0, 0, 0}, PADDED = {3, 5, 7, 3}, WIDE = {16, 1, 9, 1};

static size_t es_of(fdl_gemm_type t) {
  return t == FDL_GEMM_F32 ? 4 : 2;
}

static const char *type_name(fdl_gemm_type t) {
  return t == FDL_GEMM_F32 ? "F32" : t == FDL_GEMM_BF16 ? "BF16" : "F16";
}

static const void *b_ptr(const prob *p) {
  return p->bbuf + p->boff * p->ldb * es_of(p->t);
}

static const void *b_row(const prob *p, size_t j) {
  return (const uint8_t *)b_ptr(p) + j * p->ldb * es_of(p->t);
}

static void set_b(prob *p, size_t row, size_t k, uint32_t v) { /* row counts from bbuf */
  size_t at = row * p->ldb + k;
  if (p->t == FDL_GEMM_F32)
    memcpy(p->bbuf + at * 4, &v, 4);
  else {
    uint16_t h = (uint16_t)v;
    memcpy(p->bbuf + at * 2, &h, 2);
  }
}

static uint32_t get_b(const prob *p, size_t j, size_t k) {
  const uint8_t *at = (const uint8_t *)b_row(p, j) + k * es_of(p->t);
  if (p->t == FDL_GEMM_F32) {
    uint32_t v;
    memcpy(&v, at, 4);
    return v;
  }
  uint16_t h;
  memcpy(&h, at, 2);
  return h;
}

static size_t a_len(const prob *p) {
  return p->m ? (p->m - 1) * p->lda + p->k : 0;
}

static size_t b_len(const prob *p) {
  return p->n ? (p->boff + p->n - 1) * p->ldb + p->k : 0;
}

static void *xmalloc(size_t n) {
  void *q = malloc(n ? n : 1);
  if (!q) fail_msg("out of memory (%zu bytes)", n);
  return q;
}

/* Operands whose padding (and B's rows before boff) hold NaNs: a kernel that read them would
 * poison its result. */
static prob prob_new(size_t m, size_t n, size_t k, fdl_gemm_type t, pad pd) {
  prob p = {m, n, k, k + pd.lda, k + pd.ldb, n + pd.ldc, pd.boff, t, NULL, NULL, NULL, NULL};
  p.a = xmalloc(a_len(&p) * sizeof(float));
  p.bbuf = xmalloc(b_len(&p) * es_of(t));
  p.c = xmalloc(m * p.ldc * sizeof(float));
  p.want = xmalloc(m * n * sizeof(uint32_t));
  for (size_t i = 0; i < a_len(&p); i++) p.a[i] = bitsf(0x7fc0dead);
  uint32_t bnan = t == FDL_GEMM_F32 ? 0x7fc0beefu : t == FDL_GEMM_BF16 ? 0x7fc1u : 0x7e01u;
  for (size_t i = 0; i < b_len(&p); i++) set_b(&p, i / p.ldb, i % p.ldb, bnan);
  return p;
}

static void prob_free(prob *p) {
  free(p->a);
  free(p->bbuf);
  free(p->c);
  free(p->want);
}

static void prob_fill(prob *p, vkind kind) {
  fmt fb = fmt_of(p->t);
  for (size_t i = 0; i < p->m; i++) {
    uint32_t prev = 0;
    for (size_t k = 0; k < p->k; k++) {
      prev = gen(FMT_F32, kind, 0, k, prev);
      p->a[i * p->lda + k] = bitsf(prev);
    }
  }
  for (size_t j = 0; j < p->n; j++) {
    uint32_t prev = 0;
    for (size_t k = 0; k < p->k; k++) {
      prev = gen(fb, kind, 1, k, prev);
      set_b(p, p->boff + j, k, prev);
    }
  }
}

static void prob_ref(prob *p) {
  for (size_t i = 0; i < p->m; i++)
    for (size_t j = 0; j < p->n; j++)
      p->want[i * p->n + j] = fbits(fdl_gemm_dot_ref(p->a + i * p->lda, b_row(p, j), p->t, p->k));
}

static fdl_gemm_args prob_args(const prob *p) {
  fdl_gemm_args x = {p->m, p->n, p->k,   p->a, p->lda, b_ptr(p), p->ldb,
                     p->t, p->c, p->ldc, NULL, NULL,   0,        NULL};
  return x;
}

static void c_sentinel(prob *p) {
  for (size_t i = 0; i < p->m * p->ldc; i++) p->c[i] = bitsf(SENTINEL);
}

/* C[i][j] for i in [m0, m1), j in [n0, n1) must be the reference's bits, every other cell of
 * the m x ldc buffer the sentinel. The first difference fails the test with its coordinates. */
static void check_c_range(const prob *p, size_t m0, size_t m1, size_t n0, size_t n1,
                          const char *isa, const char *what) {
  for (size_t i = 0; i < p->m; i++)
    for (size_t j = 0; j < p->ldc; j++) {
      int inside = i >= m0 && i < m1 && j >= n0 && j < n1;
      uint32_t got = fbits(p->c[i * p->ldc + j]);
      uint32_t want = inside ? p->want[i * p->n + j] : SENTINEL;
      if (got != want)
        fail_msg("%s, %s B, %s: C[%zu][%zu] = 0x%08x, %s 0x%08x (m %zu n %zu k %zu, lda %zu "
                 "ldb %zu ldc %zu, B row offset %zu; written range [%zu,%zu) x [%zu,%zu))",
                 isa, type_name(p->t), what, i, j, (unsigned)got,
                 inside ? "fdl_gemm_dot_ref gives" : "untouched cell should keep", (unsigned)want,
                 p->m, p->n, p->k, p->lda, p->ldb, p->ldc, p->boff, m0, m1, n0, n1);
    }
}

static void check_c(const prob *p, const char *isa, const char *what) {
  check_c_range(p, 0, p->m, 0, p->n, isa, what);
}

static void run_check(fdl_gemm *g, prob *p, const char *what) {
  c_sentinel(p);
  fdl_gemm_args x = prob_args(p);
  fdl_err err;
  fdl_status s = fdl_gemm_run(g, &x, &err);
  if (s != FDL_OK) fail_msg("%s: fdl_gemm_run failed: %s", what, err.msg);
  check_c(p, fdl_gemm_isa_name(g), what);
}

/* Every ISA under test, threads cycling 1..3 by `turn`. */
static void run_all(prob *p, size_t turn, const char *what) {
  char buf[200];
  for (size_t s = 0; s < n_isas; s++) {
    unsigned th = (unsigned)(turn % MAX_THREADS) + 1;
    snprintf(buf, sizeof buf, "%s, %u thread%s", what, th, th > 1 ? "s" : "");
    run_check(ctx[s][th - 1], p, buf);
  }
}

static const fdl_gemm_type types[3] = {FDL_GEMM_F32, FDL_GEMM_BF16, FDL_GEMM_F16};

/* A whole case: fill, reference, every ISA. */
static void case_run(size_t m, size_t n, size_t k, fdl_gemm_type t, pad pd, vkind kind, size_t turn,
                     const char *what) {
  char buf[160];
  prob p = prob_new(m, n, k, t, pd);
  prob_fill(&p, kind);
  prob_ref(&p);
  snprintf(buf, sizeof buf, "%s, %s values", what, kind_name[kind]);
  run_all(&p, turn, buf);
  prob_free(&p);
}

/* ---- kernels against the reference ------------------------------------------------------ */

static void test_one_by_one(void **state) {
  (void)state;
  size_t turn = 0;
  for (int t = 0; t < 3; t++)
    for (int kind = 0; kind < V_KINDS; kind++)
      for (int rep = 0; rep < 40; rep++)
        case_run(1, 1, 1, types[t], rep % 2 ? PADDED : TIGHT, (vkind)kind, turn++, "1x1x1");
}

static void test_prime_shapes(void **state) {
  (void)state;
  static const size_t small[] = {1, 2, 3, 5, 7, 13, 17, 31};
  static const size_t big[] = {61, 67, 97, 131};
  const size_t ns = sizeof small / sizeof *small;
  size_t turn = 0, cases = 0;
  char what[64];
  for (int t = 0; t < 3; t++) {
    for (size_t a = 0; a < ns; a++)
      for (size_t b = 0; b < ns; b++)
        for (size_t c = 0; c < ns; c++, turn++) {
          snprintf(what, sizeof what, "primes %zux%zux%zu", small[a], small[b], small[c]);
          case_run(small[a], small[b], small[c], types[t], turn % 3 ? PADDED : TIGHT,
                   (vkind)(turn % V_KINDS), turn, what);
          cases++;
        }
    /* One large prime per dimension, then two. */
    for (size_t q = 0; q < 4; q++) {
      const size_t shapes[6][3] = {{big[q], 5, 13},      {7, big[q], 17},
                                   {3, 5, big[q]},       {big[q], 13, 31},
                                   {17, big[q], big[q]}, {big[q], big[(q + 1) % 4], 7}};
      for (size_t s = 0; s < 6; s++, turn++) {
        snprintf(what, sizeof what, "primes %zux%zux%zu", shapes[s][0], shapes[s][1], shapes[s][2]);
        case_run(shapes[s][0], shapes[s][1], shapes[s][2], types[t], turn % 2 ? PADDED : WIDE,
                 (vkind)(turn % V_KINDS), turn, what);
        cases++;
      }
    }
  }
  print_message("prime shapes: %zu cases x %zu ISA(s)\n", cases, n_isas);
}

static void test_depths(void **state) {
  (void)state;
  static const size_t ks[] = {1, 2, 3, 2560, 5120};
  static const vkind kinds[] = {V_NORMAL, V_TINY, V_SUB, V_CANCEL, V_HUGE};
  size_t turn = 0;
  char what[64];
  for (int t = 0; t < 3; t++)
    for (size_t q = 0; q < sizeof ks / sizeof *ks; q++) {
      size_t nk = ks[q] > 3 ? 4 : sizeof kinds / sizeof *kinds;
      for (size_t v = 0; v < nk; v++, turn++) {
        snprintf(what, sizeof what, "depth 67x13x%zu", ks[q]);
        case_run(67, 13, ks[q], types[t], turn % 2 ? PADDED : TIGHT, kinds[(v + q) % 5], turn,
                 what);
      }
    }
}

/* M and N around every kernel's mr (8, 16, 64) and nr (4, 6), and around the default B block
 * (96 rows) and task shape. */
static void test_tile_edges(void **state) {
  (void)state;
  static const size_t ms[] = {7, 9, 15, 17, 63, 65, 129};
  static const size_t ns[] = {3, 5, 7, 11, 95, 97, 193};
  size_t turn = 0;
  char what[64];
  for (int t = 0; t < 3; t++)
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
      for (size_t b = 0; b < sizeof ns / sizeof *ns; b++, turn++) {
        snprintf(what, sizeof what, "edges %zux%zux19", ms[a], ns[b]);
        case_run(ms[a], ns[b], 19, types[t], turn % 2 ? PADDED : WIDE, (vkind)(turn % V_KINDS),
                 turn, what);
      }
}

static void test_leading_dims(void **state) {
  (void)state;
  static const pad pads[] = {{1, 0, 0, 0}, {0, 1, 0, 0},  {0, 0, 1, 0},    {0, 0, 0, 1},
                             {1, 1, 1, 1}, {16, 7, 9, 5}, {64, 33, 100, 2}};
  size_t turn = 0;
  char what[96];
  for (int t = 0; t < 3; t++)
    for (size_t q = 0; q < sizeof pads / sizeof *pads; q++)
      for (size_t kk = 0; kk < 3; kk++, turn++) {
        size_t k = kk == 0 ? 1 : kk == 1 ? 8 : 45;
        snprintf(what, sizeof what, "lda +%zu ldb +%zu ldc +%zu B offset %zu, 21x11x%zu",
                 pads[q].lda, pads[q].ldb, pads[q].ldc, pads[q].boff, k);
        case_run(21, 11, k, types[t], pads[q], (vkind)(turn % V_KINDS), turn, what);
      }
}

/* Every value family on one medium shape, per type. */
static void test_value_families(void **state) {
  (void)state;
  size_t turn = 0;
  for (int t = 0; t < 3; t++)
    for (int kind = 0; kind < V_KINDS; kind++)
      for (size_t rep = 0; rep < 3; rep++, turn++)
        case_run(37, 11, rep == 2 ? 100 : 101, types[t], rep ? PADDED : TIGHT, (vkind)kind, turn,
                 "37x11");
}

/* Results the contract fixes on its own, checked without the reference: a product whose value
 * is independent of fdl_gemm_dot_ref. Each row of `want` is the expected bits of C[0][0]. */
typedef struct {
  const char *what;
  size_t k;
  uint32_t a[4];
  float b[4]; /* exactly representable in every B type unless no_f16 */
  int no_f16;
  uint32_t want;
} exact_case;

static uint32_t b_enc(fdl_gemm_type t, float v) {
  uint32_t u = fbits(v);
  if (t == FDL_GEMM_F32) return u;
  if (t == FDL_GEMM_BF16) return u >> 16; /* callers pass BF16-exact values */
  /* F16: callers pass F16-exact values */
  uint32_t sign = (u >> 16) & 0x8000u;
  float mag = fabsf(v);
  if (mag < 0x1p-14f) return sign | (uint32_t)(mag * 0x1p24f); /* zero or subnormal */
  int e = (int)((u >> 23) & 0xff) - 127;
  return sign | (uint32_t)(e + 15) << 10 | (u & 0x7fffffu) >> 13;
}

static void test_exact_values(void **state) {
  (void)state;
  const uint32_t m0 = 0x80000000u, one = 0x3f800000u;
  const exact_case cases[] = {
      /* a row of -0.0 times positive B: the chain starts at +0.0, -0 + +0 = +0 */
      {"-0 x positive", 4, {m0, m0, m0, m0}, {1.0f, 2.0f, 0.5f, 3.0f}, 0, 0x00000000u},
      {"-0 x negative", 3, {m0, m0, m0}, {-1.0f, -2.0f, -0.5f}, 0, 0x00000000u},
      {"positive x -0", 3, {one, one, one}, {-0.0f, -0.0f, -0.0f}, 0, 0x00000000u},
      /* an exact negative product that rounds to zero keeps its sign: -0 */
      {"underflow to -0", 1, {0x8d800000u /* -2^-100 */}, {0x1p-100f}, 1, 0x80000000u},
      {"underflow to -0 then -0", 2, {0x8d800000u, m0}, {0x1p-100f, 1.0f}, 1, 0x80000000u},
      {"underflow to -0 then +0", 2, {0x8d800000u, 0}, {0x1p-100f, 1.0f}, 1, 0x00000000u},
      /* -2^-130 * 2^-24 = -2^-154: below half the least subnormal, so -0 (F16 2^-24: 0x0001) */
      {"F16-range underflow to -0", 1, {0x80080000u /* -2^-130 */}, {0x1p-24f}, 0, 0x80000000u},
      /* exact cancellations back to +0.0 */
      {"x*y - x*y", 2, {0x40400000u, 0x40400000u}, {1.5f, -1.5f}, 0, 0x00000000u},
      {"-x*y + x*y", 2, {0xc0400000u, 0xc0400000u}, {1.5f, -1.5f}, 0, 0x00000000u},
      {"(p+q) - p - q",
       4,
       {0x3f800000u, 0x40000000u, 0x3f800000u, 0x40000000u},
       {0.75f, 0.375f, -0.75f, -0.375f},
       0,
       0x00000000u},
      /* fused: (1+2^-23)(1+2^-7) - (1+2^-23)(1+2^-7) leaves the product's rounding error
       * -2^-30, where separate multiply and add would give 0 */
      {"fused rounding error",
       2,
       {0x3f800001u, 0x3f800001u},
       {1.0078125f, -1.0078125f},
       0,
       0xb0800000u},
      /* fused overflow: 3e38*2 = inf, then + (3e38 * -2, exact and finite) stays +inf (separate
       * rounding would give inf - inf = NaN) */
      {"overflow stays +inf", 2, {0x7f61d0b8u, 0x7f61d0b8u}, {2.0f, -2.0f}, 0, 0x7f800000u},
      {"overflow to -inf",
       3,
       {0xff61d0b8u, 0x7f61d0b8u, 0x3f800000u},
       {4.0f, 2.0f, 1.0f},
       0,
       0xff800000u},
      /* a subnormal chain: 2^-149 * 0.5 ties to even (0); 3 * 2^-149 * 0.5 = 1.5 ulp -> 2 ulp */
      {"subnormal tie to even", 1, {0x00000001u}, {0.5f}, 0, 0x00000000u},
      {"subnormal tie up", 1, {0x00000003u}, {0.5f}, 0, 0x00000002u},
      {"subnormal sum", 2, {0x00000003u, 0x00000005u}, {0.5f, 0.5f}, 0, 0x00000004u},
      /* an infinite c plus a finite product stays infinite */
      {"inf then finite", 2, {0x7f800000u, 0x3f800000u}, {1.0f, -1.0f}, 0, 0x7f800000u},
  };
  for (size_t q = 0; q < sizeof cases / sizeof *cases; q++)
    for (int t = 0; t < 3; t++) {
      if (cases[q].no_f16 && types[t] == FDL_GEMM_F16) continue; /* F16 cannot hold 2^-100 */
      prob p = prob_new(1, 3, cases[q].k, types[t], PADDED);
      for (size_t k = 0; k < cases[q].k; k++) {
        p.a[k] = bitsf(cases[q].a[k]);
        uint32_t bv = b_enc(types[t], cases[q].b[k]);
        for (size_t j = 0; j < 3; j++) set_b(&p, p.boff + j, k, bv);
      }
      prob_ref(&p);
      for (size_t j = 0; j < 3; j++)
        if (p.want[j] != cases[q].want)
          fail_msg("fdl_gemm_dot_ref, %s B, %s: 0x%08x, the contract gives 0x%08x",
                   type_name(types[t]), cases[q].what, (unsigned)p.want[j],
                   (unsigned)cases[q].want);
      run_all(&p, q + (size_t)t, cases[q].what);
      prob_free(&p);
    }
  /* a whole row of -0.0 over a long chain, every column positive: C = +0.0 (0x00000000) */
  for (int t = 0; t < 3; t++) {
    prob p = prob_new(3, 7, 1000, types[t], PADDED);
    for (size_t i = 0; i < 3; i++)
      for (size_t k = 0; k < p.k; k++) p.a[i * p.lda + k] = bitsf(m0);
    for (size_t j = 0; j < p.n; j++)
      for (size_t k = 0; k < p.k; k++)
        set_b(&p, p.boff + j, k, enc(fmt_of(types[t]), 0, irange(-3, 3), 0));
    prob_ref(&p);
    for (size_t i = 0; i < 3 * 7; i++) assert_int_equal(p.want[i], 0x00000000u);
    run_all(&p, (size_t)t, "rows of -0.0 x positive B");
    prob_free(&p);
  }
  /* V_CANCEL with even k returns every chain to exactly +0.0 */
  for (int t = 0; t < 3; t++) {
    prob p = prob_new(9, 7, 64, types[t], TIGHT);
    prob_fill(&p, V_CANCEL);
    prob_ref(&p);
    for (size_t i = 0; i < 9 * 7; i++) assert_int_equal(p.want[i], 0x00000000u);
    run_all(&p, (size_t)t, "exact pair cancellations");
    prob_free(&p);
  }
}

/* Two NaNs meeting in one step (A[i][k] and B[j][k] both NaN). fmaf returns one of them, and C
 * does not say which: glibc's fmaf gives B's, vfmadd231ps A's or B's depending on which register
 * the compiler put the broadcast in. The contract stores every NaN result as 0x7FC00000, so the
 * bits must agree exactly, and every NaN must be that one. */
static void test_nan_pairs(void **state) {
  (void)state;
  size_t nans = 0;
  for (size_t s = 0; s < n_isas; s++)
    for (int t = 0; t < 3; t++) {
      fmt fb = fmt_of(types[t]);
      prob p = prob_new(20, 7, 9, types[t], PADDED);
      prob_fill(&p, V_NORMAL);
      for (size_t i = 0; i < p.m; i++) p.a[i * p.lda + i % p.k] = bitsf(enc_nan(FMT_F32, 0));
      for (size_t j = 0; j < p.n; j++) set_b(&p, p.boff + j, (j * 2) % p.k, enc_nan(fb, 1));
      prob_ref(&p);
      c_sentinel(&p);
      fdl_gemm_args x = prob_args(&p);
      assert_int_equal(fdl_gemm_run(ctx[s][0], &x, NULL), FDL_OK);
      for (size_t i = 0; i < p.m; i++)
        for (size_t j = 0; j < p.n; j++) {
          uint32_t got = fbits(p.c[i * p.ldc + j]), want = p.want[i * p.n + j];
          int got_nan = (got & 0x7fffffffu) > 0x7f800000u;
          int want_nan = (want & 0x7fffffffu) > 0x7f800000u;
          if (got_nan != want_nan || got != want || (want_nan && want != 0x7fc00000u))
            fail_msg("%s, %s B, NaN pairs: C[%zu][%zu] = 0x%08x, fdl_gemm_dot_ref 0x%08x",
                     fdl_num_isa_name(isas[s]), type_name(p.t), i, j, (unsigned)got,
                     (unsigned)want);
          nans += (size_t)want_nan;
        }
      prob_free(&p);
    }
  assert_true(nans > 0);
}

/* ---- determinism over every cut ------------------------------------------------------- */

static fdl_gemm *new_ctx(fdl_num_isa isa, unsigned threads) {
  fdl_gemm *g;
  fdl_err err;
  if (fdl_gemm_new(isa, threads, &g, &err) != FDL_OK)
    fail_msg("fdl_gemm_new(%s, %u): %s", fdl_num_isa_name(isa), threads, err.msg);
  return g;
}

static void test_cuts(void **state) {
  (void)state;
  static const size_t kcs[] = {1, 2, 3, 7, 64, 1024, 0 /* K */};
  static const size_t nbs[] = {1, 5, 6, 7, 96};
  static const size_t trs[] = {1, 64, 256};
  static const size_t tcs[] = {1, 7, 1536};
  static const size_t shapes[2][3] = {{70, 23, 37}, {19, 13, 1100}};
  size_t runs = 0;
  char what[160];
  for (size_t s = 0; s < n_isas; s++)
    for (unsigned th = 1; th <= MAX_THREADS; th++) {
      fdl_gemm *g = new_ctx(isas[s], th);
      for (int t = 0; t < 3; t++)
        for (size_t sh = 0; sh < 2; sh++) {
          size_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
          prob p = prob_new(m, n, k, types[t], sh ? TIGHT : PADDED);
          prob_fill(&p, sh ? V_NORMAL : V_SUB);
          prob_ref(&p);
          snprintf(what, sizeof what, "%zux%zux%zu default cut, %u threads", m, n, k, th);
          run_check(ctx[s][th - 1], &p, what);
          for (size_t a = 0; a < sizeof kcs / sizeof *kcs; a++)
            for (size_t b = 0; b < sizeof nbs / sizeof *nbs; b++)
              for (size_t c = 0; c < sizeof trs / sizeof *trs; c++)
                for (size_t d = 0; d < sizeof tcs / sizeof *tcs; d++) {
                  /* the deep shape: every kc x nb, and every task shape at one blocking */
                  if (sh && !((c == 2 && d == 2) || (a == 3 && b == 1))) continue;
                  fdl_gemm_tuning tu = {{kcs[a] ? kcs[a] : k, nbs[b]}, trs[c], tcs[d]};
                  fdl_gemm_tuning_set(g, &tu);
                  snprintf(what, sizeof what,
                           "%zux%zux%zu, %u threads, kc %zu nb %zu task rows %zu cols %zu", m, n, k,
                           th, tu.blk.kc, tu.blk.nb, tu.task_rows, tu.task_cols);
                  run_check(g, &p, what);
                  runs++;
                }
          prob_free(&p);
        }
      fdl_gemm_free(g);
    }
  print_message("cuts: %zu tuned runs, all bit-identical to fdl_gemm_dot_ref\n", runs);
}

/* The small-M path (lanes over B's rows, taken for a few rows of A): m across its threshold,
 * n around its 16-row blocks, k around its 64-byte chunks (16 F32 or 32 BF16/F16 elements)
 * and deep, every value family, padding full of NaNs, 1..3 threads with the default task
 * shape and with column tasks that cut the row blocks. */
static void test_small_m(void **state) {
  (void)state;
  static const size_t ms[] = {1, 2, 3, 4, 5};
  static const size_t ns[] = {1, 15, 17, 33, 97};
  static const size_t ks[] = {1, 2, 3, 15, 16, 17, 31, 32, 33, 63, 65, 2560};
  const pad pads[] = {TIGHT, PADDED, WIDE};
  size_t turn = 0, runs = 0;
  char what[160];
  for (int t = 0; t < 3; t++)
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
      for (size_t b = 0; b < sizeof ns / sizeof *ns; b++)
        for (size_t q = 0; q < sizeof ks / sizeof *ks; q++) {
          size_t nk = ks[q] > 100 ? 1 : 2;
          for (size_t v = 0; v < nk; v++, turn++) {
            vkind kind = (vkind)(turn % V_KINDS);
            prob p = prob_new(ms[a], ns[b], ks[q], types[t], pads[turn % 3]);
            prob_fill(&p, kind);
            prob_ref(&p);
            snprintf(what, sizeof what, "small-M %zux%zux%zu, %s values", ms[a], ns[b], ks[q],
                     kind_name[kind]);
            run_all(&p, turn, what);
            for (size_t s = 0; s < n_isas; s++) {
              unsigned th = (unsigned)((turn + 1) % MAX_THREADS) + 1;
              fdl_gemm *g = new_ctx(isas[s], th);
              fdl_gemm_tuning tu;
              fdl_gemm_tuning_get(g, p.k, &tu);
              tu.task_cols = 1 + turn % 13;
              fdl_gemm_tuning_set(g, &tu);
              snprintf(what, sizeof what, "small-M %zux%zux%zu, %s values, %u threads, %zu cols",
                       ms[a], ns[b], ks[q], kind_name[kind], th, tu.task_cols);
              run_check(g, &p, what);
              fdl_gemm_free(g);
              runs++;
            }
            prob_free(&p);
          }
        }
  print_message("small-M: %zu cases, %zu tuned runs, all bit-identical to fdl_gemm_dot_ref\n", turn,
                runs);
}

/* B made on demand (b_rows): the rows the GEMM asks for, widened here from the stored B, give
 * the bits of the stored product, on the tile and small-M paths, under every ISA, thread count
 * and cut; b_row0 is added to every row asked for (here: B's offset in its buffer). */
static void rows_from_b(const void *arg, size_t j0, size_t j1, float *dst) {
  const prob *p = arg;
  for (size_t j = j0; j < j1; j++)
    for (size_t k = 0; k < p->k; k++) {
      const uint8_t *at = p->bbuf + (j * p->ldb + k) * es_of(p->t);
      uint16_t h;
      memcpy(&h, at, 2);
      float v;
      if (p->t == FDL_GEMM_F32)
        memcpy(&v, at, 4);
      else
        v = p->t == FDL_GEMM_BF16 ? fdl_bf16_to_f32(h) : fdl_f16_to_f32(h);
      dst[(j - j0) * p->k + k] = v;
    }
}

static void test_b_rows(void **state) {
  (void)state;
  static const size_t shapes[][3] = {
      {1, 37, 70}, {3, 200, 33}, {5, 17, 2560}, {70, 23, 37}, {300, 101, 130}};
  static const size_t nbs[] = {1, 7, 96};
  size_t runs = 0;
  char what[160];
  for (size_t s = 0; s < n_isas; s++)
    for (unsigned th = 1; th <= MAX_THREADS; th++) {
      fdl_gemm *g = new_ctx(isas[s], th);
      for (int t = 0; t < 3; t++)
        for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++) {
          prob p = prob_new(shapes[sh][0], shapes[sh][1], shapes[sh][2], types[t], PADDED);
          prob_fill(&p, (vkind)((sh + t) % V_KINDS));
          prob_ref(&p);
          for (size_t b = 0; b < sizeof nbs / sizeof *nbs; b++) {
            fdl_gemm_tuning tu;
            fdl_gemm_tuning_get(g, p.k, &tu);
            tu.blk.nb = nbs[b];
            tu.blk.kc = b == 1 ? 7 : tu.blk.kc;
            tu.task_cols = b == 1 ? 5 : tu.task_cols;
            fdl_gemm_tuning_set(g, &tu);
            c_sentinel(&p);
            fdl_gemm_args x = prob_args(&p);
            x.b = NULL, x.ldb = 0, x.b_type = (fdl_gemm_type)7; /* unused with b_rows */
            x.b_rows = rows_from_b, x.b_ctx = &p, x.b_row0 = p.boff;
            fdl_err err;
            if (fdl_gemm_run(g, &x, &err) != FDL_OK) fail_msg("b_rows run: %s", err.msg);
            snprintf(what, sizeof what, "b_rows %zux%zux%zu, %u threads, nb %zu kc %zu", p.m, p.n,
                     p.k, th, tu.blk.nb, tu.blk.kc);
            check_c(&p, fdl_gemm_isa_name(g), what);
            runs++;
          }
          prob_free(&p);
        }
      fdl_gemm_free(g);
    }
  print_message("b_rows: %zu runs, all bit-identical to the stored B's reference\n", runs);
}

/* fdl_gemm_tile on sub-ranges that do not align to tiles writes exactly that range. */
static void test_tile_subranges(void **state) {
  (void)state;
  static const size_t mr[][2] = {{0, 70}, {3, 20}, {1, 66}, {17, 18}, {5, 5}, {69, 70}, {8, 72}};
  static const size_t nr[][2] = {{0, 23}, {2, 9}, {5, 6}, {7, 20}, {22, 23}, {4, 4}, {1, 23}};
  const fdl_gemm_blocking blks[] = {{0, 0}, {7, 5}, {1, 1}, {3, 96}};
  char what[128];
  for (size_t s = 0; s < n_isas; s++) {
    const gemm_kernel *kern;
    fdl_err err;
    if (fdl_gemm_kernel_pick(isas[s], &kern, &err) != FDL_OK) fail_msg("%s", err.msg);
    for (int t = 0; t < 3; t++) {
      prob p = prob_new(72, 23, 29, types[t], PADDED);
      prob_fill(&p, (vkind)(t + 1));
      prob_ref(&p);
      fdl_gemm_args x = prob_args(&p);
      for (size_t b = 0; b < sizeof blks / sizeof *blks; b++) {
        fdl_gemm_blocking blk = blks[b];
        if (!blk.kc) fdl_gemm_blocking_default(kern, p.k, &blk);
        for (size_t a = 0; a < sizeof mr / sizeof *mr; a++)
          for (size_t c = 0; c < sizeof nr / sizeof *nr; c++) {
            size_t m0 = mr[a][0], m1 = mr[a][1], n0 = nr[c][0], n1 = nr[c][1];
            size_t floats = fdl_gemm_work_floats(kern, m1 - m0, p.k, &blk);
            float *work = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
            assert_non_null(work);
            c_sentinel(&p);
            fdl_gemm_tile(kern, &x, m0, m1, n0, n1, &blk, work);
            free(work);
            snprintf(what, sizeof what, "fdl_gemm_tile rows [%zu,%zu) cols [%zu,%zu) kc %zu nb %zu",
                     m0, m1, n0, n1, blk.kc, blk.nb);
            check_c_range(&p, m0, m1, n0, n1, fdl_num_isa_name(isas[s]), what);
          }
      }
      prob_free(&p);
    }
  }
}

/* ---- the error bound -------------------------------------------------------------------- */

/* B's element as a double, widened independently of the library. */
static double widen_d(fdl_gemm_type t, uint32_t v) {
  if (t == FDL_GEMM_F32) return (double)bitsf(v);
  if (t == FDL_GEMM_BF16) return (double)bitsf(v << 16);
  int e = (int)((v >> 10) & 0x1f);
  double mag = e ? ldexp((double)(1024 + (v & 0x3ff)), e - 25) : ldexp((double)(v & 0x3ff), -24);
  return v & 0x8000 ? -mag : mag;
}

static void test_error_bound(void **state) {
  (void)state;
  const double u = 0x1p-24;
  static const size_t ks[] = {2560, 5120};
  double worst = 0, worst_u = 0;
  for (size_t q = 0; q < 2; q++)
    for (int t = 0; t < 3; t++) {
      size_t k = ks[q];
      prob p = prob_new(5, 7, k, types[t], PADDED);
      prob_fill(&p, V_NORMAL);
      prob_ref(&p);
      run_all(&p, q + (size_t)t, "error bound operands");
      const double gamma = (double)k * u / (1.0 - (double)k * u);
      for (size_t i = 0; i < p.m; i++)
        for (size_t j = 0; j < p.n; j++) {
          double s = 0, mag = 0;
          for (size_t kk = 0; kk < k; kk++) {
            double prod = (double)p.a[i * p.lda + kk] * widen_d(p.t, get_b(&p, j, kk));
            s += prod; /* exact product; the double sum's own error is below k 2^-53 mag */
            mag += fabs(prod);
          }
          double c = (double)bitsf(p.want[i * p.n + j]);
          double err = fabs(c - s), bound = gamma * mag + (double)k * 0x1p-53 * mag;
          if (!(err <= bound))
            fail_msg("%s B, K %zu: C[%zu][%zu] = %.9g, float64 %.17g, error %.3g > bound %.3g",
                     type_name(p.t), k, i, j, c, s, err, bound);
          if (mag > 0) {
            worst = fmax(worst, err / (gamma * mag));
            worst_u = fmax(worst_u, err / (u * mag));
          }
        }
      prob_free(&p);
    }
  print_message("error bound: max |c - exact| / (gamma_K sum|a||b|) = %.3g "
                "(= %.3g u sum|a||b|), K 2560 and 5120\n",
                worst, worst_u);
}

/* ---- the caller's floating-point environment ------------------------------------------ */

#if defined(__x86_64__)
static unsigned env_get(void) {
  return _mm_getcsr();
}
static void env_set(unsigned v) {
  _mm_setcsr(v);
}
/* FTZ | DAZ and round toward zero */
static unsigned env_hostile(unsigned v) {
  return v | 0x8040u | 0x6000u;
}
#else
static unsigned env_get(void) {
  return (unsigned)fegetround();
}
static void env_set(unsigned v) {
  fesetround((int)v);
}
static unsigned env_hostile(unsigned v) {
  (void)v;
  return (unsigned)FE_TOWARDZERO;
}
#endif

static void test_caller_fpenv(void **state) {
  (void)state;
  const unsigned saved = env_get();
  for (size_t s = 0; s < n_isas; s++)
    for (int t = 0; t < 3; t++) {
      prob p = prob_new(21, 9, 57, types[t], PADDED);
      prob_fill(&p, t == 0 ? V_TINY : V_SUB);
      prob_ref(&p); /* in the default environment */
      for (int fresh = 0; fresh < 2; fresh++)
        for (unsigned th = 1; th <= MAX_THREADS; th += 2) {
          c_sentinel(&p);
          fdl_gemm_args x = prob_args(&p);
          const unsigned hostile = env_hostile(saved);
          env_set(hostile);
          /* a fresh context's workers are born in the hostile environment */
          fdl_gemm *made = NULL, *g = ctx[s][th - 1];
          fdl_err err;
          fdl_status st = fresh ? fdl_gemm_new(isas[s], th, &made, &err) : FDL_OK;
          if (fresh) g = made;
          const unsigned before = env_get();
          if (st == FDL_OK) st = fdl_gemm_run(g, &x, &err);
          const unsigned after = env_get();
          float one = fdl_gemm_dot_ref(p.a, b_row(&p, 0), p.t, p.k);
          const unsigned after_ref = env_get();
          env_set(saved);
          fdl_gemm_free(made);
          if (st != FDL_OK) fail_msg("%s", err.msg);
          if (after != before || after_ref != before)
            fail_msg("%s: environment 0x%x before the call, 0x%x after, 0x%x after dot_ref",
                     fdl_num_isa_name(isas[s]), before, after, after_ref);
          assert_int_equal(fbits(one), p.want[0]);
          check_c(&p, fdl_num_isa_name(isas[s]),
                  fresh ? "FTZ|DAZ|round-toward-zero, new context"
                        : "FTZ|DAZ|round-toward-zero, existing context");
        }
      prob_free(&p);
    }
  assert_int_equal(env_get(), saved);
}

/* ---- arguments ------------------------------------------------------------------------- */

static void test_arguments(void **state) {
  (void)state;
  fdl_err err;
  fdl_gemm *g;
  assert_int_equal(fdl_gemm_new((fdl_num_isa)99, 1, &g, &err), FDL_INVALID);
  assert_int_equal(fdl_gemm_new(FDL_NUM_ISA_AUTO, 1, &g, &err), FDL_OK);
  assert_non_null(fdl_gemm_isa_name(g));
  fdl_gemm_free(g);
  fdl_gemm_free(NULL);
  for (size_t s = 0; s < n_isas; s++) {
    fdl_gemm *gi = ctx[s][1];
    assert_string_equal(fdl_gemm_isa_name(gi), fdl_num_isa_name(isas[s]));
    prob p = prob_new(5, 4, 6, FDL_GEMM_BF16, PADDED);
    prob_fill(&p, V_NORMAL);
    const fdl_gemm_args ok = prob_args(&p);
    fdl_gemm_args x;
#define EXPECT(status, edit)                                                                       \
  do {                                                                                             \
    c_sentinel(&p);                                                                                \
    x = ok;                                                                                        \
    edit;                                                                                          \
    err.msg[0] = 0;                                                                                \
    assert_int_equal(fdl_gemm_run(gi, &x, &err), status);                                          \
    if ((status) != FDL_OK) assert_true(err.msg[0] != 0);                                          \
  } while (0)
    EXPECT(FDL_INVALID, x.ldb = x.k - 1);
    EXPECT(FDL_INVALID, x.lda = x.k - 1);
    EXPECT(FDL_INVALID, x.ldc = x.n - 1);
    EXPECT(FDL_INVALID, x.b_type = (fdl_gemm_type)3);
    EXPECT(FDL_INVALID, x.c = NULL);
    EXPECT(FDL_INVALID, x.a = NULL);
    EXPECT(FDL_INVALID, x.b = NULL);
    EXPECT(FDL_TOO_LARGE, (x.k = SIZE_MAX / 2, x.lda = x.k, x.ldb = x.k));
    /* nothing was written by any refusal */
    for (size_t i = 0; i < p.m * p.ldc; i++) assert_int_equal(fbits(p.c[i]), SENTINEL);
    /* m = 0 or n = 0: FDL_OK, nothing written */
    EXPECT(FDL_OK, x.m = 0);
    for (size_t i = 0; i < p.m * p.ldc; i++) assert_int_equal(fbits(p.c[i]), SENTINEL);
    EXPECT(FDL_OK, x.n = 0);
    for (size_t i = 0; i < p.m * p.ldc; i++) assert_int_equal(fbits(p.c[i]), SENTINEL);
    EXPECT(FDL_OK, (x.m = 0, x.c = NULL, x.a = NULL, x.b = NULL));
    /* k = 0: +0.0 in every cell of [m x n], no operand needed */
    EXPECT(FDL_OK, (x.k = 0, x.a = NULL, x.b = NULL, x.lda = 0, x.ldb = 0));
    for (size_t i = 0; i < p.m; i++)
      for (size_t j = 0; j < p.ldc; j++)
        assert_int_equal(fbits(p.c[i * p.ldc + j]), j < p.n ? 0x00000000u : SENTINEL);
#undef EXPECT
    /* and the same product afterwards is still right */
    prob_ref(&p);
    run_check(gi, &p, "after the refusals");
    prob_free(&p);
  }
  assert_int_equal(fbits(fdl_gemm_dot_ref(NULL, NULL, FDL_GEMM_F16, 0)), 0x00000000u);
}

/* ---- main ------------------------------------------------------------------------------- */

static int parse_isa(const char *s, fdl_num_isa *out) {
  if (!strcmp(s, "scalar"))
    *out = FDL_NUM_ISA_SCALAR;
  else if (!strcmp(s, "avx2"))
    *out = FDL_NUM_ISA_AVX2;
  else if (!strcmp(s, "avx512"))
    *out = FDL_NUM_ISA_AVX512;
  else
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  fdl_err err;
  if (argc > 2 || (argc == 2 && parse_isa(argv[1], &isas[0]))) {
    fprintf(stderr, "usage: test_gemm [scalar|avx2|avx512]\n");
    return 2;
  }
  if (argc == 2) {
    fdl_gemm *g;
    fdl_status s = fdl_gemm_new(isas[0], 1, &g, &err);
    if (s == FDL_UNSUPPORTED) {
      printf("skipped: %s GEMM kernels cannot run on this CPU (%s)\n", argv[1], err.msg);
      return 77;
    }
    if (s != FDL_OK) {
      fprintf(stderr, "test_gemm: %s\n", err.msg);
      return 1;
    }
    fdl_gemm_free(g);
    n_isas = 1;
  } else {
    const fdl_num_isa all[3] = {FDL_NUM_ISA_SCALAR, FDL_NUM_ISA_AVX2, FDL_NUM_ISA_AVX512};
    for (int i = 0; i < 3; i++) {
      fdl_gemm *g;
      fdl_status s = fdl_gemm_new(all[i], 1, &g, &err);
      if (s == FDL_OK) {
        isas[n_isas++] = all[i];
        fdl_gemm_free(g);
      } else if (s != FDL_UNSUPPORTED) {
        fprintf(stderr, "test_gemm: %s\n", err.msg);
        return 1;
      } else
        printf("note: %s not on this CPU; its own ctest (test_gemm_%s) records the skip\n",
               fdl_num_isa_name(all[i]), fdl_num_isa_name(all[i]));
    }
  }
  printf("GEMM kernels under test:");
  for (size_t s = 0; s < n_isas; s++) printf(" %s", fdl_num_isa_name(isas[s]));
  printf("\n");
  for (size_t s = 0; s < n_isas; s++)
    for (unsigned th = 1; th <= MAX_THREADS; th++)
      if (fdl_gemm_new(isas[s], th, &ctx[s][th - 1], &err) != FDL_OK) {
        fprintf(stderr, "test_gemm: %s\n", err.msg);
        return 1;
      }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_by_one),     cmocka_unit_test(test_prime_shapes),
      cmocka_unit_test(test_depths),         cmocka_unit_test(test_tile_edges),
      cmocka_unit_test(test_leading_dims),   cmocka_unit_test(test_value_families),
      cmocka_unit_test(test_exact_values),   cmocka_unit_test(test_nan_pairs),
      cmocka_unit_test(test_cuts),           cmocka_unit_test(test_small_m),
      cmocka_unit_test(test_tile_subranges), cmocka_unit_test(test_error_bound),
      cmocka_unit_test(test_caller_fpenv),   cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_b_rows),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  for (size_t s = 0; s < n_isas; s++)
    for (unsigned th = 0; th < MAX_THREADS; th++) fdl_gemm_free(ctx[s][th]);
  return rc;
}
