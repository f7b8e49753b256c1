/* validate_files.c - the tree, checksums.txt and tensor bytes (§5.5, §12.1 steps 6 and 19).
 *
 * All hashing of one run happens in one parallel pass: every checksums line, and with
 * verify_tensors each capture tensor's content and payload range and the head's content (and a
 * search for non-finite values). Each file is read once: its whole-file digest, content digest
 * and scan come from the same reads.
 *
 * Conformance levels (§1.2): by default every listed file is hashed, as the reference does, so a
 * flipped byte anywhere is an error (structural). verify_tensors adds the content digests
 * (sealed). skip_hashing checks the listing and every listed file's size but hashes nothing; the
 * run then claims the manifests level only. Every listed tensor is stat'ed at every level, so
 * a truncated or emptied file is found without reading it.
 *
 * Divisions: the tree; the plan; running it; findings. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/quote.h"
#include "dataset/validate.h"
#include "base/path.h"
#include "fidelis/tensor.h"
#include "base/order.h"
#include "base/sys.h"

/* ---- the tree ---------------------------------------------------------------------------- */

static bool excluded(const char *rel) {
  return !strcmp(rel, FDL_DS_CHECKSUMS_NAME) || !strcmp(rel, FDL_DS_MANIFEST_NAME);
}

void fdl_ds_v_tree(ds_vctx *v) {
  fdl_err e;
  if (fdl_ds_tree_walk(v->rootfd, &v->tree, &e) != FDL_OK) {
    /* Nothing below is checked against an incomplete listing: the whole tree is refused, and
     * the finding names the entry the walk could not get past. */
    fdl_ds_report_error(v->rep, FDL_DSC_TREE_UNREADABLE, "PATH-4", v->tree.fail_at,
                        "cannot list the whole dataset: %s", e.msg);
    return;
  }
  v->have_tree = true;
  for (size_t i = 0; i < v->tree.n_symlinks; i++)
    fdl_ds_report_error(v->rep, FDL_DSC_SYMLINK, "PATH-4", v->tree.symlinks[i],
                        "symlink %s (no symlinks anywhere in a dataset, PATH-4)",
                        v->tree.symlinks[i]);
  for (size_t i = 0; i < v->tree.n_others; i++)
    fdl_ds_report_error(v->rep, FDL_DSC_SYMLINK, "PATH-4", v->tree.others[i],
                        "%s is neither a regular file nor a directory (refused like a symlink)",
                        v->tree.others[i]);
  for (size_t i = 0; i < v->tree.n_files; i++)
    if (!excluded(v->tree.files[i]) && fdl_ds_is_credential(v->tree.files[i]))
      fdl_ds_report_error(v->rep, FDL_DSC_CREDENTIAL_IN_TREE, "CREDENTIAL", v->tree.files[i],
                          "%s looks like a credential; sealing it would publish a secret",
                          v->tree.files[i]);
}

/* ---- the plan ---------------------------------------------------------------------------- */

/* One capture record's (or the head's) tensor to verify. */
typedef struct {
  const json_t *record; /* NULL for the head */
  char rel[DS_MAX_PATH];
  size_t file_job, content_job, payload_job; /* indices into the job list; SIZE_MAX = none */
  bool header_ok;
  uint64_t width; /* elements per row of a 2-D tensor (to name a non-finite value's column) */
} tensor_check;

typedef struct {
  ds_hash_job *jobs;
  size_t n, cap;
  char **owned; /* rel strings the jobs point at */
  size_t n_owned, cap_owned;
  /* checksums.txt */
  fdl_checksums sums;
  bool have_sums;
  size_t *sum_job; /* per listing entry: its job, SIZE_MAX when not hashed */
  /* tensors */
  tensor_check *tensors;
  size_t n_tensors;
  const char **sorted_rels; /* the tensors' paths, sorted (for defer_tensor_hashes) */
} plan;

static const char *own(plan *p, const char *s) {
  if (!FDL_GROW(p->owned, p->n_owned, p->cap_owned, 64)) return NULL;
  char *c = fdl_strdup(s);
  if (c) p->owned[p->n_owned++] = c;
  return c;
}

