/* test_fs.c - unit tests of the base file-system helpers (base/fs.h): the one regular-file
 * open and its follow flag, named-file resolution, dirname, mkdirs, the fd-relative remove-tree
 * (which must never follow a link out of the tree) and the staging directory (whole or not at
 * all, stale ones swept and reported through the notice callback). */
#include <setjmp.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/fs.h"

static char tmp[64];

static int setup(void **state) {
  (void)state;
  snprintf(tmp, sizeof tmp, "/tmp/fdl-fs-XXXXXX");
  return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
  fdl_remove_tree_at(fd, tmp + 5, NULL);
  close(fd);
  return 0;
}

static void path_of(char *out, size_t cap, const char *rel) {
  snprintf(out, cap, "%s/%s", tmp, rel);
}

static void write_text(const char *rel, const char *text) {
  char p[256];
  path_of(p, sizeof p, rel);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_dirname(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      {"a/b/c", "a/b"}, {"a/b/c/", "a/b"}, {"/c", "/"},  {"c", ""},    {"", ""},
      {"a//b", "a"},    {"/", "/"},        {"//x", "/"}, {"./x", "."}, {"a/b//", "a"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char out[32];
    assert_true(fdl_dirname(cases[i][0], out, sizeof out));
    assert_string_equal(out, cases[i][1]);
  }
  char small[3];
  assert_false(fdl_dirname("abcd/e", small, sizeof small));
  assert_string_equal(small, "");
}

static void test_open_regular(void **state) {
  (void)state;
  char file[256], link[256], fifo[256], fifolink[256];
  write_text("f", "hello");
  path_of(file, sizeof file, "f");
  path_of(link, sizeof link, "l");
  path_of(fifo, sizeof fifo, "p");
  path_of(fifolink, sizeof fifolink, "pl");
  assert_int_equal(symlink(file, link), 0);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  assert_int_equal(symlink(fifo, fifolink), 0);
  int fd = -1;
  uint64_t size = 0;
  fdl_err err;
  assert_int_equal(fdl_open_regular(file, false, &fd, &size, &err), FDL_OK);
  assert_int_equal(size, 5);
  close(fd);
  /* follow=false refuses a link, follow=true takes its target */
  assert_int_equal(fdl_open_regular(link, false, &fd, NULL, &err), FDL_PATH);
  assert_non_null(strstr(err.msg, "symbolic link"));
  assert_int_equal(fdl_open_regular(link, true, &fd, NULL, &err), FDL_OK);
  close(fd);
  /* a FIFO, directly or through a link, is refused at once (the alarm turns a hang into a
   * failure), as is a directory and a device */
  alarm(10);
  assert_int_equal(fdl_open_regular(fifo, false, &fd, NULL, &err), FDL_IO);
  assert_non_null(strstr(err.msg, "FIFO"));
  assert_int_equal(fdl_open_regular(fifolink, true, &fd, NULL, &err), FDL_IO);
  alarm(0);
  assert_int_equal(fdl_open_regular(tmp, true, &fd, NULL, &err), FDL_IO);
  assert_non_null(strstr(err.msg, "directory"));
  assert_int_equal(fdl_open_regular("/dev/null", true, &fd, NULL, &err), FDL_IO);
  assert_non_null(strstr(err.msg, "device"));
  assert_int_equal(fdl_open_regular("", true, &fd, NULL, &err), FDL_INVALID);
}

static void test_resolve_named(void **state) {
  (void)state;
  char file[256], link[256], loop[256];
  write_text("target", "x");
  path_of(file, sizeof file, "target");
  path_of(link, sizeof link, "named");
  path_of(loop, sizeof loop, "loop");
  assert_int_equal(symlink("target", link), 0); /* relative, as in a Hugging Face snapshot */
  assert_int_equal(symlink("loop", loop), 0);
  char *real = NULL;
  fdl_err err;
  assert_int_equal(fdl_resolve_named(link, &real, &err), FDL_OK);
  char want[PATH_MAX];
  assert_non_null(realpath(file, want));
  assert_string_equal(real, want);
  int fd = -1;
  assert_int_equal(fdl_open_regular(real, false, &fd, NULL, &err), FDL_OK);
  close(fd);
  free(real);
  assert_int_equal(fdl_resolve_named(loop, &real, &err), FDL_IO);
  assert_null(real);
}

static void test_mkdirs_modes(void **state) {
  (void)state;
  char p[256], q[256];
  path_of(p, sizeof p, "m/a//b/c/");
  mode_t old = umask(027);
  fdl_err err;
  assert_int_equal(fdl_mkdirs(p, &err), FDL_OK);
  assert_int_equal(fdl_mkdirs(p, &err), FDL_OK); /* existing is fine */
  path_of(q, sizeof q, "m/a/b/c");
  struct stat st;
  assert_int_equal(stat(q, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0750);
  path_of(q, sizeof q, "m/a/b/c/f");
  assert_int_equal(fdl_write_file(q, "x", 1, &err), FDL_OK);
  assert_int_equal(stat(q, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  umask(old);
  /* a file in the way */
  path_of(q, sizeof q, "m/a/b/c/f/g");
  assert_int_equal(fdl_mkdirs(q, &err), FDL_IO);
}

static void test_remove_tree_no_follow(void **state) {
  (void)state;
  char p[256], keep[256], link[256];
  path_of(p, sizeof p, "rt/a/b");
  fdl_err err;
  assert_int_equal(fdl_mkdirs(p, &err), FDL_OK);
  write_text("rt/a/b/f", "1");
  write_text("keep", "precious");
  path_of(keep, sizeof keep, "keep");
  path_of(link, sizeof link, "rt/a/tolink");
  assert_int_equal(symlink(keep, link), 0);
  path_of(link, sizeof link, "rt/dirlink");
  assert_int_equal(symlink(tmp, link), 0); /* a link to a directory above: must not be entered */
  int fd = open(tmp, O_RDONLY | O_DIRECTORY);
  assert_int_equal(fdl_remove_tree_at(fd, "rt", &err), FDL_OK);
  assert_int_equal(fdl_remove_tree_at(fd, "rt", &err), FDL_OK); /* missing is fine */
  close(fd);
  struct stat st;
  path_of(p, sizeof p, "rt");
  assert_int_equal(lstat(p, &st), -1);
  assert_int_equal(stat(keep, &st), 0);
}

static void notice_cb(void *arg, const char *msg) {
  char *buf = arg;
  strncat(buf, msg, 1023 - strlen(buf));
  strncat(buf, "\n", 1023 - strlen(buf));
}

static size_t count_staging(const char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -c '^%s' || true", dir, FDL_STAGE_PREFIX);
  FILE *f = popen(cmd, "r");
  size_t n = 0;
  if (f) {
    if (fscanf(f, "%zu", &n) != 1) n = 0;
    pclose(f);
  }
  return n;
}

static void test_stage(void **state) {
  (void)state;
  char parent[256], out[256], f[1024];
  path_of(parent, sizeof parent, "st");
  fdl_err err;
  assert_int_equal(fdl_mkdirs(parent, &err), FDL_OK);
  path_of(out, sizeof out, "st/out");
  /* a dead process's staging directory is swept and reported */
  pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, NULL, 0);
  char stale[512];
  snprintf(stale, sizeof stale, "%s/%s%ld-00000000", parent, FDL_STAGE_PREFIX, (long)child);
  assert_int_equal(mkdir(stale, 0700), 0);
  snprintf(f, sizeof f, "%s/inner", stale);
  assert_int_equal(mkdir(f, 0700), 0);
  char notes[1024] = "";
  fdl_stage st;
  assert_int_equal(fdl_stage_open(&st, out, 0, notice_cb, notes, &err), FDL_OK);
  assert_non_null(strstr(notes, "removed"));
  assert_non_null(strstr(notes, stale));
  struct stat sb;
  assert_int_equal(lstat(stale, &sb), -1);
  /* the output does not exist until commit, then appears whole */
  assert_int_equal(strncmp(st.path, parent, strlen(parent)), 0);
  snprintf(f, sizeof f, "%s/file", st.path);
  assert_int_equal(fdl_write_file(f, "abc", 3, &err), FDL_OK);
  assert_int_equal(lstat(out, &sb), -1);
  assert_int_equal(count_staging(parent), 1);
  assert_int_equal(fdl_stage_commit(&st, &err), FDL_OK);
  snprintf(f, sizeof f, "%s/file", out);
  assert_int_equal(stat(f, &sb), 0);
  assert_int_equal(count_staging(parent), 0);
  fdl_stage_abort(&st); /* after commit: only releases */
  assert_int_equal(stat(f, &sb), 0);
  /* an existing target of any kind is refused before anything is created */
  assert_int_equal(fdl_stage_open(&st, out, 0, NULL, NULL, &err), FDL_EXISTS);
  char dangling[256];
  path_of(dangling, sizeof dangling, "st/dangling");
  assert_int_equal(symlink("nowhere", dangling), 0);
  assert_int_equal(fdl_stage_open(&st, dangling, 0, NULL, NULL, &err), FDL_EXISTS);
  assert_int_equal(count_staging(parent), 0);
  /* abort removes everything; the target never appears */
  path_of(out, sizeof out, "st/out2");
  assert_int_equal(fdl_stage_open(&st, out, 0, NULL, NULL, &err), FDL_OK);
  snprintf(f, sizeof f, "%s/sub", st.path);
  assert_int_equal(fdl_mkdirs(f, &err), FDL_OK);
  fdl_stage_abort(&st);
  assert_int_equal(lstat(out, &sb), -1);
  assert_int_equal(count_staging(parent), 0);
  /* a missing parent: refused, unless asked to create it */
  path_of(out, sizeof out, "st/x/y/out");
  assert_int_equal(fdl_stage_open(&st, out, 0, NULL, NULL, &err), FDL_IO);
  assert_int_equal(fdl_stage_open(&st, out, FDL_STAGE_MAKE_PARENTS, NULL, NULL, &err), FDL_OK);
  /* a commit that finds the target taken fails and leaves no litter */
  assert_int_equal(mkdir(out, 0700), 0);
  assert_int_equal(fdl_stage_commit(&st, &err), FDL_EXISTS);
  path_of(parent, sizeof parent, "st/x/y");
  assert_int_equal(count_staging(parent), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dirname),
      cmocka_unit_test(test_open_regular),
      cmocka_unit_test(test_resolve_named),
      cmocka_unit_test(test_mkdirs_modes),
      cmocka_unit_test(test_remove_tree_no_follow),
      cmocka_unit_test(test_stage),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
