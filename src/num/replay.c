/* replay.c - head replay tiles: logits = hidden(f32) . W^T(f32) for a FDL_NUM_TILE_ROWS x
 * FDL_NUM_VOCAB_CHUNK window at a time, consumed by the fused KL while still in cache, so full
 * logit rows never exist in memory. The tile shape is fixed for the whole run (padding rows with
 * zeros, sliding the last column window back) so that a row's logits do not depend on how many
 * other rows share its block or on where the panel ends. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "num/replay.h"

fdl_status fdl_replay_pad(const fdl_num_side *side, size_t rows, size_t pb, float *pad,
                          size_t first_slot, const char *who, fdl_err *err) {
  size_t h = side->hidden;
  for (size_t r = 0; r < rows; r++) {
    const float *src = side->data + r * side->ld;
    float *dst = pad + r * h;
    int ok = 1;
    for (size_t i = 0; i < h; i++) {
      ok &= isfinite(src[i]);
      dst[i] = src[i];
    }
    if (!ok) {
      for (size_t i = 0; i < h; i++)
        if (!isfinite(src[i]))
          return fdl_fail(err, FDL_NONFINITE,
                          "non-finite %s hidden state (%g) in output row %zu at hidden index %zu",
                          who, (double)src[i], first_slot + r, i);
    }
  }
  if (rows < pb) memset(pad + rows * h, 0, (pb - rows) * h * sizeof *pad);
  return FDL_OK;
}

size_t fdl_replay_window(size_t c0, size_t nc, size_t vocab, size_t *skip) {
  size_t col0 = c0 + nc <= vocab ? c0 : vocab - nc;
  *skip = c0 - col0;
  return col0;
}

void fdl_replay_tile(const float *pad, size_t pb, size_t hidden, const float *head, size_t col0,
                     size_t nc, float *tile) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)pb, (blasint)nc, (blasint)hidden,
              1.0f, pad, (blasint)hidden, head + col0 * hidden, (blasint)hidden, 0.0f, tile,
              (blasint)nc);
}

void fdl_replay_single_threaded_blas(void) {
  /* OpenBLAS threads nested under our workers would oversubscribe the cores, and a threaded
   * GEMM's work split would follow the BLAS thread count. One call = one thread keeps the
   * tile a pure function of its inputs. */
  if (openblas_get_num_threads() != 1) openblas_set_num_threads(1);
}
