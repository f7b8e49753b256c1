/* compat.c - which receipts may share a side-by-side page (docs/REPORT.md, "Side by side").
 *
 * Receipts are ranked by one number, so that number must mean the same thing in each: the same
 * panel (id and token hash, the same scored positions), the same reference bytes, and the same
 * metric, direction, accumulation and head policy. That is the comparability key with
 * stack_relation left out: quantizations of one model served by different stacks are exactly
 * what a side-by-side page is for, and each row shows its own stack relation and class. */
#include <math.h>
#include <stdio.h>

#include "base/quote.h"
#include "report/rpt.h"

static const char *const SAME[] = {
    "comparability.key_inputs.panel_id",
    "comparability.key_inputs.reference_id",
    "comparability.key_inputs.metric_name",
    "comparability.key_inputs.direction",
    "comparability.key_inputs.accumulation_dtype",
    "comparability.key_inputs.head_policy",
    "panel.suite_token_hash_sha256",
    "panel.scored_positions",
    "reference.dataset_sha256",
};

fdl_status fdl_rpt_comparable(const fdl_rpt_receipt *const *rs, size_t n, fdl_err *err) {
  for (size_t i = 0; i < n; i++) {
    const char *key = fdl_json_path_str(rs[i]->doc, "comparability.key");
    if (!key) {
      const char *kind = fdl_json_str(rs[i]->doc, "comparison_kind");
      return fdl_fail(err, FDL_REFUSED,
                      "%s: no comparability key (comparison_kind %s): only measurements are "
                      "ranked side by side; leave it out of --compare",
                      rs[i]->dir, kind ? kind : "absent");
    }
  }
  for (size_t i = 1; i < n; i++)
    for (size_t k = 0; k < sizeof SAME / sizeof *SAME; k++) {
      const json_t *a = fdl_json_path(rs[0]->doc, SAME[k]), *b = fdl_json_path(rs[i]->doc, SAME[k]);
      if (a && b && json_equal((json_t *)a, (json_t *)b)) continue;
      char x[80] = "absent", y[80] = "absent";
      if (json_is_string(a)) fdl_quote_str(json_string_value(a), x, sizeof x);
      if (json_is_string(b)) fdl_quote_str(json_string_value(b), y, sizeof y);
      if (json_is_integer(a)) snprintf(x, sizeof x, "%lld", (long long)json_integer_value(a));
      if (json_is_integer(b)) snprintf(y, sizeof y, "%lld", (long long)json_integer_value(b));
      return fdl_fail(err, FDL_REFUSED,
                      "%s and %s cannot be ranked side by side: %s differs (%s vs %s); a "
                      "side-by-side page needs the same panel, reference, metric, direction, "
                      "accumulation and head policy (docs/REPORT.md)",
                      rs[0]->dir, rs[i]->dir, SAME[k], x, y);
    }
  return FDL_OK;
}

void fdl_rpt_sort_by_kl(const fdl_rpt_receipt **rs, size_t n) {
  for (size_t a = 1; a < n; a++)
    for (size_t b = a; b > 0 && fdl_json_path_num(rs[b - 1]->doc, "metric.value", NAN) >
                                    fdl_json_path_num(rs[b]->doc, "metric.value", NAN);
         b--) {
      const fdl_rpt_receipt *t = rs[b];
      rs[b] = rs[b - 1];
      rs[b - 1] = t;
    }
}
