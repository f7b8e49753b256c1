/* fidelis/capture.h - `capture`: run a model over a panel with fidelis' own engine and seal
 * what it produced as a fidelity dataset.
 *
 * capture sits above engine (fdl_engine_run) and dataset (it packs with fdl_ds_pack); compare
 * never depends on it. The engine's arithmetic is fixed (docs/NUMERICS.md), so a capture is the
 * same bytes on any x86-64 machine, thread count or ISA, given the same created_utc. */
#ifndef FIDELIS_CAPTURE_H
#define FIDELIS_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "engine.h"
#include "num.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  FDL_CAPTURE_HIDDEN = 0, /* hidden states after the final norm, stored BF16 (or F32) */
  FDL_CAPTURE_LOGITS = 1  /* full logits, stored F32 */
} fdl_capture_form;

/* Told after each panel record: done of total records. */
typedef void (*fdl_capture_progress_fn)(void *arg, uint64_t done, uint64_t total);

typedef struct {
  const char *model_dir;  /* config.json + safetensors (fdl_model_load) */
  const char *panel_path; /* JSONL, as `pack` reads it (docs/PACK.md) */
  const char *out_dir;    /* must not exist */
  fdl_capture_form form;
  fdl_engine_path path;         /* prefill or decode */
  unsigned threads;             /* 0: every online CPU */
  fdl_num_isa isa;              /* FDL_NUM_ISA_AUTO: the best the CPU has; no bit depends on it */
  const char *dataset_id;       /* NULL: derived from the model directory's name and the form */
  const char *repository;       /* weights.repository; NULL: "local/<model directory name>" */
  const char *revision;         /* weights.revision, a commit (a Hub snapshot's); NULL: null. The
                                   model's own tokenizer is recorded with the same two */
  const char *panel_repository; /* panel.repository / panel.revision (a Hub snapshot's file) */
  const char *panel_revision;
  const char *tokenizer_id; /* tokenizer.id; NULL: from tokenizer.json's digest (docs/CAPTURE.md) */
  const char *created_utc;  /* "YYYY-MM-DDTHH:MM:SSZ"; NULL: the wall clock */
  fdl_notice_fn notice;     /* optional: stale staging directories removed */
  void *notice_arg;
  const char *layers_path; /* optional, must not exist: a safetensors file of every record's
                              layer boundaries (docs/CAPTURE.md), written after the dataset */
  fdl_capture_progress_fn progress; /* optional */
  void *progress_arg;
  bool hidden_f32; /* hidden form: store the engine's F32 hidden states as F32 (dtype_lossless)
                      rather than BF16; ignored for logits, which are always F32 */
  /* NULL: one process. The MPI build's program passes its group (docs/SCALE.md): every rank
   * runs its share of the records, and rank 0 alone writes the dataset, the same bytes as one
   * process. */
  const struct fdl_scale *scale;
} fdl_capture_opts;

typedef struct {
  char dataset_sha256[FDL_SHA256_HEX_LEN + 1];
  char capture_content_digest[FDL_SHA256_HEX_LEN + 1];
  size_t records;
  uint64_t scored_rows;
  bool quantized;      /* the model is a GPTQ checkpoint: role quant, weights reconstructed */
  fdl_refusal refusal; /* on a pack refusal: its code */
} fdl_capture_result;

/* Runs the model over every panel record and packs the result at out_dir, which appears whole
 * or not at all. Panels with masks must be right-padded (ones, then zeros): the engine runs the
 * leading real tokens only. */
FDL_API fdl_status fdl_capture(const fdl_capture_opts *o, fdl_capture_result *r, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
