/* gguf_meta.h - what a capture declares about its model's weights (gguf_meta.c). */
#ifndef FDL_CAPTURE_GGUF_META_H
#define FDL_CAPTURE_GGUF_META_H

#include <jansson.h>

#include "fidelis/engine.h"

/* The scope block: per tensor class its ggml types ("q4_K+q6_K"), treatment and mean bits per
 * weight. */
json_t *fdl_capture_gguf_scope(const fdl_model *m);
/* The weights_decode block: ggml's to_float into float32, and how many tensors of each type. */
json_t *fdl_capture_gguf_decode(const fdl_model *m);
/* config.json's quantization_config (borrowed from the model's own parse), or NULL: a checkpoint
 * that has one is captured as a quant, and its weights_decode copies the block verbatim. */
const json_t *fdl_capture_quant_config(const fdl_model *m);

#endif
