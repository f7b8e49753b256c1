/* digest/seal_json.h - seals over parsed documents (json_t): the private tier of fidelis/digest.h
 * (docs/layers.tsv), which keeps jansson out of the installed headers; fdl_seal_verify_file is the
 * public door. */
#ifndef FIDELIS_SEAL_JSON_H
#define FIDELIS_SEAL_JSON_H

#include <jansson.h>

#include "fidelis/digest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Finds the recipe and seal field of a document from its "schema" string.
 * FDL_UNSUPPORTED (with a message naming the schema) when the kind is unknown. */
fdl_status fdl_seal_kind(const json_t *doc, fdl_seal_recipe *recipe, const char **field,
                         fdl_err *err);

/* Computes the seal value of doc under recipe into out (at least FDL_SEAL_BUF bytes): 64 hex
 * for fidelity, "sha256:" + 64 hex for kiln. doc is not modified. */
fdl_status fdl_seal_compute(const json_t *doc, fdl_seal_recipe recipe, const char *field, char *out,
                            fdl_err *err);

/* Computes the seal and stores it in doc[field]. */
fdl_status fdl_seal_apply(json_t *doc, fdl_seal_recipe recipe, const char *field, fdl_err *err);

/* Recomputes a document's seal (kind from its schema) and compares with the stored value.
 * The document must already be read the way its dialect hashes values: for a kiln.* document
 * that is fdl_json_read_opts.kiln_strict (-0.0 read as 0.0). Prefer fdl_seal_verify_file,
 * which does that itself. */
fdl_status fdl_seal_verify(const json_t *doc, fdl_seal_check *res, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
