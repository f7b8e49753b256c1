/* decoder.h - a ggml block type's decoding kernel for the library's own hot loops (the engine
 * reads a quantized GGUF matrix a block of rows at a time through one), picked once.
 *
 * A kernel does no checking and no finiteness scan: its caller holds bytes that
 * fdl_ggml_check_finite (fidelis/ggml_quant.h) passed, sized as fdl_ggml_row_bytes says. Every
 * kernel of a type gives the bits of ggml's reference to_float (dequant_internal.h). */
#ifndef FDL_GGUF_DECODER_H
#define FDL_GGUF_DECODER_H

#include <stdint.h>

#include "fidelis/num.h"

/* Decodes `blocks` consecutive blocks of one format from src into dst (block_elems values
 * each). src holds exactly blocks * block_bytes bytes; nothing is checked here. */
typedef void (*fdl_dq_kernel)(const uint8_t *restrict src, uint64_t blocks, float *restrict dst);

/* The kernel of ggml type id for isa (FDL_NUM_ISA_AUTO: the fastest this CPU runs). Refuses, as
 * fdl_ggml_dequant does, a type that is unknown or not dequantized, and an isa this CPU or build
 * lacks (FDL_UNSUPPORTED). */
fdl_status fdl_ggml_decoder(uint32_t id, fdl_num_isa isa, fdl_dq_kernel *out, fdl_err *err);

#endif
