/* page.c - the page around the charts: one HTML file with its CSS inline and a Content Security
 * Policy that forbids every fetch, so the page cannot reach the network even if a string in a
 * receipt tried to; escaping of untrusted text; number text; the palette. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/quote.h"
#include "report/rpt.h"

/* Okabe & Ito's palette, told apart under the common colour-vision deficiencies; the order puts
 * the colours with the most contrast on white first. */
static const char *const PALETTE[FDL_RPT_NCOLOURS] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                      "#E69F00", "#56B4E9", "#000000", "#F0E442"};

const char *fdl_rpt_colour(size_t k) {
  return PALETTE[k % FDL_RPT_NCOLOURS];
}

void fdl_rpt_esc(fdl_buf *b, const char *s) {
  static const char *const ENTITY[] = {
      ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;"};
  if (!s) return;
  const unsigned char *p = (const unsigned char *)s;
  size_t left = strlen(s);
  while (left) {
    uint32_t cp;
    size_t n = fdl_utf8_decode(p, left, &cp);
    if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
      fdl_buf_puts(b, "\xEF\xBF\xBD"); /* U+FFFD */
      n = n ? n : 1;
    } else if (cp < sizeof ENTITY / sizeof *ENTITY && ENTITY[cp]) {
      fdl_buf_puts(b, ENTITY[cp]);
    } else if (cp >= 0x80) {
      /* bidi overrides, invisible characters: shown as their escape (docs/MESSAGES.md), so a
       * U+202E in a label cannot reorder what the page shows */
      char one[16];
      fdl_buf_puts(b, fdl_quote_text((const char *)p, n, one, sizeof one));
    } else {
      fdl_buf_append(b, p, n);
    }
    p += n;
    left -= n;
  }
}

const char *fdl_rpt_fmt(double x, int digits, char buf[32]) {
  if (!isfinite(x))
    snprintf(buf, 32, "\xE2\x80\x94"); /* an em dash: not in the receipt */
  else if (x == floor(x) && fabs(x) < 1e15 && fabs(x) >= 1)
    snprintf(buf, 32, "%.0f", x); /* counts stay whole: 1023500 tokens, not 1.0235e+06 */
  else
    snprintf(buf, 32, "%.*g", digits > 0 ? digits : 6, x);
  return buf;
}

void fdl_rpt_row_format(const fdl_compare_receipt *d, fdl_rpt_row *r) {
  fdl_rpt_fmt(d->metric_value, 6, r->mean);
  fdl_rpt_fmt(d->uncertainty.ci95_low, 4, r->ci_low);
  fdl_rpt_fmt(d->uncertainty.ci95_high, 4, r->ci_high);
  fdl_rpt_fmt(d->kl.p99, 4, r->p99);
  fdl_rpt_fmt(d->kl.max, 4, r->max);
  fdl_rpt_fmt(d->top1_agreement, 4, r->top1);
}

static const char CSS[] =
    "*{box-sizing:border-box}"
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;"
    "color:#1a1a1a;background:#fff;margin:0 auto;padding:16px 24px;max-width:1280px;"
    "font-size:15px;line-height:1.45}"
    "h1{font-size:24px;margin:4px 0 8px}h2{font-size:19px;margin:24px 0 8px;"
    "border-bottom:1px solid #ccc;padding-bottom:4px}"
    "h3{font-size:15px;margin:8px 0 4px}"
    "table{border-collapse:collapse;margin:6px 0 12px;font-size:14px}"
    "th,td{border:1px solid #bbb;padding:3px 8px;text-align:left;vertical-align:top}"
    "th{background:#eef2f6}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',monospace;font-size:13px}"
    ".mono{word-break:break-all}"
    ".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:16px}"
    "figure{margin:0;border:1px solid #ddd;padding:8px}"
    "figcaption{font-size:13px;color:#333;margin-top:4px}"
    "svg{width:100%;height:auto;display:block}"
    "svg text{font-family:inherit;fill:#1a1a1a}"
    ".badge{display:inline-block;padding:1px 8px;border-radius:3px;font-weight:600;"
    "color:#fff}"
    ".strict{background:#006d4f}.advisory{background:#9a4a00}"
    ".sev-info{background:#0b5d91}.sev-caveat{background:#8a5a00}"
    ".sev-blocking{background:#b00020}"
    ".fail{border:3px solid #b00020;color:#b00020;background:#fff0f0;padding:12px 16px;"
    "font-size:17px}"
    ".fail strong{font-size:22px}"
    ".note{color:#444;font-size:13px}"
    ".big{font-size:28px;font-weight:700}"
    "@media print{body{max-width:none;padding:0;font-size:11pt}"
    ".grid{grid-template-columns:1fr 1fr}figure,table{break-inside:avoid}"
    "h2{break-after:avoid}.badge{-webkit-print-color-adjust:exact;print-color-adjust:exact}"
    ".fail{-webkit-print-color-adjust:exact;print-color-adjust:exact}}";

void fdl_rpt_page_begin(fdl_buf *b, const char *title) {
  fdl_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                  "style-src 'unsafe-inline'\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<meta name=\"generator\" content=\"fidelis report\">\n<title>");
  fdl_rpt_esc(b, title);
  fdl_buf_puts(b, "</title>\n<style>");
  fdl_buf_puts(b, CSS);
  fdl_buf_puts(b, "</style>\n</head>\n<body>\n");
}

void fdl_rpt_page_end(fdl_buf *b) {
  fdl_buf_puts(b, "<p class=\"note\">Written by <code>fidelis report</code> ");
  fdl_rpt_esc(b, fdl_version());
  fdl_buf_puts(b, " from the sealed files only; docs/REPORT.md says where each number comes "
                  "from.</p>\n</body>\n</html>\n");
}

void fdl_rpt_untrusted(fdl_buf *b, const fdl_rpt_receipt *r) {
  fdl_buf_puts(b, "<div class=\"fail\" id=\"verification-failed\" role=\"alert\"><strong>"
                  "VERIFICATION FAILED: nothing from this receipt is shown</strong><br>");
  fdl_buf_puts(b, "Directory: <code>");
  fdl_rpt_esc(b, r->dir);
  fdl_buf_puts(b, "</code><br>");
  fdl_rpt_esc(b, r->why);
  fdl_buf_puts(b, "<br>A report draws only from a receipt whose seal recomputes and whose arrays "
                  "match their recorded SHA-256. Re-run <code>fidelis compare</code> or restore "
                  "the original files.</div>\n");
}
