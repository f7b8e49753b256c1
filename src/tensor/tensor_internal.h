/* tensor_internal.h - helpers shared by the tensor readers and writers (not installed). */
#ifndef FIDELIS_TENSOR_INTERNAL_H
#define FIDELIS_TENSOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fidelis/tensor.h"
#include "base/quote.h"
#include "base/buf.h"
#include "base/fs.h"

/* Element count and byte size of a shape, overflow-checked. False (outputs untouched) when a
 * dimension is negative, ndim is outside [0, FDL_MAX_DIMS], the dtype is invalid, or a product
 * overflows 64 bits. */
bool fdl_shape_nbytes(fdl_dtype dtype, int ndim, const int64_t *shape, uint64_t *numel,
                      uint64_t *nbytes);

#endif
