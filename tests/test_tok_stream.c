/* test_tok_stream.c - fdl_tok_encode_each, the streaming encoder `fidelis tokenize` prints from:
 * on every GGUF vocabulary of ../shared/vectors/tokenizer and its three corpora (joined, with
 * special-token text inside), the ids it hands over are exactly fdl_tok_encode's, with and
 * without special tokens; they come in batches that stay small whatever the text's length (the
 * memory bound docs/TOKENIZER.md states); and a sink's failure stops the encoding at once.
 * fdl_tok_encode itself is held to the Hugging Face and llama.cpp ids by
 * test_tokenizer_vectors.py. Needs ../shared/vectors: exits 77 (skipped) without it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "fidelis/tokenizer.h"

/* A batch never needs more than this, however long the text (streaming's point). */
#define MAX_BATCH 16384

static char dir[4096];
static char *text;
static size_t text_len;

typedef struct {
  int32_t *ids;
  size_t n, cap, batches, largest, fail_at;
} collected;

static fdl_status collect(void *ctx, const int32_t *ids, size_t n, fdl_err *err) {
  collected *c = ctx;
  c->batches++;
  if (c->fail_at && c->batches == c->fail_at) return fdl_fail(err, FDL_IO, "the sink failed");
  assert_true(n > 0);
  if (n > c->largest) c->largest = n;
  if (c->n + n > c->cap) {
    c->cap = 2 * (c->n + n);
    c->ids = realloc(c->ids, c->cap * sizeof *c->ids);
    assert_non_null(c->ids);
  }
  memcpy(c->ids + c->n, ids, n * sizeof *ids);
  c->n += n;
  return FDL_OK;
}

static fdl_tok *load(const char *name) {
  char path[4200];
  snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", dir, name);
  fdl_tok *t = NULL;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = fdl_tok_load(path, &t, &err);
  if (s != FDL_OK) fail_msg("%s: %s", path, err.msg);
  return t;
}

static void same_ids(const char *name) {
  fdl_tok *t = load(name);
  unsigned flag_sets[] = {0, FDL_TOK_ADD_SPECIAL | FDL_TOK_PARSE_SPECIAL};
  for (size_t f = 0; f < 2; f++) {
    fdl_err err = {FDL_OK, ""};
    int32_t *whole = NULL;
    size_t n = 0;
    assert_int_equal(fdl_tok_encode(t, text, text_len, flag_sets[f], &whole, &n, &err), FDL_OK);
    collected c = {0};
    assert_int_equal(fdl_tok_encode_each(t, text, text_len, flag_sets[f], collect, &c, &err),
                     FDL_OK);
    assert_true(n > 100000);
    assert_int_equal(c.n, n);
    assert_memory_equal(c.ids, whole, n * sizeof *whole);
    if (c.largest > MAX_BATCH) fail_msg("%s: a batch of %zu ids", name, c.largest);
    assert_true(c.batches > n / MAX_BATCH);
    free(c.ids);
    free(whole);
  }
  fdl_tok_free(t);
}

static void gpt2(void **state) {
  (void)state;
  same_ids("gpt-2");
}
static void starcoder(void **state) {
  (void)state;
  same_ids("starcoder");
}
static void deepseek(void **state) {
  (void)state;
  same_ids("deepseek-llm");
}
static void llama_spm(void **state) {
  (void)state;
  same_ids("llama-spm");
}

static void sink_failure_stops(void **state) {
  (void)state;
  fdl_tok *t = load("gpt-2");
  collected c = {.fail_at = 3};
  fdl_err err = {FDL_OK, ""};
  assert_int_equal(fdl_tok_encode_each(t, text, text_len, 0, collect, &c, &err), FDL_IO);
  assert_int_equal(c.batches, 3);
  assert_non_null(strstr(err.msg, "the sink failed"));
  /* and the text is checked before any id leaves */
  free(c.ids);
  c = (collected){0};
  assert_int_equal(fdl_tok_encode_each(t, "ok \xff", 4, 0, collect, &c, &err), FDL_INVALID);
  assert_int_equal(c.batches, 0);
  free(c.ids);
  fdl_tok_free(t);
}

int main(void) {
  const char *shared = getenv("FDL_SHARED");
  snprintf(dir, sizeof dir, "%s/vectors/tokenizer", shared ? shared : "../../../shared");
  static const char *const corpora[] = {"english.txt", "code.txt", "multilingual.txt"};
  for (size_t i = 0; i < 3; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, corpora[i]);
    char *p = NULL;
    size_t n = 0;
    fdl_err err = {FDL_OK, ""};
    if (fdl_read_file(path, (size_t)1 << 28, &p, &n, &err) != FDL_OK) {
      fprintf(stderr, "test_tok_stream: %s (needs ../shared/vectors)\n", err.msg);
      return 77;
    }
    const char *sep = "\n<|endoftext|></s><s>\n";
    text = realloc(text, text_len + n + strlen(sep));
    if (!text) return 1;
    memcpy(text + text_len, p, n);
    memcpy(text + text_len + n, sep, strlen(sep));
    text_len += n + strlen(sep);
    free(p);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(gpt2),      cmocka_unit_test(starcoder),          cmocka_unit_test(deepseek),
      cmocka_unit_test(llama_spm), cmocka_unit_test(sink_failure_stops),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(text);
  return rc;
}
