/* fuzz_validate_tree.c - validate on a directory tree built from the fuzz input: never crash,
 * never hang, and the report always serialises.
 *
 * The manifest targets see bytes; the crashes issue 9 found came from the tree itself (deep
 * nesting, unreadable directories, FIFOs, symlinks). So each input is a little program that
 * edits a copy of a valid dataset (one `fdl_synth` reference, made once): write, append, flip,
 * truncate or delete a file, nest directories, change permissions, add symlinks and FIFOs. The
 * copy is validated at a level chosen by the input and removed afterwards.
 *
 * Every edit goes through descriptors opened with O_NOFOLLOW from the tree's root, so a symlink
 * the input planted cannot make the harness itself write, chmod or delete outside the tree. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/dataset.h"
#include "base/quote.h"
#include "fidelis/synth.h"
#include "dataset/dataset_json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 256
#define MAX_PATH 1024

/* The harness's own state: where the seed dataset is and which files it holds. */
static char g_base[MAX_PATH];
static char g_seed[MAX_PATH];
static char *g_files[MAX_FILES];
static size_t g_nfiles;

typedef struct {
  const uint8_t *p;
  size_t n;
} input;

static unsigned take(input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_F && g_nfiles < MAX_FILES) {
    g_files[g_nfiles] = strdup(path + strlen(g_seed) + 1);
    if (g_files[g_nfiles]) g_nfiles++;
  }
  return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR)
    rmdir(path);
  else
    unlink(path);
  return 0;
}

static int unlock_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)ftw;
  /* Directories the input made unreadable are reopened so the removal can descend. */
  if ((flag == FTW_D || flag == FTW_DNR) && !S_ISLNK(st->st_mode)) chmod(path, 0700);
  return 0;
}

static void remove_tree(const char *root) {
  (void)nftw(root, unlock_entry, 16, FTW_PHYS);
  (void)nftw(root, remove_entry, 16, FTW_PHYS | FTW_DEPTH);
}

static int copy_file(const char *from, const char *to, mode_t mode) {
  int in = open(from, O_RDONLY | O_NOFOLLOW);
  if (in < 0) return -1;
  int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode & 0777);
  if (out < 0) {
    close(in);
    return -1;
  }
  char buf[1 << 16];
  ssize_t got;
  int rc = 0;
  while ((got = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)got) != got) rc = -1;
  close(in);
  close(out);
  return rc;
}

static int copy_tree(const char *from, const char *to) {
  if (mkdir(to, 0755) != 0) return -1;
  DIR *d = opendir(from);
  if (!d) return -1;
  struct dirent *e;
  int rc = 0;
  while (rc == 0 && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char a[MAX_PATH], b[MAX_PATH];
    snprintf(a, sizeof a, "%s/%s", from, e->d_name);
    snprintf(b, sizeof b, "%s/%s", to, e->d_name);
    struct stat st;
    if (lstat(a, &st) != 0)
      rc = -1;
    else if (S_ISDIR(st.st_mode))
      rc = copy_tree(a, b);
    else if (S_ISREG(st.st_mode))
      rc = copy_file(a, b, st.st_mode);
  }
  closedir(d);
  return rc;
}

static void remove_base(void) {
  remove_tree(g_base);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_base, sizeof g_base, "%s/fdl-fuzz-tree-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_base)) abort();
  atexit(remove_base);
  char pair[MAX_PATH];
  snprintf(pair, sizeof pair, "%s/synth", g_base);
  fdl_synth_opts o;
  fdl_synth_opts_default(&o);
  o.out_dir = pair;
  o.vocab = 64;
  o.hidden = 32;
  o.contexts = 2;
  o.tokens_per_context = 6;
  o.threads = 1;
  fdl_synth_result r;
  fdl_err err;
  if (fdl_synth(&o, &r, &err) != FDL_OK) {
    fprintf(stderr, "fuzz_validate_tree: synth failed: %s\n", err.msg);
    abort();
  }
  snprintf(g_seed, sizeof g_seed, "%s/reference", pair);
  (void)nftw(g_seed, collect, 16, FTW_PHYS);
  if (!g_nfiles) abort();
  return 0;
}

/* A path for the next edit: one of the seed's files, or a name of 1-3 components whose
 * bytes come from the input (escapes, invalid UTF-8 and all) but never '/', NUL, "." or "..". */
static void pick_path(input *in, char *out, size_t cap) {
  unsigned sel = take(in);
  if (sel < 160) {
    snprintf(out, cap, "%s", g_files[sel % g_nfiles]);
    return;
  }
  size_t o = 0;
  unsigned parts = 1 + (sel - 160) % 3;
  for (unsigned k = 0; k < parts && o + 2 < cap; k++) {
    if (k) out[o++] = '/';
    unsigned len = 1 + take(in) % 32;
    size_t start = o;
    for (unsigned i = 0; i < len && o + 2 < cap; i++) {
      unsigned char c = (unsigned char)take(in);
      out[o++] = (char)(c == '/' || c == 0 ? '_' : c);
    }
    if ((o - start == 1 && out[start] == '.') ||
        (o - start == 2 && out[start] == '.' && out[start + 1] == '.'))
      out[start] = '_';
  }
  out[o] = '\0';
}

/* Opens the directory that holds rel's last component, walking from root without following
 * symlinks and creating missing directories; *leaf points into rel. */
