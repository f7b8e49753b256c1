/* pack.h - state of one `fidelis pack` run, shared by its files (not installed).
 *
 *   pack.c         the run: staging, the record loop, sealing, validation, the final rename
 *   pack_input.c   the panel JSONL and the meta JSON
 *   pack_tensor.c  per-record tensors and the head: shape, dtype, finiteness, BF16 rounding
 *   pack_build.c   the five documents
 *   card.c         README.md with its YAML frontmatter */
#ifndef FIDELIS_DS_PACK_H
#define FIDELIS_DS_PACK_H

#include <limits.h>

#include "dataset/ds_internal.h"
#include "fidelis/tensor.h"

/* One panel context, from one JSONL line. */
typedef struct {
  int64_t index;
  int64_t *tokens;
  size_t ntok;
  uint8_t *mask;         /* 0/1 per token; NULL when the line has none */
  json_t *line;          /* the parsed line (owned): descriptive strings are borrowed from it */
  const char *window_id; /* borrowed from line; NULL when absent or null */
  int64_t scored;        /* rows §7.3 selects */
  /* filled while packing */
  char tok_hex[DS_HEX_LEN + 1];
  char tok_legacy[DS_HEX_LEN + 1];
  char mask_hex[DS_HEX_LEN + 1]; /* "" when the panel has no masks */
  bool present;                  /* a tensor was found and packed */
  char file_hex[DS_HEX_LEN + 1], payload_hex[DS_HEX_LEN + 1], content_hex[DS_HEX_LEN + 1];
  int64_t size_bytes;
} pk_record;

/* The head as packed (or as declared by the meta when no payload is shipped). */
typedef struct {
  bool present; /* head/weight.safetensors written */
  int64_t shape[2];
  const char *dtype; /* static name */
  char file_hex[DS_HEX_LEN + 1];
  char content_hex[DS_HEX_LEN + 1]; /* "" when unknown (logit form without a head) */
} pk_head;

typedef struct {
  const fdl_ds_pack_opts *o;
  fdl_ds_pack_result *res;
  json_t *meta; /* the meta JSON (owned) */
  /* from the meta, read once by fdl_pk_read_meta (borrowed; NULL when absent or not a string) */
  const char *role, *form, *lane, *dataset_id, *engine_name, *engine_version, *panel_id,
      *panel_name, *run_name, *semantic_point, *device, *device_name;
  fdl_dtype forward; /* dtype of the cut in the engine's forward (FDL_DTYPE_COUNT: unknown) */
  struct { /* the meta's head block as declared: strings NULL when absent or not strings */
    const char *content, *file, *dtype; /* tensor_content_sha256, file_sha256, dtype */
    bool shaped;                        /* shape is two integers */
    int64_t shape[2];
  } decl;
  int64_t score_from;
  json_t *header; /* the panel's header line (fidelis panel, docs/PANEL.md), or NULL */
  /* the panel */
  pk_record *recs; /* sorted by index, indices 0..n-1 */
  size_t n;
  bool masks;
  int64_t context_length;
  /* the capture */
  int64_t vocab, width; /* width: hidden size (hidden form) or vocab (logit) */
  fdl_dtype stored;     /* dtype written to capture/ (FDL_DTYPE_COUNT until the first record) */
  bool narrowed;        /* some input was rounded to a narrower dtype */
  bool legacy_key;      /* some input used the pre-v1 key "hidden" */
  pk_head head;
  char content_digest[DS_HEX_LEN + 1];
  size_t present;
  int64_t total_rows, total_size;
  char created[32];
  fdl_stage st;         /* the dataset under construction, beside out_dir */
  char stage[PATH_MAX]; /* st.path */
} pk_ctx;

#define PK_PANEL_HEADER_SCHEMA "fidelis.text-panel.v1"

/* Records a refusal: res->code and the error message. Returns status. */
fdl_status fdl_pk_refuse(pk_ctx *c, fdl_err *err, fdl_refusal_code code, fdl_status status,
                         const char *fmt, ...) FDL_PRINTF(5, 6);

/* pack_input.c */
fdl_status fdl_pk_read_meta(pk_ctx *c, fdl_err *err);
fdl_status fdl_pk_read_panel(pk_ctx *c, fdl_err *err);
void fdl_pk_free_panel(pk_ctx *c);
/* Refuses tensor files whose index has no panel record. */
fdl_status fdl_pk_check_tensor_dir(pk_ctx *c, fdl_err *err);

/* pack_tensor.c */
/* Packs the head payload (or takes the meta's declared head) into c->head. */
fdl_status fdl_pk_pack_head(pk_ctx *c, fdl_err *err);
/* Packs record r's tensor into the stage, or marks it absent. */
fdl_status fdl_pk_pack_record(pk_ctx *c, pk_record *r, fdl_err *err);

/* pack_build.c */
fdl_status fdl_pk_build_docs(pk_ctx *c, fdl_ds_docs *docs, fdl_err *err);
void fdl_pk_free_docs(fdl_ds_docs *docs);

/* card.c */
fdl_status fdl_pk_write_card(pk_ctx *c, const fdl_ds_docs *docs, fdl_err *err);

/* Shared small helpers. */
/* stage + "/" + rel */
fdl_status fdl_pk_stage_path(const pk_ctx *c, const char *rel, char *out, size_t cap, fdl_err *err);
fdl_status fdl_pk_mkdir(const pk_ctx *c, const char *rel, fdl_err *err);

#endif
