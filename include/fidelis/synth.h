/* fidelis/synth.h - `synth`: a synthetic but honest reference/candidate dataset pair, packed
 * like any capture, so compare can be tried (and tested) without a model or a GPU.
 *
 * synth sits above dataset (it packs with fdl_ds_pack) and engine (it quantizes with
 * fdl_quant_int4_rtn); compare never depends on it. */
#ifndef FIDELIS_SYNTH_H
#define FIDELIS_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDL_SYNTH_VOCAB_DEFAULT 32000
#define FDL_SYNTH_HIDDEN_DEFAULT 512
#define FDL_SYNTH_CONTEXTS_DEFAULT 8
#define FDL_SYNTH_TOKENS_DEFAULT 128
#define FDL_SYNTH_GROUP 32 /* int4 quantization group along the hidden axis */

typedef struct {
  const char *out_dir; /* must not exist; receives reference/ and candidate/ */
  uint64_t seed;
  size_t vocab, hidden, contexts, tokens_per_context; /* 0: the defaults above */
  unsigned threads;        /* for pack's validation; 0 = every online CPU */
  const char *created_utc; /* passed to pack (fdl_ds_pack_opts.created_utc); NULL: now */
  fdl_notice_fn notice;    /* optional: told about stale staging directories removed */
  void *notice_arg;
} fdl_synth_opts;

typedef struct {
  char reference_sha256[FDL_SHA256_HEX_BUF]; /* dataset_sha256 of each side */
  char candidate_sha256[FDL_SHA256_HEX_BUF];
  size_t rows; /* scored rows per side */
} fdl_synth_result;

FDL_API void fdl_synth_opts_default(fdl_synth_opts *o);

/* Writes a synthetic, honest dataset pair: a random BF16 head and random BF16 hidden states
 * over a built-in panel with domains (reference, role root), and a candidate whose head is the
 * reference head quantized to int4 (round to nearest, symmetric, groups of 32 along the hidden
 * axis) and decoded back to BF16, with the same hidden states: a head-only quantization, to be
 * compared with each side's own head. Both go through fdl_ds_pack. Deterministic in (seed,
 * sizes). */
FDL_API fdl_status fdl_synth(const fdl_synth_opts *o, fdl_synth_result *r, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
