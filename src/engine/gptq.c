/* gptq.c - int4 round-to-nearest asymmetric quantization packed as a GPTQ-v1 checkpoint, and
 * the affine decode the engine loads GPTQ checkpoints of 2, 3, 4 or 8 bits with.
 *
 * Layout, as read in AutoGPTQ (AutoGPTQ/AutoGPTQ, auto_gptq/nn_modules/qlinear/
 * qlinear_cuda_old.py: QuantLinear.__init__, pack and the torch forward path):
 *   qweight int32 [in/8, out]: qweight[r][o] holds q[o][8r+k] in bits 4k..4k+3;
 *   qzeros  int32 [in/group, out/8]: qzeros[g][c] holds zero[g][8c+k] - 1 in bits 4k..4k+3
 *           (the v1 convention: pack stores zeros - 1, the loader masks a nibble and adds 1);
 *   scales  float16 [in/group, out];
 *   g_idx   int32 [in], i // group_size;
 *   w[o][i] = scales[g][o] * (q[o][i] - zero[g][o]) with g = g_idx[i].
 * That is the 4-bit case `fidelis quantize` writes. The decode reads 2, 3, 4 and 8 bits the same
 * way: a run of values lies in consecutive int32 words as one little-endian bit stream, value k
 * in bits bits*k .. bits*k + bits - 1 of word0 | word1 << 32 | ..., lowest first. For 2, 4 and 8
 * bits a word holds 32 / bits whole values. For 3 bits, 3 words hold 32 values: values 0-9 lie
 * in word 0, value 10 has its low two bits in bits 30-31 of word 0 and its high bit in bit 0 of
 * word 1, values 11-20 lie in bits 1-30 of word 1, value 21 has its low bit in bit 31 of word 1
 * and its high two bits in bits 0-1 of word 2, and values 22-31 lie in bits 2-31 of word 2. So
 * qweight is [in * bits / 32, out] (the run of column o goes down the rows) and qzeros
 * [in / group, out * bits / 32] (the run of group g goes along the columns), and a 3-bit matrix
 * needs in and out to be multiples of 32 (AutoGPTQ's QuantLinear pack and its torch decode with
 * `bits == 3`; GPTQModel's pack_block and dequantize_weight; both allocate in / 32 * bits rows).
 * The range rule (min and max widened to include 0; an all-zero group quantized over [-1, 1];
 * zero = round(-min / scale); q = clamp(round(w / scale) + zero, 0, 15)) is GPTQ's
 * Quantizer.find_params / quantize (auto_gptq/quantization/quantizer.py), with round half to
 * even as torch.round does.
 *
 * fidelis' choices on top, so that every stored value decodes exactly (docs/MODELS.md):
 *   - the scale is rounded to F16 before q is computed, so q is chosen against the scale the
 *     decoder will use, and everything is computed in float64 from the float32-widened weights;
 *   - v1 cannot store a zero point of 0 (the nibble would be -1, which the loader reads as 16):
 *     a group whose zero rounds to 0 (all weights >= -scale/2) takes zero 1 and the scale
 *     f16(hi / 14), so [-scale, hi] still covers it;
 *   - a scale that rounds to 0 in F16 (a tiny range) becomes the smallest F16 subnormal, and
 *     one beyond F16's range is refused.
 *
 * Divisions: F16 rounding; one matrix; the decode; a whole model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/sys.h"
#include "engine/model_internal.h"
#include "json/json.h"
#include "fidelis/model.h"

/* ---- F16 rounding ------------------------------------------------------------------------- */

#define F16_INF 0x7c00u

/* x >= 0 (finite) to F16 bits, round to nearest, ties to even, directly from the double (as
 * numpy's float64 -> float16 conversion). frexp, ldexp and rint are exact here. */
