/* svg.c - the plotting primitives every chart is drawn with: a frame that maps data to pixels
 * (linear or base-10 log), axes with ticks and grid, histogram, polyline, bars with error bars,
 * scatter, markers, legend. Coordinates are written with one decimal: enough at any zoom the
 * page is read at, and it keeps a page of thousands of points small. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/rpt.h"

void fdl_rpt_svg_begin(fdl_buf *b, const char *id, const char *title, int w, int h) {
  fdl_buf_printf(b,
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" viewBox=\"0 0 %d %d\" "
                 "role=\"img\" aria-labelledby=\"%s-title\" font-size=\"13\">"
                 "<title id=\"%s-title\">",
                 id, w, h, id, id);
  fdl_rpt_esc(b, title);
  fdl_buf_printf(b, "</title><rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fff\"/>", w,
                 h);
}

void fdl_rpt_svg_end(fdl_buf *b) {
  fdl_buf_puts(b, "</svg>\n");
}

/* Where v lies from v0 to v1 on a linear or log axis, as a fraction clamped to [0, 1]. */
static double along(double v, double v0, double v1, bool lg) {
  if (lg) v = log10(v), v0 = log10(v0), v1 = log10(v1);
  double t = v1 > v0 ? (v - v0) / (v1 - v0) : 0.5;
  if (!(t >= 0)) t = 0; /* NaN too (inf over inf): an SVG attribute is always a number */
  return t > 1 ? 1 : t;
}

double fdl_rpt_sx(const fdl_rpt_frame *f, double x) {
  return f->L + along(x, f->x0, f->x1, f->xlog) * f->W;
}

double fdl_rpt_sy(const fdl_rpt_frame *f, double y) {
  return f->T + f->H - along(y, f->y0, f->y1, f->ylog) * f->H;
}

double fdl_rpt_headroom(double top) {
  return top > 0 ? fmin(top * 1.08, DBL_MAX) : 1;
}

/* A "nice" linear tick step (1, 2 or 5 times a power of ten) giving about 5 intervals. */
static double nice_step(double span) {
  if (!(span > 0)) return 1;
  double raw = span / 5, p = pow(10, floor(log10(raw))), m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void tick_label(char *buf, size_t cap, double v, bool lg) {
  if (lg) {
    int e = (int)lround(log10(v));
    if (e >= -2 && e <= 3)
      snprintf(buf, cap, "%g", pow(10, e));
    else
      snprintf(buf, cap, "1e%d", e);
  } else {
    double t = fabs(v) < 1e-12 ? 0.0 : v; /* no "-0" from a tick computed as -0.0 */
    if (t == floor(t) && fabs(t) < 1e9)
      snprintf(buf, cap, "%.0f", t); /* 80000 tokens, not 8e+04 */
    else
      snprintf(buf, cap, "%.4g", t);
  }
}

/* Tick values of one axis into v (at most cap); returns the count. */
static size_t ticks(double lo, double hi, bool lg, double *v, size_t cap) {
  size_t n = 0;
  if (lg) {
    int a = (int)ceil(log10(lo) - 1e-9), z = (int)floor(log10(hi) + 1e-9);
    int step = (z - a) / 8 + 1; /* at most about 8 labelled decades */
    for (int e = a; e <= z && n < cap; e += step) v[n++] = pow(10, e);
    return n;
  }
  double st = nice_step(hi - lo);
  /* Near DBL_MAX the next tick overflows to inf: the last tick is the last finite one. */
  for (double t = ceil(lo / st) * st; isfinite(t) && t <= hi + st * 1e-9 && n < cap; t += st)
    v[n++] = t;
  return n;
}

void fdl_rpt_axes(fdl_buf *b, const fdl_rpt_frame *f, const char *xlabel, const char *ylabel,
                  size_t xcats) {
  double v[64];
  char lab[32];
  size_t n = ticks(f->y0, f->y1, f->ylog, v, 64);
  fdl_buf_puts(b, "<g class=\"axes\">");
  for (size_t k = 0; k < n; k++) {
    double y = fdl_rpt_sy(f, v[k]);
    tick_label(lab, sizeof lab, v[k], f->ylog);
    fdl_buf_printf(b,
                   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                   f->L, y, f->L + f->W, y, f->L - 6, y + 4, lab);
  }
  if (!xcats) {
    n = ticks(f->x0, f->x1, f->xlog, v, 64);
    for (size_t k = 0; k < n; k++) {
      double x = fdl_rpt_sx(f, v[k]);
      tick_label(lab, sizeof lab, v[k], f->xlog);
      fdl_buf_printf(b,
                     "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                     "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>"
                     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                     x, f->T, x, f->T + f->H, x, f->T + f->H, x, f->T + f->H + 5, x,
                     f->T + f->H + 19, lab);
    }
  }
  fdl_buf_printf(b,
                 "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                 "stroke=\"#333\"/>",
                 f->L, f->T, f->W, f->H);
  fdl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"600\">",
                 f->L + f->W / 2, f->T + f->H + (xcats ? 44 : 38));
  fdl_rpt_esc(b, xlabel);
  fdl_buf_printf(b,
                 "</text><text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
                 "text-anchor=\"middle\" font-weight=\"600\">",
                 f->L - 56, f->T + f->H / 2);
  fdl_rpt_esc(b, ylabel);
  fdl_buf_puts(b, "</text></g>");
}

