/* fidelis/panel.h - a pack panel built from text with the model's tokenizer (docs/PANEL.md).
 *
 * Each text file is tokenized whole, without special-token parsing or BOS/EOS, then cut into
 * windows of `context` tokens (a BOS first when the rule asks for one), or, like llama.cpp's
 * llama-perplexity -c N, into chunks of N whose first N/2 positions are context only. The
 * panel's first line is a header naming the tokenizer (every file's name, bytes and sha256) and
 * the scoring window, which `pack` and `capture` carry into the dataset. */
#ifndef FIDELIS_PANEL_H
#define FIDELIS_PANEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { FDL_PANEL_BOS_AUTO = 0, FDL_PANEL_BOS_ALWAYS, FDL_PANEL_BOS_NEVER } fdl_panel_bos;

typedef struct {
  const char *path;   /* a UTF-8 text file */
  const char *domain; /* NULL: the file's name without its extension */
} fdl_panel_text;

typedef struct {
  const char *tokenizer; /* model directory, tokenizer.json or .gguf (fdl_tok_load) */
  const fdl_panel_text *texts;
  size_t n_texts;
  size_t context;    /* N: tokens per record, >= 2 */
  size_t chunks;     /* at most this many records per file; 0: all */
  size_t stride;     /* text tokens between window starts; 0: the window (no overlap) */
  size_t score_from; /* rows i >= score_from are scored */
  fdl_panel_bos bos;
  bool like_llama; /* llama-perplexity's chunks (stride and score_from must be 0) */
  const char *out; /* the panel file; must not exist */
  const char *tokenizer_repository; /* optional: the header's tokenizer.repository and */
  const char *tokenizer_revision;   /* .revision (a Hub snapshot's repository and commit) */
} fdl_panel_opts;

typedef struct {
  size_t records;
  uint64_t scored;        /* scored rows over all records */
  uint64_t text_tokens;   /* tokens of all the texts */
  uint64_t unused_tokens; /* text tokens in no record (tails, gaps) */
  char tokenizer_id[96];
} fdl_panel_result;

/* Writes the panel, staged and renamed into place (never over an existing file). A text that is
 * not UTF-8 is refused naming the file and the byte offset; a text too short for one record is
 * refused naming how many tokens it has and needs. */
FDL_API fdl_status fdl_panel_from_text(const fdl_panel_opts *o, fdl_panel_result *r, fdl_err *err);

#ifdef __cplusplus
}
#endif
#endif
