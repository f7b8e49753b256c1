/* kiln_model.c - Kiln's model fingerprint of a model directory (KILN-ATTRIBUTION.md §6). */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/path.h"
#include "attr/internal.h"
#include "fidelis/attr.h"
#include "json/json.h"
#include "fidelis/kiln.h"
#include "base/order.h"
#include "base/sys.h"
#include "attr/kiln_json.h"

/* ---- model fingerprint (§6) ------------------------------------------------------------------ */

/* dir/rel must be a regular file with no symlink on the way; its digest and size. */
static fdl_status model_file(const char *dir, const char *rel, bool *present, char *sha,
                             uint64_t *size, dev_t *dev, ino_t *ino, fdl_err *err) {
  if (!fdl_kiln_rel_path_ok(rel, strlen(rel)) || strchr(rel, '\\'))
    return fdl_fail(err, FDL_PATH, "%s: \"%s\" is not a normalised relative path", dir, rel);
  char *full = fdl_path_join(dir, rel);
  if (!full) return fdl_fail(err, FDL_NOMEM, "out of memory");
  struct stat st;
  fdl_status s = FDL_OK;
  /* every component below dir, the file itself included, is checked with lstat */
  for (char *q = full + strlen(dir) + 1;; q++) {
    if (*q != '/' && *q != '\0') continue;
    char keep = *q;
    *q = '\0';
    int r = lstat(full, &st);
    int e = errno;
    *q = keep;
    if (r != 0) {
      if (e == ENOENT && present) {
        *present = false;
        free(full);
        return FDL_OK;
      }
      s = fdl_fail(err, e == ENOENT ? FDL_INVALID : FDL_IO, "%s: %s", full, strerror(e));
      break;
    }
    if (S_ISLNK(st.st_mode)) {
      s = fdl_fail(err, FDL_PATH, "%s: a symbolic link in a model path is refused", full);
      break;
    }
    if (keep == '\0') break;
  }
  if (s == FDL_OK && !S_ISREG(st.st_mode))
    s = fdl_fail(err, FDL_INVALID, "%s: expected a regular file", full);
  fdl_sha256 d;
  uint64_t sz = 0;
  if (s == FDL_OK) s = fdl_sha256_file(full, &d, &sz, err);
  free(full);
  if (s != FDL_OK) return s;
  if (present) *present = true;
  fdl_attr_sha_text(&d, sha);
  if (size) *size = sz;
  if (dev) *dev = st.st_dev;
  if (ino) *ino = st.st_ino;
  return FDL_OK;
}

/* Shard names, in discovery order (§6): index weight_map values, model.safetensors, or every
 * *.safetensors in the directory. A new array of strings. */
