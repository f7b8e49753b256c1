/* replay.h - internal to src/num: head replay of hidden rows into logit tiles, through
 * fidelis' own GEMM (gemm.h), so a replayed logit is the contract's chain over the hidden
 * index and nothing else: not the tile, the row's neighbours, the thread or the CPU. */
#ifndef FDL_NUM_REPLAY_H
#define FDL_NUM_REPLAY_H

#include <stddef.h>

#include "fidelis/num.h"
#include "num/gemm.h"

/* Fails with FDL_NONFINITE naming the first non-finite value of `rows` hidden rows (output slot
 * first_slot + row, hidden index); who is "reference" or "candidate". */
fdl_status fdl_replay_check(const fdl_num_side *side, size_t rows, size_t first_slot,
                            const char *who, fdl_err *err);

/* Floats of a block's packed hidden rows (FDL_NUM_TILE_ROWS of width hidden), and of the
 * accumulators one tile needs. */
size_t fdl_replay_packed_floats(const gemm_kernel *kern, size_t hidden);
size_t fdl_replay_acc_floats(const gemm_kernel *kern, size_t hidden);

/* Packs a block's hidden rows once for all of its tiles. */
void fdl_replay_pack(const gemm_kernel *kern, const fdl_num_side *side, size_t rows, float *packed);

/* tile[r][j] = logit c0 + j of hidden row r, for r < rows and j < n; ldt floats per tile row.
 * The head is read as stored (side->head_type). */
void fdl_replay_tile(const gemm_kernel *kern, const fdl_num_side *side, size_t rows, size_t c0,
                     size_t n, const float *packed, float *acc, float *tile, size_t ldt);

#endif
