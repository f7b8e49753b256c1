/* tables.c - the page's tables: the verdict, the headline numbers, the llama.cpp-compatible
 * statistics, the identity block and the side-by-side table. Every value is read from the
 * verified receipt and every string from it is escaped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/rpt.h"

const char *fdl_rpt_name(const fdl_rpt_receipt *r) {
  /* The default label ("candidate", as compare writes it) names no one: side-by-side rows
   * would all read the same, so the dataset id names the row instead. */
  const char *s = r->d.side[1].label;
  if (!s || !*s || !strcmp(s, "candidate")) s = r->d.side[1].dataset_id;
  return s && *s ? s : r->dir;
}

static void row_text(fdl_buf *b, const char *name, const char *value, bool mono) {
  fdl_buf_puts(b, "<tr><th>");
  fdl_rpt_esc(b, name);
  fdl_buf_puts(b, mono ? "</th><td class=\"mono\">" : "</th><td>");
  fdl_rpt_esc(b, value ? value : "\xE2\x80\x94");
  fdl_buf_puts(b, "</td></tr>\n");
}

/* A decoded boolean as text; NULL (an em dash) when it was null or absent. */
static const char *truth(int v) {
  return v < 0 ? NULL : v ? "true" : "false";
}

void fdl_rpt_verdict(fdl_buf *b, const fdl_rpt_receipt *r) {
  const fdl_compare_receipt *d = &r->d;
  const char *cls = d->comparability_class;
  bool strict = cls && !strcmp(cls, "strict");
  fdl_buf_puts(b, "<section id=\"verdict\"><h2>Verdict</h2><p><span class=\"badge ");
  fdl_buf_puts(b, strict ? "strict" : "advisory");
  fdl_buf_puts(b, "\">");
  fdl_rpt_esc(b, cls ? cls : "unknown class");
  fdl_buf_puts(b, "</span> ");
  fdl_rpt_esc(b, d->comparison_kind);
  fdl_buf_puts(b, strict ? " &mdash; nothing in the gates weakened this comparison."
                         : " &mdash; read the disclosures before citing the numbers.");
  fdl_buf_puts(b, "</p><table>");
  row_text(b, "comparability key", d->comparability.key, true);
  static const char *const ki[] = {FDL_COMPARE_KEY_INPUTS(FDL_COMPARE_KI_NAME_)};
  for (size_t k = 0; k < FDL_COMPARE_KI_COUNT; k++) {
    char name[64];
    snprintf(name, sizeof name, "key input: %s", ki[k]);
    row_text(b, name, d->comparability.key_inputs[k], true);
  }
  row_text(b, "usable as floor", truth(d->comparability.usable_as_floor), false);
  row_text(b, "same lane", truth(d->comparability.same_lane), false);
  row_text(b, "bias", d->comparability.bias_kind, false);
  fdl_buf_puts(b, "</table></section>\n");
}

void fdl_rpt_disclosures(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_buf_puts(
      b, "<section id=\"disclosures\"><h3>Disclosures</h3><table><tr><th>severity</th><th>code</th>"
         "<th>affects comparability</th><th>detail</th></tr>\n");
  for (size_t i = 0; i < r->d.n_disclosures; i++) {
    const fdl_compare_disclosure *x = &r->d.disclosures[i];
    const char *sev = x->severity;
    const char *cl = !sev                       ? "sev-caveat"
                     : !strcmp(sev, "info")     ? "sev-info"
                     : !strcmp(sev, "blocking") ? "sev-blocking"
                                                : "sev-caveat";
    fdl_buf_printf(b, "<tr><td><span class=\"badge %s\">", cl);
    fdl_rpt_esc(b, sev ? sev : "?");
    fdl_buf_puts(b, "</span></td><td><code>");
    fdl_rpt_esc(b, x->code);
    fdl_buf_puts(b, "</code></td><td>");
    const char *aff = truth(x->affects_comparability);
    fdl_rpt_esc(b, aff ? aff : "\xE2\x80\x94");
    fdl_buf_puts(b, "</td><td>");
    fdl_rpt_esc(b, x->detail);
    fdl_buf_puts(b, "</td></tr>\n");
  }
  fdl_buf_puts(b, "</table></section>\n");
}

