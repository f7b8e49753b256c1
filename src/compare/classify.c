/* classify.c - which of the three results this pair can be (section 1), HEAD-1c, and the
 * --self-compare assertion (section 4 steps 12-13). Only `measurement` is a quantization
 * number; the other two are a proof of reproduction and a same-weights floor. */
#include <string.h>

#include "compare/cmp.h"

/* The weights identity triple (model_revision, checkpoint identity, scope digest). */
static const char *const TRIPLE[3] = {"weights.model_revision",
                                      "weights.checkpoint_identity_sha256", "scope.scope_digest"};

static void weights_identity(const cmp_side *a, const cmp_side *b, bool *equal, bool *any_null) {
  *equal = true;
  *any_null = false;
  for (int i = 0; i < 3; i++) {
    const json_t *va = fdl_json_get_path(a->ds.manifest, TRIPLE[i]);
    const json_t *vb = fdl_json_get_path(b->ds.manifest, TRIPLE[i]);
    if (!va || json_is_null(va) || !vb || json_is_null(vb)) *any_null = true;
    bool na = !va || json_is_null(va), nb = !vb || json_is_null(vb);
    if (na != nb || (!na && !fdl_py_equal(va, vb))) *equal = false;
  }
}

fdl_status fdl_cmp_classify(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                            cmp_findings *f, fdl_refusal *r, fdl_err *err) {
  f->capture_equal =
      !fdl_cmp_empty(a->capture_digest) && fdl_cmp_streq(a->capture_digest, b->capture_digest);
  f->head_digest_equal = fdl_cmp_streq(a->head_digest, b->head_digest);
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
          a->capture_digest);
    f->kind = "measurement";
    char sa[13], sb[13];
    fdl_cmp_short(a->head_digest, sa);
    fdl_cmp_short(b->head_digest, sb);
    fdl_status s =
        fdl_cmp_disclose(f, "head_only_difference", "info", 0, err,
                         "HEAD-1c: both sides carry the same hidden states (capture "
                         "content digest %s); with --own-heads the measured difference is "
                         "exactly the difference between the heads (reference %s, "
                         "candidate %s).",
                         a->capture_digest, sa, sb);
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
