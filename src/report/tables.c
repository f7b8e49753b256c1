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
  const char *s = fdl_json_path_str(r->doc, "candidate.label");
  if (!s || !*s || !strcmp(s, "candidate")) s = fdl_json_path_str(r->doc, "candidate.dataset_id");
  return s && *s ? s : r->dir;
}

static void row_text(fdl_buf *b, const char *name, const char *value, bool mono) {
  fdl_buf_puts(b, "<tr><th>");
  fdl_rpt_esc(b, name);
  fdl_buf_puts(b, mono ? "</th><td class=\"mono\">" : "</th><td>");
  fdl_rpt_esc(b, value ? value : "\xE2\x80\x94");
  fdl_buf_puts(b, "</td></tr>\n");
}

/* A scalar of any JSON kind as text (objects and arrays as "…"). */
static const char *scalar(const json_t *v, char buf[32]) {
  if (json_is_string(v)) return json_string_value(v);
  if (json_is_true(v)) return "true";
  if (json_is_false(v)) return "false";
  if (json_is_integer(v)) {
    snprintf(buf, 32, "%lld", (long long)json_integer_value(v));
    return buf;
  }
  if (json_is_real(v)) return fdl_rpt_fmt(json_real_value(v), 8, buf);
  if (json_is_null(v) || !v) return NULL;
  return "\xE2\x80\xA6";
}

static void row_path(fdl_buf *b, const char *name, const json_t *doc, const char *path, bool mono) {
  char buf[32];
  row_text(b, name, scalar(fdl_json_path(doc, path), buf), mono);
}

void fdl_rpt_verdict(fdl_buf *b, const fdl_rpt_receipt *r) {
  const json_t *d = r->doc;
  const char *cls = fdl_json_path_str(d, "comparability.class");
  bool strict = cls && !strcmp(cls, "strict");
  fdl_buf_puts(b, "<section id=\"verdict\"><h2>Verdict</h2><p><span class=\"badge ");
  fdl_buf_puts(b, strict ? "strict" : "advisory");
  fdl_buf_puts(b, "\">");
  fdl_rpt_esc(b, cls ? cls : "unknown class");
  fdl_buf_puts(b, "</span> ");
  fdl_rpt_esc(b, fdl_json_str(d, "comparison_kind"));
  fdl_buf_puts(b, strict ? " &mdash; nothing in the gates weakened this comparison."
                         : " &mdash; read the disclosures before citing the numbers.");
  fdl_buf_puts(b, "</p><table>");
  row_path(b, "comparability key", d, "comparability.key", true);
  static const char *const ki[] = {"panel_id",   "reference_id",       "metric_name",
                                   "direction",  "accumulation_dtype", "stack_relation",
                                   "head_policy"};
  for (size_t k = 0; k < sizeof ki / sizeof *ki; k++) {
    char path[96], name[64];
    snprintf(path, sizeof path, "comparability.key_inputs.%s", ki[k]);
    snprintf(name, sizeof name, "key input: %s", ki[k]);
    row_path(b, name, d, path, true);
  }
  row_path(b, "usable as floor", d, "comparability.usable_as_floor", false);
  row_path(b, "same lane", d, "comparability.same_lane", false);
  row_path(b, "bias", d, "comparability.bias.kind", false);
  fdl_buf_puts(b, "</table></section>\n");
}