static size_t add_job(plan *p, const char *rel, uint64_t off, uint64_t len) {
  if (!FDL_GROW(p->jobs, p->n, p->cap, 64)) return SIZE_MAX;
  const char *r = own(p, rel);
  if (!r) return SIZE_MAX;
  ds_hash_job *j = &p->jobs[p->n];
  memset(j, 0, sizeof *j);
  j->rel = r;
  j->offset = off;
  j->length = len;
  return p->n++;
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const fdl_checksum_entry *)a)->path, ((const fdl_checksum_entry *)b)->path);
}

static const fdl_checksum_entry *find_sum(const plan *p, const char *rel) {
  if (!p->have_sums || !p->sums.count) return NULL;
  fdl_checksum_entry key = {.path = (char *)rel};
  return bsearch(&key, p->sums.items, p->sums.count, sizeof key, cmp_entry);
}

static void plan_free(plan *p) {
  for (size_t i = 0; i < p->n_owned; i++) free(p->owned[i]);
  free(p->owned);
  free(p->jobs);
  free(p->sum_job);
  free(p->tensors);
  free(p->sorted_rels);
  if (p->have_sums) fdl_checksums_free(&p->sums);
}

/* The tensor at file (resolved from dir) of record, or of the head when record is NULL; an
 * unusable path is skipped (a PATH finding already). */
static void add_tensor(plan *p, const json_t *record, const char *dir, const char *file) {
  char rel[DS_MAX_PATH];
  if (!file || !fdl_relpath_ok(file, strlen(file), false) ||
      !fdl_ds_join_norm(dir, file, rel, sizeof rel))
    return;
  tensor_check *t = &p->tensors[p->n_tensors++];
  t->record = record;
  snprintf(t->rel, sizeof t->rel, "%s", rel);
  t->file_job = t->content_job = t->payload_job = SIZE_MAX;
}

/* The head payload and every capture record's file, as resolved paths. */
static fdl_status collect_tensors(ds_vctx *v, plan *p, fdl_err *err) {
  json_t *records = fdl_ds_v_records_of(v);
  p->tensors = fdl_calloc(json_array_size(records) + 1, sizeof *p->tensors);
  if (!p->tensors) return fdl_fail(err, FDL_NOMEM, "validate: out of memory");
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) add_tensor(p, r, v->capture_dir, fdl_json_str(r, "file"));
  add_tensor(p, NULL, "", v->mf.head.file);
  return FDL_OK;
}

static bool is_tensor(const plan *p, const char *rel) {
  return p->sorted_rels && bsearch(&rel, p->sorted_rels, p->n_tensors, sizeof *p->sorted_rels,
                                   fdl_order_cstr) != NULL;
}

/* When the caller hashes the tensor files itself (defer_tensor_hashes), what it will check them
 * against must agree with checksums.txt: the record's sha256 (the head's file_sha256) is the
 * file's listed digest. */
static void check_deferred(ds_vctx *v, const plan *p) {
  for (size_t i = 0; i < p->n_tensors; i++) {
    const tensor_check *t = &p->tensors[i];
    const fdl_checksum_entry *ce = find_sum(p, t->rel);
    const char *want = t->record ? fdl_json_str(t->record, "sha256") : v->mf.head.file_sha256;
    if (ce && want && *want && strcmp(want, ce->hex))
      fdl_ds_report_error(v->rep, FDL_DSC_DIGEST_MISMATCH, t->record ? "SEAL-1(d)" : "HEAD-IDENT",
                          t->rel,
                          "%s: the manifest's file digest %s differs from checksums.txt's %s",
                          t->rel, want, ce->hex);
  }
}