/* "value [lo, hi]" of the headline interval, or just the value. */
static void with_ci(fdl_buf *b, double v, double lo, double hi) {
  char x[32], l[32], h[32];
  fdl_rpt_esc(b, fdl_rpt_fmt(v, 6, x));
  if (isfinite(lo) && isfinite(hi))
    fdl_buf_printf(b, " <span class=\"note\">CI95 [%s, %s]</span>", fdl_rpt_fmt(lo, 4, l),
                   fdl_rpt_fmt(hi, 4, h));
}

void fdl_rpt_headline(fdl_buf *b, const fdl_rpt_receipt *r) {
  const fdl_compare_receipt *d = &r->d;
  char x[32];
  double lo = d->uncertainty.ci95_low, hi = d->uncertainty.ci95_high;
  fdl_buf_puts(b, "<section id=\"headline\"><h2>Headline</h2><p><span class=\"big\">");
  with_ci(b, d->metric_value, lo, hi);
  fdl_buf_puts(b, "</span> nats mean KL(reference || candidate)</p><table>"
                  "<tr><th>statistic</th><th>value</th><th>source</th></tr>\n");
  const struct {
    const char *name, *path, *unit;
    double v;
  } rows[] = {
      {"mean KL", "metric.value", "nats", d->metric_value},
      {"median KL", "kl.median", "nats", d->kl.median},
      {"p95 KL", "kl.p95", "nats", d->kl.p95},
      {"p99 KL", "kl.p99", "nats", d->kl.p99},
      {"p99.9 KL", "kl.p99_9", "nats", d->kl.p99_9},
      {"max KL", "kl.max", "nats", d->kl.max},
      {"top-1 agreement", "top1_agreement", "fraction", d->top1_agreement},
      {"scored positions", "panel.scored_positions", "tokens",
       fdl_rpt_int(d->panel.scored_positions)},
      {"contexts", "panel.contexts", "", fdl_rpt_int(d->panel.contexts)},
  };
  for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
    fdl_buf_puts(b, "<tr><th>");
    fdl_rpt_esc(b, rows[k].name);
    fdl_buf_puts(b, "</th><td class=\"num\">");
    if (k == 0)
      with_ci(b, rows[k].v, lo, hi);
    else
      fdl_rpt_esc(b, fdl_rpt_fmt(rows[k].v, 6, x));
    fdl_buf_printf(b, " %s</td><td><code>%s</code></td></tr>\n", rows[k].unit, rows[k].path);
  }
  fdl_buf_puts(b, "</table><p class=\"note\">Interval: ");
  const char *m = d->uncertainty.method;
  if (isfinite(lo) && isfinite(hi)) {
    fdl_rpt_esc(b, m);
    fdl_buf_printf(b, " over %s clusters (",
                   fdl_rpt_fmt(fdl_rpt_int(d->uncertainty.clusters), 6, x));
    fdl_rpt_esc(b, d->uncertainty.cluster_unit);
    fdl_buf_printf(b, "), %s resamples, seed ",
                   fdl_rpt_fmt(fdl_rpt_int(d->uncertainty.samples), 8, x));
    fdl_buf_printf(b, "%s.", fdl_rpt_fmt(fdl_rpt_int(d->uncertainty.seed), 20, x));
  } else {
    fdl_buf_puts(b, "none in this receipt (<code>uncertainty.method</code> ");
    fdl_rpt_esc(b, m ? m : "absent");
    fdl_buf_puts(b, ").");
  }
  fdl_buf_puts(b, "</p></section>\n");
}

/* One llama.cpp-style row: name, value (± stderr when se is given), the block's field. */
/* unit "%": the stored fraction shown as a percentage, as llama-perplexity and `fidelis
 * compare` print Δp and same-top (one unit in every place a person reads it). */
static void llama_row(fdl_buf *b, const char *name, const char *field, double v, const double *se,
                      const char *unit) {
  char t[32], e[32];
  double k = strcmp(unit, "%") ? 1.0 : 100.0;
  fdl_buf_puts(b, "<tr><th>");
  fdl_rpt_esc(b, name);
  fdl_buf_printf(b, "</th><td class=\"num\">%s", fdl_rpt_fmt(k * v, 6, t));
  if (se) fdl_buf_printf(b, " \xC2\xB1 %s", fdl_rpt_fmt(k * *se, 4, e));
  fdl_buf_printf(b, " %s</td><td><code>%s</code></td></tr>\n", unit, field);
}

/* One percentile row of a llama.cpp block: "q% stat", the field table.q. */
static void percentile_row(fdl_buf *b, const char *table, const char *stat, const char *q, double v,
                           const char *unit) {
  char name[32], field[48];
  snprintf(name, sizeof name, "%s%% %s", q, stat);
  snprintf(field, sizeof field, "%s.%s", table, q);
  llama_row(b, name, field, v, NULL, unit);
}

