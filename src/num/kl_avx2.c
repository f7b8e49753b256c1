/* kl_avx2.c - AVX2+FMA chunk kernels, compiled for that target only and chosen at run time.
 * Four ymm accumulators hold lanes 0-3, 4-7, 8-11 and 12-15 of the row state; each step
 * performs the scalar kernel's operations in the same order, so the bits equal kl_scalar.c. */
#include "num/kl.h"
#include "num/kl_js.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T256 __attribute__((target("avx2,fma")))
#define INL static inline __attribute__((always_inline)) T256

INL __m256d pow2i4(__m256d k) {
  __m256d b = _mm256_add_pd(k, _mm256_set1_pd(KL_MAGIC_BIAS));
  return _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(b), 52));
}

/* kl_exp, four lanes; the table is read with gathers. With FAST (every argument >=
 * KL_FAST_MIN, see kl.h) the clamp is a no-op and y * 2^k is normal, so k << 52 (the rounded
 * multiple's bits shifted right by 4, then left by 52) is added to y's bits directly. */
/* kl_exp_reduce, four lanes: returns p; *big holds the rounded multiple's bits (j in the low
 * four), *kf the multiple. */
INL __m256d reduce4(__m256d d, __m256d *big, __m256d *kf) {
  const __m256d magic = _mm256_set1_pd(KL_MAGIC);
  *big = _mm256_fmadd_pd(d, _mm256_set1_pd(KL_INV_C), magic);
  *kf = _mm256_sub_pd(*big, magic);
  __m256d r = _mm256_fmadd_pd(*kf, _mm256_set1_pd(-KL_C_HI), d);
  r = _mm256_fmadd_pd(*kf, _mm256_set1_pd(-KL_C_LO), r);
  __m256d q = _mm256_set1_pd(KL_P7);
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(KL_P6));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(KL_P5));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(KL_P4));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(KL_P3));
  q = _mm256_fmadd_pd(q, r, _mm256_set1_pd(KL_P2));
  return _mm256_fmadd_pd(_mm256_mul_pd(r, r), q, r);
}

INL __m256d exp4(__m256d d, const int fast) {
  if (!fast) d = _mm256_max_pd(d, _mm256_set1_pd(KL_EXP_MIN));
  __m256d big, kf;
  __m256d p = reduce4(d, &big, &kf);
  __m256i j = _mm256_and_si256(_mm256_castpd_si256(big), _mm256_set1_epi64x(15));
  __m256d hi = _mm256_i64gather_pd(kl_exp2_hi, j, 8);
  __m256d lo = _mm256_i64gather_pd(kl_exp2_lo, j, 8);
  __m256d y = _mm256_add_pd(hi, _mm256_fmadd_pd(hi, p, lo));
  if (fast) {
    __m256i k52 = _mm256_slli_epi64(_mm256_srli_epi64(_mm256_castpd_si256(big), 4), 52);
    return _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(y), k52));
  }
  __m256d k = _mm256_floor_pd(_mm256_mul_pd(kf, _mm256_set1_pd(0.0625)));
  __m256d k1 = _mm256_max_pd(k, _mm256_set1_pd(KL_SCALE_MIN));
  __m256d k2 = _mm256_sub_pd(k, k1);
  return _mm256_mul_pd(_mm256_mul_pd(y, pow2i4(k1)), pow2i4(k2));
}

typedef struct {
  __m256d st, ss, a, d, as, am;
} acc4;

INL void step4(acc4 *c, __m128 tf, __m128 sf, __m256d mt, __m256d ms, const int fast) {
  __m256d t = _mm256_cvtps_pd(tf), s = _mm256_cvtps_pd(sf);
  __m256d dt = _mm256_sub_pd(t, mt), ds = _mm256_sub_pd(s, ms);
  __m256d et = exp4(dt, fast), es = exp4(ds, fast);
  c->st = _mm256_add_pd(c->st, et);
  c->ss = _mm256_add_pd(c->ss, es);
  c->a = _mm256_fmadd_pd(et, _mm256_sub_pd(dt, ds), c->a);
  c->d = _mm256_add_pd(c->d, _mm256_sub_pd(es, et));
  __m256d ae = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(t, s));
  c->as = _mm256_add_pd(c->as, ae);
  c->am = _mm256_max_pd(ae, c->am);
}

