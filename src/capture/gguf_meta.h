/* gguf_meta.h - what a capture of a GGUF model declares about its weights (gguf_meta.c). */
#ifndef FDL_CAPTURE_GGUF_META_H
#define FDL_CAPTURE_GGUF_META_H

#include <jansson.h>

#include "fidelis/engine.h"

/* The scope block: per tensor class its ggml types ("q4_K+q6_K"), treatment and mean bits per
 * weight. */
json_t *fdl_capture_gguf_scope(const fdl_model *m);
/* The weights_decode block: ggml's to_float into float32, and how many tensors of each type. */
json_t *fdl_capture_gguf_decode(const fdl_model *m);

#endif
