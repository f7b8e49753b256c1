/* derive.c - the few numbers the page computes itself, each from the verified tokenwise array
 * and each named as derived on the page (docs/REPORT.md): per-context CI95s when the receipt
 * has none, and mean KL by position in the context. */
#include <math.h>
#include <stdlib.h>

#include "fidelis/num.h"
#include "base/sys.h"
#include "report/rpt.h"

fdl_status fdl_rpt_context_cis(fdl_rpt_receipt *r, fdl_err *err) {
  size_t *ones = NULL, cap = 0;
  fdl_status s = FDL_OK;
  for (size_t i = 0; i < r->nctx && s == FDL_OK; i++) {
    fdl_rpt_ctx *c = &r->ctx[i];
    if (c->ci_sealed) continue;
    c->lo = c->hi = NAN;
    if (c->rows < 2) continue;
    /* Each token is its own cluster of one row: the bootstrap of the context mean over its
     * tokens, by the same resampler (and seed rule) as the receipt's headline interval. */
    if (c->rows > cap) {
      size_t *p = fdl_realloc(ones, c->rows * sizeof *p);
      if (!p) {
        s = fdl_fail(err, FDL_NOMEM, "out of memory for a per-context interval");
        break;
      }
      ones = p;
      for (size_t k = cap; k < c->rows; k++) ones[k] = 1;
      cap = c->rows;
    }
    fdl_num_ci ci;
    s = fdl_num_bootstrap_ci95(r->kl + c->first, ones, c->rows, FDL_RPT_CTX_B, 0, &ci, err);
    if (s == FDL_OK) {
      c->lo = ci.low;
      c->hi = ci.high;
    }
  }
  free(ones);
  return s;
}

fdl_status fdl_rpt_position_means(const fdl_rpt_receipt *r, double **pos, double **mean,
                                  size_t *npts, size_t *width, fdl_err *err) {
  *pos = *mean = NULL;
  *npts = 0;
  size_t longest = 0;
  for (size_t i = 0; i < r->nctx; i++)
    if (r->ctx[i].rows > longest) longest = r->ctx[i].rows;
  if (!longest) return FDL_OK;
  size_t w = (longest + FDL_RPT_POS_POINTS - 1) / FDL_RPT_POS_POINTS;
  size_t nb = (longest + w - 1) / w;
  double *sum = fdl_calloc(nb, sizeof *sum), *cnt = fdl_calloc(nb, sizeof *cnt);
  double *p = fdl_malloc(nb * sizeof *p), *m = fdl_malloc(nb * sizeof *m);
  if (!sum || !cnt || !p || !m) {
    free(sum), free(cnt), free(p), free(m);
    return fdl_fail(err, FDL_NOMEM, "out of memory for the position means");
  }
  /* Row k of a context predicts token k+1 from tokens 0..k: its position is k+1. */
  for (size_t i = 0; i < r->nctx; i++)
    for (size_t k = 0; k < r->ctx[i].rows; k++) {
      sum[k / w] += r->kl[r->ctx[i].first + k];
      cnt[k / w] += 1.0;
    }
  size_t out = 0;
  for (size_t b = 0; b < nb; b++) {
    if (cnt[b] == 0) continue;
    p[out] = (double)(b * w + 1);
    m[out] = sum[b] / cnt[b];
    out++;
  }
  free(sum);
  free(cnt);
  *pos = p;
  *mean = m;
  *npts = out;
  *width = w;
  return FDL_OK;
}
