/* kl.h - internal to src/num: the per-row streaming state, the exp kernel every path shares,
 * and the table of instruction-set specific chunk kernels.
 *
 * Bit-identity across instruction sets is a design rule, not an accident: element i of a chunk
 * always accumulates into lane i % KL_LANES, every lane performs the same IEEE operations in the
 * same order (fma where an fma is written, never a contraction the compiler chose), and the
 * exp below is built only from +, *, fma and exact scalings. GCC does not contract a*b+c in
 * ISO C mode (-std=c17 implies -ffp-contract=off), which the scalar path relies on. */
#ifndef FDL_NUM_KL_H
#define FDL_NUM_KL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fidelis/num.h"

/* 16 float64 lanes: two AVX-512 vectors, four AVX2 vectors, or a C array. Two vectors of
 * independent accumulators hide the add latency of the AVX-512 loop. */
#define KL_LANES 16

typedef struct {
  double st[KL_LANES];      /* sum exp(t - mt) */
  double ss[KL_LANES];      /* sum exp(s - ms) */
  double a[KL_LANES];       /* sum exp(t - mt) * ((t - mt) - (s - ms)) */
  double d[KL_LANES];       /* sum (exp(s - ms) - exp(t - mt)) = Ss - St without cancellation */
  double abs_sum[KL_LANES]; /* sum |t - s| */
  double abs_max[KL_LANES]; /* max |t - s| */
  double js[KL_LANES];      /* second sweep: 2 * JS contributions */
  double mt, ms;            /* running maxima (float32 values, widened) */
  double log_st, log_ss;    /* after finish: log St, log Ss (for the JS sweep) */
  int64_t at, as;           /* argmax of each side so far */
  int64_t tgt;              /* vocabulary index whose logits are kept below, or -1 */
  float tgt_t, tgt_s;       /* the target's logit on each side, caught as its chunk passes */
  int started;
  int fast; /* every exp argument of this chunk is >= KL_FAST_MIN */
} kl_state;

/* exp(d) for d <= 0 (the only arguments the estimator forms), within 0.53 ulp.
 * d = (16k + j) ln2/16 + r, |r| <= ln2/32: 2^(j/16) from a 16-entry table kept as hi + lo,
 * e^r - 1 by a degree-7 polynomial (Chebyshev fit, < 0.001 ulp), combined as
 * T_hi + (T_hi p + T_lo) so only the last addition rounds at full size. The reduction is exact:
 * KL_C_HI has 37 significant bits and |16k + j| < 2^15, so fma(kf, -C_HI, d) has no rounding.
 * 2^k is applied in two exact-then-one-rounding steps, so subnormal results round once, exactly
 * like vscalefpd. Arguments below -750 are clamped: exp(-750) already rounds to 0. */
#define KL_EXP_MIN (-750.0)
#define KL_INV_C 0x1.71547652b82fep+4   /* 16 / ln2 */
#define KL_C_HI 0x1.62e42fefa0000p-5    /* ln2 / 16, high 37 bits */
#define KL_C_LO 0x1.cf79abc9e3b3ap-44   /* ln2 / 16 - KL_C_HI */
#define KL_MAGIC 0x1.8p52               /* adding it rounds |x| < 2^51 to an integer (ties even) */
#define KL_MAGIC_BIAS (0x1.8p52 + 1023) /* same, with the exponent bias folded in */
#define KL_SCALE_MIN (-1020.0)          /* 2^-1020 * y stays normal for y >= 0.98 */
#define KL_P2 0x1.0000000000001p-1
#define KL_P3 0x1.5555555555556p-3
#define KL_P4 0x1.55555554e93b7p-5
#define KL_P5 0x1.11111110e1059p-7
#define KL_P6 0x1.6c17ed5c1f49ep-10
#define KL_P7 0x1.a01b0c3c80bbcp-13

