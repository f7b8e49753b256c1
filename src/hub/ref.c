/* ref.c - hf:// references and the names of files inside a repository.
 *
 * hf://[datasets/]ORG/NAME[@REV][/PATH]. Every part is bounded and spelled from a small set, so
 * a reference can never name a folder outside its repository in the cache (no "..", no '/'
 * in a revision, which becomes a file name under refs/). */
#include <stdio.h>
#include <string.h>

#include "hub/hub_internal.h"

bool fdl_hub_is_uri(const char *s) {
  return s && !strncmp(s, FDL_HUB_SCHEME, sizeof FDL_HUB_SCHEME - 1);
}

static bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

/* An ORG, NAME or REV of n bytes: the set above, not starting with '.' or '-', no "..". */
static bool part_ok(const char *s, size_t n, size_t max) {
  if (n == 0 || n > max || s[0] == '.' || s[0] == '-') return false;
  for (size_t i = 0; i < n; i++) {
    if (!name_char(s[i])) return false;
    if (i + 1 < n && s[i] == '.' && s[i + 1] == '.') return false;
  }
  return true;
}

bool fdl_hub_file_name_ok(const char *name, size_t n) {
  if (n == 0 || n > FDL_HUB_FILE_MAX || name[0] == '/') return false;
  size_t seg = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || name[i] == '/') {
      const char *s = name + i - seg;
      if (seg == 0 || (seg == 1 && s[0] == '.') || (seg == 2 && s[0] == '.' && s[1] == '.'))
        return false;
      seg = 0;
      continue;
    }
    unsigned char c = (unsigned char)name[i];
    if (c < 0x20 || c == 0x7f || c == '\\') return false;
    seg++;
  }
  return true;
}

fdl_status fdl_hub_parse(const char *uri, fdl_hub_ref *ref, fdl_err *err) {
  memset(ref, 0, sizeof *ref);
  if (!fdl_hub_is_uri(uri))
    return fdl_fail(err, FDL_INVALID, "'%.80s': not a Hub reference (expected hf://ORG/NAME@REV)",
                    uri ? uri : "");
  const char *p = uri + sizeof FDL_HUB_SCHEME - 1;
  if (!strncmp(p, "datasets/", 9)) {
    ref->kind = FDL_HUB_DATASET;
    p += 9;
  } else if (!strncmp(p, "models/", 7)) {
    p += 7;
  }
  const char *slash = strchr(p, '/');
  if (!slash || !part_ok(p, (size_t)(slash - p), FDL_HUB_NAME_MAX))
    return fdl_fail(err, FDL_INVALID,
                    "'%.200s': the organisation must be 1 to %d letters, digits, '-', '_' or "
                    "'.' followed by '/' (hf://ORG/NAME@REV)",
                    uri, FDL_HUB_NAME_MAX);
  const char *name = slash + 1;
  size_t nn = strcspn(name, "@/");
  if (!part_ok(name, nn, FDL_HUB_NAME_MAX))
    return fdl_fail(err, FDL_INVALID,
                    "'%.200s': the repository name must be 1 to %d letters, digits, '-', '_' or "
                    "'.' (hf://ORG/NAME@REV)",
                    uri, FDL_HUB_NAME_MAX);
  snprintf(ref->repo, sizeof ref->repo, "%.*s/%.*s", (int)(slash - p), p, (int)nn, name);
  const char *q = name + nn;
  if (*q == '@') {
    q++;
    size_t rn = strcspn(q, "/");
    if (!part_ok(q, rn, FDL_HUB_REV_MAX))
      return fdl_fail(err, FDL_INVALID,
                      "'%.200s': the revision after '@' must be a branch, tag or commit of 1 to "
                      "%d letters, digits, '-', '_' or '.' (no '/': name a branch with a '/' by "
                      "its commit)",
                      uri, FDL_HUB_REV_MAX);
    snprintf(ref->rev, sizeof ref->rev, "%.*s", (int)rn, q);
    q += rn;
  } else {
    snprintf(ref->rev, sizeof ref->rev, "main");
  }
  if (*q == '/') {
    q++;
    size_t pn = strlen(q);
    while (pn && q[pn - 1] == '/') pn--; /* "hf://o/n@r/dir/" names dir */
    if (pn && !fdl_hub_file_name_ok(q, pn))
      return fdl_fail(err, FDL_INVALID,
                      "'%.200s': the path inside the repository must be relative, at most %d "
                      "bytes, without empty, '.' or '..' parts",
                      uri, FDL_HUB_FILE_MAX);
    snprintf(ref->path, sizeof ref->path, "%.*s", (int)pn, q);
  }
  return FDL_OK;
}

bool fdl_hub_repo_folder(const fdl_hub_ref *ref, char *out, size_t cap) {
  const char *slash = strchr(ref->repo, '/');
  if (!slash) return false;
  int n = snprintf(out, cap, "%s--%.*s--%s", ref->kind == FDL_HUB_DATASET ? "datasets" : "models",
                   (int)(slash - ref->repo), ref->repo, slash + 1);
  return n > 0 && (size_t)n < cap;
}

void fdl_hub_ref_text(const fdl_hub_ref *ref, char *out, size_t cap) {
  snprintf(out, cap, "hf://%s%s@%s%s%s", ref->kind == FDL_HUB_DATASET ? "datasets/" : "", ref->repo,
           ref->rev, ref->path[0] ? "/" : "", ref->path);
}