void fdl_rpt_llama_table(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_buf_puts(b, "<section id=\"llamacpp\"><h2>llama.cpp-compatible statistics</h2>");
  if (!r->llama) {
    fdl_buf_puts(b, "<p id=\"llamacpp-missing\">llama.cpp-compatible statistics: not in this "
                    "receipt (made by an older fidelis).</p></section>\n");
    return;
  }
  const fdl_compare_llamacpp *k = &r->d.llamacpp;
  fdl_buf_puts(b, "<p class=\"note\">The statistics <code>llama-perplexity --kl-divergence"
                  "</code> prints, computed exactly in float64 from the same pass (no uint16 "
                  "log-probabilities, no &minus;16 cut-off). &plusmn; is llama.cpp's iid "
                  "standard error; the headline interval above stays the context-cluster "
                  "bootstrap. Fields of <code>fidelis_extensions.llamacpp_compatible</code>; "
                  "definitions: <code>");
  fdl_rpt_esc(b, k->definitions);
  fdl_buf_puts(b, "</code>.</p><table><tr><th>statistic</th><th>value</th><th>field</th></tr>\n");
  llama_row(b, "Mean PPL(Q)", "ppl_candidate.value", k->ppl_candidate.value, &k->ppl_candidate.se,
            "");
  llama_row(b, "Mean PPL(base)", "ppl_reference.value", k->ppl_reference.value,
            &k->ppl_reference.se, "");
  llama_row(b, "Cor(ln PPL(Q), ln PPL(base))", "logprob_correlation", k->logprob_correlation, NULL,
            "");
  llama_row(b, "Mean ln(PPL(Q)/PPL(base))", "ln_ppl_ratio.value", k->ln_ppl_ratio.value,
            &k->ln_ppl_ratio.se, "");
  llama_row(b, "Mean PPL(Q)/PPL(base)", "ppl_ratio.value", k->ppl_ratio.value, &k->ppl_ratio.se,
            "");
  llama_row(b, "Mean KLD", "kld.mean", k->kld.mean, &k->kld.se, "nats");
  llama_row(b, "Maximum KLD", "kld.max", k->kld.max, NULL, "nats");
  static const char *const kq[] = FDL_COMPARE_KLD_PERCENTILES;
  for (size_t i = 0; i < sizeof kq / sizeof *kq; i++)
    percentile_row(b, "kld.percentiles", "KLD", kq[i], k->kld.percentiles[i], "nats");
  llama_row(b, "Minimum KLD", "kld.min", k->kld.min, NULL, "nats");
  llama_row(b, "Mean \xCE\x94p", "delta_p.mean", k->delta_p.mean, &k->delta_p.mean_se, "%");
  llama_row(b, "RMS \xCE\x94p", "delta_p.rms", k->delta_p.rms, &k->delta_p.rms_se, "%");
  llama_row(b, "Maximum \xCE\x94p", "delta_p.max", k->delta_p.max, NULL, "%");
  static const char *const dq[] = FDL_COMPARE_DP_PERCENTILES;
  for (size_t i = 0; i < sizeof dq / sizeof *dq; i++)
    percentile_row(b, "delta_p.percentiles", "\xCE\x94p", dq[i], k->delta_p.percentiles[i], "%");
  llama_row(b, "Minimum \xCE\x94p", "delta_p.min", k->delta_p.min, NULL, "%");
  llama_row(b, "Same top p", "same_top.value", k->same_top.value, &k->same_top.se, "%");
  llama_row(b, "tokens", "n", fdl_rpt_int(k->n), NULL, "");
  fdl_buf_puts(b, "</table></section>\n");
}

static void side(fdl_buf *b, const fdl_compare_side *s, const char *which) {
  char rfl[192];
  snprintf(rfl, sizeof rfl, "%s / %s / %s", s->role ? s->role : "-", s->form ? s->form : "-",
           s->lane ? s->lane : "-");
  const struct {
    const char *name, *v;
    bool mono;
  } f[] = {
      {"label", s->label, false},
      {"dataset id", s->dataset_id, true},
      {"dataset_sha256", s->dataset_sha256, true},
      {"capture content digest", s->capture_content_digest, true},
      {"role / form / lane", rfl, false},
      {"dataset repository", s->repository, true},
      {"dataset revision", s->revision, true},
      {"weights repository", s->weights_repository, true},
      {"weights revision", s->weights_revision, true},
      {"checkpoint identity", s->weights_checkpoint_identity_sha256, true},
      {"head tensor_content_sha256", s->head_tensor_content_sha256, true},
      {"stack fingerprint", s->stack_fingerprint_sha256, true},
  };
  fdl_buf_printf(b, "<h3>%s</h3><table>", which);
  for (size_t k = 0; k < sizeof f / sizeof *f; k++) row_text(b, f[k].name, f[k].v, f[k].mono);
  fdl_buf_puts(b, "</table>");
}

