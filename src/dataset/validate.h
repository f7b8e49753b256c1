/* validate.h - the state one validate run shares between its step files (not installed).
 *
 * Steps follow FIDELITY-DATASET §12.1; each file owns a group of them:
 *   validate.c          load, schema, seals, sub-document digests, the run itself
 *   validate_records.c  capture_content_digest, REC-1..5, coverage COV-1..3
 *   validate_panel.c    BIND-1..6, PANEL-D2, token and mask files
 *   validate_rules.c    head, determinism, role, scope, lane, remap
 *   validate_files.c    PATH-4 tree walk, checksums.txt, tensor verification */
#ifndef FIDELIS_DS_VALIDATE_H
#define FIDELIS_DS_VALIDATE_H

#include "dataset/ds_internal.h"

/* A sub-document as loaded: the parsed tree and the digest of its exact bytes. */
typedef struct {
  const char *rel; /* dataset-relative path (borrowed from the manifest) */
  json_t *doc;     /* owned; NULL when it could not be loaded */
  char file_sha256[DS_HEX_LEN + 1];
} ds_subdoc;

typedef struct {
  int rootfd;
  const fdl_ds_validate_opts *o;
  fdl_ds_report *rep;
  bool payload;       /* false in --manifests-only: payload files are not read */
  json_t *m;          /* the top manifest (owned) */
  fdl_ds_manifest mf; /* its fields, once it is an object */
  ds_subdoc capture, panel, head, runtime;
  ds_tree tree; /* every entry below the root (payload and manifests-only modes) */
  bool have_tree;
  char capture_dir[DS_MAX_PATH]; /* directory capture record files resolve from */
} ds_vctx;

/* validate_files.c */
void fdl_ds_v_tree(ds_vctx *v);
/* checksums.txt (SEAL-1(b), SEAL-1(c)/SEAL-2) and, with verify_tensors, SEAL-1(d) and the
 * head payload: one parallel hashing pass over every byte that needs it. */
fdl_status fdl_ds_v_files(ds_vctx *v, fdl_err *err);

/* validate_records.c */
void fdl_ds_v_capture_digest(ds_vctx *v);
void fdl_ds_v_records(ds_vctx *v);
void fdl_ds_v_coverage(ds_vctx *v);

/* validate_panel.c */
void fdl_ds_v_panel(ds_vctx *v);

/* validate_rules.c */
void fdl_ds_v_head(ds_vctx *v);
void fdl_ds_v_determinism(ds_vctx *v);
void fdl_ds_v_role(ds_vctx *v);
void fdl_ds_v_scope(ds_vctx *v);
void fdl_ds_v_lane(ds_vctx *v);
void fdl_ds_v_remap(ds_vctx *v);

/* Shared: the capture manifest's records array (NULL when absent or mistyped). */
json_t *fdl_ds_v_records_of(const ds_vctx *v);
/* Shared: whether p was allocated; where not, the run is marked out of memory and the check
 * stops without a finding (a check that cannot run is not one that failed). */
bool fdl_ds_v_got(ds_vctx *v, const void *p);
/* Shared: one document mirroring another: each of keys (NULL-ended) that a and b both hold
 * must be equal (Python ==), or a finding whose fmt names the key. */
void fdl_ds_v_mirror(ds_vctx *v, const json_t *a, const json_t *b, const char *const *keys,
                     fdl_ds_code code, const char *rule, const char *where, const char *fmt);
/* Loads rel as a sealed sub-document for rule `label` (CAPTURE, PANEL, ...): missing_file,
 * bad_schema, then the receipt_sha256 self-seal (seal_failed) and the path walk. */
json_t *fdl_ds_v_load_sub(ds_vctx *v, const char *rel, const char *label, char *file_sha256,
                          bool missing_ok);

#endif
