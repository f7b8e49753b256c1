/* test_seal_file.c - fdl_seal_verify_file, the library's one call that checks a sealed file of
 * either dialect: every vector SEALS.tsv lists verifies as it says, a Kiln record holding -0.0
 * verifies (Kiln hashes it as 0.0), and a flipped byte is a mismatch. Needs ../shared/vectors:
 * exits 77 (skipped) without it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "digest/seal_json.h"
#include "json/json.h"

static char vectors[4096];

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  if (p) p[n] = '\0';
  if (len) *len = (size_t)n;
  return p;
}

static void spill(const char *path, const char *text, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Every row of SEALS.tsv: the recipe and field it names, and its expected verdict. */
static void test_vectors(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/SEALS.tsv", vectors);
  char *tsv = slurp(path, NULL);
  assert_non_null(tsv);
  int rows = 0, kiln = 0;
  char *save = NULL;
  for (char *line = strtok_r(tsv, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    char *col[5];
    int n = 0;
    char *cs = NULL;
    for (char *c = strtok_r(line, "\t", &cs); c && n < 5; c = strtok_r(NULL, "\t", &cs))
      col[n++] = c;
    assert_int_equal(n, 5);
    if (!strcmp(col[0], "path")) continue; /* header */
    snprintf(path, sizeof path, "%s/%s", vectors, col[0]);
    fdl_seal_check chk;
    fdl_err err;
    if (fdl_seal_verify_file(path, &chk, &err) != FDL_OK) fail_msg("%s: %s", col[0], err.msg);
    assert_string_equal(fdl_seal_recipe_name(chk.recipe), col[3]);
    assert_string_equal(chk.field, col[2]);
    if (chk.ok != !strcmp(col[4], "ok")) fail_msg("%s: seal verdict is not %s", col[0], col[4]);
    assert_true(chk.stored_present && chk.stored_string);
    rows++;
    kiln += chk.recipe == FDL_SEAL_KILN_REMOVE;
  }
  free(tsv);
  assert_true(rows >= 20);
  assert_true(kiln >= 1);
}

/* Replaces the first `from` in text (which has room) by `to`, one byte longer. */
static void widen_once(char *text, const char *from, const char *to) {
  char *at = strstr(text, from);
  assert_non_null(at);
  size_t fl = strlen(from), tl = strlen(to);
  memmove(at + tl, at + fl, strlen(at + fl) + 1);
  memcpy(at, to, tl);
}

/* A valid Kiln record that holds -0.0: Kiln's loader reads it as 0.0 and seals that, so it must
 * verify. A plain (non-Kiln) read keeps the sign and hashes "-0.0": the mismatch the tutorial
 * used to give, checked here so the test proves the difference matters. */
static void test_kiln_negative_zero(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/kiln/20260719t014807-rocm-strix-halo-hf-path-attribution-v1.json",
           vectors);
  json_t *doc = NULL;
  fdl_err err;
  const fdl_json_read_opts strict = {.max_depth = 0, .kiln_strict = true};
  assert_int_equal(fdl_json_load_file(path, &strict, &doc, &err), FDL_OK);
  assert_int_equal(json_object_set_new(doc, "fidelis_probe_zero", json_real(0.0)), 0);
  assert_int_equal(fdl_seal_apply(doc, FDL_SEAL_KILN_REMOVE, "result_sha256", &err), FDL_OK);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  assert_int_equal(fdl_json_dump(doc, FDL_JSON_PRETTY, &b, &err), FDL_OK);
  json_decref(doc);
  char *text = malloc(b.len + 2);
  assert_non_null(text);
  memcpy(text, b.data, b.len + 1);
  fdl_buf_free(&b);
  widen_once(text, "\"fidelis_probe_zero\": 0.0", "\"fidelis_probe_zero\": -0.0");
  char tmp[] = "seal-negzero-XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  close(fd);
  spill(tmp, text, strlen(text));

  fdl_seal_check chk;
  assert_int_equal(fdl_seal_verify_file(tmp, &chk, &err), FDL_OK);
  assert_int_equal(chk.recipe, FDL_SEAL_KILN_REMOVE);
  assert_true(chk.ok);

  json_t *plain = NULL;
  assert_int_equal(fdl_json_load_file(tmp, NULL, &plain, &err), FDL_OK);
  fdl_seal_check naive;
  assert_int_equal(fdl_seal_verify(plain, &naive, &err), FDL_OK);
  assert_false(naive.ok);
  json_decref(plain);

  /* Tampering still shows: -0.0 becomes -1.0. */
  char *at = strstr(text, "-0.0");
  assert_non_null(at);
  at[1] = '1';
  spill(tmp, text, strlen(text));
  assert_int_equal(fdl_seal_verify_file(tmp, &chk, &err), FDL_OK);
  assert_false(chk.ok);
  unlink(tmp);
  free(text);
}

/* A fidelity vector with one byte of a value changed is a mismatch; a missing file and a
 * document of no known kind are errors, not verdicts. */
static void test_mismatch_and_errors(void **state) {
  (void)state;
  char path[4200];
  snprintf(path, sizeof path, "%s/fidelity/fixture-qwen3-5-tiny-root/runtime.json", vectors);
  size_t n;
  char *text = slurp(path, &n);
  assert_non_null(text);
  char *digit = strpbrk(text, "0123456789");
  assert_non_null(digit);
  *digit = *digit == '9' ? '8' : (char)(*digit + 1);
  char tmp[] = "seal-flip-XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  close(fd);
  spill(tmp, text, n);
  fdl_seal_check chk;
  fdl_err err;
  fdl_status s = fdl_seal_verify_file(tmp, &chk, &err);
  /* The flipped digit may sit inside the stored seal itself: a mismatch either way. */
  assert_int_equal(s, FDL_OK);
  assert_false(chk.ok);
  spill(tmp, "{\"schema\":\"acme.thing.v1\"}", 26);
  memset(&chk, 0x5a, sizeof chk);
  assert_int_equal(fdl_seal_verify_file(tmp, &chk, &err), FDL_UNSUPPORTED);
  assert_int_equal((unsigned char)chk.stored[0], 0x5a); /* untouched on error */
  unlink(tmp);
  assert_int_not_equal(fdl_seal_verify_file("seal-no-such-file.json", &chk, &err), FDL_OK);
  free(text);
}

int main(void) {
  const char *shared = getenv("FDL_SHARED");
  snprintf(vectors, sizeof vectors, "%s/vectors", shared ? shared : "../shared");
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/SEALS.tsv", vectors);
  if (access(probe, R_OK) != 0) {
    printf("skipped: %s not present\n", probe);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vectors),
      cmocka_unit_test(test_kiln_negative_zero),
      cmocka_unit_test(test_mismatch_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
