/* npy_write.c - .npy files byte-identical to numpy's np.save (format 1.0).
 *
 * numpy (lib/format.py, 1.24) builds "{'descr': D, 'fortran_order': False, 'shape': S, }" from
 * the sorted dict, appends 21 - len(repr(shape[0])) spaces for an array with at least one
 * dimension (room to grow the first axis in place), then pads with spaces so that
 * magic (6) + version (2) + length (2) + header + '\n' is a multiple of 64. The pad is
 * 64 - (total % 64), i.e. a full 64 spaces when the total is already aligned. */
#include <stdio.h>

#include "fidelis/tensor.h"
#include "tensor/tensor_internal.h"

#define NPY_ALIGN 64
#define NPY_GROWTH_DIGITS 21

static const char *descr_of(fdl_dtype d) {
  switch (d) {
  case FDL_DTYPE_F64:
    return "<f8";
  case FDL_DTYPE_F32:
    return "<f4";
  case FDL_DTYPE_I64:
    return "<i8";
  case FDL_DTYPE_I32:
    return "<i4";
  case FDL_DTYPE_U8:
    return "|u1";
  case FDL_DTYPE_BOOL:
    return "|b1";
  default:
    return NULL;
  }
}

fdl_status fdl_npy_header(fdl_dtype dtype, int ndim, const int64_t *shape, fdl_buf *out,
                          fdl_err *err) {
  const char *descr = descr_of(dtype);
  if (!descr)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    ".npy writer: dtype %s unsupported (F64, F32, I64, I32, U8, BOOL)",
                    fdl_dtype_name(dtype));
  if (ndim < 0 || ndim > FDL_MAX_DIMS || (ndim > 0 && !shape))
    return fdl_fail(err, FDL_INVALID, ".npy writer: ndim %d outside [0, %d]", ndim, FDL_MAX_DIMS);
  if (!fdl_shape_nbytes(dtype, ndim, shape, NULL, NULL))
    return fdl_fail(err, FDL_INVALID,
                    ".npy writer: shape has a negative dimension or its byte size overflows");
  /* Bounded: 8 dims of at most 19 digits each, plus the fixed text and padding. */
  char dict[512];
  size_t n = (size_t)snprintf(dict, sizeof dict,
                              "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < ndim; i++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
  if (ndim > 0) {
    char first[24];
    int digits = snprintf(first, sizeof first, "%lld", (long long)shape[0]);
    for (int i = digits; i < NPY_GROWTH_DIGITS; i++) dict[n++] = ' ';
  }
  size_t hlen = n + 1; /* the final '\n' */
  size_t pad = NPY_ALIGN - ((6 + 2 + 2 + hlen) % NPY_ALIGN);
  size_t field = hlen + pad;
  uint8_t pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(field & 0xff), (uint8_t)(field >> 8)};
  fdl_buf_append(out, pre, sizeof pre);
  fdl_buf_append(out, dict, n);
  for (size_t i = 0; i < pad; i++) fdl_buf_putc(out, ' ');
  fdl_buf_putc(out, '\n');
  if (fdl_buf_status(out) != FDL_OK)
    return fdl_fail(err, fdl_buf_status(out), ".npy writer: cannot append the header");
  return FDL_OK;
}

fdl_status fdl_npy_write(const char *path, fdl_dtype dtype, int ndim, const int64_t *shape,
                         const void *data, fdl_err *err) {
  fdl_buf head;
  fdl_buf_init(&head, 0);
  fdl_status s = fdl_npy_header(dtype, ndim, shape, &head, err);
  uint64_t nbytes = 0;
  if (s == FDL_OK) {
    fdl_shape_nbytes(dtype, ndim, shape, NULL, &nbytes);
    if (nbytes > 0 && !data)
      s = fdl_fail(err, FDL_INVALID, "%s: %llu bytes declared but data is NULL", path,
                   (unsigned long long)nbytes);
#if SIZE_MAX < UINT64_MAX
    else if (nbytes > SIZE_MAX)
      s = fdl_fail(err, FDL_TOO_LARGE, "%s: array too large for this host", path);
#endif
  } else {
    fdl_err_prefix(err, "%s", path);
  }
  if (s == FDL_OK) {
    fdl_out o;
    s = fdl_out_open(&o, path, err);
    if (s == FDL_OK) {
      s = fdl_out_write(&o, head.data, head.len, err);
      if (s == FDL_OK && nbytes > 0) s = fdl_out_write(&o, data, (size_t)nbytes, err);
      if (s == FDL_OK)
        s = fdl_out_commit(&o, err);
      else
        fdl_out_abort(&o);
    }
  }
  fdl_buf_free(&head);
  return s;
}
