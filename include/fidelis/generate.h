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

/* Appends n_new greedy tokens to the n prompt ids (argmax-only path, first index on ties),
 * writing them to out_new. Each step re-runs the whole sequence on the chosen path: the engine
 * keeps no cache between calls, so the cost is quadratic in the length; meant for short
 * continuations. */
FDL_API fdl_status fdl_generate_greedy(fdl_model *m, const int32_t *prompt, size_t n, size_t n_new,
                                       fdl_engine_path path, int32_t *out_new, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
