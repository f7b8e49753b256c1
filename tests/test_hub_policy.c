/* test_hub_policy.c - unit tests of the Hub client's pure parts (src/hub/, docs/HUB.md): hf://
 * references, repository file names, the host policy for redirects and the token, the revision
 * answer's parser, blob names and the git blob id, the cache folder's rule and a snapshot's
 * identity, and the link rule of a snapshot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fidelis/hub.h"
#include "hub/hub_internal.h"

static void test_parse(void **state) {
  (void)state;
  fdl_hub_ref r;
  fdl_err err;
  assert_int_equal(fdl_hub_parse("hf://Qwen/Qwen3-0.6B", &r, &err), FDL_OK);
  assert_string_equal(r.repo, "Qwen/Qwen3-0.6B");
  assert_string_equal(r.rev, "main");
  assert_string_equal(r.path, "");
  assert_int_equal(r.kind, FDL_HUB_MODEL);
  assert_int_equal(fdl_hub_parse("hf://datasets/acme/p.v1@v1.0/sub/panel.jsonl", &r, &err), FDL_OK);
  assert_int_equal(r.kind, FDL_HUB_DATASET);
  assert_string_equal(r.repo, "acme/p.v1");
  assert_string_equal(r.rev, "v1.0");
  assert_string_equal(r.path, "sub/panel.jsonl");
  assert_int_equal(
      fdl_hub_parse("hf://models/a/b@0123456789abcdef0123456789abcdef01234567/", &r, &err), FDL_OK);
  assert_string_equal(r.path, "");
  char folder[256];
  assert_true(fdl_hub_repo_folder(&r, folder, sizeof folder));
  assert_string_equal(folder, "models--a--b");
  static const char *const bad[] = {
      "hf://",       "hf://a",         "hf://a/",      "hf:///b",      "hf://../b",
      "hf://a/..",   "hf://a/b@",      "hf://a/b@..x", "hf://a/b@x:y", "hf://a/b/../c",
      "hf://a/b//c", "hf://a/b@r/./c", "hf://.a/b",    "hf://a/-b",    "https://a/b",
      "hf://a b/c",  "hf://a/b@r/c\\d"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err.status = FDL_OK;
    assert_int_equal(fdl_hub_parse(bad[i], &r, &err), FDL_INVALID);
  }
  char longname[300];
  memset(longname, 'a', sizeof longname);
  memcpy(longname, "hf://o/", 7);
  longname[sizeof longname - 1] = '\0';
  assert_int_equal(fdl_hub_parse(longname, &r, &err), FDL_INVALID);
}

static void test_file_names(void **state) {
  (void)state;
  assert_true(fdl_hub_file_name_ok("a/b.json", 8));
  assert_false(fdl_hub_file_name_ok("/a", 2));
  assert_false(fdl_hub_file_name_ok("a//b", 4));
  assert_false(fdl_hub_file_name_ok("a/../b", 6));
  assert_false(fdl_hub_file_name_ok("..", 2));
  assert_false(fdl_hub_file_name_ok("a/", 2));
  assert_false(fdl_hub_file_name_ok("a\nb", 3));
  assert_false(fdl_hub_file_name_ok("", 0));
}

static fdl_hub_origin origin(const char *url) {
  fdl_hub_origin o;
  fdl_err err;
  assert_int_equal(fdl_hub_origin_of(url, &o, &err), FDL_OK);
  return o;
}

static void test_policy(void **state) {
  (void)state;
  fdl_hub_origin hub = origin("https://huggingface.co");
  fdl_hub_origin local = origin("http://127.0.0.1:8080/mirror");
  assert_string_equal(hub.host, "huggingface.co");
  assert_int_equal(hub.port, 443);
  /* the Hub's CDNs over https */
  static const char *const ok[] = {
      "https://cdn-lfs.huggingface.co/x", "https://cdn-lfs-us-1.hf.co/x",
      "https://cas-bridge.xethub.hf.co/x", "https://HF.co/x", "https://huggingface.co/other/path"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    fdl_hub_origin t = origin(ok[i]);
    assert_true(fdl_hub_host_allowed(&hub, &t));
    assert_true(fdl_hub_host_allowed(&local, &t)); /* a mirror may hand off to the Hub's CDN */
  }
  static const char *const refused[] = {"http://cdn-lfs.huggingface.co/x", "https://evil.example/x",
                                        "https://huggingface.co.evil.example/x",
                                        "https://evilhf.co/x", "https://cdn.hf.co:8443/x"};
  for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
    fdl_hub_origin t = origin(refused[i]);
    assert_false(fdl_hub_host_allowed(&hub, &t));
  }
  fdl_hub_origin same = origin("http://127.0.0.1:8080/cdn/abc"),
                 other_port = origin("http://127.0.0.1:8081/cdn"),
                 other_host = origin("http://127.0.0.2:8080/cdn");
  assert_true(fdl_hub_host_allowed(&local, &same));
  assert_false(fdl_hub_host_allowed(&local, &other_port));
  assert_false(fdl_hub_host_allowed(&local, &other_host));
  /* the token: the endpoint's origin only, never a CDN */
  assert_true(fdl_hub_same_origin(&local, &same));
  fdl_hub_origin cdn = origin("https://cdn-lfs.huggingface.co/x");
  assert_false(fdl_hub_same_origin(&hub, &cdn));
  fdl_hub_origin o;
  fdl_err err;
  assert_int_equal(fdl_hub_origin_of("ftp://huggingface.co/x", &o, &err), FDL_INVALID);
  assert_int_equal(fdl_hub_origin_of("https://user:pw@huggingface.co/x", &o, &err), FDL_INVALID);
  assert_int_equal(fdl_hub_origin_of("/relative", &o, &err), FDL_INVALID);
}

