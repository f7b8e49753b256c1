/* fidelis/generate.h - greedy generation and per-position outputs over the engine, the inputs
 * of a first-divergence search (`fidelis divergence`) and of path attribution
 * (`fidelis attribute`). */
#ifndef FIDELIS_GENERATE_H
#define FIDELIS_GENERATE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  size_t n_new;         /* at most this many new tokens */
  fdl_engine_path path; /* the prompt's path; each new token is one more position on it */
  const int32_t *stop;  /* generation ends after emitting one of these ids (an EOS) */
  size_t n_stop;
  /* Called with each new token as it is chosen (`--stream`), or NULL; a failure stops
   * generation with that status. */
  fdl_status (*on_token)(void *arg, int32_t id, fdl_err *err);
  void *arg;
} fdl_generate_opts;

/* Appends up to o->n_new greedy tokens to the n prompt ids (argmax-only path, first index on
 * ties), writing them to out_new and their count to *n_out. The engine keeps its KV cache (and
 * Qwen3.5's recurrent states) across steps, so the cost is linear in the length: the prompt
 * runs once on the path, then each token is one more position. Every bound (ids in the
 * vocabulary, prompt plus new tokens within max_position_embeddings) is checked before any
 * computing. On the dense architectures a token's bits are those of re-running the whole
 * sequence (prefill and decode agree bit for bit); on Qwen3.5 with the prefill path the new
 * positions run as one-row chunks from the carried state, which round differently from a
 * chunked re-run of the whole sequence (within float32 tolerance). Dynamic (NTK) RoPE past the
 * trained length scales its frequencies with the context, so the cache would hold keys of
 * other frequencies: that case re-runs the whole sequence at each step, as transformers'
 * definition needs. */
FDL_API fdl_status fdl_generate_greedy(fdl_model *m, const int32_t *prompt, size_t n,
                                       const fdl_generate_opts *o, int32_t *out_new, size_t *n_out,
                                       fdl_err *err);

/* The ids that end the model's generation, at most cap into ids and their count into *n (0 when
 * the model names none): generation_config.json's eos_token_id in dir, else config.json's, or a
 * GGUF's tokenizer.ggml.eos_token_id. FDL_PARSE for an id outside the vocabulary. */
FDL_API fdl_status fdl_model_eos(const fdl_model *m, const char *dir, int32_t *ids, size_t cap,
                                 size_t *n, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
