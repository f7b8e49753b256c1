/* kernels.c - the forward pass's non-GEMM kernels (softmax and SiLU·mul: num/vec.h), each a plain
 * scalar loop in a written order (docs/NUMERICS.md section 8). Reductions run in index order in
 * float64, so a result never depends on a vector width, a thread count or the compiler's mood (ISO
 * C: no contraction). */
#include <math.h>

#include "engine/internal.h"

/* y = x / sqrt(mean(x^2) + eps) * w: the sum of squares in float64 in index order, each output
 * one float64 product rounded once to float32. x and y may alias. */
void fdl_eng_rmsnorm(const float *x, const float *w, size_t n, double eps, float *y) {
  double ss = 0.0;
  for (size_t i = 0; i < n; i++) ss = fma((double)x[i], (double)x[i], ss);
  double r = 1.0 / sqrt(ss / (double)n + eps);
  for (size_t i = 0; i < n; i++) y[i] = (float)((double)x[i] * r * (double)w[i]);
}

/* HF rotate_half: element i pairs with i + d/2. Each output is one float64 expression of
 * float32 inputs (the products are exact in float64), rounded once. */
void fdl_eng_rope(float *v, const float *cos_t, const float *sin_t, size_t head_dim) {
  size_t h = head_dim / 2;
  for (size_t i = 0; i < h; i++) {
    double a = v[i], b = v[i + h], c = cos_t[i], s = sin_t[i];
    v[i] = (float)(a * c - b * s);
    v[i + h] = (float)(b * c + a * s);
  }
}

double fdl_eng_sigmoid(double x) {
  double e = fdl_num_exp_neg(-fabs(x));
  return x >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

void fdl_eng_sigmoid_mul(float *y, const float *g, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = (float)((double)y[i] * fdl_eng_sigmoid(g[i]));
}

void fdl_eng_add(float *y, const float *x, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] += x[i];
}

/* Running argmax over row[0..n) whose first column is `base`: strictly greater wins, so the
 * first index keeps a tie and a NaN never wins. */
void fdl_eng_argmax_chunk(const float *row, size_t n, size_t base, float *best, int64_t *arg) {
  for (size_t j = 0; j < n; j++)
    if (*arg < 0 || row[j] > *best) {
      if (*arg < 0 && isnan(row[j])) continue;
      *best = row[j];
      *arg = (int64_t)(base + j);
    }
}