INL void load4(acc4 *c, const kl_state *st, size_t o) {
  c->st = _mm256_loadu_pd(st->st + o);
  c->ss = _mm256_loadu_pd(st->ss + o);
  c->a = _mm256_loadu_pd(st->a + o);
  c->d = _mm256_loadu_pd(st->d + o);
  c->as = _mm256_loadu_pd(st->abs_sum + o);
  c->am = _mm256_loadu_pd(st->abs_max + o);
}

INL void store4(const acc4 *c, kl_state *st, size_t o) {
  _mm256_storeu_pd(st->st + o, c->st);
  _mm256_storeu_pd(st->ss + o, c->ss);
  _mm256_storeu_pd(st->a + o, c->a);
  _mm256_storeu_pd(st->d + o, c->d);
  _mm256_storeu_pd(st->abs_sum + o, c->as);
  _mm256_storeu_pd(st->abs_max + o, c->am);
}

INL void accum_body(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                    const float *ps, size_t pn, const int fast) {
  acc4 c[4];
  for (size_t g = 0; g < 4; g++) load4(&c[g], st, 4 * g);
  __m256d mt = _mm256_set1_pd(st->mt), ms = _mm256_set1_pd(st->ms);
  size_t i = 0;
  for (; i + KL_LANES <= n; i += KL_LANES) {
    /* One cache line of each next row per step: the next chunk arrives while this one computes,
     * so the memory stream overlaps the exp work. */
    if (i < pn && pt) {
      __builtin_prefetch(pt + i, 0, 3);
      __builtin_prefetch(ps + i, 0, 3);
    }
    step4(&c[0], _mm_loadu_ps(t + i), _mm_loadu_ps(s + i), mt, ms, fast);
    step4(&c[1], _mm_loadu_ps(t + i + 4), _mm_loadu_ps(s + i + 4), mt, ms, fast);
    step4(&c[2], _mm_loadu_ps(t + i + 8), _mm_loadu_ps(s + i + 8), mt, ms, fast);
    step4(&c[3], _mm_loadu_ps(t + i + 12), _mm_loadu_ps(s + i + 12), mt, ms, fast);
  }
  for (size_t g = 0; g < 4; g++) store4(&c[g], st, 4 * g);
  for (; i < n; i++) kl_elem(st, i % KL_LANES, t[i], s[i]);
}

T256 static void accum_avx2(kl_state *st, const float *t, const float *s, size_t n, const float *pt,
                            const float *ps, size_t pn, kl_scan *ahead) {
  (void)ahead; /* the next chunk is scanned by fdl_kl_chunk */
  if (st->fast)
    accum_body(st, t, s, n, pt, ps, pn, 1);
  else
    accum_body(st, t, s, n, pt, ps, pn, 0);
}

INL float hmax8(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

T256 static int scan_avx2(const float *t, const float *s, size_t n, float *mt, float *ms,
                          float *amax) {
  __m256 vt = _mm256_set1_ps(t[0]), vs = _mm256_set1_ps(s[0]);
  __m256i mag = _mm256_setzero_si256();
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(t + i), b = _mm256_loadu_ps(s + i);
    vt = _mm256_max_ps(vt, a);
    vs = _mm256_max_ps(vs, b);
    mag = _mm256_max_epu32(mag, _mm256_and_si256(_mm256_castps_si256(a), absmask));
    mag = _mm256_max_epu32(mag, _mm256_and_si256(_mm256_castps_si256(b), absmask));
  }
  /* Finite iff no magnitude reaches the all-ones exponent. */
  __m256i over = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f7fffff));
  int finite = _mm256_testz_si256(over, over);
  /* The largest magnitude, from the unsigned maximum of the magnitude bit patterns (finite
   * magnitudes order like their bits). */
  __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(mag), _mm256_extracti128_si256(mag, 1));
  m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0x4e));
  m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0xb1));
  float m = _mm_cvtss_f32(_mm_castsi128_ps(m4));
  float a = hmax8(vt), b = hmax8(vs);
  return kl_scan_tail(t, s, i, n, finite, a, b, m, mt, ms, amax);
}