void fdl_rpt_disclosures(fdl_buf *b, const fdl_rpt_receipt *r) {
  const json_t *d = r->doc;
  fdl_buf_puts(
      b, "<section id=\"disclosures\"><h3>Disclosures</h3><table><tr><th>severity</th><th>code</th>"
         "<th>affects comparability</th><th>detail</th></tr>\n");
  const json_t *ds = json_object_get(d, "disclosures");
  for (size_t i = 0; json_is_array(ds) && i < json_array_size(ds); i++) {
    const json_t *x = json_array_get(ds, i);
    const char *sev = fdl_json_str(x, "severity");
    const char *cl = !sev                       ? "sev-caveat"
                     : !strcmp(sev, "info")     ? "sev-info"
                     : !strcmp(sev, "blocking") ? "sev-blocking"
                                                : "sev-caveat";
    char buf[32];
    fdl_buf_printf(b, "<tr><td><span class=\"badge %s\">", cl);
    fdl_rpt_esc(b, sev ? sev : "?");
    fdl_buf_puts(b, "</span></td><td><code>");
    fdl_rpt_esc(b, fdl_json_str(x, "code"));
    fdl_buf_puts(b, "</code></td><td>");
    const char *aff = scalar(json_object_get(x, "affects_comparability"), buf);
    fdl_rpt_esc(b, aff ? aff : "\xE2\x80\x94");
    fdl_buf_puts(b, "</td><td>");
    fdl_rpt_esc(b, fdl_json_str(x, "detail"));
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
  const json_t *d = r->doc;
  char x[32];
  double lo = fdl_json_path_num(d, "uncertainty.ci95_low", NAN),
         hi = fdl_json_path_num(d, "uncertainty.ci95_high", NAN);
  fdl_buf_puts(b, "<section id=\"headline\"><h2>Headline</h2><p><span class=\"big\">");
  with_ci(b, fdl_json_path_num(d, "metric.value", NAN), lo, hi);
  fdl_buf_puts(b, "</span> nats mean KL(reference || candidate)</p><table>"
                  "<tr><th>statistic</th><th>value</th><th>source</th></tr>\n");
  static const struct {
    const char *name, *path, *unit;
  } rows[] = {
      {"mean KL", "metric.value", "nats"},
      {"median KL", "kl.median", "nats"},
      {"p95 KL", "kl.p95", "nats"},
      {"p99 KL", "kl.p99", "nats"},
      {"p99.9 KL", "kl.p99_9", "nats"},
      {"max KL", "kl.max", "nats"},
      {"top-1 agreement", "top1_agreement", "fraction"},
      {"scored positions", "panel.scored_positions", "tokens"},
      {"contexts", "panel.contexts", ""},
  };
  for (size_t k = 0; k < sizeof rows / sizeof *rows; k++) {
    fdl_buf_puts(b, "<tr><th>");
    fdl_rpt_esc(b, rows[k].name);
    fdl_buf_puts(b, "</th><td class=\"num\">");
    if (k == 0)
      with_ci(b, fdl_json_path_num(d, rows[k].path, NAN), lo, hi);
    else
      fdl_rpt_esc(b, fdl_rpt_fmt(fdl_json_path_num(d, rows[k].path, NAN), 6, x));
    fdl_buf_printf(b, " %s</td><td><code>%s</code></td></tr>\n", rows[k].unit, rows[k].path);
  }
  fdl_buf_puts(b, "</table><p class=\"note\">Interval: ");
  const char *m = fdl_json_path_str(d, "uncertainty.method");
  if (isfinite(lo) && isfinite(hi)) {
    fdl_rpt_esc(b, m);
    fdl_buf_printf(b, " over %s clusters (",
                   fdl_rpt_fmt(fdl_json_path_num(d, "uncertainty.clusters", NAN), 6, x));
    fdl_rpt_esc(b, fdl_json_path_str(d, "uncertainty.cluster_unit"));
    fdl_buf_printf(b, "), %s resamples, seed ",
                   fdl_rpt_fmt(fdl_json_path_num(d, "uncertainty.samples", NAN), 8, x));
    fdl_buf_printf(b, "%s.", fdl_rpt_fmt(fdl_json_path_num(d, "uncertainty.seed", NAN), 20, x));
  } else {
    fdl_buf_puts(b, "none in this receipt (<code>uncertainty.method</code> ");
    fdl_rpt_esc(b, m ? m : "absent");
    fdl_buf_puts(b, ").");
  }
  fdl_buf_puts(b, "</p></section>\n");
}

/* One llama.cpp-style row: name, value (± stderr when given), the block's field. */
/* unit "%": the stored fraction shown as a percentage, as llama-perplexity and `fidelis
 * compare` print Δp and same-top (one unit in every place a person reads it). */
static void llama_row(fdl_buf *b, const json_t *blk, const char *name, const char *vpath,
                      const char *epath, const char *unit) {
  char v[32], e[32];
  double k = strcmp(unit, "%") ? 1.0 : 100.0;
  fdl_buf_puts(b, "<tr><th>");
  fdl_rpt_esc(b, name);
  fdl_buf_printf(b, "</th><td class=\"num\">%s",
                 fdl_rpt_fmt(k * fdl_json_path_num(blk, vpath, NAN), 6, v));
  if (epath)
    fdl_buf_printf(b, " \xC2\xB1 %s", fdl_rpt_fmt(k * fdl_json_path_num(blk, epath, NAN), 4, e));
  fdl_buf_printf(b, " %s</td><td><code>%s</code></td></tr>\n", unit, vpath);
}

/* One percentile row of a llama.cpp block: the keys ("99.9") hold dots, so they are looked up
 * by hand rather than by dotted path; unit "%" as in llama_row. */
static void percentile_row(fdl_buf *b, const json_t *blk, const char *table, const char *stat,
                           const char *q, const char *unit) {
  const json_t *pv = json_object_get(fdl_json_path(blk, table), q);
  double k = strcmp(unit, "%") ? 1.0 : 100.0;
  char v[32];
  fdl_buf_printf(b,
                 "<tr><th>%s%% %s</th><td class=\"num\">%s %s</td><td><code>%s.%s</code></td>"
                 "</tr>\n",
                 q, stat, fdl_rpt_fmt(json_is_number(pv) ? k * json_number_value(pv) : NAN, 6, v),
                 unit, table, q);
}

void fdl_rpt_llama_table(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_buf_puts(b, "<section id=\"llamacpp\"><h2>llama.cpp-compatible statistics</h2>");
  if (!r->llama) {
    fdl_buf_puts(b, "<p id=\"llamacpp-missing\">llama.cpp-compatible statistics: not in this "
                    "receipt (made by an older fidelis).</p></section>\n");
    return;
  }
  const json_t *k = r->llama;
  fdl_buf_puts(b, "<p class=\"note\">The statistics <code>llama-perplexity --kl-divergence"
                  "</code> prints, computed exactly in float64 from the same pass (no uint16 "
                  "log-probabilities, no &minus;16 cut-off). &plusmn; is llama.cpp's iid "
                  "standard error; the headline interval above stays the context-cluster "
                  "bootstrap. Fields of <code>fidelis_extensions.llamacpp_compatible</code>; "
                  "definitions: <code>");
  fdl_rpt_esc(b, fdl_json_str(k, "definitions"));
  fdl_buf_puts(b, "</code>.</p><table><tr><th>statistic</th><th>value</th><th>field</th></tr>\n");
  llama_row(b, k, "Mean PPL(Q)", "ppl_candidate.value", "ppl_candidate.stderr", "");
  llama_row(b, k, "Mean PPL(base)", "ppl_reference.value", "ppl_reference.stderr", "");
  llama_row(b, k, "Cor(ln PPL(Q), ln PPL(base))", "logprob_correlation", NULL, "");
  llama_row(b, k, "Mean ln(PPL(Q)/PPL(base))", "ln_ppl_ratio.value", "ln_ppl_ratio.stderr", "");
  llama_row(b, k, "Mean PPL(Q)/PPL(base)", "ppl_ratio.value", "ppl_ratio.stderr", "");
  llama_row(b, k, "Mean KLD", "kld.mean", "kld.stderr", "nats");
  llama_row(b, k, "Maximum KLD", "kld.max", NULL, "nats");
  static const char *const kq[] = {"99.9", "99", "95", "90", "50", "10", "5", "1", "0.1"};
  for (size_t i = 0; i < sizeof kq / sizeof *kq; i++)
    percentile_row(b, k, "kld.percentiles", "KLD", kq[i], "nats");
  llama_row(b, k, "Minimum KLD", "kld.min", NULL, "nats");
  llama_row(b, k, "Mean \xCE\x94p", "delta_p.mean", "delta_p.mean_stderr", "%");
  llama_row(b, k, "RMS \xCE\x94p", "delta_p.rms", "delta_p.rms_stderr", "%");
  llama_row(b, k, "Maximum \xCE\x94p", "delta_p.max", NULL, "%");
  static const char *const dq[] = {"99.9", "99", "95", "90", "75", "50",
                                   "25",   "10", "5",  "1",  "0.1"};
  for (size_t i = 0; i < sizeof dq / sizeof *dq; i++)
    percentile_row(b, k, "delta_p.percentiles", "\xCE\x94p", dq[i], "%");
  llama_row(b, k, "Minimum \xCE\x94p", "delta_p.min", NULL, "%");
  llama_row(b, k, "Same top p", "same_top.value", "same_top.stderr", "%");
  llama_row(b, k, "tokens", "n", NULL, "");
  fdl_buf_puts(b, "</table></section>\n");
}

static void side(fdl_buf *b, const json_t *d, const char *which) {
  static const struct {
    const char *name, *key;
    bool mono;
  } f[] = {
      {"label", "label", false},
      {"dataset id", "dataset_id", true},
      {"dataset_sha256", "dataset_sha256", true},
      {"capture content digest", "capture_content_digest", true},
      {"role / form / lane", NULL, false},
      {"dataset repository", "repository", true},
      {"dataset revision", "revision", true},
      {"weights repository", "weights.repository", true},
      {"weights revision", "weights.revision", true},
      {"checkpoint identity", "weights.checkpoint_identity_sha256", true},
      {"head tensor_content_sha256", "head.tensor_content_sha256", true},
      {"stack fingerprint", "stack_fingerprint_sha256", true},
  };
  fdl_buf_printf(b, "<h3>%s</h3><table>", which);
  for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
    char path[96];
    if (!f[k].key) {
      char rfl[192];
      const json_t *s = json_object_get(d, which);
      snprintf(rfl, sizeof rfl, "%s / %s / %s",
               fdl_json_str(s, "role") ? fdl_json_str(s, "role") : "-",
               fdl_json_str(s, "form") ? fdl_json_str(s, "form") : "-",
               fdl_json_str(s, "lane") ? fdl_json_str(s, "lane") : "-");
      row_text(b, f[k].name, rfl, false);
      continue;
    }
    snprintf(path, sizeof path, "%s.%s", which, f[k].key);
    row_path(b, f[k].name, d, path, f[k].mono);
  }
  fdl_buf_puts(b, "</table>");
}

