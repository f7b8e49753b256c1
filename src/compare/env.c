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
                      "position_block x vocab_chunk logits per sgemm; the last block of a "
                      "record is zero-padded and the last vocabulary tile slides back to keep "
                      "the shape fixed");
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
          "a C17 re-implementation of the reference comparator's gates and "
          "receipt; the estimator is fidelis' own fused float64 KL (one streaming "
          "pass per row with its own float64 exp), so numbers agree with the reference's numpy "
          "or torch estimators to about 1e-15 relative, not bitwise. Results do "
          "not depend on the worker thread count, which is not recorded.");
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}
