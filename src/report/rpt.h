/* rpt.h - internal to src/report: a verified receipt in memory, the page pieces and the SVG
 * primitives they draw with.
 *
 * Files: load.c (read and verify a receipt directory), derive.c (numbers the page derives from
 * the sealed arrays: per-context CIs, position means, per-domain top-1), page.c (skeleton, CSS,
 * escaping, number text), svg.c (axes, ticks, histogram, lines, bars, scatter, legend),
 * charts.c (one function per chart), tables.c (verdict, headline, llama.cpp table, identity,
 * the side-by-side table), markdown.c, compat.c (which receipts may share a page), report.c
 * (the public calls). */
#ifndef FDL_REPORT_RPT_H
#define FDL_REPORT_RPT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/buf.h"
#include "compare/compare_json.h"
#include "fidelis/compare.h"
#include "fidelis/report.h"
#include "fidelis/status.h"

/* ---- a verified receipt (load.c) ------------------------------------------------------ */

/* The most domains that get their own colour; the rest share the last one. */
#define FDL_RPT_MAX_DOMAINS 8

typedef struct {
  long long index;
  int domain;         /* index into fdl_rpt_receipt.domains; -1: none */
  size_t rows, first; /* scored rows and the first one's index in the tokenwise array */
  double mean;
  double lo, hi;  /* CI95 of the context mean (derive.c); NaN when fewer than 2 rows */
  bool ci_sealed; /* lo/hi came from the receipt itself, not derived by the report */
} fdl_rpt_ctx;

typedef struct {
  char *dir;
  json_t *doc;           /* NULL when the file could not be read as JSON */
  fdl_compare_receipt d; /* its fields (compare's decoder), borrowing from doc */
  bool trusted;          /* seal, schema, tokenwise digest, arrays: all verified */
  char why[1024];        /* when !trusted: what failed */
  double *kl;            /* tokenwise-kld.npy */
  size_t n;
  bool llama; /* fidelis_extensions.llamacpp_compatible is there and verified */
  double *lp_ref, *lp_cand;
  uint8_t *top1;
  fdl_rpt_ctx *ctx;
  size_t nctx;
  const char *domains[FDL_RPT_MAX_DOMAINS]; /* sorted; borrowed from the receipt */
  size_t ndomains;
  bool domains_cut; /* more domains than colours: the last colour is shared */
} fdl_rpt_receipt;

/* Reads dir and verifies it. FDL_OK with r->trusted false (and r->why) when the content fails
 * any check; another status only when the machine failed (I/O, memory). */
fdl_status fdl_rpt_load(const char *dir, fdl_rpt_receipt *r, fdl_err *err);
void fdl_rpt_free(fdl_rpt_receipt *r);

/* ---- derived from the sealed arrays (derive.c) ----------------------------------------- */

/* Per-context CI95s where the receipt has none: a percentile bootstrap over the context's own
 * tokens (FDL_RPT_CTX_B resamples, seed 0). */
#define FDL_RPT_CTX_B 1000
fdl_status fdl_rpt_context_cis(fdl_rpt_receipt *r, fdl_err *err);
/* Mean KL by position: rows bucketed so at most FDL_RPT_POS_POINTS points remain. pos[k] is
 * the bucket's first position (the 1-based index of the predicted token), width the bucket
 * size; *npts the count. Caller frees pos and mean. */
#define FDL_RPT_POS_POINTS 256
fdl_status fdl_rpt_position_means(const fdl_rpt_receipt *r, double **pos, double **mean,
                                  size_t *npts, size_t *width, fdl_err *err);

/* ---- page (page.c) ----------------------------------------------------------------------- */

/* Text as HTML character data or attribute value: & < > " ' escaped; controls and invalid
 * UTF-8 become U+FFFD. */
void fdl_rpt_esc(fdl_buf *b, const char *s);
/* "—" for NaN, else %.6g (or the short form digits asks for). */
const char *fdl_rpt_fmt(double x, int digits, char buf[32]);
/* The numbers of one leaderboard row (compare tables, Markdown and HTML), formatted: KL mean,
 * CI95 low and high, p99, max, top-1 agreement. */
typedef struct {
  char mean[32], ci_low[32], ci_high[32], p99[32], max[32], top1[32];
} fdl_rpt_row;
void fdl_rpt_row_format(const fdl_compare_receipt *d, fdl_rpt_row *r);
/* An integer field as fdl_rpt_fmt shows a number: absent (FDL_COMPARE_NO_INT) is NaN. */
static inline double fdl_rpt_int(int64_t v) {
  return v == FDL_COMPARE_NO_INT ? NAN : (double)v;
}
void fdl_rpt_page_begin(fdl_buf *b, const char *title);
void fdl_rpt_page_end(fdl_buf *b);
/* The red notice of a receipt that failed verification. */
void fdl_rpt_untrusted(fdl_buf *b, const fdl_rpt_receipt *r);

/* The colour-blind-safe palette (Okabe & Ito), darkest first so thin lines stay visible. */
#define FDL_RPT_NCOLOURS 8
const char *fdl_rpt_colour(size_t k);

