/* fidelis/gguf.h - llama.cpp's GGUF files: the header and metadata (docs/GGUF.md).
 *
 * Versions 2 and 3, little-endian. Every count, length and offset is proved against the bytes
 * the file holds before it is used: a 2^31-entry array claimed in 1 KB is refused at its key,
 * never allocated. The metadata is indexed once (one entry per key, pointing into the file);
 * values are read on demand, in place. */
#ifndef FIDELIS_GGUF_H
#define FIDELIS_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "file.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GGUF's value types, with their numbers in the file. */
typedef enum {
  FDL_GGUF_U8 = 0,
  FDL_GGUF_I8 = 1,
  FDL_GGUF_U16 = 2,
  FDL_GGUF_I16 = 3,
  FDL_GGUF_U32 = 4,
  FDL_GGUF_I32 = 5,
  FDL_GGUF_F32 = 6,
  FDL_GGUF_BOOL = 7,
  FDL_GGUF_STRING = 8,
  FDL_GGUF_ARRAY = 9,
  FDL_GGUF_U64 = 10,
  FDL_GGUF_I64 = 11,
  FDL_GGUF_F64 = 12,
  FDL_GGUF_TYPE_COUNT
} fdl_gguf_type;

/* One metadata entry. For an array, elem is its element type and count its length; value is the
 * offset of the first element (after the array's type and count). */
typedef struct {
  const char *key; /* NUL-terminated copy */
  fdl_gguf_type type, elem;
  uint64_t count;
  uint64_t value; /* file offset of the value */
} fdl_gguf_kv;

/* One tensor-info entry. Its data lies inside the file, aligned, overlapping no other's
 * (proved at open). */
typedef struct {
  const char *name; /* NUL-terminated copy */
  uint32_t n_dims;  /* 1..4 */
  uint64_t ne[4];   /* ggml order: ne[0] values per row, contiguous; unused dimensions 1 */
  uint32_t type;    /* enum ggml_type (fidelis/ggml_quant.h) */
  uint64_t offset;  /* absolute file offset of the data */
  uint64_t nbytes;  /* stored bytes: rows x the type's row size */
} fdl_gguf_tensor;

typedef struct {
  fdl_map map;
  uint32_t version;
  uint64_t n_tensors;
  fdl_gguf_kv *kv;
  size_t n_kv;
  uint64_t meta_end;        /* offset just past the metadata */
  char *path;               /* for messages */
  fdl_gguf_tensor *tensors; /* [n_tensors], in file order */
  uint32_t *by_name;        /* tensor indices sorted by name */
  uint32_t alignment;       /* general.alignment (32 when absent) */
  uint64_t data_offset;     /* the data section's start */
} fdl_gguf;

/* Opens and indexes a GGUF file. A bad magic, a version other than 2 or 3, a length or count
 * the file cannot hold, an unknown value type, a duplicate key or a key that is not UTF-8 is
 * refused (FDL_PARSE / FDL_BOUNDS / FDL_UNSUPPORTED), naming the key and its offset. So is a
 * tensor table that lies: a duplicate or non-UTF-8 name, more than 4 dimensions, a zero or
 * overflowing shape, a type ggml does not define, a row that is not whole blocks, data that is
 * misaligned, past the end, or overlapping another tensor's. */
FDL_API fdl_status fdl_gguf_open(const char *path, fdl_gguf *g, fdl_err *err);
FDL_API void fdl_gguf_close(fdl_gguf *g);

/* Whether the GGUF at path carries a vocabulary (tokenizer.ggml.model present and not "none"). */
FDL_API fdl_status fdl_gguf_has_vocab(const char *path, bool *has, fdl_err *err);

/* The tensor named name, or NULL. */
FDL_API const fdl_gguf_tensor *fdl_gguf_tensor_find(const fdl_gguf *g, const char *name);
/* Its stored bytes (inside the mapping). */
FDL_API const uint8_t *fdl_gguf_tensor_data(const fdl_gguf *g, const fdl_gguf_tensor *t);

/* The entry for key, or NULL. */
FDL_API const fdl_gguf_kv *fdl_gguf_find(const fdl_gguf *g, const char *key);
FDL_API const char *fdl_gguf_type_name(fdl_gguf_type t);

/* Typed reads. Each checks the entry's type and fails naming the key otherwise. An integer read
 * takes any integer type whose value fits. A string is returned as a pointer into the file and
 * its length (not NUL-terminated). */
FDL_API fdl_status fdl_gguf_get_int(const fdl_gguf *g, const fdl_gguf_kv *kv, int64_t *out,
                                    fdl_err *err);
FDL_API fdl_status fdl_gguf_get_bool(const fdl_gguf *g, const fdl_gguf_kv *kv, bool *out,
                                     fdl_err *err);
FDL_API fdl_status fdl_gguf_get_str(const fdl_gguf *g, const fdl_gguf_kv *kv, const char **s,
                                    size_t *len, fdl_err *err);

/* An array of strings, walked in order: fill s/len for element i starting at *pos (initialise
 * *pos to kv->value); the bounds were proved at open. */
FDL_API void fdl_gguf_next_str(const fdl_gguf *g, uint64_t *pos, const char **s, size_t *len);
/* Element i of an array of fixed-size numbers, widened: F32/F64 to double, integers to double
 * exactly when they fit (|x| <= 2^53) - the caller checks the type first. */
FDL_API double fdl_gguf_num_at(const fdl_gguf *g, const fdl_gguf_kv *kv, uint64_t i);
/* Bytes per element of a fixed-size type (0 for STRING and ARRAY). */
FDL_API size_t fdl_gguf_type_size(fdl_gguf_type t);

#ifdef __cplusplus
}
#endif
#endif
