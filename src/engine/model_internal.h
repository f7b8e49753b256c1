/* model_internal.h - helpers shared by model init and the GPTQ quantizer (internal). */
#ifndef FIDELIS_ENGINE_MODEL_INTERNAL_H
#define FIDELIS_ENGINE_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/fs.h"
#include "fidelis/status.h"
#include "fidelis/tensor.h"

/* Writes the safetensors header of tensors[0..n) to o, padded with spaces to a multiple of 8
 * bytes as the safetensors library pads it, so that every tensor of a whole number of 8-byte
 * words starts aligned in a mapping. tensors[i].data may be any non-NULL pointer: only names,
 * dtypes and shapes are read. *file_bytes receives the size
 * of the whole file. */
fdl_status fdl_model_st_header(fdl_out *o, const fdl_tensor_in *tensors, size_t n,
                               const json_t *metadata, uint64_t *file_bytes, fdl_err *err);

/* Writes v, indented, to dir/name and releases it; a NULL v is the out-of-memory of building
 * it. */
fdl_status fdl_model_write_json(const char *dir, const char *name, json_t *v, fdl_err *err);

/* {"format": "pt"}: transformers refuses a safetensors file whose metadata lacks the format. */
json_t *fdl_model_st_metadata(void);

/* Writes dir/tokenizer.json (byte-level, 256 bytes + 16 specials: the tiny presets' vocabulary
 * of 272), dir/tokenizer_config.json and dir/chat_template.jinja (model_tokenizer.c). */
fdl_status fdl_model_write_tokenizer(const char *dir, fdl_err *err);

/* The checks every packed part of a quantized checkpoint gets before it is read: present, of
 * dtype dt, of shape [d0] (ndim 1) or [d0, d1], and holding exactly that many bytes; the message
 * names the tensor (or `what`). */
fdl_status fdl_model_check_part(const fdl_tensor *t, const char *what, fdl_dtype dt, int ndim,
                                uint64_t d0, uint64_t d1, fdl_err *err);
/* The little-endian uint32 at p (views may be unaligned). */
uint32_t fdl_model_le32(const uint8_t *p);

/* Stores v little-endian at p. */
void fdl_model_put_le32(uint8_t *p, uint32_t v);
void fdl_model_put_le16(uint8_t *p, uint16_t v);

#endif