static fdl_status shard_names(const char *dir, json_t **names, fdl_err *err) {
  json_t *out = json_array();
  if (!out) return fdl_fail(err, FDL_NOMEM, "out of memory");
  size_t n = strlen(dir) + 64;
  char *p = fdl_malloc(n);
  if (!p) {
    json_decref(out);
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  struct stat st;
  fdl_status s = FDL_OK;
  snprintf(p, n, "%s/model.safetensors.index.json", dir);
  if (lstat(p, &st) == 0) {
    const fdl_json_read_opts o = {.max_depth = 0, .kiln_strict = false};
    json_t *idx = NULL;
    s = fdl_json_load_file(p, &o, &idx, err);
    const json_t *wm = s == FDL_OK ? json_object_get(idx, "weight_map") : NULL;
    if (s == FDL_OK && (!json_is_object(wm) || !json_object_size(wm)))
      s = fdl_fail(err, FDL_INVALID, "%s: $.weight_map: expected a nonempty object", p);
    const char *k;
    json_t *v;
    if (s == FDL_OK) json_object_foreach((json_t *)wm, k, v) {
        if (s != FDL_OK) break;
        if (!json_is_string(v)) {
          s = fdl_fail(err, FDL_INVALID, "%s: $.weight_map.%s: expected a string", p, k);
          break;
        }
        bool seen = false;
        for (size_t i = 0; i < json_array_size(out) && !seen; i++)
          seen = json_equal(json_array_get(out, i), v);
        if (!seen && json_array_append(out, v) != 0) s = fdl_fail(err, FDL_NOMEM, "out of memory");
      }
    json_decref(idx);
  } else {
    snprintf(p, n, "%s/model.safetensors", dir);
    if (lstat(p, &st) == 0) {
      if (json_array_append_new(out, json_string("model.safetensors")) != 0)
        s = fdl_fail(err, FDL_NOMEM, "out of memory");
    } else {
      DIR *d = opendir(dir);
      if (!d) s = fdl_fail(err, FDL_IO, "%s: %s", dir, strerror(errno));
      size_t cnt = 0, cap = 0;
      char **list = NULL;
      for (struct dirent *e; s == FDL_OK && d && (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l <= 12 || strcmp(e->d_name + l - 12, ".safetensors") != 0) continue;
        if (!FDL_GROW(list, cnt, cap, 8) || !(list[cnt] = fdl_strdup(e->d_name)))
          s = fdl_fail(err, FDL_NOMEM, "out of memory");
        else
          cnt++;
      }
      if (d) closedir(d);
      if (s == FDL_OK) qsort(list, cnt, sizeof *list, fdl_order_cstr);
      for (size_t i = 0; i < cnt; i++) {
        if (s == FDL_OK && json_array_append_new(out, json_string(list[i])) != 0)
          s = fdl_fail(err, FDL_NOMEM, "out of memory");
        free(list[i]);
      }
      free(list);
    }
  }
  free(p);
  if (s == FDL_OK && !json_array_size(out))
    s = fdl_fail(err, FDL_INVALID,
                 "%s: no weight shards (no index, model.safetensors or *.safetensors)", dir);
  return fdl_json_hand_over(s, out, names);
}

static int cmp_weight(const void *a, const void *b) {
  const json_t *x = json_object_get(*(json_t *const *)a, "path");
  const json_t *y = json_object_get(*(json_t *const *)b, "path");
  return strcmp(json_string_value(x), json_string_value(y));
}

fdl_status fdl_kiln_model_identity(const char *dir, const char *id, json_t **out, fdl_err *err) {
  *out = NULL;
  if (!id || !*id) return fdl_fail(err, FDL_INVALID, "model identity: empty model id");
  struct stat st;
  if (lstat(dir, &st) != 0) return fdl_fail(err, FDL_IO, "%s: %s", dir, strerror(errno));
  if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
    return fdl_fail(err, FDL_PATH, "%s: the model root must be a real directory, not a link", dir);
  char config[FDL_SEAL_BUF], tok[FDL_SEAL_BUF], tmpl[FDL_SEAL_BUF];
  fdl_status s = model_file(dir, "config.json", NULL, config, NULL, NULL, NULL, err);
  if (s == FDL_OK) s = model_file(dir, "tokenizer.json", NULL, tok, NULL, NULL, NULL, err);
  bool have = false;
  if (s == FDL_OK) s = model_file(dir, "chat_template.jinja", &have, tmpl, NULL, NULL, NULL, err);
  if (s == FDL_OK && !have) {
    size_t n = strlen(dir) + 32;
    char *p = fdl_malloc(n);
    if (!p) return fdl_fail(err, FDL_NOMEM, "out of memory");
    snprintf(p, n, "%s/tokenizer_config.json", dir);
    json_t *tc = NULL;
    const fdl_json_read_opts o = {.max_depth = 0, .kiln_strict = false};
    s = lstat(p, &st) == 0 && S_ISREG(st.st_mode)
            ? fdl_json_load_file(p, &o, &tc, err)
            : fdl_fail(
                  err, FDL_INVALID,
                  "%s: no chat template (no chat_template.jinja, no regular tokenizer_config.json)",
                  dir);
    const json_t *ct = s == FDL_OK ? json_object_get(tc, "chat_template") : NULL;
    if (s == FDL_OK && !json_is_string(ct))
      s = fdl_fail(
          err, FDL_INVALID,
          "%s: $.chat_template: expected a string (a null template hash fails the request)", p);
    fdl_sha256 d;
    if (s == FDL_OK) s = fdl_sha256_buf(json_string_value(ct), json_string_length(ct), &d, err);
    if (s == FDL_OK) fdl_attr_sha_text(&d, tmpl);
    json_decref(tc);
    free(p);
  }
  json_t *names = NULL;
  if (s == FDL_OK) s = shard_names(dir, &names, err);
  if (s != FDL_OK) return s;
  size_t n = json_array_size(names);
  json_t **files = fdl_calloc(n, sizeof *files);
  dev_t *devs = fdl_calloc(n, sizeof *devs);
  ino_t *inos = fdl_calloc(n, sizeof *inos);
  if (!files || !devs || !inos) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; s == FDL_OK && i < n; i++) {
    const char *rel = json_string_value(json_array_get(names, i));
    char sha[FDL_SEAL_BUF];
    uint64_t size = 0;
    s = model_file(dir, rel, NULL, sha, &size, &devs[i], &inos[i], err);
    if (s == FDL_OK && size == 0)
      s = fdl_fail(err, FDL_INVALID, "%s/%s: an empty weight shard", dir, rel);
    for (size_t j = 0; s == FDL_OK && j < i; j++)
      if (devs[j] == devs[i] && inos[j] == inos[i])
        s = fdl_fail(err, FDL_INVALID, "%s/%s: the same file as another shard", dir, rel);
    if (s == FDL_OK) {
      files[i] =
          json_pack("{s:s, s:I, s:s}", "path", rel, "bytes", (json_int_t)size, "sha256", sha);
      if (!files[i]) s = fdl_fail(err, FDL_NOMEM, "out of memory");
    }
  }
  json_t *m = NULL, *wf = NULL;
  if (s == FDL_OK) {
    qsort(files, n, sizeof *files, cmp_weight);
    wf = json_array();
    for (size_t i = 0; wf && i < n; i++)
      if (json_array_append(wf, files[i]) != 0) s = fdl_fail(err, FDL_NOMEM, "out of memory");
    m = wf ? json_pack("{s:s, s:s, s:s, s:s, s:O}", "id", id, "config_hash", config,
                       "tokenizer_hash", tok, "chat_template_hash", tmpl, "weight_files", wf)
           : NULL;
    if (!m && s == FDL_OK) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  }
  char content[FDL_SEAL_BUF];
  if (s == FDL_OK) s = fdl_kiln_canonical_sha256(m, content, err);
  if (s == FDL_OK && json_object_set_new(m, "content_sha256", json_string(content)) != 0)
    s = fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; files && i < n; i++) json_decref(files[i]);
  free(files);
  free(devs);
  free(inos);
  json_decref(wf);
  json_decref(names);
  return fdl_json_hand_over(s, m, out);
}
