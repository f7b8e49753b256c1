/* markdown.c - the headline table, or the side-by-side table, in GitHub-flavoured Markdown for
 * model cards and pull requests. Strings from the receipt are made inert: a pipe cannot split a
 * cell, a newline cannot end the table, control and bidi characters show as escapes, and HTML
 * and Markdown punctuation is backslashed. */
#include <math.h>
#include <string.h>

#include "base/quote.h"
#include "report/rpt.h"

static void cell(fdl_buf *b, const char *s) {
  if (!s) {
    fdl_buf_puts(b, "\xE2\x80\x94");
    return;
  }
  /* First the one quoting rule (docs/MESSAGES.md): C0/C1 controls, bidi and invisible
   * characters and invalid UTF-8 become visible escapes, so a terminal or a rendered card
   * shows what the receipt holds; then the Markdown punctuation. */
  char safe[4 * FDL_QUOTE_CAP];
  s = fdl_quote_text(s, strlen(s), safe, sizeof safe);
  for (const char *p = s; *p; p++) {
    if (*p == '\n' || *p == '\r' || *p == '\t')
      fdl_buf_putc(b, ' ');
    else if ((unsigned char)*p < 0x20)
      continue;
    else {
      if (strchr("|\\`*_[]<>#!~&", *p)) fdl_buf_putc(b, '\\');
      fdl_buf_putc(b, *p);
    }
  }
}

static void num_row(fdl_buf *b, const char *name, double v, const char *unit) {
  char x[32];
  fdl_buf_printf(b, "| %s | %s%s |\n", name, fdl_rpt_fmt(v, 6, x), unit);
}

static void pm_row(fdl_buf *b, const char *name, fdl_compare_pm v) {
  char x[32], y[32];
  fdl_buf_printf(b, "| %s | %s \xC2\xB1 %s |\n", name, fdl_rpt_fmt(v.value, 6, x),
                 fdl_rpt_fmt(v.se, 4, y));
}

void fdl_rpt_md_headline(fdl_buf *b, const fdl_rpt_receipt *r) {
  const fdl_compare_receipt *d = &r->d;
  const fdl_compare_llamacpp *k = &d->llamacpp;
  char v[32], l[32], h[32];
  fdl_buf_puts(b, "| statistic | value |\n|---|---|\n| candidate | ");
  cell(b, fdl_rpt_name(r));
  fdl_buf_puts(b, " |\n| reference | ");
  cell(b, d->side[0].label);
  fdl_buf_printf(b, " |\n| mean KL(reference \\|\\| candidate) | %s nats",
                 fdl_rpt_fmt(d->metric_value, 6, v));
  double lo = d->uncertainty.ci95_low, hi = d->uncertainty.ci95_high;
  if (isfinite(lo) && isfinite(hi))
    fdl_buf_printf(b, " (CI95 %s to %s)", fdl_rpt_fmt(lo, 4, l), fdl_rpt_fmt(hi, 4, h));
  fdl_buf_puts(b, " |\n");
  num_row(b, "median KL", d->kl.median, " nats");
  num_row(b, "p95 KL", d->kl.p95, " nats");
  num_row(b, "p99 KL", d->kl.p99, " nats");
  num_row(b, "p99.9 KL", d->kl.p99_9, " nats");
  num_row(b, "max KL", d->kl.max, " nats");
  num_row(b, "top-1 agreement", d->top1_agreement, "");
  if (r->llama) {
    pm_row(b, "PPL(Q)/PPL(base)", k->ppl_ratio);
    pm_row(b, "KLD (llama.cpp stderr)", (fdl_compare_pm){k->kld.mean, k->kld.se});
    pm_row(b, "same top", k->same_top);
    pm_row(b, "RMS \xCE\x94p", (fdl_compare_pm){k->delta_p.rms, k->delta_p.rms_se});
  }
  num_row(b, "scored positions", fdl_rpt_int(d->panel.scored_positions), "");
  fdl_buf_puts(b, "| class | ");
  cell(b, d->comparability_class);
  fdl_buf_puts(b, " |\n| comparability key | ");
  cell(b, d->comparability.key);
  fdl_buf_puts(b, " |\n| receipt_sha256 | ");
  cell(b, d->receipt_sha256);
  fdl_buf_puts(b, " |\n");
}

void fdl_rpt_md_compare(fdl_buf *b, const fdl_rpt_receipt *const *rs, size_t n) {
  fdl_buf_puts(b, "| rank | candidate | mean KL (nats) | CI95 | p99 KL | max KL | top-1 | class "
                  "|\n|---:|---|---:|---|---:|---:|---:|---|\n");
  for (size_t i = 0; i < n; i++) {
    const fdl_compare_receipt *d = &rs[i]->d;
    fdl_rpt_row r;
    fdl_rpt_row_format(d, &r);
    fdl_buf_printf(b, "| %zu | ", i + 1);
    cell(b, fdl_rpt_name(rs[i]));
    fdl_buf_printf(b, " | %s | %s to %s | %s | %s | %s | ", r.mean, r.ci_low, r.ci_high, r.p99,
                   r.max, r.top1);
    cell(b, d->comparability_class);
    fdl_buf_puts(b, " |\n");
  }
}