/* 2^(j/16) = kl_exp2_hi[j] + kl_exp2_lo[j] to about 2^-107. */
static const double kl_exp2_hi[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};
static const double kl_exp2_lo[16] = {0x0.0p+0,
                                      0x1.8a62e4adc610bp-54,
                                      -0x1.19041b9d78a76p-55,
                                      0x1.9b07eb6c70573p-54,
                                      0x1.6f46ad23182e4p-55,
                                      0x1.ada0911f09ebcp-55,
                                      0x1.d4397afec42e2p-56,
                                      0x1.6324c054647adp-54,
                                      -0x1.bdd3413b26456p-54,
                                      -0x1.41577ee04992fp-55,
                                      0x1.6e9f156864b27p-54,
                                      0x1.c7c46b071f2bep-56,
                                      0x1.7a1cd345dcc81p-54,
                                      0x1.11065895048ddp-55,
                                      0x1.2ed02d75b3707p-55,
                                      -0x1.e9c23179c2893p-54};

/* 2^k for integer-valued k in [-1022, 1023], from the bits of k + KL_MAGIC_BIAS. */
static inline double kl_pow2i(double k) {
  double b = k + KL_MAGIC_BIAS;
  uint64_t u;
  memcpy(&u, &b, sizeof u);
  u <<= 52;
  double r;
  memcpy(&r, &u, sizeof r);
  return r;
}

/* kl_exp's reduction of d (clamped by the caller): d = kf ln2/16 + r exactly, with j = kf mod 16
 * and the returned p = e^r - 1. Shared with the JS sweep's expm1 (kl_js.h). */
static inline double kl_exp_reduce(double d, double *kf, unsigned *j) {
  double big = fma(d, KL_INV_C, KL_MAGIC);
  *kf = big - KL_MAGIC;
  uint64_t bits;
  memcpy(&bits, &big, sizeof bits);
  *j = (unsigned)(bits & 15u);
  double r = fma(*kf, -KL_C_HI, d);
  r = fma(*kf, -KL_C_LO, r);
  double q = KL_P7;
  q = fma(q, r, KL_P6);
  q = fma(q, r, KL_P5);
  q = fma(q, r, KL_P4);
  q = fma(q, r, KL_P3);
  q = fma(q, r, KL_P2);
  return fma(r * r, q, r);
}

static inline double kl_exp(double d) {
  d = d < KL_EXP_MIN ? KL_EXP_MIN : d;
  double kf;
  unsigned j;
  double p = kl_exp_reduce(d, &kf, &j);
  double y = kl_exp2_hi[j] + fma(kl_exp2_hi[j], p, kl_exp2_lo[j]);
  double k = floor(kf * 0.0625);
  double k1 = k > KL_SCALE_MIN ? k : KL_SCALE_MIN;
  return (y * kl_pow2i(k1)) * kl_pow2i(k - k1);
}

/* When every argument of a chunk is >= KL_FAST_MIN, no clamp is needed and y * 2^k is a normal
 * number (k >= -1021, y >= 0.97), so the SIMD kernels may apply 2^k by adding k to the exponent
 * field: the product is exact either way, so the bits are the same as kl_exp's. fdl_kl_chunk sets
 * st->fast when m + max|x| <= -KL_FAST_MIN on both sides (then x - m >= -max|x| - m). */
#define KL_FAST_MIN (-700.0)

/* Per-element update of lane j; the SIMD kernels do exactly this, 8 or 4 lanes at a time. */
static inline void kl_elem(kl_state *st, size_t j, float tf, float sf) {
  double t = tf, s = sf;
  double dt = t - st->mt, ds = s - st->ms;
  double et = kl_exp(dt), es = kl_exp(ds);
  st->st[j] += et;
  st->ss[j] += es;
  st->a[j] = fma(et, dt - ds, st->a[j]);
  st->d[j] += es - et;
  double ae = fabs(t - s);
  st->abs_sum[j] += ae;
  st->abs_max[j] = ae > st->abs_max[j] ? ae : st->abs_max[j];
}