void fdl_rpt_identity(fdl_buf *b, const fdl_rpt_receipt *r) {
  const json_t *d = r->doc;
  fdl_buf_puts(b, "<section id=\"identity\"><h2>Identity</h2><div class=\"grid\"><div>");
  side(b, d, "reference");
  fdl_buf_puts(b, "</div><div>");
  side(b, d, "candidate");
  fdl_buf_puts(b, "</div></div><h3>Panel, receipt and tools</h3><table>");
  row_path(b, "panel id", d, "panel.panel_id", true);
  row_path(b, "suite token hash", d, "panel.suite_token_hash_sha256", true);
  row_path(b, "tokenizer", d, "panel.tokenizer.id", true);
  row_path(b, "context length", d, "panel.context_length", false);
  row_path(b, "receipt created (UTC)", d, "created_utc", false);
  row_path(b, "receipt_sha256 (verified)", d, "receipt_sha256", true);
  row_path(b, "tokenwise-kld.npy sha256 (verified)", d, "tokenwise.sha256", true);
  if (r->llama) {
    const json_t *a = json_object_get(r->llama, "arrays");
    const char *names[3] = {"tokenwise-logprob-ref.npy", "tokenwise-logprob-cand.npy",
                            "tokenwise-top1.npy"};
    for (int k = 0; k < 3; k++) {
      char name[80];
      snprintf(name, sizeof name, "%s sha256 (verified)", names[k]);
      row_text(b, name, json_string_value(json_object_get(a, names[k])), true);
    }
  }
  row_path(b, "tool", d, "comparator.tool.name", false);
  row_path(b, "tool version", d, "comparator.tool.version", false);
  row_path(b, "tool entrypoint", d, "comparator.tool.entrypoint", false);
  row_path(b, "estimator backend", d, "comparator.estimator_backend", true);
  row_path(b, "replay backend", d, "comparator.replay_backend", true);
  row_path(b, "replay library", d, "comparator.replay_env.library", true);
  row_path(b, "device", d, "comparator.device", false);
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
    const json_t *d = rs[i]->doc;
    fdl_rpt_row r;
    fdl_rpt_row_format(d, &r);
    fdl_buf_printf(b, "<tr><td class=\"num\">%zu</td><td>", i + 1);
    fdl_rpt_esc(b, fdl_rpt_name(rs[i]));
    fdl_buf_printf(b,
                   "</td><td class=\"num\">%s</td><td class=\"num\">[%s, %s]</td>"
                   "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
                   "<td class=\"num\">%s</td><td>",
                   r.mean, r.ci_low, r.ci_high, r.p99, r.max, r.top1);
    fdl_rpt_esc(b, fdl_json_path_str(d, "comparability.class"));
    fdl_buf_puts(b, "</td><td>");
    fdl_rpt_esc(b, fdl_json_path_str(d, "estimator.stack_relation"));
    fdl_buf_puts(b, "</td><td class=\"mono\">");
    fdl_rpt_esc(b, fdl_json_str(d, "receipt_sha256"));
    fdl_buf_puts(b, "</td></tr>\n");
  }
  fdl_buf_puts(b, "</table>\n");
}
