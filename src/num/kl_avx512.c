/* kl_avx512.c - AVX-512F chunk kernels, compiled for that target only and chosen at run time.
 * Lanes 0-7 and 8-15 of the row state live in two zmm accumulators; each step performs the
 * scalar kernel's operations in the same order, so the bits equal kl_scalar.c. */
#include "num/kl.h"
#include "num/kl_js.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f")))
#define INL static inline __attribute__((always_inline)) T512

typedef struct {
  __m512d st, ss, a, d, as, am;
} acc8;

INL void load8(acc8 *c, const kl_state *st, size_t o) {
  c->st = _mm512_loadu_pd(st->st + o);
  c->ss = _mm512_loadu_pd(st->ss + o);
  c->a = _mm512_loadu_pd(st->a + o);
  c->d = _mm512_loadu_pd(st->d + o);
  c->as = _mm512_loadu_pd(st->abs_sum + o);
  c->am = _mm512_loadu_pd(st->abs_max + o);
}

INL void store8(const acc8 *c, kl_state *st, size_t o) {
  _mm512_storeu_pd(st->st + o, c->st);
  _mm512_storeu_pd(st->ss + o, c->ss);
  _mm512_storeu_pd(st->a + o, c->a);
  _mm512_storeu_pd(st->d + o, c->d);
  _mm512_storeu_pd(st->abs_sum + o, c->as);
  _mm512_storeu_pd(st->abs_max + o, c->am);
}

/* kl_exp on four vectors of eight lanes (both sides of lanes 0-7 and 8-15), interleaved stage
 * by stage so that the out-of-order core always finds independent work next to the long
 * dependency chain of the polynomial; every lane performs exactly kl_exp's operations. The table
 * lookup is a two-register permute indexed by the low four bits of the rounded multiple n. In
 * general (FAST = 0) vscalefpd rounds y * 2^k once, as the scalar two-step scaling does. With
 * FAST (every argument >= KL_FAST_MIN, see kl.h) the clamp is a no-op and y * 2^k is normal, so
 * k = floor(n / 16) is added to y's exponent field directly: k << 52 is the rounded multiple's
 * bits shifted right by 4, then left by 52. */
#define X4(stmt)                                                                                   \
  do {                                                                                             \
    {                                                                                              \
      enum { v_ = 0 };                                                                             \
      stmt;                                                                                        \
    }                                                                                              \
    {                                                                                              \
      enum { v_ = 1 };                                                                             \
      stmt;                                                                                        \
    }                                                                                              \
    {                                                                                              \
      enum { v_ = 2 };                                                                             \
      stmt;                                                                                        \
    }                                                                                              \
    {                                                                                              \
      enum { v_ = 3 };                                                                             \
      stmt;                                                                                        \
    }                                                                                              \
  } while (0)