static void test_revision(void **state) {
  (void)state;
  fdl_hub_revision r;
  fdl_err err;
  const char *good = "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":"
                     "[{\"rfilename\":\"b.json\"},{\"rfilename\":\"a/x.safetensors\"}],\"x\":1}";
  assert_int_equal(fdl_hub_revision_parse(good, strlen(good), &r, &err), FDL_OK);
  assert_int_equal(r.n, 2);
  assert_string_equal(r.files[0], "a/x.safetensors");
  assert_string_equal(r.sha, "0123456789abcdef0123456789abcdef01234567");
  fdl_hub_revision_free(&r);
  static const char *const bad[] = {
      "[]",
      "{}",
      "{\"sha\":\"abc\",\"siblings\":[]}",
      "{\"sha\":\"0123456789ABCDEF0123456789abcdef01234567\",\"siblings\":[]}",
      "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":{}}",
      "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":"
      "\"../x\"}]}",
      "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":"
      "\"/etc/passwd\"}]}",
      "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":"
      "\"a\"},{\"rfilename\":\"a\"}]}",
      "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{}]}",
      "not json"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_not_equal(fdl_hub_revision_parse(bad[i], strlen(bad[i]), &r, &err), FDL_OK);
    assert_null(r.files);
  }
}

static void test_blobs(void **state) {
  (void)state;
  char hex[65];
  fdl_err err;
  /* git's id of the empty blob and of "hello\n" */
  assert_int_equal(fdl_hub_git_blob_id("", 0, hex, &err), FDL_OK);
  assert_string_equal(hex, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
  fdl_hub_git_blob_id("hello\n", 6, hex, &err);
  assert_string_equal(hex, "ce013625030ba8dba906f756967f9e9ca394464a");
  assert_int_equal(
      fdl_hub_blob_kind("/c/models--a--b/blobs/ce013625030ba8dba906f756967f9e9ca394464a", hex), 40);
  assert_int_equal(
      fdl_hub_blob_kind("/c/datasets--a--b/blobs/"
                        "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
                        hex),
      64);
  assert_int_equal(
      fdl_hub_blob_kind("/c/other/blobs/ce013625030ba8dba906f756967f9e9ca394464a", hex), 0);
  assert_int_equal(
      fdl_hub_blob_kind("/c/models--a--b/blobs/CE013625030ba8dba906f756967f9e9ca394464a", hex), 0);
  assert_int_equal(fdl_hub_blob_kind("/c/models--a--b/snapshots/x", hex), 0);
  const char *p = "/c/models--a--b/blobs/ce013625030ba8dba906f756967f9e9ca394464a";
  assert_int_equal(fdl_hub_blob_check_buf(p, "hello\n", 6, &err), FDL_OK);
  assert_int_equal(fdl_hub_blob_check_buf(p, "hellO\n", 6, &err), FDL_MISMATCH);
  assert_non_null(strstr(err.msg, "git blob id"));
  /* sha256("hello\n") */
  const char *q = "/c/models--a--b/blobs/"
                  "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
  assert_int_equal(fdl_hub_blob_check_buf(q, "hello\n", 6, &err), FDL_OK);
  assert_int_equal(fdl_hub_blob_check_buf(q, "hello", 5, &err), FDL_MISMATCH);
  assert_int_equal(fdl_hub_blob_check_buf("/not/a/blob", "x", 1, &err), FDL_OK);
}

static void test_cache_dir(void **state) {
  (void)state;
  char *d = NULL;
  fdl_err err;
  fdl_hub_env env = {.hub_cache = "/x/hub", .hf_home = "/y", .home = "/home/u"};
  assert_int_equal(fdl_hub_cache_dir(&env, NULL, &d, &err), FDL_OK);
  assert_string_equal(d, "/x/hub");
  free(d);
  env.hub_cache = "";
  assert_int_equal(fdl_hub_cache_dir(&env, NULL, &d, &err), FDL_OK);
  assert_string_equal(d, "/y/hub");
  free(d);
  env.hf_home = NULL;
  assert_int_equal(fdl_hub_cache_dir(&env, NULL, &d, &err), FDL_OK);
  assert_string_equal(d, "/home/u/.cache/huggingface/hub");
  free(d);
  env.xdg_cache_home = "/xdg";
  assert_int_equal(fdl_hub_cache_dir(&env, NULL, &d, &err), FDL_OK);
  assert_string_equal(d, "/xdg/huggingface/hub");
  free(d);
  assert_int_equal(fdl_hub_cache_dir(&env, "/z", &d, &err), FDL_OK);
  assert_string_equal(d, "/z");
  free(d);
  assert_int_equal(fdl_hub_cache_dir(NULL, NULL, &d, &err), FDL_INVALID);
}

static void test_snapshot(void **state) {
  (void)state;
  char root[] = "/tmp/fdl-hubpol-XXXXXX", p[512], q[512];
  assert_non_null(mkdtemp(root));
  const char *commit = "0123456789abcdef0123456789abcdef01234567";
  snprintf(p, sizeof p, "%s/models--acme--tiny/snapshots/%s/sub", root, commit);
  fdl_err err;
  assert_int_equal(fdl_mkdirs(p, &err), FDL_OK);
  snprintf(p, sizeof p, "%s/models--acme--tiny/blobs", root);
  assert_int_equal(fdl_mkdirs(p, &err), FDL_OK);
  char repo[200], c[41];
  snprintf(p, sizeof p, "%s/models--acme--tiny/snapshots/%s/sub", root, commit);
  assert_true(fdl_hub_snapshot_identity(p, repo, c));
  assert_string_equal(repo, "acme/tiny");
  assert_string_equal(c, commit);
  assert_false(fdl_hub_snapshot_identity(root, repo, c));
  /* the link rule: into the same repository's blobs/, nowhere else */
  snprintf(q, sizeof q, "%s/models--acme--tiny/blobs/x", root);
  assert_true(fdl_hub_blob_target_ok(p, q));
  snprintf(q, sizeof q, "%s/models--acme--tiny/blobs", root);
  assert_false(fdl_hub_blob_target_ok(p, q));
  snprintf(q, sizeof q, "%s/models--acme--other/blobs/x", root);
  assert_false(fdl_hub_blob_target_ok(p, q));
  assert_false(fdl_hub_blob_target_ok(p, "/etc/passwd"));
  /* refs: written atomically, read back only with a snapshot */
  snprintf(p, sizeof p, "%s/models--acme--tiny", root);
  assert_int_equal(fdl_hub_write_ref(p, "main", commit, &err), FDL_OK);
  assert_true(fdl_hub_local_commit(p, "main", c));
  assert_string_equal(c, commit);
  assert_true(fdl_hub_local_commit(p, commit, c));
  assert_int_equal(fdl_hub_write_ref(p, "dev", "1123456789abcdef0123456789abcdef01234567", &err),
                   FDL_OK);
  assert_false(fdl_hub_local_commit(p, "dev", c)); /* no snapshot of that commit */
  assert_false(fdl_hub_local_commit(p, "none", c));
  int dir = open("/tmp", 0);
  fdl_remove_tree_at(dir, root + 5, &err);
  close(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),    cmocka_unit_test(test_file_names),
      cmocka_unit_test(test_policy),   cmocka_unit_test(test_revision),
      cmocka_unit_test(test_blobs),    cmocka_unit_test(test_cache_dir),
      cmocka_unit_test(test_snapshot),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
