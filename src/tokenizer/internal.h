/* internal.h - the tokenizer's parts, shared by its files (docs/TOKENIZER.md).
 *
 * A tokenizer is one pipeline whichever file it came from: added tokens are split out, each text
 * fragment is normalized, pre-tokenized into pieces, and each piece is encoded by the model
 * (rank-ordered BPE merges on ids, or SentencePiece's score-ordered merges on text). The loaders
 * (load_hf.c for tokenizer.json, load_gguf.c for GGUF) only fill this structure. */
#ifndef FDL_TOKENIZER_INTERNAL_H
#define FDL_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/buf.h"
#include "base/quote.h" /* fdl_utf8_decode, the one UTF-8 decoder */
#include "fidelis/tokenizer.h"

/* Limits (docs/TOKENIZER.md): far above every published vocabulary (the largest are ~262k), so
 * that a file cannot make the loader allocate what no real tokenizer needs. */
#define TK_MAX_VOCAB (1u << 24)
#define TK_MAX_TOKEN_BYTES (1u << 16)
#define TK_MAX_OPS 64 /* normalizer / pre-tokenizer / decoder steps */

typedef struct {
  uint32_t off, len;
} tk_str;

typedef enum {
  TK_NORMAL = 1,
  TK_UNKNOWN = 2,
  TK_CONTROL = 3,
  TK_USER = 4,
  TK_UNUSED = 5,
  TK_BYTE = 6
} tk_type;

typedef enum { TK_MODEL_BPE, TK_MODEL_SPM } tk_model;

typedef enum {
  TK_N_NFC,
  TK_N_NFKC,
  TK_N_NFD,
  TK_N_NFKD,
  TK_N_LOWER,
  TK_N_PREPEND,
  TK_N_REPLACE,
  TK_N_STRIP
} tk_norm_kind;
typedef enum { TK_P_SPLIT, TK_P_BYTELEVEL, TK_P_DIGITS, TK_P_METASPACE } tk_pre_kind;
typedef enum {
  TK_B_REMOVED,
  TK_B_ISOLATED,
  TK_B_MERGED_PREV,
  TK_B_MERGED_NEXT,
  TK_B_CONTIGUOUS
} tk_behavior;
typedef enum {
  TK_D_BYTELEVEL,
  TK_D_REPLACE,
  TK_D_BYTEFALLBACK,
  TK_D_FUSE,
  TK_D_STRIP,
  TK_D_METASPACE
} tk_dec_kind;
typedef enum { TK_PREPEND_NEVER, TK_PREPEND_FIRST, TK_PREPEND_ALWAYS } tk_prepend;

typedef struct {
  pcre2_code *code; /* NULL for a literal: lit/lit_len */
  bool jit;         /* code was JIT-compiled */
  char *lit;
  size_t lit_len;
} tk_pattern;

/* One normalizer step. PREPEND/REPLACE: a = the text to prepend / replace with; REPLACE matches
 * pat. STRIP: left/right. */
typedef struct {
  tk_norm_kind kind;
  tk_pattern pat;
  char *a;
  size_t a_len;
  bool left, right;
} tk_norm;

/* One pre-tokenizer step. SPLIT: pat, behavior, invert. BYTELEVEL: prefix_space, use_regex (the
 * GPT-2 pattern in pat). DIGITS: individual. METASPACE: repl (U+2581 by default), prepend, split.
 */
typedef struct {
  tk_pre_kind kind;
  tk_pattern pat;
  tk_behavior behavior;
  bool invert, prefix_space, use_regex, individual, split;
  char repl[8];
  size_t repl_len;
  tk_prepend prepend;
} tk_pre;

/* One decoder step. REPLACE: a -> b. STRIP: ch, start, stop. METASPACE: repl, prepend. */
typedef struct {
  tk_dec_kind kind;
  char *a, *b;
  size_t a_len, b_len;
  uint32_t ch;
  unsigned start, stop;
  char repl[8];
  size_t repl_len;
  tk_prepend prepend;
} tk_dec;

typedef struct {
  int32_t id;
  bool special, lstrip, rstrip, single_word, normalized;
} tk_added;

/* text -> id, open addressing over the pool. */
typedef struct {
  uint32_t *slot; /* id + 1; 0 = empty */
  size_t mask;
} tk_map;

typedef struct {
  uint64_t pair; /* left id << 32 | right id; UINT64_MAX = empty */
  uint32_t rank, merged;
} tk_merge;

typedef struct {
  tk_merge *slot;
  size_t mask, n;
} tk_merges;

/* The word cache (cache.c): piece bytes -> ids, dropped whole when full. */
typedef struct {
  uint64_t *slot; /* hash << 32 | entry + 1 (0 = empty) */
  size_t mask, used;
  char *bytes;
  size_t bytes_len, bytes_cap;
  int32_t *ids;
  size_t ids_len, ids_cap;
  struct tk_cache_entry {
    uint32_t off, len, ids_off, n_ids;
  } * ent;
  size_t n_ent, cap_ent;
  /* In front of it, direct-mapped and small enough to stay in the core's cache: pieces of at
   * most 8 bytes that are one token (the frequent words), keyed by their bytes. */
  struct tk_hot {
    uint64_t key; /* the piece's bytes, zero-padded */
    int32_t id;
    uint32_t len; /* 0 = empty */
  } * hot;
} tk_cache;

