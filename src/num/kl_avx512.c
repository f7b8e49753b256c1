/* kl_avx512.c - AVX-512F chunk kernels, compiled for that target only and chosen at run time.
 * Lanes 0-7 and 8-15 of the row state live in two zmm accumulators; each step performs the
 * scalar kernel's operations in the same order, so the bits equal kl_scalar.c. */
#include "num/kl.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define T512 __attribute__((target("avx512f")))
#define INL static inline __attribute__((always_inline)) T512

/* kl_exp, eight lanes. The table lookup is a two-register permute indexed by the low four
 * bits of the rounded multiple, and vscalefpd rounds y * 2^k once, as the scalar two-step
 * scaling does. */
INL __m512d exp8(__m512d d) {
  const __m512d magic = _mm512_set1_pd(KL_MAGIC);
  d = _mm512_max_pd(d, _mm512_set1_pd(KL_EXP_MIN));
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
  __m512d hi =
      _mm512_permutex2var_pd(_mm512_loadu_pd(kl_exp2_hi), j, _mm512_loadu_pd(kl_exp2_hi + 8));
  __m512d lo =
      _mm512_permutex2var_pd(_mm512_loadu_pd(kl_exp2_lo), j, _mm512_loadu_pd(kl_exp2_lo + 8));
  __m512d y = _mm512_add_pd(hi, _mm512_fmadd_pd(hi, p, lo));
  return _mm512_scalef_pd(y, _mm512_mul_pd(kf, _mm512_set1_pd(0.0625)));
}

typedef struct {
  __m512d st, ss, a, d, as, am;
} acc8;

INL void step8(acc8 *c, __m256 tf, __m256 sf, __m512d mt, __m512d ms) {
  __m512d t = _mm512_cvtps_pd(tf), s = _mm512_cvtps_pd(sf);
  __m512d dt = _mm512_sub_pd(t, mt), ds = _mm512_sub_pd(s, ms);
  __m512d et = exp8(dt), es = exp8(ds);
  c->st = _mm512_add_pd(c->st, et);
  c->ss = _mm512_add_pd(c->ss, es);
  c->a = _mm512_fmadd_pd(et, _mm512_sub_pd(dt, ds), c->a);
  c->d = _mm512_add_pd(c->d, _mm512_sub_pd(es, et));
  __m512d ae = _mm512_abs_pd(_mm512_sub_pd(t, s));
  c->as = _mm512_add_pd(c->as, ae);
  c->am = _mm512_max_pd(ae, c->am);
}

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

T512 static void accum_avx512(kl_state *st, const float *t, const float *s, size_t n,
                              const float *pt, const float *ps, size_t pn) {
  acc8 lo, hi;
  load8(&lo, st, 0);
  load8(&hi, st, 8);
  __m512d mt = _mm512_set1_pd(st->mt), ms = _mm512_set1_pd(st->ms);
  size_t i = 0;
  for (; i + KL_LANES <= n; i += KL_LANES) {
    /* One cache line of each next row per step: the next chunk arrives while this one computes,
     * so the memory stream overlaps the exp work. */
    if (i < pn && pt) {
      __builtin_prefetch(pt + i, 0, 3);
      __builtin_prefetch(ps + i, 0, 3);
    }
    step8(&lo, _mm256_loadu_ps(t + i), _mm256_loadu_ps(s + i), mt, ms);
    step8(&hi, _mm256_loadu_ps(t + i + 8), _mm256_loadu_ps(s + i + 8), mt, ms);
  }
  store8(&lo, st, 0);
  store8(&hi, st, 8);
  for (; i < n; i++) kl_elem(st, i % KL_LANES, t[i], s[i]);
}

/* Max of both rows; finiteness from the largest magnitude bit pattern (NaN and inf have the
 * all-ones exponent, so they compare above every finite magnitude as unsigned integers). */
T512 static int scan_avx512(const float *t, const float *s, size_t n, float *mt, float *ms) {
  __m512 vt = _mm512_set1_ps(t[0]), vs = _mm512_set1_ps(s[0]);
  __m512i mag = _mm512_setzero_si512();
  const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 a = _mm512_loadu_ps(t + i), b = _mm512_loadu_ps(s + i);
    vt = _mm512_max_ps(vt, a);
    vs = _mm512_max_ps(vs, b);
    mag = _mm512_max_epu32(mag, _mm512_and_si512(_mm512_castps_si512(a), absmask));
    mag = _mm512_max_epu32(mag, _mm512_and_si512(_mm512_castps_si512(b), absmask));
  }
  float a = _mm512_reduce_max_ps(vt), b = _mm512_reduce_max_ps(vs);
  int finite = (uint32_t)_mm512_reduce_max_epu32(mag) < 0x7f800000u;
  for (; i < n; i++) {
    finite &= isfinite(t[i]) && isfinite(s[i]);
    a = t[i] > a ? t[i] : a;
    b = s[i] > b ? s[i] : b;
  }
  *mt = a;
  *ms = b;
  return finite;
}

static const kl_kernels avx512_kernels = {scan_avx512, accum_avx512, FDL_NUM_ISA_AVX512};

const kl_kernels *kl_kernels_avx512(void) {
  return &avx512_kernels;
}
#else
const kl_kernels *kl_kernels_avx512(void) {
  return NULL;
}
#endif
