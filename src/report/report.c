/* report.c - the public calls: load and verify every receipt, then either the red page of a
 * receipt that failed, or the single-receipt page, or the side-by-side page, written staged and
 * never over an existing file; and the Markdown tables. */
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/sys.h"
#include "report/rpt.h"

typedef struct {
  fdl_rpt_receipt r[FDL_REPORT_MAX_RECEIPTS];
  const fdl_rpt_receipt *p[FDL_REPORT_MAX_RECEIPTS];
  size_t n;
  size_t bad; /* how many failed verification */
} loaded;

static void unload(loaded *l) {
  for (size_t i = 0; i < l->n; i++) fdl_rpt_free(&l->r[i]);
  free(l);
}

static fdl_status load_all(const char *const *dirs, size_t n, loaded **out, fdl_err *err) {
  *out = NULL;
  if (!dirs || n == 0 || n > FDL_REPORT_MAX_RECEIPTS)
    return fdl_fail(err, FDL_INVALID, "a report takes 1 to %d receipt directories, not %zu",
                    FDL_REPORT_MAX_RECEIPTS, n);
  loaded *l = fdl_calloc(1, sizeof *l);
  if (!l) return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    fdl_status s = fdl_rpt_load(dirs[i], &l->r[i], err);
    l->n = i + 1;
    if (s != FDL_OK) {
      unload(l);
      return s;
    }
    l->p[i] = &l->r[i];
    if (!l->r[i].trusted) l->bad++;
  }
  *out = l;
  return FDL_OK;
}

/* The reason of the first receipt that failed, as the call's error. */
static fdl_status first_failure(const loaded *l, fdl_err *err) {
  for (size_t i = 0; i < l->n; i++)
    if (!l->r[i].trusted)
      return fdl_fail(err, FDL_MISMATCH, "%s: verification failed: %s", l->r[i].dir, l->r[i].why);
  return FDL_OK;
}

static void title(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_buf_puts(b, "<h1>Fidelity report: ");
  fdl_rpt_esc(b, fdl_rpt_name(r));
  fdl_buf_puts(b, " against ");
  const char *ref = r->d.side[0].label;
  fdl_rpt_esc(b, ref && *ref ? ref : r->d.side[0].dataset_id);
  fdl_buf_puts(b, "</h1>\n<p class=\"note\" id=\"verified\">Receipt <code>");
  fdl_rpt_esc(b, r->dir);
  fdl_buf_puts(b, "</code>: seal recomputed and every array's SHA-256 matched before anything "
                  "was drawn.</p>\n");
}

static fdl_status single(fdl_buf *b, fdl_rpt_receipt *r, fdl_err *err) {
  fdl_status s = fdl_rpt_context_cis(r, err);
  if (s != FDL_OK) return s;
  title(b, r);
  /* Verdict and headline side by side: at 1280 px the charts then start on the first screen. */
  fdl_buf_puts(b, "<div class=\"grid\">");
  fdl_rpt_verdict(b, r);
  fdl_rpt_headline(b, r);
  fdl_buf_puts(b, "</div>\n");
  fdl_rpt_disclosures(b, r);
  fdl_buf_puts(b, "<section id=\"distribution\"><h2>KL distribution</h2><div class=\"grid\">");
  fdl_rpt_chart_hist(b, r);
  const fdl_rpt_receipt *one[1] = {r};
  if ((s = fdl_rpt_chart_cdf(b, one, 1, "chart-kl-cdf", err)) != FDL_OK) return s;
  fdl_buf_puts(b, "</div></section>\n<section id=\"where\"><h2>Where the divergence is</h2>"
                  "<div class=\"grid\">");
  if ((s = fdl_rpt_chart_contexts(b, r, err)) != FDL_OK) return s;
  s = fdl_rpt_chart_position(b, r, err);
  if (s != FDL_OK) return s;
  fdl_buf_puts(b, "</div></section>\n<section id=\"agreement\"><h2>Agreement on the target "
                  "token</h2><div class=\"grid\">");
  fdl_rpt_chart_top1(b, r);
  if (r->llama) fdl_rpt_chart_deltap(b, r);
  fdl_buf_puts(b, "</div></section>\n");
  fdl_rpt_llama_table(b, r);
  fdl_rpt_identity(b, r);
  return FDL_OK;
}

