/* fidelis/kiln.h - Kiln request and record identities (KILN-ATTRIBUTION.md §2, §5, §6, §14):
 * canonical hashing over parsed values, the `check` walker for requests and v1/v2 results, the
 * model fingerprint of a directory and the first-divergence request builder. docs/ATTRIBUTION.md
 * describes the commands built on it. */
#ifndef FIDELIS_KILN_H
#define FIDELIS_KILN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDL_KILN_REQUEST_SCHEMA "kiln.hf-next-token-request.v1"
#define FDL_KILN_VOCAB_SIZE 248320u
/* The attribution state of §12-§14: 166 input ids (the prompt, then the continuation prefix
 * 1206, 5517, 264 every worker path starts with), a model of hidden size 2560. */
#define FDL_KILN_INPUT_TOKENS 166
#define FDL_KILN_CONTINUATION                                                                      \
  { 1206, 5517, 264 }
#define FDL_KILN_HIDDEN_SIZE 2560
#define FDL_KILN_MAX_INPUT 4096u /* prompt and input token ids, each at most */
#define FDL_KILN_MAX_PREFIX 64u  /* continuation prefix entries */
#define FDL_KILN_REQUEST_MAX_BYTES (256u * 1024u)

/* What fdl_kiln_check_doc found. */
typedef struct {
  const char *schema;          /* static copy of the recognised schema string */
  char identity[FDL_SEAL_BUF]; /* request: canonical_sha256(request); result: result_sha256 */
  bool has_refs;     /* the kind has rules that need other files (receipts, request, oracle) */
  bool refs_checked; /* and they were checked (a root was given) */
} fdl_kiln_checked;

/* Reads path Kiln-strict (a request at most 256 KiB) and checks it by its schema (the rules of
 * fdl_kiln_check_doc, attr/kiln_json.h: the calls on parsed trees are the private tier). */
FDL_API fdl_status fdl_kiln_check_file(const char *path, fdl_kiln_checked *res, fdl_err *err);

/* ---- fidelis' own path attribution (docs/ATTRIBUTION.md) ---------------------------------- */

#define FDL_KILN_PATH_ATTR_SCHEMA "fidelis.path-attribution.v1"
#define FDL_KILN_LABEL_PATH "first_divergent_path"
#define FDL_KILN_LABEL_NONE "serving_only_or_not_reproduced"
#define FDL_KILN_MAX_PATHS 64u

#define FDL_KILN_PATH_V2_SCHEMA "kiln.rocm-hf-path-attribution-result.v2"

#ifdef __cplusplus
}
#endif
#endif
