/* comparability.c - the comparability block (section 11.7): which receipts may be ranked
 * against each other, under the registry key of its key_inputs (fdl_compare_key, with the
 * receipt checks that recompute it). */
#include <string.h>

#include "compare/cmp.h"
#include "compare/compare_json.h"

/* The comparability block of a receipt; key and key_inputs only for a measurement. */
fdl_status fdl_cmp_comparability(const cmp_side *a, const cmp_findings *f, json_t **out,
                                 fdl_refusal *r, fdl_err *err) {
  json_t *c = json_object();
  if (!c) return fdl_fail(err, FDL_NOMEM, "out of memory");
  bool usable =
      !f->preview && !f->not_floor && !f->cross_stack && !f->head_substituted && f->same_lane;
  int bad = fdl_cmp_set_str(c, "class", f->advisory ? "advisory" : "strict") |
            fdl_cmp_set_bool(c, "usable_as_floor", usable) |
            fdl_cmp_set_bool(c, "same_lane", f->same_lane) |
            json_object_set_new(c, "bias", f->bias ? json_deep_copy(f->bias) : json_null());
  if (strcmp(f->kind, "measurement")) {
    bad |= json_object_set_new(c, "key", json_null()) |
           json_object_set_new(c, "key_inputs", json_null());
  } else {
    const char *panel_id = a->m->panel.panel_id;
    json_t *ki = json_object();
    bad |= !ki;
    bad |= fdl_cmp_set_str(ki, "panel_id", !fdl_cmp_empty(panel_id) ? panel_id : "panel--unknown") |
           fdl_cmp_set_str(ki, "reference_id",
                           !fdl_cmp_empty(a->m->dataset.id) ? a->m->dataset.id
                                                            : "reference--unknown") |
           fdl_cmp_set_str(ki, "metric_name", "mean_tokenwise_kld") |
           fdl_cmp_set_str(ki, "direction", "reference_to_candidate") |
           fdl_cmp_set_str(ki, "accumulation_dtype", "float64") |
           fdl_cmp_set_str(ki, "stack_relation", f->cross_stack ? "cross_stack" : "same_stack") |
           fdl_cmp_set_str(ki, "head_policy", f->head_policy);
    char key[FDL_COMPARE_KEY_LEN + 1] = "";
    if (!bad && fdl_compare_key(ki, key, err) != FDL_OK) {
      json_decref(ki);
      json_decref(c);
      return fdl_cmp_refuse(r, err, FDL_REF_RECEIPT_INVALID, FDL_GATE_PUBLISH, CMP_REMEDY_BUG, "%s",
                            fdl_err_msg(err));
    }
    /* The reference's exact text: readers match on it. */
    bad |= fdl_cmp_set_str(ki, "note",
                           "provisional; the registry recomputes with its reference record id "
                           "(registry CMP-001)") |
           fdl_cmp_set_str(c, "key", key) | json_object_set_new(c, "key_inputs", ki);
  }
  if (bad) {
    json_decref(c);
    return fdl_fail(err, FDL_NOMEM, "out of memory for the comparability block");
  }
  *out = c;
  return FDL_OK;
}
