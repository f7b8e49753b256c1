/* mathfn.c - the engine's own log, sin and cos in float64. libm may pick an FMA or a non-FMA
 * variant per CPU (glibc's ifuncs do), which can move the last bit of a RoPE table and from
 * there every logit; these are built from +, *, fma and exact scalings only, so they give the
 * same bits everywhere. Accuracy (about 1 ulp) is far beyond what a float32 table needs. */
#include <math.h>
#include <stdint.h>

#include "engine/internal.h"

/* ln 2 split so that e * LN2_HI is exact for |e| < 2^11 (LN2_HI ends in 11 zero bits). */
#define LN2_HI 0x1.62e42fee00000p-1
#define LN2_LO 0x1.a39ef35793c76p-33
#define SQRT_HALF 0x1.6a09e667f3bcdp-1

double fdl_eng_log(double x) {
  int e;
  double m = frexp(x, &e); /* exact: m in [0.5, 1) */
  if (m < SQRT_HALF) {
    m *= 2.0;
    e -= 1;
  }
  /* ln m = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.1716: the series to s^25 leaves < 1e-20.
   * m - 1 is exact (Sterbenz); the division and m + 1 round once each. */
  double s = (m - 1.0) / (m + 1.0);
  double z = s * s;
  double p = 1.0 / 25.0;
  for (int k = 11; k >= 0; k--) p = fma(p, z, 1.0 / (double)(2 * k + 1));
  double lm = 2.0 * s * p;
  double ed = (double)e;
  return fma(ed, LN2_HI, fma(ed, LN2_LO, lm));
}

/* pi/2 = P1 + P2 + P3 (P1, P2 with 33 significant bits, so k * P1 and k * P2 are exact for
 * |k| < 2^20). */
#define PIO2_1 0x1.921fb54400000p+0
#define PIO2_2 0x1.0b4611a600000p-34
#define PIO2_3 0x1.3198a2e037073p-69
#define TWO_OVER_PI 0x1.45f306dc9c883p-1
#define MAGIC 0x1.8p52

/* 1/n! rounded to double, for the Taylor series on |r| <= pi/4 (+ a hair). */
static const double k_sin[] = {
    -0x1.5555555555555p-3,  0x1.1111111111111p-7,   -0x1.a01a01a01a01ap-13,
    0x1.71de3a556c734p-19,  -0x1.ae64567f544e4p-26, 0x1.6124613a86d09p-33,
    -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,  -0x1.2f49b46814157p-57}; /* r^3 ... r^19 */
static const double k_cos[] = {
    -0x1.0000000000000p-1,  0x1.5555555555555p-5,   -0x1.6c16c16c16c17p-10,
    0x1.a01a01a01a01ap-16,  -0x1.27e4fb7789f5cp-22, 0x1.1eed8eff8d898p-29,
    -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45,  -0x1.6827863b97d97p-53}; /* r^2 ... r^18 */

void fdl_eng_sincos(double x, double *s, double *c) {
  /* The reduction below is exact for |x| < 2^50; the config bounds keep every angle far inside
   * (rope_theta >= 1, positions < 2^40). Outside, or NaN: NaN, never the undefined cast. */
  if (!(fabs(x) < 0x1p50)) {
    *s = *c = NAN;
    return;
  }
  /* k = x * 2/pi rounded to nearest; an off-by-one at a boundary only leaves |r| a hair above
   * pi/4, where the series is still accurate. */
  double kf = fma(x, TWO_OVER_PI, MAGIC) - MAGIC;
  double r = fma(-kf, PIO2_1, x);
  r = fma(-kf, PIO2_2, r);
  r = fma(-kf, PIO2_3, r);
  double z = r * r;
  double ps = k_sin[8], pc = k_cos[8];
  for (int i = 7; i >= 0; i--) {
    ps = fma(ps, z, k_sin[i]);
    pc = fma(pc, z, k_cos[i]);
  }
  double sr = fma(r * z, ps, r);
  double cr = fma(z, pc, 1.0);
  int64_t k = (int64_t)kf;
  switch ((unsigned)(k & 3)) {
  case 0:
    *s = sr, *c = cr;
    break;
  case 1:
    *s = cr, *c = -sr;
    break;
  case 2:
    *s = -sr, *c = -cr;
    break;
  default:
    *s = -cr, *c = sr;
    break;
  }
}
