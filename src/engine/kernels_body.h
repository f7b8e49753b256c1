/* kernels_body.h - internal to src/engine: the bodies of the two exp-heavy kernels, compiled
 * twice (kernels.c plainly, kernels_fma.c for CPUs with FMA, where fma() and kl_exp's fmas become
 * single instructions instead of libm calls). fma is exact by IEEE 754 either way and ISO C
 * forbids contraction, so both copies give the same bits; only the speed differs. The includer
 * provides kl_exp (num/kl.h) compiled for its own target. */
#ifndef FDL_ENGINE_KERNELS_BODY_H
#define FDL_ENGINE_KERNELS_BODY_H

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

#endif
