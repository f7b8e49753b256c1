/* revision.c - the answer of GET {endpoint}/api/models/{repo}/revision/{rev}: the commit the
 * revision is at ("sha") and the repository's files ("siblings": [{"rfilename": ...}]). The
 * answer comes from the network: it is bounded in size and count, and every file name must be
 * a safe relative path before it names anything in the cache. */
#include <stdlib.h>
#include <string.h>

#include "base/order.h"
#include "base/sys.h"
#include "fidelis/digest.h"
#include "json/json.h"
#include "hub/hub_internal.h"

void fdl_hub_revision_free(fdl_hub_revision *r) {
  for (size_t i = 0; i < r->n; i++) free(r->files[i]);
  free(r->files);
  memset(r, 0, sizeof *r);
}

static fdl_status take_files(const json_t *sib, fdl_hub_revision *r, fdl_err *err) {
  size_t n = json_array_size(sib);
  if (n > FDL_HUB_MAX_FILES)
    return fdl_fail(err, FDL_TOO_LARGE, "revision: %zu files listed, at most %d are read", n,
                    FDL_HUB_MAX_FILES);
  if (n && !(r->files = fdl_calloc(n, sizeof *r->files)))
    return fdl_fail(err, FDL_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const json_t *f = json_object_get(json_array_get(sib, i), "rfilename");
    const char *name = json_string_value(f);
    if (!name || !fdl_hub_file_name_ok(name, json_string_length(f)))
      return fdl_fail(err, FDL_PARSE,
                      "revision: siblings[%zu].rfilename must be a relative file name without "
                      "'..' or empty parts, at most %d bytes",
                      i, FDL_HUB_FILE_MAX);
    if (!(r->files[r->n] = fdl_strdup(name))) return fdl_fail(err, FDL_NOMEM, "out of memory");
    r->n++;
  }
  if (r->n) qsort(r->files, r->n, sizeof *r->files, fdl_order_cstr);
  for (size_t i = 1; i < r->n; i++)
    if (!strcmp(r->files[i - 1], r->files[i]))
      return fdl_fail(err, FDL_PARSE, "revision: the file %.200s is listed twice", r->files[i]);
  return FDL_OK;
}

fdl_status fdl_hub_revision_parse(const char *buf, size_t len, fdl_hub_revision *r, fdl_err *err) {
  memset(r, 0, sizeof *r);
  if (len > FDL_HUB_MAX_REVISION_BYTES)
    return fdl_fail(err, FDL_TOO_LARGE, "revision: the answer has %zu bytes, at most %zu are read",
                    len, FDL_HUB_MAX_REVISION_BYTES);
  json_t *j = NULL;
  const fdl_json_read_opts o = {.max_depth = 16};
  fdl_status s = fdl_json_parse(buf, len, &o, &j, err);
  if (s != FDL_OK) return fdl_err_prefix(err, "revision: the answer is not JSON");
  const json_t *sha = json_object_get(j, "sha"), *sib = json_object_get(j, "siblings");
  if (!json_is_object(j))
    s = fdl_fail(err, FDL_PARSE, "revision: expected a JSON object");
  else if (!json_is_string(sha) || json_string_length(sha) != FDL_HUB_COMMIT_LEN ||
           !fdl_hex_lower(json_string_value(sha), FDL_HUB_COMMIT_LEN))
    s = fdl_fail(err, FDL_PARSE, "revision: \"sha\" must be a commit, 40 lowercase hex digits");
  else if (!json_is_array(sib))
    s = fdl_fail(err, FDL_PARSE, "revision: \"siblings\" must be an array of {\"rfilename\"}");
  if (s == FDL_OK) {
    memcpy(r->sha, json_string_value(sha), FDL_HUB_COMMIT_LEN + 1);
    s = take_files(sib, r, err);
  }
  json_decref(j);
  if (s != FDL_OK) fdl_hub_revision_free(r);
  return s;
}
