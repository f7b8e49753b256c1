/* fidelis/engine.h - the inference engine's building blocks. For now the int4 weight quantizer
 * that synth uses to make an honest candidate; the capture engine will live beside it. Nothing
 * here depends on compare. */
#ifndef FIDELIS_ENGINE_H
#define FIDELIS_ENGINE_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symmetric int4 round-to-nearest (ties to even) of a [rows x cols] row-major matrix in groups
 * of `group` consecutive columns: scale = max|w| / 7 in float32, q = clamp(rint(w / scale), -7,
 * 7), out = q * scale (exact in float32). A zero group stays zero. in and out may alias. */
FDL_API void fdl_quant_int4_rtn(const float *in, size_t rows, size_t cols, size_t group,
                                float *out);

#ifdef __cplusplus
}
#endif
#endif
