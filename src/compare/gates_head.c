/* gates_head.c - the head gate (section 5.4, HEAD-1...HEAD-7): which head turns each hidden
 * side into logits. A hidden-form KL is only meaningful when the heads applied are the ones the
 * artifacts really use, or when a substitution is declared and disclosed. */
#include <stdio.h>
#include <string.h>

#include "compare/cmp.h"

static void set_applied(cmp_findings *f, const char *single, const char *ra, const char *rb) {
  snprintf(f->applied_head, sizeof f->applied_head, "%s", single ? single : "");
  snprintf(f->applied_ref, sizeof f->applied_ref, "%s", ra ? ra : "");
  snprintf(f->applied_cand, sizeof f->applied_cand, "%s", rb ? rb : "");
}

/* HEAD-2: both sides carry logits, so each side's own head was applied inside its capture. */
static fdl_status both_logit(const char *da, const char *db, cmp_findings *f, fdl_err *err) {
  f->head_policy = "native_head";
  set_applied(f, NULL, NULL, NULL);
  fdl_status s = FDL_OK;
  if (fdl_cmp_empty(da) || fdl_cmp_empty(db)) {
    f->advisory = true;
    s = fdl_cmp_disclose(
        f, "estimator_unknown", "caveat", 1, err,
        "HEAD-2: both sides are logit form, but the %s%s%s head.tensor_content_sha256 "
        "is missing, so which head produced those logits is not established.",
        fdl_cmp_empty(da) ? "reference" : "", fdl_cmp_empty(da) && fdl_cmp_empty(db) ? " and " : "",
        fdl_cmp_empty(db) ? "candidate" : "");
    if (s != FDL_OK) return s;
  }
  char sa[13], sb[13];
  fdl_cmp_short(da, sa);
  fdl_cmp_short(db, sb);
  return fdl_cmp_gate(
      f, FDL_GATE_HEAD, true, NULL, err,
      "HEAD-2: logit vs logit; each side's own head was applied in capture (%s vs %s)",
      fdl_cmp_empty(da) ? "unrecorded" : sa, fdl_cmp_empty(db) ? "unrecorded" : sb);
}

/* HEAD-3: one side is hidden; it is replayed through a head that must be the one behind the
 * other side's logits. */
static fdl_status mixed(const cmp_side *a, const cmp_side *b, const char *da, const char *db,
                        cmp_findings *f, fdl_refusal *r, fdl_err *err) {
  if (fdl_cmp_empty(da) || fdl_cmp_empty(db) || strcmp(da, db))
    return fdl_cmp_refuse(
        r, err, FDL_REF_HEAD_MISMATCH, FDL_GATE_HEAD,
        "none: a mixed hidden/logit pair is only comparable through the same head; "
        "capture both sides in the same form, or with the same head",
        "HEAD-3: %s (hidden) and %s (logit) must declare the same non-empty "
        "head.tensor_content_sha256 (reference %s, candidate %s)",
        a->hidden ? "reference" : "candidate", a->hidden ? "candidate" : "reference",
        fdl_cmp_empty(da) ? "(absent)" : da, fdl_cmp_empty(db) ? "(absent)" : db);
  f->head_policy = "native_head";
  set_applied(f, da, da, da);
  char sa[13];
  fdl_cmp_short(da, sa);
  fdl_status s = fdl_cmp_disclose(
      f, "no_known_deviations", "info", 0, err,
      "HEAD-3: the %s side is hidden form and was replayed through head %s, the head both sides "
      "declare; the %s side's logits came from the same head in capture.",
      a->hidden ? "reference" : "candidate", sa, a->hidden ? "candidate" : "reference");
  if (s != FDL_OK) return s;
  return fdl_cmp_gate(f, FDL_GATE_HEAD, true, NULL, err,
                      "HEAD-3: mixed %s vs %s; the hidden side replayed through the shared head %s",
                      fdl_form_names[a->m->capture.form], fdl_form_names[b->m->capture.form], sa);
}

