/* rope.c - RoPE's frequencies, plain or scaled (docs/ROPE.md): which scaling a config asks for
 * (rope_scaling, or rope_parameters as newer writers spell it) and the inverse frequencies and
 * cos/sin factor of a run, for the types transformers defines in modeling_rope_utils: linear,
 * dynamic (NTK), yarn and llama3.
 *
 * Everything is computed in float64 from +, -, *, /, floor, ceil and fidelis' own log and exp
 * (mathfn.c), so the table has the same bits on every machine. transformers computes the same
 * formulas in float32; the two agree to float32's precision, far inside the engine's 1e-4 oracle
 * tolerance. */
#include <math.h>
#include <string.h>

#include "engine/internal.h"

#define TWO_PI 6.283185307179586476925286766559

static const char *const TYPES[] = {"default", "linear", "dynamic", "yarn", "llama3"};

/* The keys each type reads besides rope_type / type (and rope_theta in rope_parameters). */
static const char *const KEYS[][9] = {
    {NULL},
    {"factor", NULL},
    {"factor", "original_max_position_embeddings", NULL},
    {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
     "mscale", "mscale_all_dim", "truncate", NULL},
    {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings", NULL},
};

static bool known_key(int type, const char *k) {
  if (!strcmp(k, "rope_type") || !strcmp(k, "type") || !strcmp(k, "rope_theta")) return true;
  for (size_t i = 0; KEYS[type][i]; i++)
    if (!strcmp(KEYS[type][i], k)) return true;
  return false;
}

/* A number field of the scaling object: *out untouched when absent or null. */
static fdl_status number(const json_t *o, const char *path, const char *where, const char *type,
                         const char *key, bool required, double *out, fdl_err *err) {
  const json_t *v = fdl_eng_cfg_given(o, key);
  if (!v) {
    if (required)
      return fdl_fail(err, FDL_PARSE, "%s: %s.%s is missing (rope_type %s needs it)", path, where,
                      key, type);
    return FDL_OK;
  }
  if (!json_is_number(v) || !isfinite(json_number_value(v)))
    return fdl_fail(err, FDL_PARSE, "%s: %s.%s must be a finite number", path, where, key);
  *out = json_number_value(v);
  return FDL_OK;
}

/* The scaling object and its type: rope_scaling (legacy "type" or "rope_type"), or
 * rope_parameters with a rope_type. *obj NULL: plain RoPE from rope_theta. */
static fdl_status locate(const json_t *tc, const char *path, const json_t **obj, const char **where,
                         int *type, fdl_err *err) {
  const json_t *rs = fdl_eng_cfg_given(tc, "rope_scaling"),
               *rp = fdl_eng_cfg_given(tc, "rope_parameters");
  *obj = NULL;
  *type = 0;
  if (rs && rp)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: both rope_scaling and rope_parameters are set; expected one of them",
                    path);
  if (!rs && !rp) return FDL_OK;
  *obj = rs ? rs : rp;
  *where = rs ? "rope_scaling" : "rope_parameters";
  if (!json_is_object(*obj))
    return fdl_fail(err, FDL_PARSE, "%s: %s must be an object", path, *where);
  const json_t *t = fdl_eng_cfg_given(*obj, "rope_type");
  if (!t) t = fdl_eng_cfg_given(*obj, "type");
  if (!t) {
    if (rs) return fdl_fail(err, FDL_PARSE, "%s: rope_scaling has no rope_type (or type)", path);
    return FDL_OK; /* rope_parameters without a type: plain RoPE */
  }
  if (!json_is_string(t))
    return fdl_fail(err, FDL_PARSE, "%s: %s.rope_type must be a string", path, *where);
  for (int i = 0; i < (int)(sizeof TYPES / sizeof *TYPES); i++)
    if (!strcmp(json_string_value(t), TYPES[i])) *type = i;
  if (*type == 0 && strcmp(json_string_value(t), "default"))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: %s.rope_type %s is refused: the engine runs default, linear, dynamic, "
                    "yarn and llama3 only",
                    path, *where, json_string_value(t));
  return FDL_OK;
}