void fdl_rpt_hist(fdl_buf *b, const fdl_rpt_frame *f, const double *edges, const double *counts,
                  size_t nbins, const char *colour) {
  fdl_buf_printf(b, "<g class=\"hist\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"0.5\">", colour);
  for (size_t k = 0; k < nbins; k++) {
    if (counts[k] <= 0) continue;
    double x0 = fdl_rpt_sx(f, edges[k]), x1 = fdl_rpt_sx(f, edges[k + 1]);
    double y = fdl_rpt_sy(f, counts[k]), y0 = fdl_rpt_sy(f, f->y0);
    fdl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", x0, y,
                   x1 - x0, y0 - y);
  }
  fdl_buf_puts(b, "</g>");
}

void fdl_rpt_line(fdl_buf *b, const fdl_rpt_frame *f, const double *x, const double *y, size_t n,
                  const char *colour, bool step, const char *dash) {
  if (!n) return;
  fdl_buf_printf(b, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s%s%s points=\"",
                 colour, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
  for (size_t k = 0; k < n; k++) {
    if (step && k > 0)
      fdl_buf_printf(b, "%.1f,%.1f ", fdl_rpt_sx(f, x[k]), fdl_rpt_sy(f, y[k - 1]));
    fdl_buf_printf(b, "%.1f,%.1f ", fdl_rpt_sx(f, x[k]), fdl_rpt_sy(f, y[k]));
  }
  fdl_buf_puts(b, "\"/>");
}

void fdl_rpt_bars(fdl_buf *b, const fdl_rpt_frame *f, const double *v, const double *lo,
                  const double *hi, const char *const *colours, const char *const *labels,
                  size_t n) {
  double slot = n ? f->W / (double)n : 0, gap = slot > 6 ? slot * 0.15 : 0;
  fdl_buf_puts(b, "<g class=\"bars\">");
  for (size_t k = 0; k < n; k++) {
    double x = f->L + slot * (double)k + gap / 2, w = slot - gap;
    double y = fdl_rpt_sy(f, v[k]), y0 = fdl_rpt_sy(f, f->ylog ? f->y0 : fmax(f->y0, 0));
    fdl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>", x,
                   fmin(y, y0), w > 0.5 ? w : 0.5, fabs(y0 - y), colours[k]);
    if (lo && hi && isfinite(lo[k]) && isfinite(hi[k])) {
      double cx = x + w / 2, a = fdl_rpt_sy(f, lo[k]), z = fdl_rpt_sy(f, hi[k]);
      double cap = w / 4 > 6 ? 6 : w / 4;
      fdl_buf_printf(b,
                     "<path d=\"M%.1f %.1fV%.1fM%.1f %.1fh%.1fM%.1f %.1fh%.1f\" stroke=\"#222\" "
                     "stroke-width=\"1.2\" fill=\"none\"/>",
                     cx, a, z, cx - cap, a, 2 * cap, cx - cap, z, 2 * cap);
    }
    if (labels && labels[k]) {
      fdl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x + w / 2,
                     f->T + f->H + 18);
      fdl_rpt_esc(b, labels[k]);
      fdl_buf_puts(b, "</text>");
    }
  }
  fdl_buf_puts(b, "</g>");
}

void fdl_rpt_scatter(fdl_buf *b, const fdl_rpt_frame *f, const double *x, const double *y, size_t n,
                     const char *colour, double radius) {
  fdl_buf_printf(b, "<g class=\"scatter\" fill=\"%s\" fill-opacity=\"0.45\">", colour);
  for (size_t k = 0; k < n; k++)
    fdl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", fdl_rpt_sx(f, x[k]),
                   fdl_rpt_sy(f, y[k]), radius);
  fdl_buf_puts(b, "</g>");
}

void fdl_rpt_vline(fdl_buf *b, const fdl_rpt_frame *f, double x, const char *colour,
                   const char *label, int slot) {
  double px = fdl_rpt_sx(f, x);
  fdl_buf_printf(b,
                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                 "stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>"
                 "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\" font-size=\"12\" fill=\"%s\">",
                 px, f->T, px, f->T + f->H, colour, px + 3, f->T + 14 + 14 * slot, colour);
  fdl_rpt_esc(b, label);
  fdl_buf_puts(b, "</text>");
}

void fdl_rpt_legend(fdl_buf *b, double x, double y, const char *const *names,
                    const char *const *colours, size_t n) {
  fdl_buf_puts(b, "<g class=\"legend\">");
  /* A backing so the names stay readable over bars and lines. */
  size_t longest = 0;
  for (size_t k = 0; k < n; k++)
    if (strlen(names[k]) > longest) longest = strlen(names[k]);
  if (n)
    fdl_buf_printf(b,
                   "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fff\" "
                   "fill-opacity=\"0.85\" stroke=\"#bbb\"/>",
                   x - 4, y - 4, 25 + 7.2 * (double)(longest > 40 ? 40 : longest),
                   17 * (double)n + 4);
  for (size_t k = 0; k < n; k++) {
    fdl_buf_printf(b,
                   "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\">",
                   x, y + 17 * (double)k, colours[k], x + 17, y + 17 * (double)k + 11);
    fdl_rpt_esc(b, names[k]);
    fdl_buf_puts(b, "</text>");
  }
  fdl_buf_puts(b, "</g>");
}

void fdl_rpt_svg_note(fdl_buf *b, const fdl_rpt_frame *f, const char *text) {
  fdl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"#444\">",
                 f->L + f->W / 2, f->T + f->H / 2);
  fdl_rpt_esc(b, text);
  fdl_buf_puts(b, "</text>");
}