/* Working arrays of one piece's merge, kept between pieces. */
typedef struct {
  int32_t *id;
  uint32_t *start, *len, *prev, *next;
  size_t cap;
  struct tk_heap_entry {
    double key; /* BPE: rank; SPM: -score (smaller first) */
    uint32_t left, right, a, b;
  } * heap;
  size_t n_heap, cap_heap;
} tk_scratch;

struct fdl_tok {
  tk_model model;
  size_t n; /* vocabulary size: ids 0..n-1 */
  char *pool;
  size_t pool_len, pool_cap;
  tk_str *text;  /* [n] what the model matches: raw bytes for a byte-level vocabulary */
  tk_str *shown; /* [n] the token as the file writes it (decoders start from it) */
  float *score;  /* [n] SentencePiece scores (SPM) */
  uint8_t *type; /* [n] tk_type */
  tk_map map;    /* text -> id over the vocabulary */
  tk_merges merges;
  int32_t byte_tok[256]; /* byte-level: each byte's token; byte fallback: <0xXX>; -1 none */
  bool byte_level, byte_fallback, ignore_merges, fuse_unk;
  bool added_as_written; /* GGUF: decode copies control/user-defined tokens as written */
  uint64_t *pairs;       /* the adjacent code-point pairs inside some token (cut.c) */
  size_t pairs_cap;      /* a power of two; 0 until the first piece cut.c cuts */
  int32_t unk;
  tk_norm norm[TK_MAX_OPS];
  size_t n_norm;
  tk_pre pre[TK_MAX_OPS];
  size_t n_pre;
  tk_dec dec[TK_MAX_OPS];
  size_t n_dec;
  tk_added *added; /* in file order */
  size_t n_added;
  uint32_t *added_order;      /* added indices grouped by first byte, longest first */
  uint32_t added_start[257];  /* added_order[added_start[b] .. added_start[b + 1]) */
  uint32_t added_kinds[2][2]; /* how many added tokens are [special][normalized] */
  int32_t bos, eos;
  bool add_bos, add_eos;
  char kind[64], source[32], id[96];
  fdl_tok_file files[2];
  size_t n_files;
  tk_cache cache;
  tk_scratch scratch;
  pcre2_match_data *md;
  pcre2_match_context *mc;
  pcre2_jit_stack *jit;
};

/* vocab.c */
fdl_status fdl_tk_init(fdl_tok *t, size_t n, fdl_err *err);
/* Appends bytes to the pool; *s receives where. */
fdl_status fdl_tk_pool_add(fdl_tok *t, const char *p, size_t len, tk_str *s, fdl_err *err);
static inline const char *tk_ptr(const fdl_tok *t, tk_str s) {
  return t->pool + s.off;
}
/* Indexes text[0..n) in map; a text seen twice keeps its first id (as the loaders' references
 * do). Then byte_tok, by byte_level and byte_fallback, which the loader has set. */
fdl_status fdl_tk_build_map(fdl_tok *t, fdl_err *err);
int32_t fdl_tk_lookup(const fdl_tok *t, const char *p, size_t len);
fdl_status fdl_tk_merge_add(fdl_tok *t, uint32_t a, uint32_t b, uint32_t rank, uint32_t merged,
                            fdl_err *err);
const tk_merge *fdl_tk_merge_find(const fdl_tok *t, uint32_t a, uint32_t b);
void fdl_tk_release(fdl_tok *t);
uint64_t fdl_tk_hash(const void *p, size_t n);

/* bytes.c: GPT-2's byte <-> code point table. */
int fdl_tk_cp_byte(uint32_t cp); /* -1: not in the table */
/* Decodes a byte-level token text into raw bytes in out (at most len bytes); false when some
 * code point is not in the table. */
bool fdl_tk_unbyte(const char *p, size_t len, char *out, size_t *out_len);
size_t fdl_tk_utf8_put(uint32_t cp, char *out);

/* regex.c */
fdl_status fdl_tk_pattern_regex(tk_pattern *pt, const char *re, size_t len, const char *where,
                                fdl_err *err);
fdl_status fdl_tk_pattern_literal(tk_pattern *pt, const char *s, size_t len, fdl_err *err);
void fdl_tk_pattern_free(tk_pattern *pt);
/* The next non-empty match of pt in s[from..n): 1 and [*lo, *hi), 0 for none, or -1 when the regex
 * engine ran out of its resource limits (the caller refuses, naming the piece). */
int fdl_tk_pattern_next(const fdl_tok *t, const tk_pattern *pt, const char *s, size_t n,
                        size_t from, size_t *lo, size_t *hi);
/* The match data and JIT stack every regex of t shares (created once). */
fdl_status fdl_tk_regex_ready(fdl_tok *t, fdl_err *err);
extern const char fdl_tk_gpt2_regex[];