fdl_status fdl_eng_rope_config(const json_t *tc, const char *path, bool scaling_ok,
                               fdl_model_info *info, const json_t **src, fdl_err *err) {
  const json_t *o;
  const char *where = "";
  int type;
  fdl_rope_scaling *r = &info->rope;
  memset(r, 0, sizeof *r);
  r->type = TYPES[0];
  r->factor = 1.0;
  r->attention_factor = 1.0;
  *src = tc;
  fdl_status s = locate(tc, path, &o, &where, &type, err);
  if (s) return s;
  /* rope_parameters carries rope_theta (and, on Qwen3.5, partial_rotary_factor) */
  if (o && !strcmp(where, "rope_parameters") && json_object_get(o, "rope_theta")) *src = o;
  if (!o || type == 0) return FDL_OK;
  if (!scaling_ok)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: %s.rope_type %s on %s: the engine scales RoPE on Llama, Qwen2 and Qwen3 "
                    "only",
                    path, where, TYPES[type], info->arch);
  const char *k;
  const json_t *v;
  json_object_foreach((json_t *)o, k, v) {
    if (!known_key(type, k))
      return fdl_fail(err, FDL_UNSUPPORTED, "%s: %s.%s is not read for rope_type %s", path, where,
                      k, TYPES[type]);
  }
  r->type = TYPES[type];
  if ((s = number(o, path, where, TYPES[type], "factor", true, &r->factor, err))) return s;
  if (!(r->factor >= 1.0))
    return fdl_fail(err, FDL_PARSE,
                    "%s: %s.factor is %g, expected at least 1 (a factor below 1 raises the "
                    "frequencies past the range the engine computes)",
                    path, where, r->factor);
  double orig = (double)info->max_positions;
  if ((s = number(o, path, where, TYPES[type], "original_max_position_embeddings", type == 4, &orig,
                  err)))
    return s;
  if (!(orig >= 1.0 && orig <= (double)(1u << 30) && orig == floor(orig)))
    return fdl_fail(err, FDL_PARSE,
                    "%s: %s.original_max_position_embeddings must be a positive integer", path,
                    where);
  r->original_max = (size_t)orig;
  if (!strcmp(r->type, "dynamic")) {
    if (r->original_max != info->max_positions)
      return fdl_fail(err, FDL_UNSUPPORTED,
                      "%s: %s.original_max_position_embeddings %zu differs from "
                      "max_position_embeddings %zu: dynamic scaling is computed from the latter",
                      path, where, r->original_max, info->max_positions);
    /* contexts past the trained length are what dynamic scaling is for: up to factor x it */
    double ext = floor((double)info->max_positions * r->factor);
    info->max_positions = ext > (double)(1u << 20) ? (size_t)1 << 20 : (size_t)ext;
  }
  if (!strcmp(r->type, "llama3")) {
    if ((s = number(o, path, where, TYPES[type], "low_freq_factor", true, &r->low_freq_factor,
                    err)) ||
        (s = number(o, path, where, TYPES[type], "high_freq_factor", true, &r->high_freq_factor,
                    err)))
      return s;
    if (!(r->low_freq_factor > 0 && r->high_freq_factor > r->low_freq_factor))
      return fdl_fail(err, FDL_PARSE,
                      "%s: %s: expected 0 < low_freq_factor < high_freq_factor, got %g and %g",
                      path, where, r->low_freq_factor, r->high_freq_factor);
  }
  if (!strcmp(r->type, "yarn")) {
    double af = 0, ms = 0, msa = 0;
    r->beta_fast = 32.0;
    r->beta_slow = 1.0;
    r->truncate = true;
    if ((s = number(o, path, where, TYPES[type], "attention_factor", false, &af, err)) ||
        (s = number(o, path, where, TYPES[type], "mscale", false, &ms, err)) ||
        (s = number(o, path, where, TYPES[type], "mscale_all_dim", false, &msa, err)) ||
        (s = number(o, path, where, TYPES[type], "beta_fast", false, &r->beta_fast, err)) ||
        (s = number(o, path, where, TYPES[type], "beta_slow", false, &r->beta_slow, err)) ||
        (s = fdl_eng_cfg_bool(o, path, "truncate", true, &r->truncate, err)))
      return s;
    /* transformers reads beta_fast/beta_slow with `or`: a zero means the default */
    if (r->beta_fast == 0) r->beta_fast = 32.0;
    if (r->beta_slow == 0) r->beta_slow = 1.0;
    if (!(r->beta_fast > 0 && r->beta_slow > 0) || af < 0)
      return fdl_fail(err, FDL_PARSE,
                      "%s: %s: beta_fast, beta_slow and attention_factor must be positive", path,
                      where);
    /* the paper's mscale: 0.1 m ln(s) + 1 for s > 1 */
    double lf = fdl_eng_log(r->factor);
    if (af > 0)
      r->attention_factor = af;
    else if (ms != 0 && msa != 0)
      r->attention_factor = r->factor <= 1.0 ? 1.0 : (0.1 * ms * lf + 1.0) / (0.1 * msa * lf + 1.0);
    else
      r->attention_factor = r->factor <= 1.0 ? 1.0 : 0.1 * lf + 1.0;
  }
  return FDL_OK;
}