void fdl_rpt_identity(fdl_buf *b, const fdl_rpt_receipt *r) {
  const fdl_compare_receipt *d = &r->d;
  fdl_buf_puts(b, "<section id=\"identity\"><h2>Identity</h2><div class=\"grid\"><div>");
  side(b, &d->side[0], "reference");
  fdl_buf_puts(b, "</div><div>");
  side(b, &d->side[1], "candidate");
  fdl_buf_puts(b, "</div></div><h3>Panel, receipt and tools</h3><table>");
  char len[32];
  snprintf(len, sizeof len, "%lld", (long long)d->panel.context_length);
  row_text(b, "panel id", d->panel.panel_id, true);
  row_text(b, "suite token hash", d->panel.suite_token_hash_sha256, true);
  row_text(b, "tokenizer", d->panel.tokenizer_id, true);
  row_text(b, "context length", d->panel.context_length == FDL_COMPARE_NO_INT ? NULL : len, false);
  row_text(b, "receipt created (UTC)", d->created_utc, false);
  row_text(b, "receipt_sha256 (verified)", d->receipt_sha256, true);
  row_text(b, "tokenwise-kld.npy sha256 (verified)", d->tokenwise.sha256, true);
  static const char *const LLAMA_NAMES[3] = FDL_COMPARE_LLAMACPP_ARRAYS;
  for (int k = 0; r->llama && k < 3; k++) {
    char name[80];
    snprintf(name, sizeof name, "%s sha256 (verified)", LLAMA_NAMES[k]);
    row_text(b, name, d->llamacpp.arrays[k], true);
  }
  row_text(b, "tool", d->comparator.tool_name, false);
  row_text(b, "tool version", d->comparator.tool_version, false);
  row_text(b, "tool entrypoint", d->comparator.tool_entrypoint, false);
  row_text(b, "estimator backend", d->comparator.estimator_backend, true);
  row_text(b, "replay backend", d->comparator.replay_backend, true);
  row_text(b, "replay library", d->comparator.replay_library, true);
  row_text(b, "device", d->comparator.device, false);
  row_text(b, "report written by", "fidelis report", false);
  row_text(b, "report version", fdl_version(), false);
  fdl_buf_puts(b, "</table></section>\n");
}

void fdl_rpt_compare_table(fdl_buf *b, const fdl_rpt_receipt *const *rs, size_t n) {
  fdl_buf_puts(b, "<table id=\"compare-table\"><tr><th>rank</th><th>candidate</th>"
                  "<th>mean KL (nats)</th><th>CI95</th><th>p99 KL</th><th>max KL</th>"
                  "<th>top-1</th><th>class</th><th>stack relation</th><th>receipt_sha256</th>"
                  "</tr>\n");
  for (size_t i = 0; i < n; i++) {
    const fdl_compare_receipt *d = &rs[i]->d;
    fdl_rpt_row r;
    fdl_rpt_row_format(d, &r);
    fdl_buf_printf(b, "<tr><td class=\"num\">%zu</td><td>", i + 1);
    fdl_rpt_esc(b, fdl_rpt_name(rs[i]));
    fdl_buf_printf(b,
                   "</td><td class=\"num\">%s</td><td class=\"num\">[%s, %s]</td>"
                   "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
                   "<td class=\"num\">%s</td><td>",
                   r.mean, r.ci_low, r.ci_high, r.p99, r.max, r.top1);
    fdl_rpt_esc(b, d->comparability_class);
    fdl_buf_puts(b, "</td><td>");
    fdl_rpt_esc(b, d->stack_relation);
    fdl_buf_puts(b, "</td><td class=\"mono\">");
    fdl_rpt_esc(b, d->receipt_sha256);
    fdl_buf_puts(b, "</td></tr>\n");
  }
  fdl_buf_puts(b, "</table>\n");
}