static uint16_t f16_from_nonneg(double x) {
  if (!(x < 65520.0)) return F16_INF;                 /* 65520 is the tie between 65504 and 2^16 */
  if (x < 0x1p-14) return (uint16_t)rint(x * 0x1p24); /* subnormal; 1024 is the first normal */
  int e;
  frexp(x, &e); /* x in [2^(e-1), 2^e) */
  int E = e - 1;
  double m = rint(ldexp(x, 10 - E)); /* in [1024, 2048] */
  if (m == 2048.0) m = 1024.0, E++;
  if (E > 15) return F16_INF;
  return (uint16_t)(((unsigned)(E + 15) << 10) | ((unsigned)m - 1024u));
}

/* ---- one matrix --------------------------------------------------------------------------- */

/* The (scale bits, zero) of one group whose widened range is [lo, hi], lo <= 0 <= hi. */
static bool group_params(double lo, double hi, uint16_t *sb, double *zero) {
  if (lo == 0.0 && hi == 0.0) lo = -1.0, hi = 1.0;
  uint16_t b = f16_from_nonneg((hi - lo) / 15.0);
  if (b == 0) b = 1;
  if (b == F16_INF) return false;
  double z = rint(-lo / (double)fdl_f16_to_f32(b));
  if (z < 1.0) {
    b = f16_from_nonneg(hi / 14.0);
    if (b == 0) b = 1;
    if (b == F16_INF) return false;
    z = 1.0;
  }
  *sb = b;
  *zero = z > 15.0 ? 15.0 : z;
  return true;
}

static fdl_status check_dims(size_t out, size_t in, size_t group, fdl_err *err) {
  if (!out || !in || !group)
    return fdl_fail(err, FDL_INVALID, "gptq: empty matrix or group (out %zu, in %zu, group %zu)",
                    out, in, group);
  if (in % 8 || out % 8)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "gptq: a [%zu, %zu] weight cannot be packed: in and out must be multiples "
                    "of 8 (8 nibbles per int32)",
                    out, in);
  if (in % group)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "gptq: group size %zu does not divide the input dimension %zu", group, in);
  size_t t;
  if (!fdl_size_mul(out, in, &t))
    return fdl_fail(err, FDL_TOO_LARGE, "gptq: %zu x %zu overflows", out, in);
  return FDL_OK;
}

fdl_status fdl_gptq_quantize_matrix(const float *w, size_t out, size_t in, size_t group,
                                    uint32_t *qweight, uint32_t *qzeros, uint16_t *scales,
                                    int32_t *g_idx, fdl_err *err) {
  fdl_status s = check_dims(out, in, group, err);
  if (s != FDL_OK) return s;
  for (size_t o = 0; o < out; o++)
    for (size_t i = 0; i < in; i++)
      if (!isfinite(w[o * in + i]))
        return fdl_fail(err, FDL_NONFINITE, "gptq: weight [%zu, %zu] is %s", o, i,
                        isnan(w[o * in + i]) ? "NaN" : "infinite");
  size_t groups = in / group;
  memset(qweight, 0, in / 8 * out * sizeof *qweight);
  memset(qzeros, 0, groups * (out / 8) * sizeof *qzeros);
  for (size_t i = 0; i < in; i++) g_idx[i] = (int32_t)(i / group);
  for (size_t o = 0; o < out; o++) {
    const float *row = w + o * in;
    for (size_t g = 0; g < groups; g++) {
      const float *x = row + g * group;
      double lo = 0.0, hi = 0.0;
      for (size_t i = 0; i < group; i++) {
        lo = fmin(lo, (double)x[i]);
        hi = fmax(hi, (double)x[i]);
      }
      uint16_t sb;
      double zero;
      if (!group_params(lo, hi, &sb, &zero))
        return fdl_fail(err, FDL_TOO_LARGE,
                        "gptq: row %zu, columns [%zu, %zu): the range [%g, %g] needs a scale "
                        "beyond float16's largest value 65504",
                        o, g * group, (g + 1) * group, lo, hi);
      double scale = (double)fdl_f16_to_f32(sb);
      scales[g * out + o] = sb;
      qzeros[g * (out / 8) + o / 8] |= (((uint32_t)zero - 1u) & 15u) << (4 * (o % 8));
      for (size_t i = 0; i < group; i++) {
        double q = rint((double)x[i] / scale) + zero;
        q = q < 0.0 ? 0.0 : q > 15.0 ? 15.0 : q;
        size_t col = g * group + i;
        qweight[(col / 8) * out + o] |= (uint32_t)q << (4 * (col % 8));
      }
    }
  }
  return FDL_OK;
}