/* checksums.txt: SEAL-1(b) digest, then the listing against the tree (SEAL-1(c)/SEAL-2). */
static fdl_status plan_checksums(ds_vctx *v, plan *p, fdl_err *err) {
  char *text;
  size_t len;
  bool missing;
  fdl_err e;
  if (fdl_ds_read_at(v->rootfd, FDL_DS_CHECKSUMS_NAME, DS_MAX_CHECKSUMS_BYTES, &text, &len,
                     &missing, &e) != FDL_OK) {
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(b)", FDL_DS_CHECKSUMS_NAME,
                        "checksums.txt is missing or unreadable (%s)", e.msg);
    return FDL_OK;
  }
  char hex[DS_HEX_LEN + 1];
  if (fdl_sha256_buf_hex(text, len, hex, err) != FDL_OK) {
    free(text);
    return err ? err->status : FDL_NOMEM;
  }
  const char *want = v->mf.seal.checksums_sha256;
  if (!want || strcmp(want, hex))
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(b)", FDL_DS_CHECKSUMS_NAME,
                        "sha256(checksums.txt) %s != seal.checksums_sha256 %s", hex,
                        want ? want : "(missing)");
  fdl_checksums_init(&p->sums);
  fdl_status s = fdl_checksums_parse(text, len, &p->sums, &e);
  free(text);
  if (s != FDL_OK) {
    if (s == FDL_NOMEM) return fdl_fail(err, s, "%s", e.msg);
    fdl_ds_report_error(v->rep, FDL_DSC_SEAL_FAILED, "SEAL-1(c)/SEAL-2", FDL_DS_CHECKSUMS_NAME,
                        "%s", e.msg);
    return FDL_OK;
  }
  p->have_sums = true;
  if (p->sums.count) qsort(p->sums.items, p->sums.count, sizeof *p->sums.items, cmp_entry);
  p->sum_job = fdl_malloc((p->sums.count ? p->sums.count : 1) * sizeof *p->sum_job);
  if (!p->sum_job) return fdl_fail(err, FDL_NOMEM, "validate: out of memory");
  /* Nothing is hashed until the listing has been checked against the tree; a tree that could
   * not be walked leaves every line unhashed (its failure is already a finding). */
  for (size_t i = 0; i < p->sums.count; i++) p->sum_job[i] = SIZE_MAX;
  if (!v->have_tree) return FDL_OK;
  /* 1. present but unlisted. */
  for (size_t i = 0; i < v->tree.n_files; i++) {
    const char *f = v->tree.files[i];
    char q[FDL_QUOTE_CAP];
    if (!excluded(f) && !find_sum(p, f))
      fdl_ds_report_error(v->rep, FDL_DSC_UNLISTED_FILE, "SEAL-1(c)/SEAL-2", f,
                          "%s is present but not listed in checksums.txt",
                          fdl_quote_str(f, q, sizeof q));
  }
  /* 2. listed but absent; 3. hash what is present. */
  for (size_t i = 0; i < p->sums.count; i++) {
    const char *f = p->sums.items[i].path;
    if (!fdl_ds_tree_has(&v->tree, f)) {
      char q[FDL_QUOTE_CAP];
      if (!(v->o->allow_partial && !strncmp(f, "capture/", 8)))
        fdl_ds_report_error(v->rep, FDL_DSC_MISSING_FILE, "SEAL-1(c)/SEAL-2", f,
                            "%s is listed in checksums.txt but absent%s",
                            fdl_quote_str(f, q, sizeof q),
                            v->o->allow_partial ? "" : " (--allow-partial covers capture/ only)");
      continue;
    }
    if (v->o->skip_hashing || (v->o->defer_tensor_hashes && is_tensor(p, f))) continue;
    p->sum_job[i] = add_job(p, f, 0, UINT64_MAX);
    if (p->sum_job[i] == SIZE_MAX) return fdl_fail(err, FDL_NOMEM, "validate: out of memory");
  }
  return FDL_OK;
}

/* The sealed level reads every tensor byte: it also looks for NaN and infinity, which pack and
 * compare refuse, so a dataset that validates sealed can always be compared. */
static void scan_floats(ds_hash_job *j, const fdl_tensor *tn) {
  j->scan = tn->dtype == FDL_DTYPE_F16 || tn->dtype == FDL_DTYPE_BF16 ||
            tn->dtype == FDL_DTYPE_F32 || tn->dtype == FDL_DTYPE_F64;
  j->scan_dtype = tn->dtype;
}

/* Reads a tensor file's header (mapped: only the header pages are touched) and plans its
 * content, payload and file digests. */
