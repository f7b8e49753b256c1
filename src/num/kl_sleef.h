/* kl_sleef.h - internal to src/num: the SLEEF functions of the Jensen-Shannon sweep.
 *
 * Only SLEEF's deterministic FMA family ("finz") is used: its scalar (purecfma), AVX2 and
 * AVX-512 variants return the same bits for the same argument, which keeps the JS sweep
 * bit-identical across kernels the way kl_exp does for KL. sleef.h declares the vector variants
 * only when the whole file is compiled for that target, and fidelis compiles its kernels per
 * function (target attributes), so the prototypes are written here with their targets. */
#ifndef FDL_NUM_KL_SLEEF_H
#define FDL_NUM_KL_SLEEF_H

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define KL_SLEEF_FMA __attribute__((target("avx,fma")))
#define KL_SLEEF_AVX2 __attribute__((target("avx2,fma")))
#define KL_SLEEF_AVX512 __attribute__((target("avx512f")))

/* All need a CPU with AVX and FMA; the purecfma code is VEX-encoded. */
KL_SLEEF_FMA double Sleef_finz_expd1_u10purecfma(double x);
KL_SLEEF_FMA double Sleef_finz_expm1d1_u10purecfma(double x);
KL_SLEEF_FMA double Sleef_finz_log1pd1_u10purecfma(double x);
KL_SLEEF_AVX2 __m256d Sleef_finz_expd4_u10avx2(__m256d x);
KL_SLEEF_AVX2 __m256d Sleef_finz_expm1d4_u10avx2(__m256d x);
KL_SLEEF_AVX2 __m256d Sleef_finz_log1pd4_u10avx2(__m256d x);
KL_SLEEF_AVX512 __m512d Sleef_finz_expd8_u10avx512f(__m512d x);
KL_SLEEF_AVX512 __m512d Sleef_finz_expm1d8_u10avx512f(__m512d x);
KL_SLEEF_AVX512 __m512d Sleef_finz_log1pd8_u10avx512f(__m512d x);
#endif

#endif
