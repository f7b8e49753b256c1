/* fidelis/tensor.h - safetensors and .npy files, and exact dtype widening.
 *
 * Readers map the file and prove every bound before any tensor byte is touched: header size,
 * dtype sizes, shape products (overflow-checked), data ranges inside the data section and not
 * overlapping, unique names. Views point into the mapping and live as long as the file handle. */
#ifndef FIDELIS_TENSOR_H
#define FIDELIS_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "pool.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Append-only: never reorder or reuse a value. */
typedef enum {
  FDL_DTYPE_BOOL = 0,
  FDL_DTYPE_U8,
  FDL_DTYPE_I8,
  FDL_DTYPE_I16,
  FDL_DTYPE_U16,
  FDL_DTYPE_I32,
  FDL_DTYPE_U32,
  FDL_DTYPE_I64,
  FDL_DTYPE_U64,
  FDL_DTYPE_F16,
  FDL_DTYPE_BF16,
  FDL_DTYPE_F32,
  FDL_DTYPE_F64,
  FDL_DTYPE_F8_E4M3,
  FDL_DTYPE_F8_E5M2,
  FDL_DTYPE_COUNT
} fdl_dtype;

#define FDL_MAX_DIMS 8
/* A safetensors header larger than this is refused before it is read. */
#define FDL_SAFETENSORS_MAX_HEADER (100u * 1024u * 1024u)

/* Bytes per element (1, 2, 4 or 8); 0 for an invalid value. */
FDL_API size_t fdl_dtype_size(fdl_dtype t);
/* safetensors spelling ("BF16", "F32", ...). */
FDL_API const char *fdl_dtype_name(fdl_dtype t);
/* Parses a safetensors dtype name; false if unknown. */
FDL_API bool fdl_dtype_parse(const char *name, fdl_dtype *t);

/* A view of one tensor. */
typedef struct {
  const char *name; /* NUL-terminated, owned by the file handle */
  fdl_dtype dtype;
  int ndim;
  int64_t shape[FDL_MAX_DIMS];
  uint64_t offset; /* absolute byte offset of the first element in the file */
  uint64_t nbytes;
  const uint8_t *data; /* offset applied; little-endian, C order */
} fdl_tensor;

/* Element count of a view (the product of its shape; 1 for a scalar). */
FDL_API uint64_t fdl_tensor_numel(const fdl_tensor *t);

/* ---- safetensors ------------------------------------------------------------------------ */

typedef struct fdl_safetensors fdl_safetensors;

FDL_API fdl_status fdl_safetensors_open(const char *path, fdl_safetensors **out, fdl_err *err);
/* As fdl_safetensors_open, with the file read into memory (fdl_map_file_resident) on pool's
 * workers (NULL: the calling thread). */
FDL_API fdl_status fdl_safetensors_open_resident(const char *path, fdl_pool *pool,
                                                 fdl_safetensors **out, fdl_err *err);
/* Same checks over a caller-owned buffer, which must outlive the handle (used by fuzzing). */
FDL_API fdl_status fdl_safetensors_open_mem(const void *data, size_t size, fdl_safetensors **out,
                                            fdl_err *err);
FDL_API void fdl_safetensors_close(fdl_safetensors *st);
/* Tensors in data-offset order. */
FDL_API size_t fdl_safetensors_count(const fdl_safetensors *st);
FDL_API const fdl_tensor *fdl_safetensors_at(const fdl_safetensors *st, size_t i);
FDL_API const fdl_tensor *fdl_safetensors_find(const fdl_safetensors *st, const char *name);
/* Byte offset of the data section (8 + header length) and the file size. */
FDL_API uint64_t fdl_safetensors_data_start(const fdl_safetensors *st);
FDL_API uint64_t fdl_safetensors_file_size(const fdl_safetensors *st);
/* The whole file as the handle holds it, header included: fdl_safetensors_file_size bytes, so
 * a caller can digest the very bytes the views point into. */
FDL_API const uint8_t *fdl_safetensors_bytes(const fdl_safetensors *st);
/* fdl_map_release of file bytes [off, off + n) when the handle maps its file; else nothing. */
FDL_API void fdl_safetensors_release(const fdl_safetensors *st, uint64_t off, uint64_t n);

/* One tensor to write. */
typedef struct {
  const char *name;
  fdl_dtype dtype;
  int ndim;
  const int64_t *shape;
  const void *data; /* little-endian bytes, nbytes = numel * dtype size */
} fdl_tensor_in;

/* ---- .npy (format 1.0, C order) --------------------------------------------------------- */

typedef struct fdl_npy fdl_npy;

FDL_API fdl_status fdl_npy_open(const char *path, fdl_npy **out, fdl_err *err);
FDL_API fdl_status fdl_npy_open_mem(const void *data, size_t size, fdl_npy **out, fdl_err *err);
FDL_API void fdl_npy_close(fdl_npy *n);
/* The array as a tensor view (name "" ). */
FDL_API const fdl_tensor *fdl_npy_tensor(const fdl_npy *n);

/* Appends the exact header numpy's np.save writes (magic, version 1.0, padded dict). Supported
 * dtypes: F64 '<f8', F32 '<f4', I64 '<i8', I32 '<i4', U8 '|u1', BOOL '|b1'. */
FDL_API fdl_status fdl_npy_header(fdl_dtype dtype, int ndim, const int64_t *shape, fdl_buf *out,
                                  fdl_err *err);
/* Writes an .npy file byte-identical to np.save. Staged; never overwrites. */
FDL_API fdl_status fdl_npy_write(const char *path, fdl_dtype dtype, int ndim, const int64_t *shape,
                                 const void *data, fdl_err *err);

/* ---- dtype conversion ------------------------------------------------------------------- */

/* Exact widening (every BF16/F16 value is representable in F32; NaN payloads kept). */
FDL_API float fdl_bf16_to_f32(uint16_t h);
FDL_API float fdl_f16_to_f32(uint16_t h);
/* Round to nearest, ties to even. NaN stays NaN (quiet); overflow rounds to infinity. */
FDL_API uint16_t fdl_f32_to_bf16(float f);
/* Bulk forms over little-endian input. */
FDL_API void fdl_bf16_to_f32_n(const uint16_t *in, float *out, size_t n);
FDL_API void fdl_f16_to_f32_n(const uint16_t *in, float *out, size_t n);
FDL_API void fdl_f32_to_bf16_n(const float *in, uint16_t *out, size_t n);

/* True for the dtypes fdl_tensor_widen_f32 reads: BF16, F16 and F32. */
FDL_API bool fdl_tensor_widenable(fdl_dtype t);
/* Index of the first NaN or infinity among the n little-endian elements at p (F16, BF16, F32,
 * F64: all exponent bits set; unaligned bytes are fine), or UINT64_MAX; *nan (optional) says
 * which it was. Other dtypes hold no non-finite value. */
FDL_API uint64_t fdl_tensor_first_nonfinite(const uint8_t *p, fdl_dtype t, uint64_t n, bool *nan);
/* Elements [first, first + n) of a view as float32, exactly. Reads little-endian bytes, so the
 * view needs no alignment (safetensors data often starts at an odd offset). The caller checks
 * the range and fdl_tensor_widenable; another dtype gives zeros. */
FDL_API void fdl_tensor_widen_f32(const fdl_tensor *t, size_t first, size_t n, float *out);

#ifdef __cplusplus
}
#endif
#endif
