/* fidelis/float_repr.h - Python's repr() of a double, the form every JSON float is written in.
 *
 * The JSON reader and writer on parsed trees are the private tier (src/json/json.h); this is
 * the part of them that needs no JSON value. */
#ifndef FIDELIS_FLOAT_REPR_H
#define FIDELIS_FLOAT_REPR_H

#include <stddef.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Python repr() of a finite double into out (at least FDL_FLOAT_REPR_MAX bytes), e.g. "0.1",
 * "1e-05", "1e+16", "-0.0", "5e-324". Returns the length. */
#define FDL_FLOAT_REPR_MAX 32
FDL_API size_t fdl_float_repr(double x, char *out);

#ifdef __cplusplus
}
#endif
#endif