INL void exp8x4(__m512d e[4], __m512d d[4], const int fast) {
  const __m512d magic = _mm512_set1_pd(KL_MAGIC);
  const __m512d thi0 = _mm512_loadu_pd(kl_exp2_hi), thi1 = _mm512_loadu_pd(kl_exp2_hi + 8);
  const __m512d tlo0 = _mm512_loadu_pd(kl_exp2_lo), tlo1 = _mm512_loadu_pd(kl_exp2_lo + 8);
  __m512d x[4], big[4], kf[4], r[4], q[4], p[4];
  X4(x[v_] = fast ? d[v_] : _mm512_max_pd(d[v_], _mm512_set1_pd(KL_EXP_MIN)));
  X4(big[v_] = _mm512_fmadd_pd(x[v_], _mm512_set1_pd(KL_INV_C), magic));
  X4(kf[v_] = _mm512_sub_pd(big[v_], magic));
  X4(r[v_] = _mm512_fmadd_pd(kf[v_], _mm512_set1_pd(-KL_C_HI), x[v_]));
  X4(r[v_] = _mm512_fmadd_pd(kf[v_], _mm512_set1_pd(-KL_C_LO), r[v_]));
  X4(q[v_] = _mm512_fmadd_pd(_mm512_set1_pd(KL_P7), r[v_], _mm512_set1_pd(KL_P6)));
  X4(q[v_] = _mm512_fmadd_pd(q[v_], r[v_], _mm512_set1_pd(KL_P5)));
  X4(q[v_] = _mm512_fmadd_pd(q[v_], r[v_], _mm512_set1_pd(KL_P4)));
  X4(q[v_] = _mm512_fmadd_pd(q[v_], r[v_], _mm512_set1_pd(KL_P3)));
  X4(q[v_] = _mm512_fmadd_pd(q[v_], r[v_], _mm512_set1_pd(KL_P2)));
  X4(p[v_] = _mm512_fmadd_pd(_mm512_mul_pd(r[v_], r[v_]), q[v_], r[v_]));
  X4({
    __m512i j = _mm512_castpd_si512(big[v_]);
    __m512d hi = _mm512_permutex2var_pd(thi0, j, thi1);
    __m512d lo = _mm512_permutex2var_pd(tlo0, j, tlo1);
    __m512d y = _mm512_add_pd(hi, _mm512_fmadd_pd(hi, p[v_], lo));
    if (fast) {
      __m512i k52 = _mm512_slli_epi64(_mm512_srli_epi64(j, 4), 52);
      e[v_] = _mm512_castsi512_pd(_mm512_add_epi64(_mm512_castpd_si512(y), k52));
    } else {
      e[v_] = _mm512_scalef_pd(y, _mm512_mul_pd(kf[v_], _mm512_set1_pd(0.0625)));
    }
  });
}

INL void acc_update(acc8 *c, __m512d t, __m512d s, __m512d dt, __m512d ds, __m512d et, __m512d es) {
  c->st = _mm512_add_pd(c->st, et);
  c->ss = _mm512_add_pd(c->ss, es);
  c->a = _mm512_fmadd_pd(et, _mm512_sub_pd(dt, ds), c->a);
  c->d = _mm512_add_pd(c->d, _mm512_sub_pd(es, et));
  __m512d ae = _mm512_abs_pd(_mm512_sub_pd(t, s));
  c->as = _mm512_add_pd(c->as, ae);
  c->am = _mm512_max_pd(ae, c->am);
}

/* Max of both rows; finiteness from the largest magnitude bit pattern (NaN and inf have the
 * all-ones exponent, so they compare above every finite magnitude as unsigned integers). */
typedef struct {
  __m512 vt, vs;
  __m512i mag;
} scan16;

INL void scan_init(scan16 *c, const float *t, const float *s) {
  c->vt = _mm512_set1_ps(t[0]);
  c->vs = _mm512_set1_ps(s[0]);
  c->mag = _mm512_setzero_si512();
}

INL void scan_step(scan16 *c, const float *t, const float *s) {
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  __m512 a = _mm512_loadu_ps(t), b = _mm512_loadu_ps(s);
  c->vt = _mm512_max_ps(c->vt, a);
  c->vs = _mm512_max_ps(c->vs, b);
  c->mag = _mm512_max_epu32(c->mag, _mm512_and_si512(_mm512_castps_si512(a), absmask));
  c->mag = _mm512_max_epu32(c->mag, _mm512_and_si512(_mm512_castps_si512(b), absmask));
}

/* Scans [i, n) and reduces. */
INL int scan_finish(scan16 *c, const float *t, const float *s, size_t i, size_t n, float *mt,
                    float *ms, float *amax) {
  for (; i + 16 <= n; i += 16) scan_step(c, t + i, s + i);
  float a = _mm512_reduce_max_ps(c->vt), b = _mm512_reduce_max_ps(c->vs);
  uint32_t mbits = (uint32_t)_mm512_reduce_max_epu32(c->mag);
  int finite = mbits < 0x7f800000u;
  float m; /* the largest magnitude: finite magnitudes order like their bits */
  memcpy(&m, &mbits, sizeof m);
  return kl_scan_tail(t, s, i, n, finite, a, b, m, mt, ms, amax);
}

/* Prefetch distance of the next chunk ahead of its fused scan, in floats (2 KiB per row). */
#define KL_SCAN_LAG 512

