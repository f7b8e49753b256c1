/* fuzz_tokenizer_load.c - the tokenizer loaders (tokenizer.json with its tokenizer_config.json
 * beside it, and a GGUF's vocabulary) on files built from the input: any file is either refused
 * with a message or loads into a tokenizer whose encode and decode keep their promises.
 *
 * Input layout:
 *   byte 0        selector: bit 0 the input is a GGUF (else a tokenizer.json); bit 1 a
 *                 tokenizer_config.json follows (tokenizer.json only)
 *   then          a little-endian u16 length and that many bytes (clipped): the tokenizer.json
 *                 or the GGUF; then, with bit 1, the rest is tokenizer_config.json
 * The files live in a directory made once per process; both are rewritten (or removed) for
 * every input with O_NOFOLLOW. After a load, a fixed text and the input's last bytes are
 * encoded: every id must lie in the vocabulary and decode without error. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/tokenizer.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATH 1024

static char g_dir[MAX_PATH];
static char g_json[MAX_PATH], g_config[MAX_PATH], g_gguf[MAX_PATH];

static void put(const char *path, const uint8_t *p, size_t n) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0) abort();
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) abort();
    p += w;
    n -= (size_t)w;
  }
  close(fd);
}

static void drop(const char *path) {
  if (unlink(path) != 0 && errno != ENOENT) abort();
}

static void remove_dir(void) {
  drop(g_json);
  drop(g_config);
  drop(g_gguf);
  rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/fdl-fuzz-tok-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir)) abort();
  snprintf(g_json, sizeof g_json, "%s/tokenizer.json", g_dir);
  snprintf(g_config, sizeof g_config, "%s/tokenizer_config.json", g_dir);
  snprintf(g_gguf, sizeof g_gguf, "%s/vocab.gguf", g_dir);
  atexit(remove_dir);
  return 0;
}

static void fail(const char *what) {
  fprintf(stderr, "fuzz_tokenizer_load: %s\n", what);
  abort();
}

/* Encode text with each flag set; every id in the vocabulary and decodable. */
static void exercise(fdl_tok *t, const char *text, size_t len) {
  fdl_tok_info info;
  fdl_tok_get_info(t, &info);
  if (!info.vocab || !info.id || !info.kind) fail("a loaded tokenizer without its info");
  for (unsigned flags = 0; flags < 4; flags++) {
    int32_t *ids = NULL;
    size_t n = 0;
    fdl_err err = {FDL_OK, ""};
    if (fdl_tok_encode(t, text, len, flags, &ids, &n, &err) != FDL_OK) {
      if (!err.msg[0]) fail("an encode failure without a message");
      if (ids) fail("a failed encode left ids");
      continue;
    }
    for (size_t i = 0; i < n; i++)
      if (ids[i] < 0 || (size_t)ids[i] >= info.vocab) fail("an id outside the vocabulary");
    char *back = NULL;
    size_t blen = 0;
    if (fdl_tok_decode(t, ids, n, &back, &blen, &err) != FDL_OK && !err.msg[0])
      fail("a decode failure without a message");
    free(back);
    free(ids);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3 || size > 65536) return 0;
  unsigned sel = data[0];
  size_t len = (size_t)data[1] | (size_t)data[2] << 8;
  const uint8_t *body = data + 3, *rest;
  size_t left = size - 3;
  if (len > left) len = left;
  rest = body + len;
  left -= len;
  drop(g_json);
  drop(g_config);
  drop(g_gguf);
  const char *path = g_dir;
  if (sel & 1) {
    put(g_gguf, body, len);
    path = g_gguf;
  } else {
    put(g_json, body, len);
    if (sel & 2) put(g_config, rest, left);
  }
  fdl_tok *t = NULL;
  fdl_err err = {FDL_OK, ""};
  if (fdl_tok_load(path, &t, &err) != FDL_OK) {
    if (t) fail("a failed load left a tokenizer");
    if (!err.msg[0]) fail("a load failure without a message");
    return 0;
  }
  static const char fixed[] = "Hello world! 123  \xe4\xbd\xa0\xe5\xa5\xbd\n\t<s> it's";
  exercise(t, fixed, sizeof fixed - 1);
  size_t tail = left < 64 ? left : 64;
  exercise(t, (const char *)(rest + left - tail), tail);
  fdl_tok_free(t);
  return 0;
}
