/* fidelis/ggml_quant.h - ggml's tensor types (the block formats GGUF files store) and their
 * dequantization to float32, bit for bit as ggml's reference to_float (docs/GGML-QUANTS.md).
 *
 * Every function is pure and thread-safe. A type fidelis does not dequantize is named in the
 * refusal; hostile bytes (NaN or infinite scales) never crash: the result is checked finite. */
#ifndef FIDELIS_GGML_QUANT_H
#define FIDELIS_GGML_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "num.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t id;          /* the enum ggml_type value stored in a GGUF tensor-info entry */
  const char *name;     /* ggml_type_name, e.g. "q4_K" */
  uint32_t block_elems; /* values per block (1 for f32, f16, bf16) */
  uint32_t block_bytes; /* bytes per block */
  bool dequant;         /* fidelis dequantizes it (fdl_ggml_dequant) */
} fdl_ggml_type_info;

/* The type with this id, or NULL for an id ggml does not define (or no longer does). */
FDL_API const fdl_ggml_type_info *fdl_ggml_type(uint32_t id);

/* Whether the type is a plain float (f32, f16, bf16): one value per block, stored as is. */
FDL_API bool fdl_ggml_is_float(uint32_t id);

/* The stored bytes of n values of the type: FDL_UNSUPPORTED for an unknown id, FDL_BOUNDS when
 * n is not a whole number of blocks or the size overflows 64 bits; the message names the type. */
FDL_API fdl_status fdl_ggml_row_bytes(uint32_t id, uint64_t n, uint64_t *bytes, fdl_err *err);

/* Dequantizes n values (a whole number of blocks) from src, which holds exactly
 * fdl_ggml_row_bytes(id, n) bytes, into dst[0..n), with the bits ggml's to_float gives.
 * FDL_UNSUPPORTED names a type that is not dequantized; FDL_INVALID names the index of the
 * first value that is not finite (dst is written before the check). */
FDL_API fdl_status fdl_ggml_dequant(uint32_t id, const void *src, uint64_t n, float *dst,
                                    fdl_err *err);

/* fdl_ggml_dequant with the kernels of one instruction set (FDL_NUM_ISA_AUTO, which
 * fdl_ggml_dequant uses, picks the fastest this CPU runs). The bits never depend on isa; an isa
 * this CPU or build lacks is FDL_UNSUPPORTED. */
FDL_API fdl_status fdl_ggml_dequant_isa(uint32_t id, fdl_num_isa isa, const void *src, uint64_t n,
                                        float *dst, fdl_err *err);

/* The finiteness check of fdl_ggml_dequant (same status, same message) without decoding the
 * values: a block format's values are all finite exactly when its f16 scales are, so only those
 * are read (the plain float types are scanned). For loading a file whose blocks are decoded
 * later, as they are reached. */
FDL_API fdl_status fdl_ggml_check_finite(uint32_t id, const void *src, uint64_t n, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
