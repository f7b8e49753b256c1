/* replay.c - head replay tiles: logits = hidden (float32) . head^T (BF16, F16 or F32 as
 * stored) for rows x one vocabulary chunk at a time, consumed by the fused KL while still in
 * cache, so full logit rows never exist in memory. */
#include <math.h>

#include "num/replay.h"

fdl_status fdl_replay_check(const fdl_num_side *side, size_t rows, size_t first_slot,
                            const char *who, fdl_err *err) {
  size_t h = side->hidden;
  for (size_t r = 0; r < rows; r++) {
    const float *src = side->data + r * side->ld;
    int ok = 1;
    for (size_t i = 0; i < h; i++) ok &= isfinite(src[i]);
    if (ok) continue;
    for (size_t i = 0; i < h; i++)
      if (!isfinite(src[i]))
        return fdl_fail(err, FDL_NONFINITE,
                        "non-finite %s hidden state (%g) in output row %zu at hidden index %zu",
                        who, (double)src[i], first_slot + r, i);
  }
  return FDL_OK;
}

/* The product a tile is part of: the block's rows times head rows [c0, c0 + n). */
static fdl_gemm_args tile_args(const fdl_num_side *side, size_t rows, size_t c0, size_t n,
                               float *tile, size_t ldt) {
  size_t es = side->head_type == FDL_GEMM_F32 ? 4 : 2;
  return (fdl_gemm_args){.m = rows,
                         .n = n,
                         .k = side->hidden,
                         .a = side->data,
                         .lda = side->ld,
                         .b = (const unsigned char *)side->head + c0 * side->hidden * es,
                         .ldb = side->hidden,
                         .b_type = side->head_type,
                         .c = tile,
                         .ldc = ldt};
}

size_t fdl_replay_packed_floats(const gemm_kernel *kern, size_t hidden) {
  return fdl_gemm_packed_floats(kern, FDL_NUM_TILE_ROWS, hidden);
}

size_t fdl_replay_acc_floats(const gemm_kernel *kern, size_t hidden) {
  fdl_gemm_blocking b;
  fdl_gemm_blocking_default(kern, hidden, &b);
  return fdl_gemm_acc_floats(kern, FDL_NUM_TILE_ROWS, &b);
}

void fdl_replay_pack(const gemm_kernel *kern, const fdl_num_side *side, size_t rows,
                     float *packed) {
  fdl_gemm_args x = tile_args(side, rows, 0, 0, NULL, 0);
  fdl_gemm_pack(kern, &x, 0, rows, packed);
}

void fdl_replay_tile(const gemm_kernel *kern, const fdl_num_side *side, size_t rows, size_t c0,
                     size_t n, const float *packed, float *acc, float *tile, size_t ldt) {
  fdl_gemm_args x = tile_args(side, rows, c0, n, tile, ldt);
  fdl_gemm_blocking b;
  fdl_gemm_blocking_default(kern, side->hidden, &b);
  fdl_gemm_tile_packed(kern, &x, 0, rows, 0, n, &b, packed, acc);
}
