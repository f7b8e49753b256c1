/* fuzz_tokenize.c - fdl_tok_encode and fdl_tok_decode on any bytes, with two tokenizers built
 * once per process: a byte-level BPE (GPT-2's split regex, a few merges, a special token) and a
 * SentencePiece-style BPE (the ▁ normalizer, byte fallback, scores-free merges). Text that is
 * not UTF-8 must be refused with its offset; anything else encodes to ids inside the vocabulary,
 * and on the byte-level tokenizer decode(encode(text)) gives the text back byte for byte (it is
 * lossless); fdl_tok_encode_each hands over the same ids in its batches. Input: byte 0 picks the
 * tokenizer (bit 0) and the encode flags (bits 1-2); the rest is the text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATH 1024

typedef struct {
  char dir[MAX_PATH];
  fdl_tok *tok[2];
} state;

static state g;

static void fail(const char *what) {
  fprintf(stderr, "fuzz_tokenize: %s\n", what);
  abort();
}

static void put_utf8(FILE *f, unsigned cp) {
  if (cp < 0x80) {
    if (cp == '"' || cp == '\\') fputc('\\', f);
    fputc((int)cp, f);
  } else if (cp < 0x800) {
    fputc(0xC0 | (cp >> 6), f);
    fputc(0x80 | (cp & 63), f);
  } else {
    fputc(0xE0 | (cp >> 12), f);
    fputc(0x80 | ((cp >> 6) & 63), f);
    fputc(0x80 | (cp & 63), f);
  }
}

/* GPT-2's byte-to-character table: printable Latin-1 bytes stand for themselves, the rest for
 * U+0100 upwards in byte order. */
static unsigned byte_char(unsigned b) {
  bool own = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  if (own) return b;
  unsigned k = 0;
  for (unsigned c = 0; c < b; c++)
    if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174)) k++;
  return 256 + k;
}

static void write_byte_level(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs("{\"version\":\"1.0\",\"added_tokens\":[{\"id\":262,\"content\":\"<|endoftext|>\","
        "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
        "\"special\":true}],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\","
        "\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true},"
        "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
        "\"trim_offsets\":true,\"use_regex\":true},\"model\":{\"type\":\"BPE\",\"dropout\":null,"
        "\"unk_token\":null,\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,"
        "\"fuse_unk\":false,\"byte_fallback\":false,\"vocab\":{",
        f);
  for (unsigned b = 0; b < 256; b++) {
    fputs(b ? ",\"" : "\"", f);
    put_utf8(f, byte_char(b));
    fprintf(f, "\":%u", b);
  }
  fputs(",\"th\":256,\"the\":257,\"\xc4\xa0the\":258,\"in\":259,\"\xc4\xa0"
        "a\":260,"
        "\"\xc4\xa0\xc4\xa0\":261},\"merges\":[\"t h\",\"th e\",\"\xc4\xa0 the\",\"i n\","
        "\"\xc4\xa0 a\",\"\xc4\xa0 \xc4\xa0\"]}}\n",
        f);
  if (fclose(f)) abort();
}

static void write_spm(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs("{\"version\":\"1.0\",\"added_tokens\":[{\"id\":0,\"content\":\"<unk>\","
        "\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,"
        "\"special\":true},{\"id\":1,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":false,"
        "\"rstrip\":false,\"normalized\":false,\"special\":true}],\"normalizer\":{\"type\":"
        "\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"},"
        "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xe2\x96\x81\"}]},"
        "\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":{\"type\":\"Sequence\","
        "\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xe2\x96\x81\"},"
        "\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":\"Strip\","
        "\"content\":\" \",\"start\":1,\"stop\":0}]},\"model\":{\"type\":\"BPE\",\"dropout\":null,"
        "\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,"
        "\"fuse_unk\":true,\"byte_fallback\":true,\"vocab\":{\"<unk>\":0,\"<s>\":1",
        f);
  for (unsigned b = 0; b < 256; b++) fprintf(f, ",\"<0x%02X>\":%u", b, 2 + b);
  fputs(",\"\xe2\x96\x81\":258,\"a\":259,\"b\":260,\"\xe2\x96\x81"
        "a\":261,\"ab\":262,"
        "\"\xe2\x96\x81"
        "ab\":263},\"merges\":[\"\xe2\x96\x81 a\",\"a b\",\"\xe2\x96\x81"
        "a b\"]}}\n",
        f);
  if (fclose(f)) abort();
}