INL void accum_body(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                    const float *ps, size_t pn, kl_scan *ahead, const int fast) {
  acc8 lo, hi;
  load8(&lo, st, 0);
  load8(&hi, st, 8);
  __m512d mt = _mm512_set1_pd(st->mt), ms = _mm512_set1_pd(st->ms);
  /* The next chunk is prefetched one cache line per side per step and scanned KL_SCAN_LAG
   * floats behind the prefetch; the scan's few operations fill issue slots the latency-bound
   * exp chains leave free, and the next fdl_kl_chunk call skips its own scan. */
  scan16 nx = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_si512()};
  if (pt && pn) scan_init(&nx, pt, ps);
  size_t i = 0, j = 0;
  for (; i + KL_LANES <= n; i += KL_LANES) {
    if (pt && i < pn) {
      __builtin_prefetch(pt + i, 0, 3);
      __builtin_prefetch(ps + i, 0, 3);
    }
    if (pt && i >= KL_SCAN_LAG && j + 16 <= pn) {
      scan_step(&nx, pt + j, ps + j);
      j += 16;
    }
    __m512d t0 = _mm512_cvtps_pd(_mm256_loadu_ps(t + i));
    __m512d s0 = _mm512_cvtps_pd(_mm256_loadu_ps(s + i));
    __m512d t1 = _mm512_cvtps_pd(_mm256_loadu_ps(t + i + 8));
    __m512d s1 = _mm512_cvtps_pd(_mm256_loadu_ps(s + i + 8));
    __m512d d[4] = {_mm512_sub_pd(t0, mt), _mm512_sub_pd(s0, ms), _mm512_sub_pd(t1, mt),
                    _mm512_sub_pd(s1, ms)};
    __m512d e[4];
    exp8x4(e, d, fast);
    acc_update(&lo, t0, s0, d[0], d[1], e[0], e[1]);
    acc_update(&hi, t1, s1, d[2], d[3], e[2], e[3]);
  }
  store8(&lo, st, 0);
  store8(&hi, st, 8);
  for (; i < n; i++) kl_elem(st, i % KL_LANES, t[i], s[i]);
  if (pt && pn && ahead) {
    *ahead = (kl_scan){pt, ps, pn, 0, 0, 0, 0, 1};
    ahead->finite = scan_finish(&nx, pt, ps, j, pn, &ahead->mt, &ahead->ms, &ahead->mag);
  }
}

T512 static void accum_avx512(kl_state *st, const float *t, const float *s, size_t n,
                              const float *pt, const float *ps, size_t pn, kl_scan *ahead) {
  if (st->fast)
    accum_body(st, t, s, n, pt, ps, pn, ahead, 1);
  else
    accum_body(st, t, s, n, pt, ps, pn, ahead, 0);
}

T512 static int scan_avx512(const float *t, const float *s, size_t n, float *mt, float *ms,
                            float *amax) {
  scan16 c;
  scan_init(&c, t, s);
  return scan_finish(&c, t, s, 0, n, mt, ms, amax);
}

/* kl_js.h's expm1 and log1p, eight lanes; the same operations in the same order (vscalefpd by
 * floor(kf/16) is kl_pow2i's exact scaling). */
INL __m512d expm1_neg8(__m512d x) {
  const __m512d magic = _mm512_set1_pd(KL_MAGIC);
  const __m512d thi0 = _mm512_loadu_pd(kl_exp2_hi), thi1 = _mm512_loadu_pd(kl_exp2_hi + 8);
  const __m512d tlo0 = _mm512_loadu_pd(kl_exp2_lo), tlo1 = _mm512_loadu_pd(kl_exp2_lo + 8);
  __m512d d = _mm512_max_pd(x, _mm512_set1_pd(KL_EXPM1_MIN));
  __m512d big = _mm512_fmadd_pd(d, _mm512_set1_pd(KL_INV_C), magic);
  __m512d kf = _mm512_sub_pd(big, magic);
  __m512d r = _mm512_fmadd_pd(kf, _mm512_set1_pd(-KL_C_HI), d);
  r = _mm512_fmadd_pd(kf, _mm512_set1_pd(-KL_C_LO), r);
  __m512d q = _mm512_set1_pd(KL_P7);
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(KL_P6));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(KL_P5));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(KL_P4));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(KL_P3));
  q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(KL_P2));
  __m512d p = _mm512_fmadd_pd(_mm512_mul_pd(r, r), q, r);
  __m512i j = _mm512_castpd_si512(big);
  __m512d hi = _mm512_permutex2var_pd(thi0, j, thi1);
  __m512d lo = _mm512_permutex2var_pd(tlo0, j, tlo1);
  __m512d k16 = _mm512_mul_pd(kf, _mm512_set1_pd(0.0625));
  __m512d a = _mm512_sub_pd(_mm512_scalef_pd(hi, k16), _mm512_set1_pd(1.0));
  return _mm512_add_pd(a, _mm512_scalef_pd(_mm512_fmadd_pd(hi, p, lo), k16));
}

