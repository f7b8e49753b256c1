/* base/refusal.h - making a refusal (fidelis/refusal.h): what the library's stages and the CLI
 * call when they refuse. A library user reads a refusal; only fidelis writes one. */
#ifndef FIDELIS_BASE_REFUSAL_H
#define FIDELIS_BASE_REFUSAL_H

#include <stdarg.h>

#include "fidelis/refusal.h"
#include "fidelis/status.h"

/* For a failure that has no refusal of its own: FDL_REF_DESTINATION_EXISTS for FDL_EXISTS,
 * FDL_REF_OUT_OF_MEMORY for FDL_NOMEM, otherwise `otherwise`. */
fdl_refusal_code fdl_refusal_code_for(fdl_status s, fdl_refusal_code otherwise);

/* Fills r (code, gate, remedy; NULL gate or remedy is "") and err (status and the message), and
 * returns status. Texts longer than their field are cut. */
fdl_status fdl_refuse(fdl_refusal *r, fdl_err *err, fdl_status status, fdl_refusal_code code,
                      fdl_gate gate, const char *remedy, const char *fmt, ...) FDL_PRINTF(7, 8);
fdl_status fdl_refusev(fdl_refusal *r, fdl_err *err, fdl_status status, fdl_refusal_code code,
                       fdl_gate gate, const char *remedy, const char *fmt, va_list ap);

#endif
