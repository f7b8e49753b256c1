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

size_t fdl_replay_work_floats(const gemm_kernel *kern, size_t hidden) {
  fdl_gemm_blocking b;
  fdl_gemm_blocking_default(kern, hidden, &b);
  return fdl_gemm_work_floats(kern, FDL_NUM_TILE_ROWS, hidden, &b);
}

void fdl_replay_tile(const gemm_kernel *kern, const fdl_num_side *side, size_t rows, size_t c0,
                     size_t n, float *tile, size_t ldt, float *work) {
  size_t es = side->head_type == FDL_GEMM_F32 ? 4 : 2;
  fdl_gemm_args x = {.m = rows,
                     .n = n,
                     .k = side->hidden,
                     .a = side->data,
                     .lda = side->ld,
                     .b = (const unsigned char *)side->head + c0 * side->hidden * es,
                     .ldb = side->hidden,
                     .b_type = side->head_type,
                     .c = tile,
                     .ldc = ldt};
  fdl_gemm_blocking b;
  fdl_gemm_blocking_default(kern, side->hidden, &b);
  fdl_gemm_tile(kern, &x, 0, rows, 0, n, &b, work);
}
