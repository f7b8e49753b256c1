/* gates_data.c - the gates about the captured values themselves (section 4 steps 8-11):
 * geometry, coverage, lossy storage and weight decoding. */
#include <stdio.h>
#include <string.h>

#include "compare/cmp.h"

static fdl_status gate_geometry_coverage(const cmp_side *a, const cmp_side *b,
                                         const fdl_compare_opts *o, cmp_findings *f, fdl_refusal *r,
                                         fdl_err *err) {
  const fdl_ds_manifest *ma = a->m, *mb = b->m;
  if (ma->capture.vocab_size != mb->capture.vocab_size)
    return fdl_cmp_refuse(r, err, FDL_REF_GEOMETRY_MISMATCH, FDL_GATE_GEOMETRY,
                          "none: the vocabularies must be the same to compare distributions",
                          "capture.vocab_size differs: reference %lld, candidate %lld",
                          (long long)ma->capture.vocab_size, (long long)mb->capture.vocab_size);
  if (a->hidden && b->hidden && ma->capture.hidden_width != mb->capture.hidden_width)
    return fdl_cmp_refuse(r, err, FDL_REF_GEOMETRY_MISMATCH, FDL_GATE_GEOMETRY,
                          "none: hidden states of different widths do not come from the same model",
                          "capture.hidden_width differs: reference %lld, candidate %lld",
                          (long long)ma->capture.hidden_width, (long long)mb->capture.hidden_width);
  char width[48];
  if (a->hidden)
    snprintf(width, sizeof width, "%lld", (long long)ma->capture.hidden_width);
  else
    snprintf(width, sizeof width, "None");
  fdl_status s =
      fdl_cmp_gate(f, FDL_GATE_GEOMETRY, true, NULL, err, "vocab_size %lld equal; hidden_width %s",
                   (long long)ma->capture.vocab_size, width);
  if (s != FDL_OK) return s;

  size_t na = a->ds.n_records, nb = b->ds.n_records;
  if (f->sets_differ) {
    if (!o->allow_partial)
      return fdl_cmp_refuse(r, err, FDL_REF_COVERAGE_MISMATCH, FDL_GATE_COVERAGE, "--allow-partial",
                            "the record index sets differ: %zu shared of %zu (reference) and %zu "
                            "(candidate)",
                            f->n_shared, na, nb);
    s = fdl_cmp_disclose(
        f, "subset_of_panel", "caveat", 1, err,
        "--allow-partial: only the %zu records both sides captured are compared "
        "(reference %zu, candidate %zu records); the number describes that subset, "
        "not the whole panel.",
        f->n_shared, na, nb);
    if (s != FDL_OK) return s;
  }
  f->covers_full_panel = a->m->coverage.complete == FDL_DS_TRUE &&
                         b->m->coverage.complete == FDL_DS_TRUE && !f->sets_differ;
  if (!f->covers_full_panel && !f->sets_differ) {
    s = fdl_cmp_disclose(
        f, "subset_of_panel", "caveat", 1, err,
        "the compared records (%zu) do not cover the whole declared panel: at least "
        "one side's coverage is incomplete.",
        f->n_shared);
    if (s != FDL_OK) return s;
  }
  return fdl_cmp_gate(f, FDL_GATE_COVERAGE, true, f->sets_differ ? "--allow-partial" : NULL, err,
                      "%zu of %zu/%zu declared records shared", f->n_shared, na, nb);
}

/* Section 5.9: methods that mean the forward ran on weights decoded from a quantized store. */
static bool reconstructed(const cmp_side *s) {
  static const char *const methods[] = {
      "affine-weight-reconstruction", "microfloat-weight-reconstruction",
      "fp8-block-dequant-to-bf16", "nvfp4-modelopt-dequant-to-bf16", "gguf-dequant-to-bf16"};
  const char *m = s->wd.method;
  if (m && !strncmp(m, "exl3-trellis-", 13)) return true;
  for (size_t i = 0; m && i < sizeof methods / sizeof *methods; i++)
    if (!strcmp(m, methods[i])) return true;
  return fdl_cmp_streq(s->wd.scope, "weights_reconstructed");
}

