/* token.c - the Hub token: HF_TOKEN, else the token file huggingface_hub writes (HF_TOKEN_PATH,
 * else HF_HOME/token, else ~/.cache/huggingface/token), as the front end read them. The token is a
 * credential: no message shows it, and its memory is wiped when released. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sys.h"
#include "hub/hub_internal.h"

/* A token is one line of printable ASCII without spaces; longer than this is not a token. */
#define TOKEN_MAX 4096

static bool token_ok(const char *t, size_t n) {
  if (n == 0 || n > TOKEN_MAX) return false;
  for (size_t i = 0; i < n; i++)
    if (t[i] <= 0x20 || t[i] >= 0x7f) return false;
  return true;
}

static void wipe(char *p, size_t n) {
  volatile char *v = p;
  while (n--) *v++ = 0;
}

fdl_status fdl_hub_token(const fdl_hub_env *e, char **token, fdl_err *err) {
  static const fdl_hub_env none;
  if (!e) e = &none;
  *token = NULL;
  const char *env = e->token;
  if (env && *env) {
    size_t n = strlen(env);
    if (!token_ok(env, n))
      return fdl_fail(err, FDL_INVALID,
                      "HF_TOKEN is not a token (expected one word of printable ASCII, at most %d "
                      "bytes)",
                      TOKEN_MAX);
    if (!(*token = fdl_strdup(env))) return fdl_fail(err, FDL_NOMEM, "out of memory");
    return FDL_OK;
  }
  char path[PATH_MAX];
  const char *p = e->token_path;
  int n = p && *p ? snprintf(path, sizeof path, "%s", p)
                  : fdl_hub_home_file(e, "token", path, sizeof path);
  if (n < 0 || !fdl_path_exists(path)) return FDL_OK; /* no token file */
  char *text = NULL;
  size_t len = 0;
  fdl_status s = fdl_read_file(path, TOKEN_MAX + 2, &text, &len, err);
  if (s != FDL_OK) return fdl_err_prefix(err, "the Hub token file");
  while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
    text[--len] = '\0';
  if (len == 0) {
    free(text);
    return FDL_OK;
  }
  if (!token_ok(text, len)) {
    wipe(text, len);
    free(text);
    return fdl_fail(err, FDL_INVALID,
                    "%s: not a token (expected one line of printable ASCII without spaces)", path);
  }
  *token = text;
  return FDL_OK;
}

void fdl_hub_token_free(char *token) {
  if (!token) return;
  wipe(token, strlen(token));
  free(token);
}
