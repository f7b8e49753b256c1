/* test_compare_tamper.c - compare computes only on bytes it verified.
 *
 * A small synthetic pair is compared while a capture tensor or a head payload is changed between
 * validation and compute (through the on_validated hook of compare/hooks.h, the private tier):
 * in place, by a rename that replaces the file, a panel token file (it gives each row's target),
 * and for files the estimator never reads (a hash-proof self-compare). Every case must be a
 * seal_failed refusal that writes nothing; the untouched pair must compare. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "compare/hooks.h"

typedef struct {
  char root[256]; /* temporary directory holding pair/ */
  char ref[300], cand[300], out[300];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  snprintf(f->root, sizeof f->root, "/tmp/fdl-tamper-XXXXXX");
  if (!mkdtemp(f->root)) return -1;
  char pair[280];
  snprintf(pair, sizeof pair, "%s/pair", f->root);
  fdl_synth_opts so;
  fdl_synth_opts_default(&so);
  so.out_dir = pair;
  so.vocab = 300;
  so.hidden = 64;
  so.contexts = 3;
  so.tokens_per_context = 20;
  fdl_synth_result sr;
  fdl_err err;
  if (fdl_synth(&so, &sr, &err) != FDL_OK) {
    print_message("synth: %s\n", err.msg);
    return -1;
  }
  snprintf(f->ref, sizeof f->ref, "%s/reference", pair);
  snprintf(f->cand, sizeof f->cand, "%s/candidate", pair);
  snprintf(f->out, sizeof f->out, "%s/out", f->root);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->root);
  int rc = system(cmd);
  free(f);
  return rc == 0 ? 0 : -1;
}

/* What the hook does to the file at path. */
typedef enum { FLIP_IN_PLACE, REPLACE_BY_RENAME } change;

typedef struct {
  char path[400];
  change how;
  long at; /* byte offset from the end */
  int ran;
} tamper;

static void flip(const char *path, long from_end) {
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, -from_end, SEEK_END), 0);
  int c = fgetc(fp);
  assert_int_equal(fseek(fp, -from_end, SEEK_END), 0);
  fputc(c ^ 0x01, fp);
  assert_int_equal(fclose(fp), 0);
}

static void do_tamper(void *arg) {
  tamper *t = arg;
  t->ran = 1;
  if (t->how == FLIP_IN_PLACE) {
    flip(t->path, t->at);
    return;
  }
  /* A new file with the changed bytes takes the old name: the mapping compare opens later is of
   * the new file. */
  char tmp[420], cmd[900];
  snprintf(tmp, sizeof tmp, "%s.new", t->path);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", t->path, tmp);
  assert_int_equal(system(cmd), 0);
  flip(tmp, t->at);
  assert_int_equal(rename(tmp, t->path), 0);
}

static void undo(tamper *t) {
  flip(t->path, t->at); /* flipping the same bit again restores the bytes */
}

static fdl_status run(const fixture *f, bool self, tamper *t, fdl_compare_result *r, fdl_err *err) {
  fdl_compare_opts o;
  fdl_compare_opts_default(&o);
  o.reference = f->ref;
  o.candidate = self ? f->ref : f->cand;
  o.out_dir = f->out;
  o.own_heads = true;
  o.threads = 2;
  o.bootstrap = false;
  fdl_compare_hooks h = {t ? do_tamper : NULL, t};
  return fdl_compare_hooked(&o, &h, r, err);
}

static void expect_refused(const fixture *f, bool self, tamper *t) {
  fdl_compare_result r;
  fdl_err err = {FDL_OK, ""};
  fdl_status s = run(f, self, t, &r, &err);
  assert_true(t->ran);
  if (s != FDL_REFUSED) fail_msg("%s: expected a refusal, got %s", t->path, fdl_status_name(s));
  assert_int_equal(r.refusal.code, FDL_REF_SEAL_FAILED);
  assert_non_null(strstr(err.msg, "hash to"));
  struct stat st;
  assert_int_equal(lstat(f->out, &st), -1); /* nothing written */
  fdl_compare_result_free(&r);
  undo(t);
}

static void test_untouched_pair_compares(void **state) {
  fixture *f = *state;
  fdl_compare_result r;
  fdl_err err;
  fdl_status s = run(f, false, NULL, &r, &err);
  if (s != FDL_OK) fail_msg("compare: %s", err.msg);
  fdl_compare_result_free(&r);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->out);
  assert_int_equal(system(cmd), 0);
}

static void test_capture_changed_in_place(void **state) {
  fixture *f = *state;
  tamper t = {.how = FLIP_IN_PLACE, .at = 3};
  snprintf(t.path, sizeof t.path, "%s/capture/hidden_0001.safetensors", f->cand);
  expect_refused(f, false, &t);
}

static void test_capture_replaced_by_rename(void **state) {
  fixture *f = *state;
  tamper t = {.how = REPLACE_BY_RENAME, .at = 10};
  snprintf(t.path, sizeof t.path, "%s/capture/hidden_0002.safetensors", f->ref);
  expect_refused(f, false, &t);
}

static void test_head_changed(void **state) {
  fixture *f = *state;
  tamper t = {.how = FLIP_IN_PLACE, .at = 5};
  snprintf(t.path, sizeof t.path, "%s/head/weight.safetensors", f->cand);
  expect_refused(f, false, &t);
}

/* The panel tokens name the target of every row (the llama.cpp statistics): the token file is
 * checked in the read that gives the targets. The last digit changes, so the file still parses. */
static void test_tokens_changed(void **state) {
  fixture *f = *state;
  tamper t = {.how = REPLACE_BY_RENAME, .at = 2};
  snprintf(t.path, sizeof t.path, "%s/panel/tokens/context-0001.json", f->ref);
  expect_refused(f, false, &t);
}

/* A hash-proof self-compare computes nothing: its tensors are still hashed before a receipt. */
static void test_hash_proof_still_hashes(void **state) {
  fixture *f = *state;
  tamper t = {.how = FLIP_IN_PLACE, .at = 7};
  snprintf(t.path, sizeof t.path, "%s/capture/hidden_0000.safetensors", f->ref);
  fdl_compare_result r;
  fdl_err err = {FDL_OK, ""};
  fdl_compare_opts o;
  fdl_compare_opts_default(&o);
  /* A copy of the reference is the self-compare partner (the same directory is refused). */
  char copy[300], cmd[700];
  snprintf(copy, sizeof copy, "%s/ref-copy", f->root);
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", f->ref, copy);
  assert_int_equal(system(cmd), 0);
  o.reference = f->ref;
  o.candidate = copy;
  o.out_dir = f->out;
  o.self_compare = true;
  o.bootstrap = false;
  fdl_compare_hooks h = {do_tamper, &t};
  fdl_status s = fdl_compare_hooked(&o, &h, &r, &err);
  assert_true(t.ran);
  if (s != FDL_REFUSED) fail_msg("hash proof: expected a refusal, got %s", fdl_status_name(s));
  assert_int_equal(r.refusal.code, FDL_REF_SEAL_FAILED);
  fdl_compare_result_free(&r);
  undo(&t);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", copy);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_untouched_pair_compares),
      cmocka_unit_test(test_capture_changed_in_place),
      cmocka_unit_test(test_capture_replaced_by_rename),
      cmocka_unit_test(test_head_changed),
      cmocka_unit_test(test_tokens_changed),
      cmocka_unit_test(test_hash_proof_still_hashes),
      cmocka_unit_test(test_untouched_pair_compares),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