/* The scan, element by element over [i, n), continuing from finite, a, b, m (the scalar kernel
 * from the start, the vector kernels for their remainder): the maxima of both rows, the largest
 * magnitude in either, and 0 in the result when any value is NaN or infinite. */
static inline int kl_scan_tail(const float *t, const float *s, size_t i, size_t n, int finite,
                               float a, float b, float m, float *mt, float *ms, float *mag) {
  for (; i < n; i++) {
    finite &= isfinite(t[i]) && isfinite(s[i]);
    a = t[i] > a ? t[i] : a;
    b = s[i] > b ? s[i] : b;
    m = fabsf(t[i]) > m ? fabsf(t[i]) : m;
    m = fabsf(s[i]) > m ? fabsf(s[i]) : m;
  }
  *mt = a;
  *ms = b;
  *mag = m;
  return finite;
}

/* A chunk's scan, computed ahead while the previous chunk accumulates (valid only for the
 * exact t, s, n it names; fdl_kl_chunk consumes or discards it on the next call). */
typedef struct {
  const float *t, *s;
  size_t n;
  float mt, ms, mag;
  int finite, valid;
} kl_scan;

typedef struct {
  /* Maxima of both chunks (n >= 1) and the largest magnitude in either; 0 when any value is
   * NaN or infinite. */
  int (*scan)(const float *t, const float *s, size_t n, float *mt, float *ms, float *mag);
  /* Accumulates n elements with the maxima and the fast flag already in st. pt/ps (NULL or pn
   * elements) are the rows the caller will read next: they are prefetched while this chunk
   * computes, and a kernel may also scan them into *ahead (valid = 0 on entry). */
  void (*accum)(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                const float *ps, size_t pn, kl_scan *ahead);
  /* The JS sweep over one chunk, after fdl_kl_finish (see kl_js.c). */
  void (*js)(kl_state *st, const float *t, const float *s, size_t n);
  fdl_num_isa isa;
} kl_kernels;

const kl_kernels *fdl_kl_kernels_scalar(void);
const kl_kernels *fdl_kl_kernels_avx2(void);   /* NULL when not compiled in */
const kl_kernels *fdl_kl_kernels_avx512(void); /* NULL when not compiled in */
/* Resolves AUTO and checks that a forced choice runs here. */
fdl_status fdl_kl_kernels_pick(fdl_num_isa want, const kl_kernels **out, fdl_err *err);

/* Where a row lives, for error messages. */
typedef struct {
  size_t slot; /* output slot */
  int ref_replayed, cand_replayed;
} kl_where;

void fdl_kl_state_init(kl_state *st);
/* Next chunk to prefetch (pt/ps may be NULL). */
typedef struct {
  const float *t, *s;
  size_t n;
} kl_next;

/* One chunk [c0, c0 + n) of both rows. ahead (NULL, or zeroed before the first call and kept
 * by the caller between consecutive calls, with the data unchanged in between) carries the
 * scan of the next chunk from one call to the next. */
fdl_status fdl_kl_chunk(const kl_kernels *k, kl_state *st, const float *t, const float *s, size_t n,
                        size_t c0, const kl_next *next, kl_scan *ahead, const kl_where *w,
                        fdl_err *err);
/* Final combination; fills res (js untouched). */
fdl_status fdl_kl_finish(kl_state *st, fdl_num_row *res, const kl_where *w, fdl_err *err);
/* The JS sweep (kl_js.c): elements [i, n) of a chunk one at a time (the vector kernels'
 * remainder), and a whole chunk. */
void fdl_kl_js_tail(kl_state *st, const float *t, const float *s, size_t i, size_t n);
void fdl_kl_js_scalar(kl_state *st, const float *t, const float *s, size_t n);
double fdl_kl_js_finish(const kl_state *st);

#endif