static fdl_status decode_gate(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                              cmp_findings *f, fdl_err *err) {
  if (o->self_compare)
    return fdl_cmp_gate(
        f, FDL_GATE_DECODE, true, NULL, err,
        "self-compare: both sides are the same artifact; the weights-decode caveats "
        "apply to a measurement against a reference, not to SC-1");
  const cmp_side *sides[2] = {a, b};
  const char *method[2];
  char recon[1024] = "", act[160] = "";
  for (int i = 0; i < 2; i++) {
    const cmp_side *s = sides[i];
    method[i] = s->wd.method ? s->wd.method : "none";
    /* The reference's wording, one sentence group per reconstructed side, joined by a space. */
    if (reconstructed(s))
      snprintf(recon + strlen(recon), sizeof recon - strlen(recon),
               "%s%s was captured from a WEIGHTS-ONLY RECONSTRUCTION (%s, output %s). The stored "
               "weights were decoded before the model forward; native quantized GEMM and serving "
               "activation arithmetic are not measured. Decoder provenance is in the sealed "
               "runtime receipt. The comparison is advisory.",
               *recon ? " " : "", s->who, method[i],
               s->wd.output_dtype ? s->wd.output_dtype : "unspecified");
    if (s->wd.activation_quantized)
      snprintf(act + strlen(act), sizeof act - strlen(act), "%s%s", *act ? " and " : "", s->who);
  }
  fdl_status s;
  if (*recon) {
    f->advisory = true;
    s = fdl_cmp_disclose(f, "weights_reconstructed", "caveat", 1, err, "%s", recon);
    if (s != FDL_OK) return s;
  }
  if (*act) {
    f->advisory = true;
    s = fdl_cmp_disclose(f, "activation_quantization_not_captured", "caveat", 1, err,
                         "the %s declares activation quantization, which a weights-decoded capture "
                         "does not reproduce; the serving activation error is not in this number.",
                         act);
    if (s != FDL_OK) return s;
  }
  return fdl_cmp_gate(f, FDL_GATE_DECODE, true, NULL, err,
                      "weights_decode reference %s; candidate %s", method[0], method[1]);
}

static fdl_status gate_lossy_decode(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                    cmp_findings *f, fdl_err *err) {
  const cmp_side *sides[2] = {a, b};
  char lossy[64] = "";
  for (int i = 0; i < 2; i++) {
    if (sides[i]->m->capture.lossy_codec)
      snprintf(lossy + strlen(lossy), sizeof lossy - strlen(lossy), "%s%s", *lossy ? ", " : "",
               sides[i]->who);
  }
  fdl_status s;
  if (*lossy) {
    f->advisory = true;
    s = fdl_cmp_disclose(f, "lossy_capture_codec", "caveat", 1, err,
                         "capture.lossy_codec is set on %s: the stored values are not the model's "
                         "values, and the codec's error is inside this number.",
                         lossy);
    if (s != FDL_OK) return s;
  }
  for (int i = 0; i < 2; i++) {
    if (sides[i]->m->capture.dtype_lossless != FDL_DS_FALSE) continue;
    f->advisory = true;
    s = fdl_cmp_disclose(f, "quantized_capture_dtype", "caveat", 1, err,
                         "FORM-1: the %s capture's stored dtype (%s) is narrower than the value's "
                         "dtype in the forward pass (dtype_lossless false); storage rounding is "
                         "inside this number.",
                         sides[i]->who,
                         sides[i]->m->capture.dtype ? sides[i]->m->capture.dtype : "?");
    if (s != FDL_OK) return s;
  }
  if (*lossy)
    s = fdl_cmp_gate(f, FDL_GATE_LOSSY, true, NULL, err, "lossy_codec on %s", lossy);
  else
    s = fdl_cmp_gate(f, FDL_GATE_LOSSY, true, NULL, err, "lossy_codec null on both sides");
  if (s != FDL_OK) return s;
  return decode_gate(a, b, o, f, err);
}

static const char *form_name(const cmp_side *s) {
  const char *n = fdl_form_names[s->m->capture.form];
  return n ? n : "None";
}

fdl_status fdl_cmp_gates_run(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                             cmp_findings *f, fdl_refusal *r, fdl_err *err) {
  fdl_status s =
      fdl_cmp_gate(f, FDL_GATE_FORM, true, NULL, err, "%s vs %s", form_name(a), form_name(b));
  if (s == FDL_OK) s = fdl_cmp_gate_provenance(a, b, f, err);
  if (s == FDL_OK) s = fdl_cmp_gate_panel(a, b, f, r, err);
  if (s == FDL_OK) s = fdl_cmp_gate_head(a, b, o, f, r, err);
  if (s == FDL_OK) s = fdl_cmp_gate_lane_stack(a, b, o, f, r, err);
  if (s == FDL_OK) s = gate_geometry_coverage(a, b, o, f, r, err);
  if (s == FDL_OK) s = gate_lossy_decode(a, b, o, f, err);
  if (s != FDL_OK) return s;
  return fdl_cmp_gate(f, FDL_GATE_SEAL, true, NULL, err,
                      "both manifests self-seal and checksums.txt verified; every "
                      "tensor_content_sha256 recomputed");
}
