/* replay.h - internal to src/num: head replay of hidden rows into fixed-shape logit tiles. */
#ifndef FDL_NUM_REPLAY_H
#define FDL_NUM_REPLAY_H

#include <stddef.h>

#include "fidelis/num.h"

/* Copies `rows` hidden rows (stride ld) into pad [pb x hidden] and zero-fills rows..pb-1, so
 * the GEMM always sees M = pb. Fails with FDL_NONFINITE naming the first bad value (output
 * slot first_slot + row, hidden index). */
fdl_status fdl_replay_pad(const fdl_num_side *side, size_t rows, size_t pb, float *pad,
                          size_t first_slot, const char *who, fdl_err *err);

/* Column window of the tile that covers chunk [c0, c0 + n): the tile always spans nc = min(chunk,
 * vocab) columns; the last chunk's tile ends at vocab and starts earlier when the chunk is short,
 * so its shape never changes. Returns the first column; *skip is c0 - that column. */
size_t fdl_replay_window(size_t c0, size_t nc, size_t vocab, size_t *skip);

/* tile[pb x nc] = pad[pb x hidden] . head[col0 .. col0+nc, :]^T with one single-threaded
 * cblas_sgemm call. */
void fdl_replay_tile(const float *pad, size_t pb, size_t hidden, const float *head, size_t col0,
                     size_t nc, float *tile);

/* Makes OpenBLAS run each call on the calling thread (see fdl_num_run). */
void fdl_replay_single_threaded_blas(void);

#endif