/* ---- SVG primitives (svg.c) -------------------------------------------------------------- */

typedef struct {
  double x0, x1, y0, y1; /* data range */
  bool xlog, ylog;       /* base-10 axes (the range then is positive) */
  double L, T, W, H;     /* plot area in px */
} fdl_rpt_frame;

/* Starts an <svg> of w x h px with an id, a <title> and role="img". */
void fdl_rpt_svg_begin(fdl_buf *b, const char *id, const char *title, int w, int h);
void fdl_rpt_svg_end(fdl_buf *b);
double fdl_rpt_sx(const fdl_rpt_frame *f, double x);
double fdl_rpt_sy(const fdl_rpt_frame *f, double y);
/* The top of a linear count or KL axis holding values up to top: 8% above it, finite, 1 if empty.
 */
double fdl_rpt_headroom(double top);
/* Frame, grid, ticks with labels, and axis titles (units included by the caller). xcats > 0:
 * the x axis is categorical (no ticks; the bars label themselves). */
void fdl_rpt_axes(fdl_buf *b, const fdl_rpt_frame *f, const char *xlabel, const char *ylabel,
                  size_t xcats);
/* Bars from edges[k] to edges[k+1] of height counts[k]. */
void fdl_rpt_hist(fdl_buf *b, const fdl_rpt_frame *f, const double *edges, const double *counts,
                  size_t nbins, const char *colour);
/* A polyline through (x[k], y[k]); step: a staircase (a CDF). dash may be NULL. */
void fdl_rpt_line(fdl_buf *b, const fdl_rpt_frame *f, const double *x, const double *y, size_t n,
                  const char *colour, bool step, const char *dash);
/* Category bars k = 0..n-1 at x in [k, k+1), heights v, error bars [lo, hi] when finite, and
 * a label under each bar when labels is not NULL. */
void fdl_rpt_bars(fdl_buf *b, const fdl_rpt_frame *f, const double *v, const double *lo,
                  const double *hi, const char *const *colours, const char *const *labels,
                  size_t n);
void fdl_rpt_scatter(fdl_buf *b, const fdl_rpt_frame *f, const double *x, const double *y, size_t n,
                     const char *colour, double radius);
/* A vertical marker at x with a label at the top. */
void fdl_rpt_vline(fdl_buf *b, const fdl_rpt_frame *f, double x, const char *colour,
                   const char *label, int slot);
/* A legend at (x, y) px: one swatch and name per row. */
void fdl_rpt_legend(fdl_buf *b, double x, double y, const char *const *names,
                    const char *const *colours, size_t n);
/* A centred message inside the plot area (a chart with nothing to draw still says why). */
void fdl_rpt_svg_note(fdl_buf *b, const fdl_rpt_frame *f, const char *text);

/* ---- charts (charts.c) and tables (tables.c) --------------------------------------------- */

void fdl_rpt_chart_hist(fdl_buf *b, const fdl_rpt_receipt *r);
fdl_status fdl_rpt_chart_cdf(fdl_buf *b, const fdl_rpt_receipt *const *rs, size_t n, const char *id,
                             fdl_err *err);
fdl_status fdl_rpt_chart_contexts(fdl_buf *b, const fdl_rpt_receipt *r, fdl_err *err);
fdl_status fdl_rpt_chart_position(fdl_buf *b, const fdl_rpt_receipt *r, fdl_err *err);
void fdl_rpt_chart_top1(fdl_buf *b, const fdl_rpt_receipt *r);
void fdl_rpt_chart_deltap(fdl_buf *b, const fdl_rpt_receipt *r);

void fdl_rpt_verdict(fdl_buf *b, const fdl_rpt_receipt *r);
void fdl_rpt_disclosures(fdl_buf *b, const fdl_rpt_receipt *r);
void fdl_rpt_headline(fdl_buf *b, const fdl_rpt_receipt *r);
void fdl_rpt_llama_table(fdl_buf *b, const fdl_rpt_receipt *r);
void fdl_rpt_identity(fdl_buf *b, const fdl_rpt_receipt *r);
/* The side-by-side table, rows in the order given. */
void fdl_rpt_compare_table(fdl_buf *b, const fdl_rpt_receipt *const *rs, size_t n);
/* A name for a receipt in a table or legend: the candidate label, else its dataset id, else
 * the directory. */
const char *fdl_rpt_name(const fdl_rpt_receipt *r);

/* ---- markdown (markdown.c) and comparability (compat.c) --------------------------------- */

void fdl_rpt_md_headline(fdl_buf *b, const fdl_rpt_receipt *r);
void fdl_rpt_md_compare(fdl_buf *b, const fdl_rpt_receipt *const *rs, size_t n);
/* FDL_OK when the receipts may share a page; FDL_REFUSED with the first reason otherwise. */
fdl_status fdl_rpt_comparable(const fdl_rpt_receipt *const *rs, size_t n, fdl_err *err);
/* Orders rs by metric.value ascending (ties: the given order). */
void fdl_rpt_sort_by_kl(const fdl_rpt_receipt **rs, size_t n);

#endif