static fdl_status plan_tensor(ds_vctx *v, plan *p, tensor_check *t, fdl_err *err) {
  const json_t *head = fdl_json_obj(v->m, "head");
  const char *key = t->record ? fdl_json_str(t->record, "key") : v->mf.head.tensor_key;
  const char *label = t->record ? "SEAL-1(d)" : "HEAD-IDENT";
  int fd;
  bool missing;
  fdl_err e;
  if (fdl_ds_open_at(v->rootfd, t->rel, &fd, &missing, &e) != FDL_OK) {
    /* Absent files are findings of the listing (or tolerated by --allow-partial). */
    char q[FDL_QUOTE_CAP];
    if (t->record && missing && !find_sum(p, t->rel) && !v->o->allow_partial)
      fdl_ds_report_error(v->rep, FDL_DSC_MISSING_FILE, label, t->rel, "%s is missing",
                          fdl_quote_str(t->rel, q, sizeof q));
    else if (!missing)
      fdl_ds_report_error(v->rep, FDL_DSC_BAD_TENSOR_FILE, label, t->rel, "%s", e.msg);
    return FDL_OK;
  }
  struct stat st;
  void *map = MAP_FAILED;
  size_t size = 0;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    size = (size_t)st.st_size;
    map = fdl_sys_mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  fdl_safetensors *sf = NULL;
  fdl_status s = FDL_OK; /* only a fault of the run; bad files are findings */
  fdl_status ps = map == MAP_FAILED ? fdl_fail(&e, FDL_IO, "empty or unmappable file")
                                    : fdl_safetensors_open_mem(map, size, &sf, &e);
  if (ps != FDL_OK) {
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_TENSOR_FILE, label, t->rel, "%s: %s", t->rel, e.msg);
  } else if (!key || !fdl_safetensors_find(sf, key)) {
    char q[FDL_QUOTE_CAP];
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_TENSOR_FILE, label, t->rel, "%s: tensor key %s absent",
                        t->rel, fdl_quote_str(key, q, sizeof q));
  } else {
    const fdl_tensor *tn = fdl_safetensors_find(sf, key);
    uint64_t start = fdl_safetensors_data_start(sf), fsize = fdl_safetensors_file_size(sf);
    /* The declaration is what a consumer reads instead of the tensor: it must match. */
    const char *dt = t->record ? fdl_json_str(t->record, "dtype") : v->mf.head.dtype;
    const json_t *shape = json_object_get(t->record ? t->record : head, "shape");
    char q[FDL_QUOTE_CAP];
    if (dt && strcmp(dt, fdl_dtype_name(tn->dtype)))
      fdl_ds_report_error(v->rep, FDL_DSC_TENSOR_MISMATCH, label, t->rel,
                          "%s declares dtype %s but the safetensors header says '%s'", t->rel,
                          fdl_quote_str(dt, q, sizeof q), fdl_dtype_name(tn->dtype));
    if (json_is_array(shape)) {
      bool same = json_array_size(shape) == (size_t)tn->ndim;
      for (int k = 0; same && k < tn->ndim; k++) {
        const json_t *d = json_array_get(shape, (size_t)k);
        same = json_is_integer(d) && json_integer_value(d) == tn->shape[k];
      }
      if (!same)
        fdl_ds_report_error(v->rep, FDL_DSC_TENSOR_MISMATCH, label, t->rel,
                            "%s: declared shape differs from the safetensors header's", t->rel);
    }
    t->header_ok = true;
    /* The content range rides on the whole-file job (its checksums line, when listed): one
     * read of the file yields both digests. */
    const fdl_checksum_entry *ce = find_sum(p, t->rel);
    size_t idx = ce ? p->sum_job[ce - p->sums.items] : SIZE_MAX;
    t->file_job = idx != SIZE_MAX ? idx : add_job(p, t->rel, 0, UINT64_MAX);
    t->content_job = t->file_job;
    if (t->file_job == SIZE_MAX) {
      s = fdl_fail(err, FDL_NOMEM, "validate: out of memory");
    } else if (p->jobs[t->file_job].has2 && (p->jobs[t->file_job].offset2 != tn->offset ||
                                             p->jobs[t->file_job].length2 != tn->nbytes)) {
      /* Another record already rides on this file with another range: hash this one apart. */
      size_t c = add_job(p, t->rel, 0, 0);
      if (c == SIZE_MAX) {
        s = fdl_fail(err, FDL_NOMEM, "validate: out of memory");
      } else {
        p->jobs[c].has2 = true;
        p->jobs[c].offset2 = tn->offset;
        p->jobs[c].length2 = tn->nbytes;
        t->content_job = c;
        scan_floats(&p->jobs[c], tn);
      }
    } else {
      ds_hash_job *j = &p->jobs[t->file_job];
      j->has2 = true;
      j->offset2 = tn->offset;
      j->length2 = tn->nbytes;
      scan_floats(j, tn);
    }
    t->width = tn->ndim == 2 ? (uint64_t)tn->shape[1] : 0;
    if (s == FDL_OK && t->record && !(tn->offset == start && tn->offset + tn->nbytes == fsize)) {
      t->payload_job = add_job(p, t->rel, start, UINT64_MAX);
      if (t->payload_job == SIZE_MAX) s = fdl_fail(err, FDL_NOMEM, "validate: out of memory");
    }
  }
  fdl_safetensors_close(sf);
  if (map != MAP_FAILED) munmap(map, size);
  return s;
}