/* ---- the decode --------------------------------------------------------------------------- */

uint32_t fdl_model_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

fdl_status fdl_model_check_part(const fdl_tensor *t, const char *what, fdl_dtype dt, int ndim,
                                uint64_t d0, uint64_t d1, fdl_err *err) {
  if (!t) return fdl_fail(err, FDL_INVALID, "%s is missing", what);
  const char *name = t->name ? t->name : what;
  if (t->dtype != dt)
    return fdl_fail(err, FDL_MISMATCH, "%s is %s, expected %s", name,
                    fdl_dtype_name(t->dtype) ? fdl_dtype_name(t->dtype) : "an invalid dtype",
                    fdl_dtype_name(dt));
  if (t->ndim != ndim || t->shape[0] < 0 || (uint64_t)t->shape[0] != d0 ||
      (ndim == 2 && (t->shape[1] < 0 || (uint64_t)t->shape[1] != d1))) {
    char got[64] = "";
    for (int k = 0; k < t->ndim && k < FDL_MAX_DIMS && strlen(got) < 40; k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "",
               (long long)t->shape[k]);
    if (ndim == 2)
      return fdl_fail(err, FDL_MISMATCH, "%s has shape [%s], expected [%llu, %llu]", name, got,
                      (unsigned long long)d0, (unsigned long long)d1);
    return fdl_fail(err, FDL_MISMATCH, "%s has shape [%s], expected [%llu]", name, got,
                    (unsigned long long)d0);
  }
  uint64_t want = d0 * (ndim == 2 ? d1 : 1) * fdl_dtype_size(dt);
  if (t->nbytes != want || (want && !t->data))
    return fdl_fail(err, FDL_BOUNDS, "%s holds %llu bytes, its shape needs %llu", name,
                    (unsigned long long)t->nbytes, (unsigned long long)want);
  return FDL_OK;
}

/* Value k of a run packed `bits` wide, lowest bits first, into the int32 words at p,
 * p + 4 * stride, p + 8 * stride, ... (little-endian, any alignment); a 3-bit value may
 * straddle two words, the low bits in the first. */
static unsigned packed_field(const uint8_t *p, size_t stride, unsigned bits, size_t k) {
  size_t bit = (size_t)bits * k, word = bit / 32;
  unsigned shift = (unsigned)(bit % 32);
  uint64_t v = fdl_model_le32(p + 4 * stride * word);
  if (shift + bits > 32) v |= (uint64_t)fdl_model_le32(p + 4 * stride * (word + 1)) << 32;
  return (unsigned)(v >> shift) & ((1u << bits) - 1u);
}

