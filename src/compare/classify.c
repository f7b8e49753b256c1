/* classify.c - which of the three results this pair can be (section 1), HEAD-1c, and the
 * --self-compare assertion (section 4 steps 12-13). Only `measurement` is a quantization
 * number; the other two are a proof of reproduction and a same-weights floor. */
#include <string.h>

#include "compare/cmp.h"

/* The weights identity triple (model_revision, checkpoint identity, scope digest); NULL is
 * null or absent. */
static void weights_identity(const cmp_side *a, const cmp_side *b, bool *equal, bool *any_null) {
  const fdl_ds_manifest *m[2] = {a->m, b->m};
  const char *v[2][3];
  for (int i = 0; i < 2; i++) {
    v[i][0] = m[i]->weights.model_revision;
    v[i][1] = m[i]->weights.checkpoint_identity_sha256;
    v[i][2] = m[i]->scope.scope_digest;
  }
  *equal = true;
  *any_null = false;
  for (int i = 0; i < 3; i++) {
    if (!v[0][i] || !v[1][i]) *any_null = true;
    if (!v[0][i] != !v[1][i] || (v[0][i] && strcmp(v[0][i], v[1][i]))) *equal = false;
  }
}

fdl_status fdl_cmp_classify(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                            cmp_findings *f, fdl_refusal *r, fdl_err *err) {
  f->capture_equal =
      !fdl_cmp_empty(a->m->capture.capture_content_digest) &&
      fdl_cmp_streq(a->m->capture.capture_content_digest, b->m->capture.capture_content_digest);
  f->head_digest_equal =
      fdl_cmp_streq(a->m->head.tensor_content_sha256, b->m->head.tensor_content_sha256);
  bool any_null;
  weights_identity(a, b, &f->weights_identity_equal, &any_null);
  if (f->capture_equal && (a->hidden || b->hidden) && !f->head_digest_equal) {
    if (!o->own_heads)
      return fdl_cmp_refuse(
          r, err, FDL_REF_HEAD_SUBSTITUTION_VACUOUS, FDL_GATE_HEAD,
          "none: with identical hidden states the only difference is the head; "
          "use --own-heads to measure exactly that head difference",
          "HEAD-1c: the capture content digests are equal (%s) but the heads "
          "differ; replaying identical hidden states through one head is a vacuous "
          "zero",
          a->m->capture.capture_content_digest);
    f->kind = "measurement";
    char sa[13], sb[13];
    fdl_cmp_short(a->m->head.tensor_content_sha256, sa);
    fdl_cmp_short(b->m->head.tensor_content_sha256, sb);
    fdl_status s =
        fdl_cmp_disclose(f, "head_only_difference", "info", 0, err,
                         "HEAD-1c: both sides carry the same hidden states (capture "
                         "content digest %s); with --own-heads the measured difference is "
                         "exactly the difference between the heads (reference %s, "
                         "candidate %s).",
                         a->m->capture.capture_content_digest, sa, sb);
    if (s != FDL_OK) return s;
  } else if (f->capture_equal) {
    f->kind = "reproduction_confirmation";
  } else if (f->weights_identity_equal && !any_null) {
    f->kind = "run_to_run_floor";
  } else {
    f->kind = "measurement";
  }
  if (o->self_compare && strcmp(f->kind, "reproduction_confirmation"))
    return fdl_cmp_refuse(r, err, FDL_REF_NOT_A_SELF_COMPARE, FDL_GATE_SELF_COMPARE,
                          "drop --self-compare to measure this pair",
                          "--self-compare asserts a reproduction, but this pair is a %s (capture "
                          "content digests %s)",
                          f->kind, f->capture_equal ? "equal" : "differ");
  return FDL_OK;
}