/* The text a fragment's pieces point into: offsets below base_n are the fragment itself
 * (borrowed), those from base_n on the text the pre-tokenizer steps wrote (ext). */
typedef struct {
  const char *base;
  size_t base_n;
  fdl_buf ext;
} tk_text;

/* Where ids go. With a sink, the batch is handed over between pieces once it holds TK_BATCH
 * ids, so memory does not grow with the text; without one every id is kept (fdl_tok_encode). */
#define TK_BATCH 4096
typedef struct {
  int32_t *ids;
  size_t n, cap;
  fdl_tok_sink sink;
  void *ctx;
} tk_out;
fdl_status fdl_tk_push_id(tk_out *o, int32_t id, fdl_err *err);
/* Hands the batch to the sink when it is full, or when last (and not empty). */
fdl_status fdl_tk_out_flush(tk_out *o, bool last, fdl_err *err);

/* normalize.c: text -> out (appended), every step in order; start: the text starts the fragment
 * (Prepend writes only there). */
fdl_status fdl_tk_normalize(const fdl_tok *t, const char *s, size_t n, bool start, fdl_buf *out,
                            fdl_err *err);
/* Whether the normalizer can run in blocks, and the first place at or after from where a block
 * of s[0..n) can end (n when none). */
bool fdl_tk_norm_blocks(const fdl_tok *t);
size_t fdl_tk_norm_cut(const fdl_tok *t, const char *s, size_t from, size_t n);
/* pretok.c: cuts x[off, off+len) into pieces and encodes each (fdl_tk_model_piece) in order;
 * first: the fragment starts the text. */
fdl_status fdl_tk_pretokenize(fdl_tok *t, tk_text *x, size_t off, size_t len, bool first, tk_out *o,
                              fdl_err *err);
/* encode.c: one piece through the model, its ids to o. */
fdl_status fdl_tk_model_piece(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err);
/* bpe.c / spm.c: one piece -> ids appended. */
fdl_status fdl_tk_bpe_piece(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err);
/* spm.c: one part of a piece, already cut (cut.c) */
fdl_status fdl_tk_spm_part(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err);
/* cut.c: p[0,n) cut where no merge can join across, each part through fn, o flushed between
 * parts; need_tokens (BPE): cut only between characters that are tokens themselves. */
typedef fdl_status (*tk_part_fn)(fdl_tok *t, const char *p, size_t n, tk_out *o, fdl_err *err);
fdl_status fdl_tk_cut_parts(fdl_tok *t, const char *p, size_t n, bool need_tokens, tk_part_fn fn,
                            tk_out *o, fdl_err *err);
/* The last place fdl_tk_cut_parts would cut p[0,n) (0: none) into *at. */
fdl_status fdl_tk_last_cut(fdl_tok *t, const char *p, size_t n, bool need_tokens, size_t *at,
                           fdl_err *err);
/* cache.c: p[0,n)'s ids from the word cache, else from fn (then remembered). */
fdl_status fdl_tk_cached(fdl_tok *t, const char *p, size_t n, tk_part_fn fn, tk_out *o,
                         fdl_err *err);
/* merge.c: the shared symbol list and priority queue of both models. */
fdl_status fdl_tk_scratch_reserve(tk_scratch *s, size_t n, fdl_err *err);
fdl_status fdl_tk_heap_push(tk_scratch *s, double key, uint32_t left, uint32_t right, uint32_t a,
                            uint32_t b, fdl_err *err);
/* Pops the smallest key, ties to the smallest left; false when empty. */
bool fdl_tk_heap_pop(tk_scratch *s, struct tk_heap_entry *e);
void fdl_tk_scratch_free(tk_scratch *s);
/* Builds the index of added tokens by first byte (after the loader filled t->added). */
fdl_status fdl_tk_index_added(fdl_tok *t, fdl_err *err);
void fdl_tk_cache_free(tk_cache *c);

/* ops.c: the step lists, parsed from tokenizer.json objects or set by the GGUF loader. */
void fdl_tk_ops_free(fdl_tok *t);

/* pre_table.c: the regexes each GGUF tokenizer.ggml.pre name stands for (llama.cpp's table). */
typedef struct {
  const char *const *names; /* NULL-terminated */
  const char *const *regex; /* NULL-terminated, applied in order */
  bool ignore_merges;
} tk_pre_entry;
const tk_pre_entry *fdl_tk_pre_find(const char *name, size_t len);
/* The names, comma-separated, for a refusal message. */
void fdl_tk_pre_names(char *out, size_t cap);

/* load_hf.c / load_gguf.c: the file's bytes were read (and hashed) by load.c. */
typedef struct {
  const char *path, *text;
  size_t len;
} tk_source;
fdl_status fdl_tk_load_hf(fdl_tok *t, const tk_source *json, const tk_source *config, fdl_err *err);
/* Fills f's bytes and sha256 from the mapping it parses. */
fdl_status fdl_tk_load_gguf(fdl_tok *t, const char *path, fdl_tok_file *f, fdl_err *err);

#endif