fdl_status fdl_gptq_reconstruct(const fdl_tensor *qweight, const fdl_tensor *qzeros,
                                const fdl_tensor *scales, const fdl_tensor *g_idx, size_t in,
                                size_t out, const fdl_gptq_format *fmt, float *w, fdl_err *err) {
  if (!w || !fmt) return fdl_fail(err, FDL_INVALID, "gptq: no output buffer or format");
  const unsigned bits = fmt->bits;
  if (bits != 2 && bits != 3 && bits != 4 && bits != 8)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "gptq: %u-bit values are not read (expected 2, 3, 4 or 8 bits)", bits);
  /* unit values fill `words` int32 exactly: 32 / bits values in one word, or 32 3-bit values
   * in three */
  const size_t unit = bits == 3 ? 32 : 32 / bits, words = unit * bits / 32, group = fmt->group;
  fdl_status s = FDL_OK;
  size_t n;
  if (!out || !in || !group)
    s = fdl_fail(err, FDL_INVALID, "empty matrix or group (out %zu, in %zu, group %zu)", out, in,
                 group);
  else if (in % unit || out % unit)
    s = fdl_fail(err, FDL_UNSUPPORTED,
                 "a [%zu, %zu] weight cannot hold %u-bit values: in and out must be "
                 "multiples of %zu (%zu values of %u bits fill %zu int32)",
                 out, in, bits, unit, unit, bits, words);
  else if (in % group)
    s = fdl_fail(err, FDL_UNSUPPORTED, "group size %zu does not divide the input dimension %zu",
                 group, in);
  else if (!fdl_size_mul(out, in, &n))
    s = fdl_fail(err, FDL_TOO_LARGE, "%zu x %zu overflows", out, in);
  size_t groups = s == FDL_OK ? in / group : 0;
  if (s == FDL_OK)
    s = fdl_model_check_part(qweight, "qweight", FDL_DTYPE_I32, 2, in / unit * words, out, err);
  if (s == FDL_OK)
    s = fdl_model_check_part(qzeros, "qzeros", FDL_DTYPE_I32, 2, groups, out / unit * words, err);
  if (s == FDL_OK) s = fdl_model_check_part(scales, "scales", FDL_DTYPE_F16, 2, groups, out, err);
  if (s == FDL_OK) s = fdl_model_check_part(g_idx, "g_idx", FDL_DTYPE_I32, 1, in, 0, err);
  if (s != FDL_OK) return fdl_err_prefix(err, "gptq");
  const char *gname = g_idx->name ? g_idx->name : "g_idx";
  size_t *count = fdl_calloc(groups, sizeof *count);
  if (!count) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; i < in && !s; i++) {
    int32_t g = (int32_t)fdl_model_le32(g_idx->data + 4 * i);
    if (g < 0 || (size_t)g >= groups)
      s = fdl_fail(err, FDL_BOUNDS, "gptq: %s[%zu] = %d, expected a group in [0, %zu)", gname, i,
                   (int)g, groups);
    else
      count[g]++;
  }
  for (size_t g = 0; g < groups && !s; g++)
    if (count[g] != group)
      s = fdl_fail(err, FDL_PARSE,
                   "gptq: %s is not a permutation of the groups: group %zu has %zu inputs, "
                   "expected %zu",
                   gname, g, count[g], group);
  free(count);
  if (s) return s;
  uint64_t bad = fdl_tensor_first_nonfinite(scales->data, FDL_DTYPE_F16, groups * out, NULL);
  if (bad != UINT64_MAX)
    return fdl_fail(err, FDL_NONFINITE, "gptq: %s[%llu, %llu] is not finite",
                    scales->name ? scales->name : "scales", (unsigned long long)(bad / out),
                    (unsigned long long)(bad % out));
  const size_t zcols = out / unit * words;
  for (size_t b = 0; b < in / unit; b++) /* the unit values of inputs unit*b.. of each column */
    for (size_t o = 0; o < out; o++) {
      const uint8_t *run = qweight->data + 4 * (b * words * out + o);
      for (size_t k = 0; k < unit; k++) {
        size_t i = unit * b + k;
        size_t g = (size_t)fdl_model_le32(g_idx->data + 4 * i);
        int zero = (int)packed_field(qzeros->data + 4 * g * zcols, 1, bits, o) + (fmt->v2 ? 0 : 1);
        const uint8_t *sp = scales->data + 2 * (g * out + o);
        float scale = fdl_f16_to_f32((uint16_t)(sp[0] | sp[1] << 8));
        int q = (int)packed_field(run, out, bits, k);
        w[o * in + i] = (float)(q - zero) * scale; /* bits + 1 bits times 11: exact */
      }
    }
  return FDL_OK;
}