INL __m512d log1p_half8(__m512d y) {
  __m512d z = _mm512_div_pd(y, _mm512_add_pd(_mm512_set1_pd(2.0), y));
  __m512d w = _mm512_mul_pd(z, z);
  __m512d p = _mm512_set1_pd(KL_L9);
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L8));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L7));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L6));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L5));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L4));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L3));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L2));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L1));
  p = _mm512_fmadd_pd(p, w, _mm512_set1_pd(KL_L0));
  __m512d z2 = _mm512_add_pd(z, z);
  return _mm512_fmadd_pd(_mm512_mul_pd(z2, w), p, z2);
}

/* Sign flip on the bits, as C's unary minus does (AVX-512F has no floating-point xor). */
INL __m512d neg8(__m512d x) {
  return _mm512_castsi512_pd(
      _mm512_xor_si512(_mm512_castpd_si512(x), _mm512_set1_epi64((long long)INT64_MIN)));
}

/* kl_js.c's sweep, 32 elements (four vectors, two per accumulator, in element order) a step so
 * that exp8x4 can interleave the four exps. */
T512 static void js_avx512(kl_state *st, const float *t, const float *s, size_t n) {
  __m512d acc[2] = {_mm512_loadu_pd(st->js), _mm512_loadu_pd(st->js + 8)};
  const __m512d mt = _mm512_set1_pd(st->mt), ms = _mm512_set1_pd(st->ms);
  const __m512d lst = _mm512_set1_pd(st->log_st), lss = _mm512_set1_pd(st->log_ss);
  size_t i = 0;
  for (; i + 2 * KL_LANES <= n; i += 2 * KL_LANES) {
    __m512d hi[4], delta[4], big[4];
    X4({
      __m512d tv = _mm512_cvtps_pd(_mm256_loadu_ps(t + i + 8 * v_));
      __m512d sv = _mm512_cvtps_pd(_mm256_loadu_ps(s + i + 8 * v_));
      __m512d lp = _mm512_sub_pd(_mm512_sub_pd(tv, mt), lst);
      __m512d lq = _mm512_sub_pd(_mm512_sub_pd(sv, ms), lss);
      hi[v_] = _mm512_max_pd(lp, lq);
      delta[v_] = _mm512_abs_pd(_mm512_sub_pd(lp, lq));
    });
    exp8x4(big, hi, 0);
    X4({
      __m512d em = expm1_neg8(neg8(delta[v_]));
      __m512d l = log1p_half8(_mm512_mul_pd(_mm512_set1_pd(0.5), em));
      __m512d g = _mm512_sub_pd(_mm512_mul_pd(_mm512_sub_pd(_mm512_set1_pd(-2.0), em), l),
                                _mm512_mul_pd(_mm512_add_pd(_mm512_set1_pd(1.0), em), delta[v_]));
      acc[v_ & 1] = _mm512_fmadd_pd(big[v_], g, acc[v_ & 1]);
    });
  }
  _mm512_storeu_pd(st->js, acc[0]);
  _mm512_storeu_pd(st->js + 8, acc[1]);
  fdl_kl_js_tail(st, t, s, i, n);
}

static const kl_kernels avx512_kernels = {scan_avx512, accum_avx512, js_avx512, FDL_NUM_ISA_AVX512};

const kl_kernels *fdl_kl_kernels_avx512(void) {
  return &avx512_kernels;
}
#else
const kl_kernels *fdl_kl_kernels_avx512(void) {
  return NULL;
}
#endif
