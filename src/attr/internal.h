/* attr/internal.h - helpers shared by the attribution files (not installed). */
#ifndef FIDELIS_ATTR_INTERNAL_H
#define FIDELIS_ATTR_INTERNAL_H

#include <stddef.h>

#include "fidelis/digest.h"
#include "fidelis/status.h"

/* The spec's vector digest (§1): SHA-256 over the little-endian binary32 bytes of v[0..n). */
fdl_status fdl_attr_sha256_f32(const float *v, size_t n, fdl_sha256 *out, fdl_err *err);

#endif
