/* paths.c - PATH-1/PATH-3 over every path-valued string of a manifest (§2.1).
 *
 * The walk visits every string whose key names a path, at any depth. Each is first checked as a
 * string (relative, no scheme, no drive, ".." only where PATH-3 admits it), then joined onto
 * the directory it is actually resolved from and proven to stay inside the root. The
 * resolution base follows what readers open: a capture record's `file` and `runtime_manifest`
 * are relative to capture/, files under compat/ are relative to their own directory, and every
 * other path is root-relative (the reference joins panel token files onto panel/ for this check
 * but reads them root-relative; fidelis checks what is read, as the spec recommends). */
#include <stdio.h>
#include <string.h>

#include "base/quote.h"
#include "dataset/ds_internal.h"
#include "fidelis/vocab.h"
#include "json/json.h"
#include "base/path.h"

static const char *const PATH_KEYS[] = {"file",
                                        "token_file",
                                        "attention_mask_file",
                                        "panel_file",
                                        "manifest_file",
                                        "checksums_file",
                                        "head_json",
                                        "dir",
                                        "remap_file",
                                        "runtime_manifest",
                                        "receipt",
                                        NULL};

static bool under_compat(const char *where) {
  return !strncmp(where, "compat/", 7);
}

/* The directory a path key of the file `where` resolves from ("" = the root), §2.1. */
static void fdl_ds_path_base(const char *where, const char *key, char *out, size_t cap) {
  bool capture_relative = !strcmp(where, "capture/manifest.json") &&
                          (!strcmp(key, "file") || !strcmp(key, "runtime_manifest"));
  if (capture_relative || under_compat(where))
    fdl_dirname(where, out, cap);
  else if (cap)
    out[0] = '\0';
}

/* PATH-1's string rules without the ".." segment rules: the value is judged after it is
 * joined onto its base, which is what PATH-3 protects. */
static bool string_rules_ok(const char *s, size_t n) {
  if (n == 0 || strlen(s) != n || s[0] == '/' || s[0] == '\\' || strstr(s, "://")) return false;
  const char *slash = strchr(s, '/');
  size_t first = slash ? (size_t)(slash - s) : n;
  return memchr(s, ':', first) == NULL;
}

static void check_one(const char *key, const json_t *v, const char *where, fdl_ds_report *rep) {
  const char *s = json_string_value(v);
  size_t n = json_string_length(v);
  if (!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8)) return;
  bool allow_parent = under_compat(where) || !strcmp(key, "runtime_manifest");
  char at[DS_MAX_PATH + 64];
  snprintf(at, sizeof at, "%s:%s", where, key);
  char shown[FDL_QUOTE_CAP], q[FDL_QUOTE_CAP];
  fdl_py_shown(v, shown, sizeof shown);
  bool ok = n < DS_MAX_PATH && (allow_parent ? string_rules_ok(s, n) : fdl_relpath_ok(s, n, false));
  if (!ok) {
    fdl_ds_report_error(rep, FDL_DSC_PATH_ESCAPE, "PATH-1/PATH-3", at,
                        "%s is not a relative path that stays inside the dataset root%s", shown,
                        allow_parent ? ""
                                     : " ('..' is permitted only under compat/ and on "
                                       "runtime_manifest)");
    return;
  }
  char base[DS_MAX_PATH], joined[DS_MAX_PATH];
  fdl_ds_path_base(where, key, base, sizeof base);
  if (!fdl_ds_join_norm(base, s, joined, sizeof joined))
    fdl_ds_report_error(rep, FDL_DSC_PATH_ESCAPE, "PATH-1/PATH-3", at,
                        "%s resolves outside the dataset root (from %s)", shown,
                        fdl_quote_str(base[0] ? base : ".", q, sizeof q));
}

static void walk(const json_t *node, const char *where, fdl_ds_report *rep, int depth) {
  if (depth > 2 * FDL_JSON_DEFAULT_MAX_DEPTH) return; /* parsed documents are shallower */
  if (json_is_object(node)) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)node, key, v) {
      if (json_is_string(v) && fdl_vocab_find(PATH_KEYS, key) >= 0) check_one(key, v, where, rep);
      walk(v, where, rep, depth + 1);
    }
  } else if (json_is_array(node)) {
    size_t i;
    const json_t *v;
    json_array_foreach(node, i, v) walk(v, where, rep, depth + 1);
  }
}

void fdl_ds_walk_paths(const json_t *doc, const char *where, fdl_ds_report *rep) {
  walk(doc, where, rep, 0);
}
