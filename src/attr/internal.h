/* attr/internal.h - helpers shared by the attribution files (not installed). */
#ifndef FIDELIS_ATTR_INTERNAL_H
#define FIDELIS_ATTR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "fidelis/digest.h"
#include "fidelis/status.h"

/* The spec's vector digest (§1): SHA-256 over the little-endian binary32 bytes of v[0..n). */
fdl_status fdl_attr_sha256_f32(const float *v, size_t n, fdl_sha256 *out, fdl_err *err);

/* The four Kiln paths of kiln.rocm-hf-path-attribution-result.v2 in §12's precedence order:
 * the worker key, whether it is a full-logits path, and the label it earns when it diverges. */
typedef struct {
  const char *name, *label;
  bool full;
} fdl_kiln_v2_path;
extern const fdl_kiln_v2_path fdl_kiln_v2_paths[4];

#endif
