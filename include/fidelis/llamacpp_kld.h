/* fidelis/llamacpp_kld.h - llama.cpp's `llama-perplexity --kl-divergence-base` files (.kld):
 * the reader, and their import as a sealed logit-form dataset (docs/LLAMACPP-KLD.md; the format
 * is ../shared/spec/LLAMACPP-KLD.md).
 *
 * A .kld holds the token ids llama-perplexity evaluated (n_chunk chunks of n_ctx, as the text
 * tokenized, without the BOS it puts at position 0 of every chunk), then, for every scored
 * position (n_ctx/2 .. n_ctx-2 of each chunk), the row's log-probabilities as 16-bit codes with
 * a float32 scale and offset. The codes are lossy: about 2.4e-4 nats of resolution, and every
 * logit at or below the row's max_logit - 16 is clamped to the row's floor.
 *
 * The reader proves every count of the header against the file's size before anything is read
 * or allocated, and decodes a row exactly as llama.cpp does (float32 scale * q + min_log_prob).
 * The importer rebuilds llama-perplexity's panel from the file's own tokens and hands the
 * decoded rows to fdl_ds_pack, so the dataset obeys every rule a packed dump does. */
#ifndef FIDELIS_LLAMACPP_KLD_H
#define FIDELIS_LLAMACPP_KLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "file.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDL_KLD_MAGIC "_logits_"
#define FDL_KLD_HEADER_BYTES 20u /* magic, n_ctx, n_vocab, n_chunk */
#define FDL_KLD_MIN_CTX 4u       /* below this a chunk scores at most one position */

typedef struct {
  uint32_t n_ctx;     /* tokens per chunk (llama-perplexity -c) */
  uint32_t n_vocab;   /* log-probabilities per row */
  uint32_t n_chunk;   /* chunks in the file */
  uint32_t first;     /* n_ctx / 2: the first scored position of a chunk */
  uint32_t rows;      /* n_ctx - 1 - n_ctx / 2: scored positions (rows) per chunk */
  uint64_t row_words; /* uint16 words per stored row: 2 * ((n_vocab + 1) / 2) + 4 */
  uint64_t size;      /* file bytes: 20 + 4 n_chunk n_ctx + 2 n_chunk rows row_words */
} fdl_kld_info;

/* Checks a header against the size of the file that holds it: the magic, n_ctx >= 4, n_vocab
 * >= 1, n_chunk >= 1, each count no larger than the file could hold, and the exact size (the
 * message gives the expected and actual sizes). name is used in messages. FDL_PARSE for a bad
 * magic or a file shorter than the header, FDL_BOUNDS for a count or size that does not fit,
 * FDL_INVALID for a count out of range. Reads only data[0..20). */
FDL_API fdl_status fdl_kld_parse_header(const uint8_t *data, uint64_t size, const char *name,
                                        fdl_kld_info *info, fdl_err *err);

/* An open .kld file: mapped read-only and checked. */
typedef struct {
  fdl_map map;
  fdl_kld_info info;
  char *path; /* as given, for messages */
} fdl_kld;

/* Opens path (resolved once if it is a symlink, as a file the user named) and checks its header
 * against its size (fdl_kld_parse_header). Close with fdl_kld_close, also after a failure. */
FDL_API fdl_status fdl_kld_open(const char *path, fdl_kld *k, fdl_err *err);
FDL_API void fdl_kld_close(fdl_kld *k);

/* Token i of the file (0 <= i < n_chunk * n_ctx), as stored: chunk c is i in [c n_ctx,
 * (c+1) n_ctx). */
FDL_API int32_t fdl_kld_token(const fdl_kld *k, uint64_t i);

/* The stored header of row `row` of chunk `chunk`, and its codes (n_vocab uint16, little-endian
 * bytes, possibly unaligned: read them with memcpy). */
typedef struct {
  float scale;
  float min_log_prob;
  const uint8_t *q;
} fdl_kld_row;
FDL_API void fdl_kld_row_at(const fdl_kld *k, uint32_t chunk, uint32_t row, fdl_kld_row *r);

/* Decodes row `row` (0 <= row < rows, position first + row, predicting token first + row + 1) of
 * chunk `chunk` into out[n_vocab]: out[i] = scale * q[i] + min_log_prob in float32, llama.cpp's
 * own decode. A scale or min_log_prob that is not finite, a negative scale, or a decoded value
 * that is not finite is refused (FDL_NONFINITE / FDL_INVALID) naming the chunk and the row.
 * *floor_count (may be NULL) receives how many entries have q == 0 (the row's floor, where every
 * clamped logit lands). */
FDL_API fdl_status fdl_kld_decode_row(const fdl_kld *k, uint32_t chunk, uint32_t row, float *out,
                                      uint64_t *floor_count, fdl_err *err);

/* ---- import as a dataset ------------------------------------------------------------------ */

typedef struct {
  const char *kld_path;  /* the .kld base file */
  const char *tokenizer; /* model directory, tokenizer.json or .gguf (fdl_tok_load) */
  const char *out_dir;   /* the dataset; must not exist */
  const char *panel_out; /* optional: also write the panel (JSONL) there; must not exist */
  /* optional: a JSON object whose keys replace the generated meta's (objects merged one level
   * deep, disclosures appended); what the file decides (form, lossy_codec, vocab sizes, the
   * tokenizer id, the scoring window, runtime_source) cannot be replaced. */
  const char *meta_path;
  unsigned threads;        /* for the final validation; 0 = one per online CPU */
  const char *created_utc; /* as fdl_ds_pack_opts.created_utc */
  fdl_notice_fn notice;
  void *notice_arg;
} fdl_kld_import_opts;

typedef struct {
  fdl_ds_pack_result pack; /* digests, counts; on failure the refusal (code, cause) */
  fdl_kld_info info;
  char tokenizer_id[96];
  bool bos;                 /* position 0 of every chunk is the tokenizer's BOS */
  uint64_t floor_entries;   /* decoded entries at their row's floor (q == 0) */
  uint64_t floor_targets;   /* scored targets whose entry is at the floor */
  uint64_t replaced_by_bos; /* chunk starts whose stored token is not BOS (chunks 1..) */
} fdl_kld_import_result;

/* Reads the .kld and the tokenizer (its vocabulary must be the file's n_vocab; with a BOS, the
 * file's first token must be it), builds llama-perplexity's panel from the file's tokens (chunks
 * of n_ctx, position 0 of every chunk the BOS when the tokenizer adds one, positions n_ctx/2 ..
 * n_ctx-2 scored: the panel `fidelis panel --like-llama-perplexity` cuts from the same text),
 * decodes every row, and packs a derived, lossy, logit-form dataset with fdl_ds_pack. Nothing is
 * written before the file and the tokenizer are checked; the dataset appears whole or not at
 * all; on failure r->pack.refusal names the code and err says what, on which chunk and row. */
FDL_API fdl_status fdl_kld_import(const fdl_kld_import_opts *o, fdl_kld_import_result *r,
                                  fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