/* ---- findings ---------------------------------------------------------------------------- */

/* A record declares its file's size; a head declares its shape and dtype, so its file holds at
 * least those bytes plus the 8-byte length prefix. Checked by stat at every level, so truncation
 * is found even when no byte is read. */
static void check_sizes(ds_vctx *v, const plan *p) {
  const json_t *head = fdl_json_obj(v->m, "head");
  for (size_t i = 0; i < p->n_tensors; i++) {
    const tensor_check *t = &p->tensors[i];
    struct stat st;
    if (fstatat(v->rootfd, t->rel, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue; /* absent, or not a file: findings of the listing and the tree */
    uint64_t size = (uint64_t)st.st_size;
    int64_t want;
    if (t->record) {
      if (fdl_json_int(t->record, "size_bytes", &want) && want >= 0 && (uint64_t)want != size)
        fdl_ds_report_error(v->rep, FDL_DSC_SIZE_MISMATCH, "SEAL-1(d)", t->rel,
                            "%s is %llu bytes, its record declares size_bytes %lld", t->rel,
                            (unsigned long long)size, (long long)want);
      continue;
    }
    fdl_dtype dt;
    const char *dts = v->mf.head.dtype;
    const json_t *shape = json_object_get(head, "shape");
    if (!dts || !fdl_dtype_parse(dts, &dt) || !json_is_array(shape)) continue;
    uint64_t need = fdl_dtype_size(dt);
    size_t k;
    const json_t *d;
    json_array_foreach(shape, k, d) {
      int64_t x = json_is_integer(d) ? json_integer_value(d) : -1;
      if (x < 0 || (x && need > UINT64_MAX / (uint64_t)x)) need = 0;
      if (!need) break;
      need *= (uint64_t)x;
    }
    if (need && need <= UINT64_MAX - 8 && size < need + 8)
      fdl_ds_report_error(v->rep, FDL_DSC_SIZE_MISMATCH, "HEAD-IDENT", t->rel,
                          "%s is %llu bytes, but the head's declared shape and dtype need at "
                          "least %llu",
                          t->rel, (unsigned long long)size, (unsigned long long)(need + 8));
  }
  fdl_ds_report_check(v->rep, "sizes(%zu)", p->n_tensors);
}

static void report_checksums(ds_vctx *v, plan *p) {
  for (size_t i = 0; p->have_sums && i < p->sums.count; i++) {
    if (p->sum_job[i] == SIZE_MAX) continue;
    const ds_hash_job *j = &p->jobs[p->sum_job[i]];
    const char *f = p->sums.items[i].path;
    bool tensor = !strncmp(f, "capture/", 8);
    if (j->status != FDL_OK)
      fdl_ds_report_error(v->rep, tensor ? FDL_DSC_TENSOR_MISMATCH : FDL_DSC_SEAL_FAILED,
                          "SEAL-1(c)/SEAL-2", f, "%s cannot be hashed: %s", f, j->msg);
    else if (strcmp(j->hex, p->sums.items[i].hex))
      fdl_ds_report_error(v->rep, tensor ? FDL_DSC_TENSOR_MISMATCH : FDL_DSC_SEAL_FAILED,
                          "SEAL-1(c)/SEAL-2", f, "%s hashes to %s, checksums.txt says %s", f,
                          j->hex, p->sums.items[i].hex);
  }
}

/* second: compare the job's second range (the tensor content) rather than its first. */
static void compare(ds_vctx *v, const char *label, const char *rel, const char *what,
                    const ds_hash_job *j, bool second, const char *want) {
  const char *got = second ? j->hex2 : j->hex;
  if (j->status != FDL_OK)
    fdl_ds_report_error(v->rep, FDL_DSC_BAD_TENSOR_FILE, label, rel, "%s: %s", rel, j->msg);
  else if (!want || strcmp(got, want))
    fdl_ds_report_error(v->rep, FDL_DSC_TENSOR_MISMATCH, label, rel, "%s %s %s != manifest %s", rel,
                        what, got, want ? want : "(none)");
}

static void report_nonfinite(ds_vctx *v, const tensor_check *t, const ds_hash_job *j) {
  if (j->status != FDL_OK || !j->nonfinite) return;
  uint64_t row = t->width ? j->nonfinite_at / t->width : 0;
  uint64_t col = t->width ? j->nonfinite_at % t->width : j->nonfinite_at;
  int64_t idx = -1;
  if (t->record) fdl_json_int(t->record, "index", &idx);
  if (t->record)
    fdl_ds_report_error(v->rep, FDL_DSC_NON_FINITE, "SEAL-1(d)", t->rel,
                        "%s: record %lld holds a NaN or infinity at row %llu, column %llu (the "
                        "first one); pack and compare refuse it",
                        t->rel, (long long)idx, (unsigned long long)row, (unsigned long long)col);
  else
    fdl_ds_report_error(v->rep, FDL_DSC_NON_FINITE, "HEAD-IDENT", t->rel,
                        "%s: the head holds a NaN or infinity at row %llu, column %llu (the first "
                        "one); compare refuses it",
                        t->rel, (unsigned long long)row, (unsigned long long)col);
}

static void report_tensors(ds_vctx *v, plan *p) {
  size_t checked = 0;
  for (size_t i = 0; i < p->n_tensors; i++) {
    tensor_check *t = &p->tensors[i];
    if (!t->header_ok) continue;
    report_nonfinite(v, t, &p->jobs[t->content_job]);
    if (!t->record) {
      compare(v, "HEAD-IDENT", t->rel, "head tensor content", &p->jobs[t->content_job], true,
              v->mf.head.tensor_content_sha256);
      continue;
    }
    compare(v, "SEAL-1(d)", t->rel, "tensor content", &p->jobs[t->content_job], true,
            fdl_json_str(t->record, "tensor_content_sha256"));
    const char *pay = fdl_json_str(t->record, "payload_sha256");
    if (pay && pay[0]) {
      if (t->payload_job != SIZE_MAX)
        compare(v, "SEAL-1(d)", t->rel, "payload digest", &p->jobs[t->payload_job], false, pay);
      else
        compare(v, "SEAL-1(d)", t->rel, "payload digest", &p->jobs[t->content_job], true, pay);
    }
    const char *sha = fdl_json_str(t->record, "sha256");
    if (sha && sha[0])
      compare(v, "SEAL-1(d)", t->rel, "file digest", &p->jobs[t->file_job], false, sha);
    checked++;
  }
  fdl_ds_report_check(v->rep, "tensors(%zu)", checked);
}

fdl_status fdl_ds_v_files(ds_vctx *v, fdl_err *err) {
  plan p;
  memset(&p, 0, sizeof p);
  fdl_status s = collect_tensors(v, &p, err);
  if (s == FDL_OK && v->o->defer_tensor_hashes && p.n_tensors) {
    if (!(p.sorted_rels = fdl_malloc(p.n_tensors * sizeof *p.sorted_rels))) {
      s = fdl_fail(err, FDL_NOMEM, "validate: out of memory");
    } else {
      for (size_t i = 0; i < p.n_tensors; i++) p.sorted_rels[i] = p.tensors[i].rel;
      qsort(p.sorted_rels, p.n_tensors, sizeof *p.sorted_rels, fdl_order_cstr);
    }
  }
  if (s == FDL_OK) s = plan_checksums(v, &p, err);
  for (size_t i = 0; s == FDL_OK && v->o->verify_tensors && i < p.n_tensors; i++)
    s = plan_tensor(v, &p, &p.tensors[i], err);
  if (s == FDL_OK) s = fdl_ds_hash_jobs_run(v->rootfd, p.jobs, p.n, v->o->threads, err);
  if (s == FDL_OK) {
    check_sizes(v, &p);
    if (v->o->defer_tensor_hashes) check_deferred(v, &p);
    report_checksums(v, &p);
    if (p.have_sums)
      fdl_ds_report_check(v->rep, v->o->skip_hashing ? "seal.checksums(listed, nothing hashed)"
                                                     : "seal.checksums");
    if (v->o->verify_tensors) report_tensors(v, &p);
  }
  plan_free(&p);
  return s;
}
