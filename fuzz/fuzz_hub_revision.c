/* fuzz_hub_revision.c - the Hub's revision answer (GET /api/models/REPO/revision/REV), which
 * comes from the network, on arbitrary bytes: refused with a message and nothing kept, or parsed
 * into a 40-hex commit and sorted, distinct file names that are each a safe relative path (no
 * "..", no leading '/', no empty part), so none can name anything outside a snapshot. Also
 * feeds the same bytes to the hf:// reference parser and the redirect host policy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/digest.h"
#include "hub/hub_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *f) {
  size_t n = strlen(f);
  if (!fdl_hub_file_name_ok(f, n) || f[0] == '/' || strstr(f, "//")) abort();
  if (!strcmp(f, "..") || !strncmp(f, "../", 3) || strstr(f, "/../") ||
      (n >= 3 && !strcmp(f + n - 3, "/..")))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fdl_hub_revision r;
  fdl_err err = {FDL_OK, ""};
  if (fdl_hub_revision_parse((const char *)data, size, &r, &err) == FDL_OK) {
    if (strlen(r.sha) != FDL_HUB_COMMIT_LEN || !fdl_hex_lower(r.sha, FDL_HUB_COMMIT_LEN)) abort();
    for (size_t i = 0; i < r.n; i++) {
      check_name(r.files[i]);
      if (i && strcmp(r.files[i - 1], r.files[i]) >= 0) abort();
    }
    fdl_hub_revision_free(&r);
  } else if (!err.msg[0] || r.files || r.n) {
    abort();
  }
  /* the same bytes as a reference and as a redirect target */
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = '\0';
  fdl_hub_ref ref;
  if (fdl_hub_parse(s, &ref, &err) == FDL_OK) {
    if (strstr(ref.repo, "..") || strchr(ref.rev, '/') || strstr(ref.rev, "..")) abort();
    if (ref.path[0]) check_name(ref.path);
  }
  fdl_hub_origin ep, to;
  if (fdl_hub_origin_of("https://huggingface.co", &ep, &err) != FDL_OK) abort();
  if (fdl_hub_origin_of(s, &to, &err) == FDL_OK && fdl_hub_host_allowed(&ep, &to)) {
    size_t n = strlen(to.host);
    if (!to.https) abort();
    if (strcmp(to.host, "huggingface.co") && strcmp(to.host, "hf.co") &&
        !(n > 15 && !strcmp(to.host + n - 15, ".huggingface.co")) &&
        !(n > 6 && !strcmp(to.host + n - 6, ".hf.co")))
      abort();
  }
  free(s);
  return 0;
}
