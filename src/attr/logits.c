/* logits.c - Kiln's compare_logits (spec §11): argmax, cosine, max/mean absolute error,
 * top-10 overlap, candidate ranks and the digest of the actual vector.
 *
 * One pass reads each pair once for the five float64 sums (one accumulator each, index order,
 * no contraction: do not vectorise or reorder them) and the two top-10 selections; one more pass
 * per candidate counts its rank; the digest hashes the actual bytes. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attr/internal.h"
#include "fidelis/attr.h"

/* A float's position in IEEE totalOrder as an unsigned integer (-0.0 < +0.0): negative values
 * have every bit flipped, positive ones only the sign bit. */
static inline uint32_t total_key(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b ^ ((b >> 31) ? 0xffffffffu : 0x80000000u);
}

/* The k best (key descending, index ascending) seen so far; indices arrive in ascending order,
 * so an equal key never displaces an earlier entry. */
typedef struct {
  uint32_t key[FDL_ATTR_TOPK];
  uint64_t idx[FDL_ATTR_TOPK];
  unsigned used, k;
} topk_buf;

static inline void topk_push(topk_buf *t, uint32_t key, uint64_t i) {
  if (t->used == t->k) {
    if (key <= t->key[t->k - 1]) return;
    t->used--;
  }
  unsigned p = t->used++;
  while (p > 0 && t->key[p - 1] < key) {
    t->key[p] = t->key[p - 1];
    t->idx[p] = t->idx[p - 1];
    p--;
  }
  t->key[p] = key;
  t->idx[p] = i;
}

unsigned fdl_attr_topk(const float *v, size_t n, unsigned k, uint64_t *idx) {
  topk_buf t = {.used = 0, .k = k > FDL_ATTR_TOPK ? FDL_ATTR_TOPK : k};
  if (t.k == 0) return 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t key = total_key(v[i]);
    if (t.used < t.k || key > t.key[t.k - 1]) topk_push(&t, key, i);
  }
  memcpy(idx, t.idx, t.used * sizeof *idx);
  return t.used;
}

fdl_status fdl_attr_compare_logits(const float *actual, const float *reference, size_t n,
                                   const uint64_t *cand, size_t ncand, fdl_attr_logits *out,
                                   fdl_attr_candidate *cand_out, fdl_err *err) {
  if (n == 0) return fdl_fail(err, FDL_BOUNDS, "logits: length 0, expected at least 1 element");
  for (size_t c = 0; c < ncand; c++)
    if (cand[c] >= n)
      return fdl_fail(err, FDL_BOUNDS, "candidate token %llu: out of range, expected < %zu",
                      (unsigned long long)cand[c], n);
  fdl_status s = fdl_attr_finite(actual, n, "actual logits:", err);
  if (s == FDL_OK) s = fdl_attr_finite(reference, n, "reference logits:", err);
  if (s != FDL_OK) return s;

  double max_abs = 0.0, abs_sum = 0.0, dot = 0.0, an = 0.0, rn = 0.0;
  unsigned k = n < FDL_ATTR_TOPK ? (unsigned)n : FDL_ATTR_TOPK;
  topk_buf ta = {.used = 0, .k = k}, tr = {.used = 0, .k = k};
  for (size_t i = 0; i < n; i++) {
    double a = (double)actual[i], r = (double)reference[i];
    double e = fabs(a - r);
    if (e > max_abs) max_abs = e; /* fmax without the call: e is never NaN here */
    abs_sum += e;
    dot += a * r;
    an += a * a;
    rn += r * r;
    uint32_t ka = total_key(actual[i]), kr = total_key(reference[i]);
    if (ta.used < k || ka > ta.key[k - 1]) topk_push(&ta, ka, i);
    if (tr.used < k || kr > tr.key[k - 1]) topk_push(&tr, kr, i);
  }
  if (!(an > 0.0) || !(rn > 0.0))
    return fdl_fail(err, FDL_REFUSED,
                    "%s logits are all zero, expected a nonzero vector (the cosine is undefined)",
                    an > 0.0 ? "reference" : "actual");
  memset(out, 0, sizeof *out);
  out->n = n;
  out->cosine_similarity = fdl_attr_cosine(dot, an, rn, max_abs == 0.0);
  out->max_abs_error = max_abs;
  out->mean_abs_error = abs_sum / (double)n;
  out->k = k;
  memcpy(out->top_actual, ta.idx, k * sizeof ta.idx[0]);
  memcpy(out->top_reference, tr.idx, k * sizeof tr.idx[0]);
  out->argmax = ta.idx[0];
  out->reference_argmax = tr.idx[0];
  out->argmax_equal = out->argmax == out->reference_argmax;
  unsigned overlap = 0;
  for (unsigned i = 0; i < k; i++)
    for (unsigned j = 0; j < k; j++) overlap += ta.idx[i] == tr.idx[j];
  out->top10_overlap = overlap;

  for (size_t c = 0; c < ncand; c++) {
    size_t id = (size_t)cand[c];
    float x = actual[id];
    uint64_t above = 0;
    for (size_t j = 0; j < id; j++) above += actual[j] >= x;
    for (size_t j = id + 1; j < n; j++) above += actual[j] > x;
    cand_out[c] = (fdl_attr_candidate){.token_id = cand[c], .logit = x, .rank = 1 + above};
  }
  return fdl_attr_sha256_f32(actual, n, &out->logits_sha256, err);
}