/* yarn: the dimension (of d) at which a wavelength makes n_rot turns in the trained length. */
static double correction_dim(double n_rot, double d, double lbase, double orig) {
  return d * fdl_eng_log(orig / (n_rot * TWO_PI)) / (2.0 * lbase);
}

void fdl_eng_rope_freqs(const fdl_model_info *in, size_t n, double *inv) {
  const fdl_rope_scaling *r = &in->rope;
  const size_t d = in->rotary_dim, half = d / 2;
  double lbase = fdl_eng_log(in->rope_theta);
  if (!strcmp(r->type, "dynamic") && n > r->original_max) {
    /* NTK: the base grows with the context, base * (f n / L - (f - 1))^(d / (d - 2)) */
    double grow = r->factor * (double)n / (double)r->original_max - (r->factor - 1.0);
    lbase += (double)d / (double)(d - 2) * fdl_eng_log(grow);
  }
  for (size_t i = 0; i < half; i++)
    inv[i] = fdl_num_exp_neg(-((double)(2 * i) / (double)d) * lbase);
  if (r->freq_factors) { /* llama3 as a GGUF stores it: the factors computed once, in float32 */
    for (size_t i = 0; i < half; i++) inv[i] /= (double)r->freq_factors[i];
  } else if (!strcmp(r->type, "linear")) {
    for (size_t i = 0; i < half; i++) inv[i] /= r->factor;
  } else if (!strcmp(r->type, "llama3")) {
    const double L = (double)r->original_max;
    const double low_wl = L / r->low_freq_factor, high_wl = L / r->high_freq_factor;
    for (size_t i = 0; i < half; i++) {
      double wl = TWO_PI / inv[i];
      if (wl > low_wl) {
        inv[i] /= r->factor; /* long wavelengths: interpolated */
      } else if (!(wl < high_wl)) {
        double sm = (L / wl - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
        inv[i] = (1.0 - sm) * inv[i] / r->factor + sm * inv[i];
      } /* short wavelengths: kept */
    }
  } else if (!strcmp(r->type, "yarn")) {
    const double L = (double)r->original_max, dd = (double)d;
    double lo = correction_dim(r->beta_fast, dd, lbase, L);
    double hi = correction_dim(r->beta_slow, dd, lbase, L);
    if (r->truncate) {
      lo = floor(lo);
      hi = ceil(hi);
    }
    lo = lo > 0 ? lo : 0;
    hi = hi < dd - 1 ? hi : dd - 1;
    if (lo == hi) hi += 0.001; /* transformers' guard against a zero-width ramp */
    for (size_t i = 0; i < half; i++) {
      double ramp = ((double)i - lo) / (hi - lo);
      ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
      double extra = 1.0 - ramp; /* the share kept unscaled (extrapolated) */
      inv[i] = inv[i] / r->factor * (1.0 - extra) + inv[i] * extra;
    }
  }
}
