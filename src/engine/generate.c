/* generate.c - greedy continuation over fdl_engine_run. */
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "fidelis/generate.h"

fdl_status fdl_generate_greedy(fdl_model *m, const int32_t *prompt, size_t n, size_t n_new,
                               fdl_engine_path path, int32_t *out_new, fdl_err *err) {
  if (!n) return fdl_fail(err, FDL_INVALID, "generate: the prompt holds no token");
  if (n_new > SIZE_MAX / sizeof(int32_t) / 2 - n)
    return fdl_fail(err, FDL_TOO_LARGE, "generate: %zu new tokens is too many", n_new);
  /* The last step runs n + n_new - 1 positions: refused here, before any step is computed. */
  size_t maxp = fdl_model_get_info(m)->max_positions;
  if (n_new && n + n_new - 1 > maxp)
    return fdl_fail(err, FDL_INVALID,
                    "generate: %zu prompt tokens and %zu new ones need contexts of up to %zu "
                    "positions, past max_position_embeddings %zu",
                    n, n_new, n + n_new - 1, maxp);
  int32_t *ids = fdl_malloc((n + n_new) * sizeof *ids);
  int32_t *greedy = fdl_malloc((n + n_new) * sizeof *greedy);
  fdl_status s = ids && greedy ? FDL_OK : fdl_fail(err, FDL_NOMEM, "generate: out of memory");
  if (s == FDL_OK) memcpy(ids, prompt, n * sizeof *ids);
  for (size_t k = 0; s == FDL_OK && k < n_new; k++) {
    fdl_engine_out out = {.greedy = greedy};
    s = fdl_engine_run(m, ids, n + k, path, &out, err);
    if (s == FDL_OK) ids[n + k] = out_new[k] = greedy[n + k - 1];
  }
  free(ids);
  free(greedy);
  return s;
}