static fdl_status side_by_side(fdl_buf *b, loaded *l, fdl_err *err) {
  const fdl_rpt_receipt **o = l->p;
  fdl_rpt_sort_by_kl(o, l->n);
  fdl_buf_printf(b, "<h1>Side by side: %zu candidates on panel ", l->n);
  fdl_rpt_esc(b, o[0]->d.panel.panel_id);
  fdl_buf_puts(b, "</h1>\n<p class=\"note\" id=\"verified\">Every receipt's seal recomputed and "
                  "every array's SHA-256 matched before anything was drawn. Reference: <code>");
  fdl_rpt_esc(b, o[0]->d.side[0].dataset_id);
  fdl_buf_puts(b, "</code>. Ranked by mean KL, lowest (closest to the reference) first.</p>\n"
                  "<section id=\"ranking\"><h2>Ranking</h2>");
  fdl_rpt_compare_table(b, o, l->n);
  fdl_buf_puts(b, "</section>\n<section id=\"distribution\"><h2>KL distributions</h2>"
                  "<div class=\"grid\">");
  fdl_status s = fdl_rpt_chart_cdf(b, o, l->n, "chart-cdf-overlay", err);
  fdl_buf_puts(b, "</div></section>\n");
  return s;
}

fdl_status fdl_report_write(const char *const *dirs, size_t n, const char *out,
                            fdl_report_result *res, fdl_err *err) {
  fdl_report_result dummy;
  if (!res) res = &dummy;
  memset(res, 0, sizeof *res);
  if (!out || !*out) return fdl_fail(err, FDL_INVALID, "no output path");
  if (fdl_path_exists(out))
    return fdl_fail(err, FDL_EXISTS,
                    "%s already exists: a report never overwrites; choose "
                    "another --out or remove it",
                    out);
  loaded *l;
  fdl_status s = load_all(dirs, n, &l, err);
  if (s != FDL_OK) return s;
  res->receipts = n;
  if (!l->bad && n > 1 && (s = fdl_rpt_comparable(l->p, n, err)) != FDL_OK) {
    unload(l);
    return s;
  }
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_rpt_page_begin(&b, l->bad ? "fidelis report: VERIFICATION FAILED" : "fidelis report");
  if (l->bad) {
    fdl_buf_puts(&b, "<h1>fidelis report</h1>\n");
    for (size_t i = 0; i < n; i++)
      if (!l->r[i].trusted) fdl_rpt_untrusted(&b, &l->r[i]);
  } else if (n == 1) {
    s = single(&b, &l->r[0], err);
    res->llamacpp = l->r[0].llama;
  } else {
    s = side_by_side(&b, l, err);
  }
  fdl_rpt_page_end(&b);
  if (s == FDL_OK && (s = fdl_buf_status(&b)) != FDL_OK)
    fdl_fail(err, s, "the page for %s does not fit in memory", dirs[0]);
  if (s == FDL_OK) s = fdl_write_file(out, b.data, b.len, err);
  fdl_buf_free(&b);
  if (s == FDL_OK) {
    res->trusted = !l->bad;
    s = first_failure(l, err);
  }
  unload(l);
  return s;
}

fdl_status fdl_report_markdown(const char *const *dirs, size_t n, fdl_buf *out,
                               fdl_report_result *res, fdl_err *err) {
  fdl_report_result dummy;
  if (!res) res = &dummy;
  memset(res, 0, sizeof *res);
  loaded *l;
  fdl_status s = load_all(dirs, n, &l, err);
  if (s != FDL_OK) return s;
  res->receipts = n;
  if (l->bad)
    s = first_failure(l, err);
  else if (n > 1)
    s = fdl_rpt_comparable(l->p, n, err);
  if (s == FDL_OK) {
    res->trusted = true;
    res->llamacpp = n == 1 && l->r[0].llama;
    if (n == 1) {
      fdl_rpt_md_headline(out, &l->r[0]);
    } else {
      fdl_rpt_sort_by_kl(l->p, n);
      fdl_rpt_md_compare(out, l->p, n);
    }
    if ((s = fdl_buf_status(out)) != FDL_OK) fdl_fail(err, s, "the table does not fit in memory");
  }
  unload(l);
  return s;
}
