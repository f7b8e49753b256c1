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
#define NSAME (sizeof SAME / sizeof *SAME)

/* d's values of SAME, in its order: strings, and the scored positions (a count) as digits in
 * buf; NULL when absent. */
static void same_values(const fdl_compare_receipt *d, const char *v[NSAME], char buf[32]) {
  static const fdl_compare_key_input ki[] = {
      FDL_COMPARE_KI_PANEL_ID,  FDL_COMPARE_KI_REFERENCE_ID,       FDL_COMPARE_KI_METRIC_NAME,
      FDL_COMPARE_KI_DIRECTION, FDL_COMPARE_KI_ACCUMULATION_DTYPE, FDL_COMPARE_KI_HEAD_POLICY};
  for (size_t k = 0; k < 6; k++) v[k] = d->comparability.key_inputs[ki[k]];
  snprintf(buf, 32, "%lld", (long long)d->panel.scored_positions);
  v[6] = d->panel.suite_token_hash_sha256;
  v[7] = d->panel.scored_positions == FDL_COMPARE_NO_INT ? NULL : buf;
  v[8] = d->side[0].dataset_sha256;
}

/* A value as the refusal shows it: a string quoted, the count as its digits. */
static void shown(const char *v, bool count, char out[80]) {
  if (!v)
    snprintf(out, 80, "absent");
  else if (count)
    snprintf(out, 80, "%s", v);
  else
    fdl_quote_str(v, out, 80);
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
  const char *a[NSAME], *b[NSAME];
  char na[32], nb[32];
  same_values(&rs[0]->d, a, na);
  for (size_t i = 1; i < n; i++) {
    same_values(&rs[i]->d, b, nb);
    for (size_t k = 0; k < NSAME; k++) {
      if (a[k] && b[k] && !strcmp(a[k], b[k])) continue;
      char x[80], y[80];
      shown(a[k], a[k] == na, x);
      shown(b[k], b[k] == nb, y);
      return fdl_fail(err, FDL_REFUSED,
                      "%s and %s cannot be ranked side by side: %s differs (%s vs %s); a "
                      "side-by-side page needs the same panel, reference, metric, direction, "
                      "accumulation and head policy (docs/REPORT.md)",
                      rs[0]->dir, rs[i]->dir, SAME[k], x, y);
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
