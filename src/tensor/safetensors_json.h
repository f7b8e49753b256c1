/* tensor/safetensors_json.h - the safetensors calls that take or give the __metadata__ object
 * (json_t): the private tier of fidelis/tensor.h (docs/layers.tsv), which keeps jansson out of the
 * installed headers. */
#ifndef FIDELIS_SAFETENSORS_JSON_H
#define FIDELIS_SAFETENSORS_JSON_H

#include <jansson.h>

#include "fidelis/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The __metadata__ object (string values only), or NULL when absent. Borrowed. */
const json_t *fdl_safetensors_metadata(const fdl_safetensors *st);

/* Writes a safetensors file laid out as the upstream fidelity writer does: u64le header length,
 * compact sorted-key JSON header with no padding, tensors in the given order. metadata may be
 * NULL or an object of strings. Staged; never overwrites. */
fdl_status fdl_safetensors_write(const char *path, const fdl_tensor_in *tensors, size_t n,
                                 const json_t *metadata, fdl_err *err);

/* Appends the header bytes (length prefix included) that fdl_safetensors_write would write. */
fdl_status fdl_safetensors_header(const fdl_tensor_in *tensors, size_t n, const json_t *metadata,
                                  fdl_buf *out, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
