/* qdot.h - products of a few float32 rows with a matrix held in ggml blocks, the blocks decoded
 * in registers instead of into float32 rows first (the engine's decode step: one token times
 * every weight of a quantized GGUF).
 *
 * Same bits as decoding the rows with the type's kernel (decoder.h) and running the GEMM's F32
 * product on them (fdl-gemm-1, docs/NUMERICS.md): each element c[i][j] is the one chain
 * c = fma(a[i][kk], w[j][kk], c) over kk ascending from +0.0, where w[j][kk] is the value the
 * decoder gives, computed with the decoder's own operations; a NaN result is stored as the
 * GEMM's canonical NaN. The caller runs it under the GEMM's floating-point environment. */
#ifndef FDL_GGUF_QDOT_H
#define FDL_GGUF_QDOT_H

#include <stddef.h>
#include <stdint.h>

#include "gguf/decoder.h"

/* The most rows of A one call takes. */
#define FDL_QDOT_MAX_M 4

/* c[i][j] (i < m <= FDL_QDOT_MAX_M, j < n) = row i of A (a[i], k floats) . row j of B (rows[j]:
 * its k / block_elems blocks). k is a whole number of blocks. */
typedef void (*fdl_qdot_kernel)(const float *const a[], size_t m, size_t k,
                                const uint8_t *const rows[], size_t n, float *const c[]);

/* The fused kernel that gives the bits of `decoder` followed by the F32 product, or NULL where
 * there is none (then decode and multiply). */
fdl_qdot_kernel fdl_ggml_qdot(fdl_dq_kernel decoder);

#endif