static int open_parent(int root, char *rel, char **leaf) {
  int fd = dup(root);
  char *s = rel;
  for (char *slash; fd >= 0 && (slash = strchr(s, '/'));) {
    *slash = '\0';
    (void)mkdirat(fd, s, 0755);
    int next = openat(fd, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    *slash = '/';
    close(fd);
    fd = next;
    s = slash + 1;
  }
  *leaf = s;
  return fd;
}

static void write_at(int dir, const char *leaf, input *in, int flags) {
  int fd = openat(dir, leaf, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | flags, 0644);
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    size_t len = take(in) << 8;
    len |= take(in);
    len = len < in->n ? len : in->n;
    if (len) (void)!write(fd, in->p, len);
    in->p += len;
    in->n -= len;
  }
  close(fd);
}

static void edit(int root, input *in) {
  unsigned op = take(in) % 10;
  char rel[MAX_PATH], *leaf;
  pick_path(in, rel, sizeof rel);
  int dir = open_parent(root, rel, &leaf);
  if (dir < 0) return;
  struct stat st;
  bool plain = fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st.st_mode);
  switch (op) {
  case 0: /* replace a file's content */
    write_at(dir, leaf, in, O_CREAT | O_TRUNC);
    break;
  case 1: /* append */
    write_at(dir, leaf, in, O_CREAT | O_APPEND);
    break;
  case 2: { /* flip one byte: a small mutation of a valid manifest or tensor */
    int fd = openat(dir, leaf, O_RDWR | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
      unsigned hi = take(in), lo = take(in);
      off_t at = (off_t)(((hi << 8) | lo) % (unsigned)st.st_size);
      unsigned char b;
      if (pread(fd, &b, 1, at) == 1) {
        b ^= (unsigned char)(1u << (take(in) % 8));
        (void)!pwrite(fd, &b, 1, at);
      }
    }
    if (fd >= 0) close(fd);
    break;
  }
  case 3: { /* truncate */
    int fd = openat(dir, leaf, O_WRONLY | O_NOFOLLOW | O_NONBLOCK);
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
      (void)!ftruncate(fd, (off_t)(st.st_size * (off_t)take(in) / 256));
    if (fd >= 0) close(fd);
    break;
  }
  case 4: /* delete */
    if (unlinkat(dir, leaf, 0) != 0) (void)unlinkat(dir, leaf, AT_REMOVEDIR);
    break;
  case 5: { /* nest directories, up to twice the depth a walk is allowed */
    unsigned depth = take(in) % 80;
    int fd = dup(dir);
    (void)mkdirat(fd, leaf, 0755);
    int next = openat(fd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    close(fd);
    fd = next;
    for (unsigned i = 0; fd >= 0 && i < depth; i++) {
      (void)mkdirat(fd, "d", 0755);
      next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      close(fd);
      fd = next;
    }
    if (fd >= 0) close(fd);
    break;
  }
  case 6: { /* permissions: unreadable, write-only, read-only, or back to normal */
    static const mode_t MODES[] = {0000, 0200, 0444, 0755, 0311, 0644};
    if (plain) (void)fchmodat(dir, leaf, MODES[take(in) % 6], 0);
    break;
  }
  case 7: { /* a symlink: to another entry, upwards, absolute, dangling or to itself */
    static const char *const TARGETS[] = {"fidelity-dataset.json",
                                          "..",
                                          "../..",
                                          "/etc/passwd",
                                          "/dev/zero",
                                          "nowhere",
                                          ".",
                                          "capture"};
    unsigned t = take(in);
    const char *target = t < 200 ? TARGETS[t % 8] : leaf;
    (void)unlinkat(dir, leaf, 0);
    (void)symlinkat(target, dir, leaf);
    break;
  }
  case 8: /* a FIFO where a file is expected: a blocking open would hang validate */
    (void)unlinkat(dir, leaf, 0);
    (void)mkfifoat(dir, leaf, 0644);
    break;
  default: /* an empty directory in the file's place */
    (void)unlinkat(dir, leaf, 0);
    (void)mkdirat(dir, leaf, 0755);
    break;
  }
  close(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  input in = {data, size};
  unsigned level = take(&in);
  char root[MAX_PATH];
  snprintf(root, sizeof root, "%s/run", g_base);
  remove_tree(root);
  if (copy_tree(g_seed, root) != 0) abort();
  int rootfd = open(root, O_RDONLY | O_DIRECTORY);
  if (rootfd < 0) abort();
  for (unsigned k = 0; in.n && k < 16; k++) edit(rootfd, &in);
  close(rootfd);

  fdl_ds_validate_opts o;
  memset(&o, 0, sizeof o);
  o.threads = 1;
  o.manifests_only = (level & 3) == 1;
  o.manifest_only = (level & 3) == 2;
  o.verify_tensors = (level & 3) == 3;
  o.allow_partial = (level & 4) != 0;
  o.strict = (level & 8) != 0;
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_err err;
  memset(&err, 0, sizeof err);
  if (fdl_ds_validate(root, &o, &rep, &err) == FDL_OK) {
    for (size_t i = 0; i < rep.errors.count; i++)
      if (!*fdl_ds_code_name(rep.errors.items[i].code) || !rep.errors.items[i].message) abort();
    fdl_ds_verdict v = fdl_ds_report_verdict(&rep);
    if (v != FDL_DS_VERDICT_OK && v != FDL_DS_VERDICT_WARNINGS && v != FDL_DS_VERDICT_ERRORS)
      abort();
    /* A report is always serialisable, and everything in it is valid UTF-8. */
    json_t *doc = NULL;
    fdl_err e2;
    if (fdl_ds_report_to_json(&rep, true, &doc, &e2) != FDL_OK && rep.oom == FDL_OK) {
      fprintf(stderr, "report not serialisable: %s\n", e2.msg);
      abort();
    }
    json_decref(doc);
  } else if (!err.msg[0] || !fdl_utf8_valid(err.msg, strlen(err.msg))) {
    abort();
  }
  fdl_ds_report_free(&rep);
  remove_tree(root);
  return 0;
}
