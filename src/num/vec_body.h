/* vec_body.h - internal to src/num: the bodies of num/vec.h's kernels, compiled twice (vec.c
 * plainly, vec_fma.c for CPUs with AVX2 and FMA, where fma() and kl_exp's fmas become single
 * instructions instead of libm calls). fma is exact by IEEE 754 either way and ISO C forbids
 * contraction, so both copies give the same bits; only the speed differs. The includer provides
 * kl_exp (num/kl.h) compiled for its own target. */
#ifndef FDL_NUM_VEC_BODY_H
#define FDL_NUM_VEC_BODY_H

#include <string.h>

/* Softmax of scale * s[first..valid) in place, zeros in s[0..first) and s[valid..len) (keys
 * before a sliding window, and after the query). The maximum is taken over the float32 scores
 * (scale > 0 keeps it the maximum of the scaled ones); every exp argument is
 * scale * (s - max) <= 0, kept in float64 in e[first..valid); the sum runs in float64 in index
 * order; p = e / sum rounded once. */
#define SOFTMAX_BODY                                                                               \
  float mx = s[first];                                                                             \
  for (size_t j = first + 1; j < valid; j++) mx = s[j] > mx ? s[j] : mx;                           \
  double sum = 0.0;                                                                                \
  for (size_t j = first; j < valid; j++) e[j] = kl_exp(scale * ((double)s[j] - (double)mx));       \
  for (size_t j = first; j < valid; j++) sum += e[j];                                              \
  for (size_t j = 0; j < first; j++) s[j] = 0.0f;                                                  \
  for (size_t j = first; j < valid; j++) s[j] = (float)(e[j] / sum);                               \
  for (size_t j = valid; j < len; j++) s[j] = 0.0f;

/* g = silu(g) * u with sigmoid(x) = 1 / (1 + e^-x) for x >= 0 and e^x / (1 + e^x) below, so
 * the exp argument is always -|x| <= 0; one float64 expression rounded once. */
#define SILU_BODY                                                                                  \
  for (size_t i = 0; i < n; i++) {                                                                 \
    double x = g[i];                                                                               \
    double e = kl_exp(-fabs(x));                                                                   \
    double sig = x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);                                         \
    g[i] = (float)(x * sig * (double)u[i]);                                                        \
  }

/* C[m][n] = C[m][n] + A[m][k] B[k][n], k ascending: each element one float32 chain of a
 * multiply and an add, each rounded. Eight columns ride in one vector, each lane its own
 * element's chain in the same order, so the bits are the scalar loop's (the build keeps the
 * multiply and the add apart: -ffp-contract=off) whatever width the compiler gives it; an
 * AVX2 build of the same body runs where the CPU has it. */
typedef float v8f __attribute__((vector_size(32)));

#define MM_ACC_BODY                                                                                \
  for (size_t mi = 0; mi < M; mi++) {                                                              \
    float *c = C + mi * ldc;                                                                       \
    const float *a = A + mi * lda;                                                                 \
    size_t n = 0;                                                                                  \
    for (; n + 8 <= N; n += 8) {                                                                   \
      v8f acc, b;                                                                                  \
      memcpy(&acc, c + n, sizeof acc);                                                             \
      for (size_t k = 0; k < Kn; k++) {                                                            \
        memcpy(&b, B + k * ldb + n, sizeof b);                                                     \
        acc = acc + a[k] * b;                                                                      \
      }                                                                                            \
      memcpy(c + n, &acc, sizeof acc);                                                             \
    }                                                                                              \
    for (; n < N; n++) {                                                                           \
      float acc = c[n];                                                                            \
      for (size_t k = 0; k < Kn; k++) acc = acc + a[k] * B[k * ldb + n];                           \
      c[n] = acc;                                                                                  \
    }                                                                                              \
  }

#define MM_ACC_ARGS                                                                                \
  float *restrict C, size_t ldc, const float *restrict A, size_t lda, const float *restrict B,     \
      size_t ldb, size_t M, size_t Kn, size_t N

#endif
