/* generate.c - greedy continuation with the engine's caches carried across steps
 * (fidelis/generate.h). */
#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/sys.h"
#include "engine/internal.h"
#include "fidelis/generate.h"

static bool stops(const fdl_generate_opts *o, int32_t id) {
  for (size_t i = 0; i < o->n_stop; i++)
    if (o->stop[i] == id) return true;
  return false;
}

/* Dynamic RoPE past the trained length: the frequencies of a context depend on its length. */
static bool rope_moves(const fdl_model_info *in, size_t total) {
  return !strcmp(in->rope.type, "dynamic") && total > in->rope.original_max;
}

fdl_status fdl_generate_greedy(fdl_model *m, const int32_t *prompt, size_t n,
                               const fdl_generate_opts *o, int32_t *out_new, size_t *n_out,
                               fdl_err *err) {
  *n_out = 0;
  if (!n) return fdl_fail(err, FDL_INVALID, "generate: the prompt holds no token");
  if (o->path != FDL_ENGINE_PREFILL && o->path != FDL_ENGINE_DECODE)
    return fdl_fail(err, FDL_INVALID, "generate: unknown path %d", (int)o->path);
  if (!o->n_new) return fdl_eng_check_ids(m, prompt, n, err);
  size_t cap;
  if (!fdl_size_add(n, o->n_new, &cap) || !fdl_size_mul(cap, 2 * sizeof(int32_t), &cap))
    return fdl_fail(err, FDL_TOO_LARGE, "generate: %zu new tokens is too many", o->n_new);
  /* The last token is chosen, never run: the longest context is n + n_new - 1 positions. */
  const fdl_model_info *in = fdl_model_get_info(m);
  size_t total = n + o->n_new - 1;
  /* fdl_eng_check_ids bounds every run the same way: positions below 2^20 too */
  if (total > in->max_positions || total > ((size_t)1 << 20))
    return fdl_fail(err, FDL_INVALID,
                    "generate: %zu prompt tokens and %zu new ones need contexts of up to %zu "
                    "positions, past max_position_embeddings %zu (or 2^20)",
                    n, o->n_new, total, in->max_positions);
  fdl_status s = fdl_eng_check_ids(m, prompt, n, err);
  if (s) return s;
  int32_t *ids = fdl_malloc((total + 1) * sizeof *ids);
  int32_t *greedy = fdl_malloc((total + 1) * sizeof *greedy);
  s = ids && greedy ? FDL_OK : fdl_fail(err, FDL_NOMEM, "generate: out of memory");
  bool rerun = rope_moves(in, total);
  if (s == FDL_OK) memcpy(ids, prompt, n * sizeof *ids);
  if (s == FDL_OK && !rerun) s = fdl_eng_begin(m, total, err);
  fdl_engine_out out = {.greedy = greedy};
  /* Step k runs positions [from, n + k): the prompt, then one position at a time. */
  for (size_t k = 0, from = 0; s == FDL_OK && k < o->n_new; k++) {
    size_t len = n + k;
    s = rerun ? fdl_engine_run(m, ids, len, o->path, &out, err)
              : fdl_eng_span(m, ids, from, len, o->path, &out, err);
    if (s) break;
    from = len;
    int32_t id = greedy[len - 1];
    ids[len] = out_new[k] = id;
    *n_out = k + 1;
    if (o->on_token && (s = o->on_token(o->arg, id, err))) break;
    if (stops(o, id)) break;
  }
  free(ids);
  free(greedy);
  return s;
}