/* fdl_tok_encode_each's batches, compared with fdl_tok_encode's ids as they come. */
typedef struct {
  const int32_t *want;
  size_t n, at;
} replay;

static fdl_status check_batch(void *ctx, const int32_t *ids, size_t n, fdl_err *err) {
  (void)err;
  replay *r = ctx;
  if (r->at + n > r->n || memcmp(r->want + r->at, ids, n * sizeof *ids))
    fail("fdl_tok_encode_each differs from fdl_tok_encode");
  r->at += n;
  return FDL_OK;
}

static void cleanup(void) {
  for (int i = 0; i < 2; i++) fdl_tok_free(g.tok[i]);
  char p[MAX_PATH + 32];
  snprintf(p, sizeof p, "%s/byte.json", g.dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/spm.json", g.dir);
  unlink(p);
  rmdir(g.dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(g.dir, sizeof g.dir, "%s/fdl-fuzz-tokenize-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g.dir)) abort();
  atexit(cleanup);
  char p[2][MAX_PATH + 32];
  snprintf(p[0], sizeof p[0], "%s/byte.json", g.dir);
  snprintf(p[1], sizeof p[1], "%s/spm.json", g.dir);
  write_byte_level(p[0]);
  write_spm(p[1]);
  for (int i = 0; i < 2; i++) {
    fdl_err err = {FDL_OK, ""};
    if (fdl_tok_load(p[i], &g.tok[i], &err) != FDL_OK) {
      fprintf(stderr, "fuzz_tokenize: %s: %s\n", p[i], err.msg);
      abort();
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size || size > 65536) return 0;
  unsigned which = data[0] & 1, flags = (data[0] >> 1) & 3;
  const char *text = (const char *)data + 1;
  size_t len = size - 1;
  fdl_tok *t = g.tok[which];
  fdl_tok_info info;
  fdl_tok_get_info(t, &info);
  int32_t *ids = NULL;
  size_t n = 0;
  fdl_err err = {FDL_OK, ""};
  size_t bad = fdl_utf8_invalid_at(text, len);
  fdl_status s = fdl_tok_encode(t, text, len, flags, &ids, &n, &err);
  if (bad < len) {
    char want[32];
    snprintf(want, sizeof want, "byte offset %zu ", bad);
    if (s == FDL_OK || !strstr(err.msg, want)) fail("text that is not UTF-8 was not refused");
    return 0;
  }
  if (s != FDL_OK) {
    if (s != FDL_NOMEM) fail("valid UTF-8 was refused");
    return 0;
  }
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || (size_t)ids[i] >= info.vocab) fail("an id outside the vocabulary");
  replay r = {ids, n, 0};
  if (fdl_tok_encode_each(t, text, len, flags, check_batch, &r, &err) != FDL_OK || r.at != n)
    fail("fdl_tok_encode_each differs from fdl_tok_encode");
  char *back = NULL;
  size_t blen = 0;
  if (fdl_tok_decode(t, ids, n, &back, &blen, &err) != FDL_OK) fail("its own ids did not decode");
  /* Byte-level BPE maps every byte to a token and back; special-token text kept as text
   * (flags without PARSE_SPECIAL) round-trips too, as does a matched one (decoded as its text). */
  if (which == 0 && !(flags & FDL_TOK_ADD_SPECIAL) && (blen != len || memcmp(back, text, len)))
    fail("byte-level decode(encode(text)) is not the text");
  free(back);
  free(ids);
  return 0;
}