/* kl_js.h's expm1 and log1p, four lanes; the same operations in the same order. */
INL __m256d expm1_neg4(__m256d x) {
  __m256d big, kf;
  __m256d p = reduce4(_mm256_max_pd(x, _mm256_set1_pd(KL_EXPM1_MIN)), &big, &kf);
  __m256i j = _mm256_and_si256(_mm256_castpd_si256(big), _mm256_set1_epi64x(15));
  __m256d hi = _mm256_i64gather_pd(kl_exp2_hi, j, 8);
  __m256d lo = _mm256_i64gather_pd(kl_exp2_lo, j, 8);
  __m256d sc = pow2i4(_mm256_floor_pd(_mm256_mul_pd(kf, _mm256_set1_pd(0.0625))));
  __m256d a = _mm256_sub_pd(_mm256_mul_pd(sc, hi), _mm256_set1_pd(1.0));
  return _mm256_add_pd(a, _mm256_mul_pd(sc, _mm256_fmadd_pd(hi, p, lo)));
}

INL __m256d log1p_half4(__m256d y) {
  __m256d z = _mm256_div_pd(y, _mm256_add_pd(_mm256_set1_pd(2.0), y));
  __m256d w = _mm256_mul_pd(z, z);
  __m256d p = _mm256_set1_pd(KL_L9);
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L8));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L7));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L6));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L5));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L4));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L3));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L2));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L1));
  p = _mm256_fmadd_pd(p, w, _mm256_set1_pd(KL_L0));
  __m256d z2 = _mm256_add_pd(z, z);
  return _mm256_fmadd_pd(_mm256_mul_pd(z2, w), p, z2);
}

/* kl_js.c's sweep on four lanes at a time; sign flips are done on the bits, as C's unary minus
 * and fabs do. */
T256 static void js_avx2(kl_state *st, const float *t, const float *s, size_t n) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d acc[4];
  for (int h = 0; h < 4; h++) acc[h] = _mm256_loadu_pd(st->js + 4 * h);
  const __m256d mt = _mm256_set1_pd(st->mt), ms = _mm256_set1_pd(st->ms);
  const __m256d lst = _mm256_set1_pd(st->log_st), lss = _mm256_set1_pd(st->log_ss);
  size_t i = 0;
  for (; i + KL_LANES <= n; i += KL_LANES) {
    for (int h = 0; h < 4; h++) {
      __m256d tv = _mm256_cvtps_pd(_mm_loadu_ps(t + i + 4 * h));
      __m256d sv = _mm256_cvtps_pd(_mm_loadu_ps(s + i + 4 * h));
      __m256d lp = _mm256_sub_pd(_mm256_sub_pd(tv, mt), lst);
      __m256d lq = _mm256_sub_pd(_mm256_sub_pd(sv, ms), lss);
      __m256d hi = _mm256_max_pd(lp, lq);
      __m256d delta = _mm256_andnot_pd(sign, _mm256_sub_pd(lp, lq));
      __m256d big = exp4(hi, 0);
      __m256d em = expm1_neg4(_mm256_xor_pd(delta, sign));
      __m256d l = log1p_half4(_mm256_mul_pd(_mm256_set1_pd(0.5), em));
      __m256d g = _mm256_sub_pd(_mm256_mul_pd(_mm256_sub_pd(_mm256_set1_pd(-2.0), em), l),
                                _mm256_mul_pd(_mm256_add_pd(_mm256_set1_pd(1.0), em), delta));
      acc[h] = _mm256_fmadd_pd(big, g, acc[h]);
    }
  }
  for (int h = 0; h < 4; h++) _mm256_storeu_pd(st->js + 4 * h, acc[h]);
  fdl_kl_js_tail(st, t, s, i, n);
}

static const kl_kernels avx2_kernels = {scan_avx2, accum_avx2, js_avx2, FDL_NUM_ISA_AVX2};

const kl_kernels *fdl_kl_kernels_avx2(void) {
  return &avx2_kernels;
}
#else
const kl_kernels *fdl_kl_kernels_avx2(void) {
  return NULL;
}
#endif
