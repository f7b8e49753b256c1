/* env.c - what the receipt says about fidelis and the machine it ran on. Only facts that can
 * change a number (BLAS build and kernel, replay tile, CPU) or identify the tool are recorded;
 * the worker thread count is deliberately absent, because it never changes a number and a
 * receipt must be byte-identical whatever it was. */
#include "compare/cmp.h"

/* The BLAS and CPU facts come from num (fdl_num_blas_identity_get), which runs the sgemm; the
 * replay tile text is compare's, as compare chooses the tiles. */
json_t *fdl_cmp_env_replay(void) {
  json_t *o = json_object();
  if (!o) return NULL;
  fdl_num_blas_identity id;
  fdl_num_blas_identity_get(&id);
  int bad =
      fdl_cmp_set_str(o, "library", id.library) | fdl_cmp_set_str(o, "blas_name", id.library) |
      fdl_cmp_set_str(o, "blas_version", id.version) |
      fdl_cmp_set_str(o, "blas_configuration", id.configuration) |
      fdl_cmp_set_str(o, "blas_core", id.core) | fdl_cmp_set_int(o, "blas_threads", 1) |
      fdl_cmp_set_str(o, "blas_threads_source",
                      "openblas_set_num_threads(1): one single-threaded cblas_sgemm per tile") |
      fdl_cmp_set_str(o, "cpu_model", id.cpu_model) |
      fdl_cmp_set_str(o, "replay_dtype", "float32") |
      fdl_cmp_set_str(o, "tile",
                      "position_block x vocab_chunk logits per sgemm, both fixed by the arithmetic "
                      "contract; blocks start at multiples of position_block rows of each "
                      "record, the last one is zero-padded, and the last vocabulary tile slides "
                      "back to keep the shape fixed");
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *fdl_cmp_env_tool(void) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad =
      fdl_cmp_set_str(o, "name", "fidelis") | fdl_cmp_set_str(o, "version", fdl_version()) |
      fdl_cmp_set_str(o, "entrypoint", "fidelis compare") |
      fdl_cmp_set_str(
          o, "note",
          "a C17 re-implementation of the reference comparator's gates and receipt; the "
          "estimator is fidelis' own fused float64 KL (one streaming pass per row with its own "
          "float64 exp). Measured against the reference's float64 estimators: logit pairs agree "
          "to about 1e-15 relative per token; on hidden pairs the float32 replay dominates (a "
          "different sgemm summation order from numpy's), and on a synthetic pair (V 32000, H "
          "512) tokens differed by up to 1.3e-5 relative (median 3e-8) and the mean by 7e-8. "
          "No thread count, instruction set or batch flag changes a number, so none is "
          "recorded.");
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}
