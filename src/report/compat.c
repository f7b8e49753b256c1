/* compat.c - which receipts may share a side-by-side page (docs/REPORT.md, "Side by side").
 *
 * Receipts are ranked by one number, so that number must mean the same thing in each: the same
 * panel (id and token hash, the same scored positions), the same reference bytes, and the same
 * metric, direction, accumulation and head policy. That is the comparability key with
 * stack_relation left out: quantizations of one model served by different stacks are exactly
 * what a side-by-side page is for, and each row shows its own stack relation and class. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/quote.h"
#include "report/rpt.h"

/* A receipt's value as the refusal shows it: a string quoted, a count as digits. */
static void shown(const char *v, bool quote, char out[80]) {
  if (!v)
    snprintf(out, 80, "absent");
  else if (quote)
    fdl_quote_str(v, out, 80);
  else
    snprintf(out, 80, "%s", v);
}

fdl_status fdl_rpt_comparable(const fdl_rpt_receipt *const *rs, size_t n, fdl_err *err) {
  for (size_t i = 0; i < n; i++) {
    if (!rs[i]->d.comparability.key) {
      const char *kind = rs[i]->d.comparison_kind;
      return fdl_fail(err, FDL_REFUSED,
                      "%s: no comparability key (comparison_kind %s): only measurements are "
                      "ranked side by side; leave it out of --compare",
                      rs[i]->dir, kind ? kind : "absent");
    }
  }
  for (size_t i = 1; i < n; i++) {
    const fdl_compare_receipt *a = &rs[0]->d, *b = &rs[i]->d;
    char na[32], nb[32];
    snprintf(na, sizeof na, "%lld", (long long)a->panel.scored_positions);
    snprintf(nb, sizeof nb, "%lld", (long long)b->panel.scored_positions);
    const struct {
      const char *path, *x, *y;
      bool quote;
    } same[] = {
        {"comparability.key_inputs.panel_id", a->comparability.key_inputs.panel_id,
         b->comparability.key_inputs.panel_id, true},
        {"comparability.key_inputs.reference_id", a->comparability.key_inputs.reference_id,
         b->comparability.key_inputs.reference_id, true},
        {"comparability.key_inputs.metric_name", a->comparability.key_inputs.metric_name,
         b->comparability.key_inputs.metric_name, true},
        {"comparability.key_inputs.direction", a->comparability.key_inputs.direction,
         b->comparability.key_inputs.direction, true},
        {"comparability.key_inputs.accumulation_dtype",
         a->comparability.key_inputs.accumulation_dtype,
         b->comparability.key_inputs.accumulation_dtype, true},
        {"comparability.key_inputs.head_policy", a->comparability.key_inputs.head_policy,
         b->comparability.key_inputs.head_policy, true},
        {"panel.suite_token_hash_sha256", a->panel.suite_token_hash_sha256,
         b->panel.suite_token_hash_sha256, true},
        {"panel.scored_positions", a->panel.scored_positions == FDL_COMPARE_NO_INT ? NULL : na,
         b->panel.scored_positions == FDL_COMPARE_NO_INT ? NULL : nb, false},
        {"reference.dataset_sha256", a->side[0].dataset_sha256, b->side[0].dataset_sha256, true},
    };
    for (size_t k = 0; k < sizeof same / sizeof *same; k++) {
      if (same[k].x && same[k].y && !strcmp(same[k].x, same[k].y)) continue;
      char x[80], y[80];
      shown(same[k].x, same[k].quote, x);
      shown(same[k].y, same[k].quote, y);
      return fdl_fail(err, FDL_REFUSED,
                      "%s and %s cannot be ranked side by side: %s differs (%s vs %s); a "
                      "side-by-side page needs the same panel, reference, metric, direction, "
                      "accumulation and head policy (docs/REPORT.md)",
                      rs[0]->dir, rs[i]->dir, same[k].path, x, y);
    }
  }
  return FDL_OK;
}

void fdl_rpt_sort_by_kl(const fdl_rpt_receipt **rs, size_t n) {
  for (size_t a = 1; a < n; a++)
    for (size_t b = a; b > 0 && rs[b - 1]->d.metric_value > rs[b]->d.metric_value; b--) {
      const fdl_rpt_receipt *t = rs[b];
      rs[b] = rs[b - 1];
      rs[b - 1] = t;
    }
}
