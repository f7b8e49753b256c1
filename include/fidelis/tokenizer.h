/* fidelis/tokenizer.h - text to token ids and back, exactly as the model's own tokenizer does
 * (docs/TOKENIZER.md).
 *
 * Loaded from a Hugging Face tokenizer.json (with tokenizer_config.json beside it when present)
 * or from the tokenizer inside a GGUF file. Supported: BPE with byte-level pre-tokenization
 * (GPT-2, Llama 3, Qwen, DeepSeek, StarCoder splits), BPE with byte fallback and SentencePiece
 * spaces (Llama 2, Mistral, TinyLlama, Phi-3), and GGUF's "gpt2" and "llama" models. Anything
 * else (WordPiece, Unigram, an unknown GGUF pre-tokenizer, an unknown step type) is refused by
 * name, never approximated.
 *
 * An fdl_tok is used by one thread at a time (encode keeps a word cache). */
#ifndef FIDELIS_TOKENIZER_H
#define FIDELIS_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fdl_tok fdl_tok;

/* One file the tokenizer was read from: the panel's and dataset's tokenizer identity. */
typedef struct {
  char name[256]; /* relative to the model directory, or the file's own name */
  uint64_t bytes;
  char sha256[FDL_SHA256_HEX_LEN + 1];
} fdl_tok_file;

typedef struct {
  size_t vocab;          /* ids are 0..vocab-1 */
  int32_t bos, eos;      /* -1: none */
  bool add_bos, add_eos; /* what FDL_TOK_ADD_SPECIAL adds */
  const char *kind;      /* e.g. "byte-level BPE", "SentencePiece BPE (scores)" */
  const char *source;    /* "tokenizer.json" or "gguf" */
  const char *id; /* tokenizer.id: "tokenizer.json-sha256-<16 hex>" / "gguf-sha256-<16 hex>" */
  const fdl_tok_file *files;
  size_t n_files;
} fdl_tok_info;

enum {
  FDL_TOK_ADD_SPECIAL = 1u << 0,   /* add BOS/EOS as the tokenizer says */
  FDL_TOK_PARSE_SPECIAL = 1u << 1, /* special-token text in the input becomes that token */
};

/* path: a model directory (its tokenizer.json and tokenizer_config.json), a tokenizer.json, or
 * a .gguf file. Every length and count is bounded by the file before anything is allocated. */
FDL_API fdl_status fdl_tok_load(const char *path, fdl_tok **tok, fdl_err *err);
FDL_API void fdl_tok_free(fdl_tok *tok);
FDL_API void fdl_tok_get_info(const fdl_tok *tok, fdl_tok_info *info);

/* Encodes len bytes of UTF-8. Text that is not UTF-8 is refused (FDL_INVALID) naming the byte
 * offset of the first bad byte. *ids is malloc'd (free()); *n may be 0. */
FDL_API fdl_status fdl_tok_encode(fdl_tok *tok, const char *text, size_t len, unsigned flags,
                                  int32_t **ids, size_t *n, fdl_err *err);

/* Receives the ids of fdl_tok_encode_each in order, in batches of any size; a status other than
 * FDL_OK stops the encoding and is returned. */
typedef fdl_status (*fdl_tok_sink)(void *ctx, const int32_t *ids, size_t n, fdl_err *err);

/* fdl_tok_encode handing the ids to sink as they are made instead of holding them: beyond the
 * text, its memory does not grow with the text's length (docs/TOKENIZER.md says where it can).
 * The text is checked UTF-8 before the first id is handed over; a later failure (the regex
 * engine's limits, memory) returns after some batches were. */
FDL_API fdl_status fdl_tok_encode_each(fdl_tok *tok, const char *text, size_t len, unsigned flags,
                                       fdl_tok_sink sink, void *ctx, fdl_err *err);

/* Decodes ids (each must be < vocab) into bytes: *text is malloc'd and NUL-terminated, *len its
 * length without the NUL. Special tokens are written as their text. */
FDL_API fdl_status fdl_tok_decode(const fdl_tok *tok, const int32_t *ids, size_t n, char **text,
                                  size_t *len, fdl_err *err);

/* The text of one token as its file writes it (not decoded); NULL past the vocabulary. */
FDL_API const char *fdl_tok_token_text(const fdl_tok *tok, int32_t id, size_t *len);

/* The offset of the first byte of s[0..n) that does not start or continue valid UTF-8, or n. */
FDL_API size_t fdl_utf8_invalid_at(const char *s, size_t n);

#ifdef __cplusplus
}
#endif
#endif
