/* gates_env.c - the lane and stack gates (section 4 steps 6-7): where and with what code each
 * capture ran. Lanes are not interchangeable (BIAS-006); a stack difference is a bias of
 * unknown sign that no floor can correct. */
#include <stdio.h>
#include <string.h>

#include "compare/cmp.h"

static const char *eq_word(const char *x, const char *y) {
  return fdl_cmp_streq(x, y) ? "equal" : "differ";
}

fdl_status fdl_cmp_gate_lane_stack(const cmp_side *a, const cmp_side *b, const fdl_compare_opts *o,
                                   cmp_findings *f, fdl_refusal *r, fdl_err *err) {
  const char *la = fdl_lane_names[a->m->runtime.lane], *lb = fdl_lane_names[b->m->runtime.lane];
  la = la ? la : "None", lb = lb ? lb : "None";
  f->same_lane = !strcmp(la, lb);
  if (!f->same_lane && !o->allow_cross_lane)
    return fdl_cmp_refuse(r, err, FDL_REF_LANE_MISMATCH, FDL_GATE_LANE, "--allow-cross-lane",
                          "the captures ran on different lanes (reference %s, candidate %s); "
                          "lanes are not interchangeable, so the difference would include the "
                          "lane's own offset",
                          la, lb);
  fdl_status s = fdl_cmp_gate(f, FDL_GATE_LANE, true, f->same_lane ? NULL : "--allow-cross-lane",
                              err, "lane=%s vs %s", la, lb);
  if (s == FDL_OK && !f->same_lane) {
    f->advisory = true;
    f->not_floor = true;
    s = fdl_cmp_disclose(f, "cross_engine_capture", "caveat", 1, err,
                         "the captures ran on different lanes (reference %s, candidate %s); the "
                         "number includes the cross-lane offset, whose size is unknown, and it can "
                         "never serve as a floor (BIAS-006).",
                         la, lb);
  }
  if (s != FDL_OK) return s;

  bool same_dataset = !fdl_cmp_empty(a->m->dataset_sha256) &&
                      fdl_cmp_streq(a->m->dataset_sha256, b->m->dataset_sha256);
  bool same_sources =
      a->source_files && b->source_files && fdl_py_equal(a->source_files, b->source_files);
  const char *lia = a->m->runtime.lane_identity_sha256, *lib = b->m->runtime.lane_identity_sha256;
  const char *sfpa = a->m->runtime.stack_fingerprint_sha256,
             *sfpb = b->m->runtime.stack_fingerprint_sha256;
  bool same_stack = same_dataset || (lia && lib && !strcmp(lia, lib) && sfpa && sfpb &&
                                     !strcmp(sfpa, sfpb) && same_sources);
  f->cross_stack = !same_stack;
  const char *rel = same_stack ? "same_stack" : "cross_stack";
  /* null == null prints "equal", as in the reference. */
  const char *w_li = eq_word(lia, lib), *w_sf = eq_word(sfpa, sfpb);
  const char *w_src = same_sources ? "equal" : "differ or unrecorded";
  s = fdl_cmp_gate(f, FDL_GATE_STACK, true, NULL, err,
                   "lane_identity %s / stack_fingerprint %s / source_files %s -> %s%s", w_li, w_sf,
                   w_src, rel, same_dataset ? " (same dataset)" : "");
  if (s != FDL_OK || same_stack) return s;
  f->advisory = true;
  f->not_floor = true;
  s = fdl_cmp_set_bias(
      f, "cross_stack_capture_replay",
      "the capture stacks differ or their code identity is unproven. The sign and magnitude of "
      "the cross-stack effect are unknown; a control measured on another artifact, panel or "
      "stack is not a transferable correction. usable_as_floor is false.",
      err);
  if (s != FDL_OK) return s;
  /* The reference's wording: an identity that is not seen to differ reads "equal on both sides,
   * or unrecorded" (null == null included). */
  static const char *const UNPROVEN = "equal on both sides, or unrecorded";
  return fdl_cmp_disclose(f, "cross_stack_capture", "caveat", 1, err,
                          "capture stack equality is not established (lane_identity %s, "
                          "stack_fingerprint %s, source_files %s). The cross-stack effect has "
                          "unknown sign and magnitude.",
                          fdl_cmp_streq(lia, lib) ? UNPROVEN : "differs",
                          fdl_cmp_streq(sfpa, sfpb) ? UNPROVEN : "differs", w_src);
}
