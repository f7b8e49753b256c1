/* fidelis/report.h - `fidelis report`: one self-contained HTML page (inline SVG, no network)
 * drawn from a comparison receipt directory, after its seal and its arrays' digests verify.
 *
 * docs/REPORT.md says what the page shows, where each number comes from, the position rule and
 * the comparability rule of a side-by-side page. */
#ifndef FIDELIS_REPORT_H
#define FIDELIS_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The receipt file and the arrays a report reads, as a receipt directory names them. */
#define FDL_REPORT_RECEIPT "comparison-receipt.json"
#define FDL_REPORT_PAGE "report.html"
/* The largest number of receipts one side-by-side page takes. */
#define FDL_REPORT_MAX_RECEIPTS 32

typedef struct {
  bool trusted;  /* every receipt's seal and every array digest verified */
  bool llamacpp; /* (single receipt) the llama.cpp-compatible block was present */
  size_t receipts;
} fdl_report_result;

/* Writes the page for the receipts in dirs[0..n) to out (staged, never overwrites: FDL_EXISTS).
 * n == 1 is the single-receipt page; n >= 2 the side-by-side page, whose receipts must be
 * comparable (FDL_REFUSED otherwise, with the reason, and nothing is written).
 * A receipt that fails verification still gets its page (a red notice, no plots, no numbers)
 * and the call returns FDL_MISMATCH with the reason in err; res->trusted is false. */
FDL_API fdl_status fdl_report_write(const char *const *dirs, size_t n, const char *out,
                                    fdl_report_result *res, fdl_err *err);

/* Appends the headline table (n == 1) or the side-by-side table sorted by mean KL (n >= 2) as
 * GitHub-flavoured Markdown. Verifies exactly as fdl_report_write; on failure appends nothing. */
FDL_API fdl_status fdl_report_markdown(const char *const *dirs, size_t n, fdl_buf *out,
                                       fdl_report_result *res, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