static fdl_status both_hidden(const cmp_side *a, const cmp_side *b, const char *da, const char *db,
                              const fdl_compare_opts *o, cmp_findings *f, fdl_refusal *r,
                              fdl_err *err) {
  char sa[13], sb[13];
  fdl_cmp_short(da, sa);
  fdl_cmp_short(db, sb);
  bool same = !strcmp(da, db);
  fdl_status s;
  if (o->own_heads) { /* HEAD-1d, checked before 1a/1b */
    const cmp_side *sides[2] = {a, b};
    for (int i = 0; i < 2; i++)
      if (!sides[i]->head_payload)
        return fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISSING, FDL_GATE_HEAD,
                              "none for --own-heads: that side must ship its head payload; drop "
                              "--own-heads to use a shared head if the digests allow it",
                              "HEAD-1d: --own-heads needs each hidden side's head payload, but the "
                              "%s dataset has no head file (head.file %s)",
                              sides[i]->who,
                              fdl_cmp_empty(sides[i]->m->head.file) ? "is null" : "does not exist");
    f->own_heads = true;
    f->head_policy = "native_head";
    set_applied(f, NULL, da, db);
    s = fdl_cmp_disclose(
        f, "native_head_replay", "info", 0, err,
        "HEAD-1d: each side replayed through its own sealed head (reference %s, "
        "candidate %s); head-weight differences are included, but replay arithmetic need not "
        "equal live/native head execution. %s",
        sa, sb, same ? "The heads are content-identical." : "The heads differ in content.");
    if (s != FDL_OK) return s;
    return fdl_cmp_gate(f, FDL_GATE_HEAD, true, NULL, err,
                        "HEAD-1d: own heads on both sides (%s vs %s)", sa, sb);
  }
  if (same) { /* HEAD-1a */
    f->head_policy = "shared_reference_head";
    set_applied(f, da, da, da);
    s = fdl_cmp_disclose(f, "shared_reference_head", "info", 0, err,
                         "HEAD-1a: both sides declare head %s, so replaying both through that one "
                         "head erases nothing.",
                         sa);
    if (s != FDL_OK) return s;
    return fdl_cmp_gate(f, FDL_GATE_HEAD, true, NULL, err,
                        "HEAD-1a: both sides declare head.tensor_content_sha256 %s; that head is "
                        "applied to both",
                        da);
  }
  if (!o->disclose_head_substitution) /* HEAD-1b */
    return fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISMATCH, FDL_GATE_HEAD,
                          "--own-heads (replay each side through its own sealed head) or "
                          "--disclose-head-substitution (apply the reference head to both sides, "
                          "advisory with a blocking disclosure)",
                          "HEAD-1b: the heads differ (reference %s, candidate %s); replaying both "
                          "through one head would erase the candidate's head error",
                          da, db);
  f->head_policy = "shared_reference_head";
  f->head_substituted = true;
  f->advisory = true;
  f->not_floor = true;
  set_applied(f, da, da, da);
  s = fdl_cmp_set_bias(
      f, "other",
      "HEAD-1b: the reference head was substituted for the candidate's own head, so "
      "the candidate's head error is not measured. Direction and magnitude unknown.",
      err);
  if (s == FDL_OK)
    s = fdl_cmp_disclose(f, "head_substituted", "blocking", 1, err,
                         "HEAD-1b: the heads differ (reference %s, candidate %s) and the reference "
                         "head was applied to both sides by --disclose-head-substitution; the "
                         "candidate's own head error is NOT in this number.",
                         sa, sb);
  if (s != FDL_OK) return s;
  return fdl_cmp_gate(
      f, FDL_GATE_HEAD, true, "--disclose-head-substitution", err,
      "HEAD-1b: heads differ (%s vs %s); reference head %s substituted on both sides", sa, sb, sa);
}

fdl_status fdl_cmp_gate_head(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                             cmp_findings *f, fdl_refusal *r, fdl_err *err) {
  const char *da = fdl_cmp_str0(a->m->head.tensor_content_sha256),
             *db = fdl_cmp_str0(b->m->head.tensor_content_sha256);
  if (a->hidden || b->hidden) {
    const cmp_side *sides[2] = {a, b};
    for (int i = 0; i < 2; i++)
      if (sides[i]->hidden && fdl_cmp_empty(sides[i]->m->head.tensor_content_sha256))
        return fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISMATCH, FDL_GATE_HEAD,
                              "none: a hidden-form dataset without a head identity cannot be "
                              "replayed; recapture it with its head recorded",
                              "HEAD-4: the %s side is hidden form but declares no "
                              "head.tensor_content_sha256",
                              sides[i]->who);
    if (!fdl_cmp_empty(a->m->head.file_sha256) &&
        fdl_cmp_streq(a->m->head.file_sha256, b->m->head.file_sha256) && strcmp(da, db))
      return fdl_cmp_refuse(r, err, FDL_REF_HEAD_MISMATCH, FDL_GATE_HEAD, CMP_NO_OVERRIDE_DATA,
                            "HEAD-IDENT/O-6: both sides declare head file %s but different content "
                            "digests (reference %s, candidate %s); one of them is wrong",
                            a->m->head.file_sha256, da, db);
  }
  if (!a->hidden && !b->hidden) return both_logit(da, db, f, err);
  if (a->hidden != b->hidden) return mixed(a, b, da, db, f, r, err);
  return both_hidden(a, b, da, db, o, f, r, err);
}
