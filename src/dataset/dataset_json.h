/* dataset/dataset_json.h - the dataset's documents as parsed trees (json_t) and the calls on them,
 * the private tier of fidelis/dataset.h (docs/layers.tsv): jansson stays out of the installed
 * headers. The loaded dataset (fdl_dataset), the documents to write (fdl_ds_docs) and a loaded pack
 * panel (fdl_ds_panel) hold trees, and only the areas and the CLI use them, so each struct moved
 * here whole; the typed view fdl_ds_manifest stays public. */
#ifndef FIDELIS_DATASET_JSON_H
#define FIDELIS_DATASET_JSON_H

#include <jansson.h>

#include "fidelis/dataset.h"
#include "fidelis/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The registry's scope_digest string (§11) of a scope block: FDL_INVALID when a field it needs
 * is missing or mistyped. Appends to out (not hashed: the digest is the string itself). */
fdl_status fdl_ds_scope_digest(const json_t *scope, fdl_buf *out, fdl_err *err);

/* The sealed report document of §12.3 (keys schema, format_version, receipt_sha256, subject,
 * structural_status, checks_run sorted, errors, warnings, error_count, warning_count), plus
 * "conformance_level" when with_level is true. */
fdl_status fdl_ds_report_to_json(const fdl_ds_report *r, bool with_level, json_t **out,
                                 fdl_err *err);

/* The checks that need the top manifest alone (validate's schema layer and path rules, steps 2
 * and 4), adding findings to rep. */
void fdl_ds_check_manifest(const json_t *manifest, fdl_ds_report *rep);

/* One capture record (§6), borrowed from the capture manifest. Absent or mistyped fields read
 * as NULL / -1. */
typedef struct {
  int64_t index;
  const char *file;    /* relative to the capture manifest's directory */
  const char *key;     /* tensor key */
  const char *dtype;   /* safetensors dtype name */
  int64_t shape[2];    /* [scored_rows, width] */
  int64_t scored_rows; /* == prediction_positions */
  int64_t size_bytes;
  const char *sha256; /* file digest */
  const char *payload_sha256;
  const char *tensor_content_sha256; /* the content identity */
  const char *token_ids_json_sha256;
  const char *attention_mask_sha256; /* NULL when the panel has no masks */
  const char *window_id;
  const char *domain;
  const char *allocation_stratum;
  json_t *json; /* the record object itself (borrowed) */
} fdl_ds_capture_record;

/* One panel record (§7.2), borrowed from panel/panel.json. */
typedef struct {
  int64_t index;
  const char *token_file;          /* root-relative */
  const char *attention_mask_file; /* root-relative or NULL */
  const char *token_ids_json_sha256;
  const char *attention_mask_sha256;
  int64_t num_tokens;
  int64_t prediction_positions;
  const char *window_id;
  const char *domain;
  json_t *json;
} fdl_ds_panel_record;

/* The runtime document's fields (§9), borrowed from it; NULL when absent or not a string. */
typedef struct {
  struct {
    const char *engine, *device, *device_name;
  } stack_fingerprint;
} fdl_ds_runtime_view;

/* A dataset's documents. Each json_t is owned (NULL when the file is absent or unreadable). */
typedef struct {
  json_t *manifest;               /* fidelity-dataset.json */
  json_t *capture;                /* capture/manifest.json */
  json_t *panel;                  /* panel/panel.json */
  json_t *head;                   /* head/head.json */
  json_t *runtime;                /* runtime/capture-runtime.json */
  fdl_ds_manifest m;              /* the manifest's fields */
  fdl_ds_runtime_view rt;         /* the runtime document's fields */
  fdl_ds_capture_record *records; /* sorted by index */
  size_t n_records;
  fdl_ds_panel_record *panel_records; /* sorted by index */
  size_t n_panel_records;
} fdl_dataset;

/* Loads the top manifest (which must parse and carry the v1 schema) and every sub-document it
 * names that can be read; a sub-document that cannot be read stays NULL (validate says why).
 * Never follows a symlink inside the root. */
fdl_status fdl_dataset_load(const char *root, fdl_dataset *ds, fdl_err *err);

void fdl_dataset_free(fdl_dataset *ds);

/* The token that each scored row of panel record ds->panel_records[at] predicts: row j of the
 * stored tensor is kept position i_j (section 7.3: both i and i+1 attended, i >= score_from)
 * and predicts token i_j + 1. The token file and the mask are read once and checked, in that
 * read, against the record's token_ids_json_sha256 and attention_mask_sha256 (FDL_MISMATCH);
 * a row count other than prediction_positions is FDL_MISMATCH too. *targets is malloc'd with
 * *n entries. */
fdl_status fdl_ds_panel_targets(const char *root, const fdl_dataset *ds, size_t at,
                                int64_t **targets, size_t *n, fdl_err *err);

/* The five documents of a dataset, before sealing. The writer fills every digest the chain
 * names (panel.panel_file_sha256, runtime.file_sha256, capture.manifest_file_sha256,
 * runtime_manifest_sha256, seal.checksums_sha256) and every seal field. */
typedef struct {
  json_t *manifest;   /* top manifest, with its panel/capture/runtime/seal blocks present */
  json_t *panel;      /* written to manifest.panel.panel_file */
  json_t *runtime;    /* written to manifest.runtime.file */
  json_t *head;       /* written to manifest.head.head_json; NULL when that is null */
  json_t *capture;    /* written to manifest.capture.manifest_file */
  json_t *validation; /* NULL: the reference pre-seal stub for manifest.dataset.id */
} fdl_ds_docs;

/* Writes the documents into dir, where every payload file (tokens, masks, tensors, head payload,
 * README.md) already lies, in the required order: panel, runtime, head, capture manifest,
 * validation report, checksums.txt, fidelity-dataset.json. Each file is staged and never
 * overwrites. dataset_sha256 (optional, hex[FDL_SHA256_HEX_BUF]) receives the final seal. */
fdl_status fdl_ds_write_sealed(const char *dir, fdl_ds_docs *docs, char *dataset_sha256,
                               fdl_err *err);

/* Appends one disclosure (affects_comparability, code, detail, severity) to a: nonzero when it
 * is lost (out of memory). */
int fdl_ds_disclose(json_t *a, bool affects, const char *code, const char *detail,
                    const char *severity);
/* Ends a tool's disclosures list: the meta's own (extra, copied) follow it; NULL, and a freed,
 * when any was lost, so a list is never published with one missing. */
json_t *fdl_ds_disclosures_end(json_t *a, const json_t *extra, int lost);

/* The reference pre-seal validation stub for a dataset id (§12.3), sealed. */
fdl_status fdl_ds_preseal_report(const char *dataset_id, json_t **out, fdl_err *err);

/* Packs what a run staged in dir into out (fdl_ds_pack): dir/tensors, the panel (base's
 * panel_path, else dir/panel.jsonl), the head dir/head (none when head is NULL) and the meta
 * dir/meta_name, written from meta first unless meta is NULL. base holds the other options. res
 * is written only when pack ran: a failure before it leaves res->refusal unset. */
fdl_status fdl_ds_pack_staged(const char *dir, const char *head, const char *meta_name,
                              const json_t *meta, const char *out, const fdl_ds_pack_opts *base,
                              fdl_ds_pack_result *res, fdl_err *err);

/* One context of a pack panel, as fdl_ds_panel_load read it. */
typedef struct {
  int64_t index;
  const int64_t *tokens; /* ntok token ids */
  size_t ntok;
  const uint8_t *mask; /* 0/1 per token; NULL: all ones */
  int64_t scored;      /* rows §7.3 keeps (row i predicts token i+1) from score_from on */
} fdl_ds_panel_line;

typedef struct {
  fdl_ds_panel_line *lines; /* sorted by index: lines[i].index == i */
  size_t n;
  void *priv_;        /* private */
  int64_t score_from; /* rows i >= score_from are scored (the header's scoring window, else 0) */
  /* the header's tokenizer (`fidelis panel`, docs/PANEL.md); strings borrowed, NULL if not given */
  struct {
    const char *id, *repository, *revision;
    fdl_ds_bool add_special_tokens;
  } tokenizer;
} fdl_ds_panel;

/* Reads and checks a pack panel file exactly as pack does (the same parser and rules); the
 * message of a refusal starts with its code. Free with fdl_ds_panel_free. */
fdl_status fdl_ds_panel_load(const char *path, fdl_ds_panel *p, fdl_err *err);

void fdl_ds_panel_free(fdl_ds_panel *p);

/* The header's tokenizer block as `fidelis panel` and the .kld import write it: the id, vocab
 * size and files of ti, add_special_tokens, no chat template. NULL when out of memory. */
json_t *fdl_ds_panel_tokenizer_json(const fdl_tok_info *ti, bool add_special_tokens);

/* One domain of a summary: its capture records and their scored positions. */
typedef struct {
  const char *name; /* "(none)" for the records that name no domain */
  int64_t records, positions;
} fdl_ds_domain_count;

/* A summary of a dataset: the loaded documents' fields (role, form, records, vocab and hidden
 * sizes, dtype, head, lane and stack), what the summary adds up, and the seal status recomputed
 * cheaply (the manifest seal and the digest of checksums.txt, not the tensors). */
typedef struct {
  fdl_dataset ds;               /* owned: its m and rt hold the fields shown */
  int64_t positions;            /* scored rows over the capture records */
  fdl_ds_domain_count *domains; /* in the order the records first name them */
  size_t n_domains;
  const char *manifest_seal; /* "absent", "recomputes" or "MISMATCH" */
  const char *checksums_txt; /* "absent", "matches" or "MISMATCH" */
} fdl_ds_summary;

/* Loads root and sums it up; free with fdl_ds_summary_free. */
fdl_status fdl_ds_inspect(const char *root, fdl_ds_summary *out, fdl_err *err);

/* The summary as the JSON object `fidelis inspect --json` prints. */
fdl_status fdl_ds_summary_to_json(const fdl_ds_summary *s, json_t **out, fdl_err *err);

void fdl_ds_summary_free(fdl_ds_summary *s);

#ifdef __cplusplus
}
#endif
#endif
