/* load.c - fdl_tok_load: which file a path names, its identity, and the public accessors.
 *
 * A directory means its tokenizer.json (and tokenizer_config.json when present), each read
 * under the model-file rule (fdl_model_member: a regular file, or a link that stays inside the
 * model or its Hugging Face cache). A path ending in .json is that tokenizer.json, with the
 * tokenizer_config.json beside it; a file starting with "GGUF" is a GGUF. Each file is read
 * once: the bytes parsed are the bytes hashed into the identity. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sys.h"
#include "base/fs.h"
#include "fidelis/hub.h"
#include "json/json.h"
#include "tokenizer/internal.h"
#include "base/path.h"

static fdl_status read_hashed(const char *path, const char *name, fdl_tok_file *f, char **text,
                              size_t *len, fdl_err *err) {
  fdl_status s = fdl_read_file(path, FDL_JSON_MAX_FILE_BYTES, text, len, err);
  if (s != FDL_OK) return s;
  if ((s = fdl_sha256_buf_hex(*text, *len, f->sha256, err)) != FDL_OK) return s;
  /* a Hugging Face cache blob: the bytes read are the bytes its name promises */
  if ((s = fdl_hub_blob_check_buf(path, *text, *len, err)) != FDL_OK) return s;
  f->bytes = *len;
  snprintf(f->name, sizeof f->name, "%s", name);
  return FDL_OK;
}

static bool is_gguf(const char *path) {
  int fd;
  if (fdl_open_regular(path, true, &fd, NULL, NULL) != FDL_OK) return false;
  char magic[4];
  bool yes = fdl_sys_read(fd, magic, 4) == 4 && !memcmp(magic, "GGUF", 4);
  close(fd);
  return yes;
}

/* tokenizer.json (+ tokenizer_config.json) of dir, or the named json and its sibling config. */
static fdl_status load_json(fdl_tok *t, const char *dir, const char *json_path, fdl_err *err) {
  char *jp = NULL, *cp = NULL, *jt = NULL, *ct = NULL;
  size_t jl = 0, cl = 0;
  fdl_status s = FDL_OK;
  if (json_path) {
    jp = fdl_strdup(json_path);
    if (!jp) s = fdl_fail(err, FDL_NOMEM, "out of memory");
  } else {
    s = fdl_model_member(dir, "tokenizer.json", &jp, err);
    if (s == FDL_OK && !jp)
      s = fdl_fail(err, FDL_IO,
                   "%s has no tokenizer.json (fidelis reads the model's own "
                   "tokenizer; name a tokenizer.json or a .gguf with --tokenizer)",
                   dir);
  }
  if (s == FDL_OK) s = fdl_model_member(dir, "tokenizer_config.json", &cp, err);
  if (s == FDL_OK)
    s = read_hashed(jp, json_path ? fdl_path_base(json_path) : "tokenizer.json", &t->files[0], &jt,
                    &jl, err);
  if (s == FDL_OK) t->n_files = 1;
  if (s == FDL_OK && cp &&
      (s = read_hashed(cp, "tokenizer_config.json", &t->files[1], &ct, &cl, err)) == FDL_OK)
    t->n_files = 2;
  if (s == FDL_OK) {
    tk_source js = {jp, jt, jl}, cfg = {cp, ct, cl};
    s = fdl_tk_load_hf(t, &js, cp ? &cfg : NULL, err);
    snprintf(t->source, sizeof t->source, "tokenizer.json");
    snprintf(t->id, sizeof t->id, "tokenizer.json-sha256-%.16s", t->files[0].sha256);
  }
  free(jp);
  free(cp);
  free(jt);
  free(ct);
  return s;
}

fdl_status fdl_tok_load(const char *path, fdl_tok **out, fdl_err *err) {
  *out = NULL;
  fdl_tok *t = fdl_calloc(1, sizeof *t);
  if (!t) return fdl_fail(err, FDL_NOMEM, "out of memory");
  struct stat st;
  fdl_status s = FDL_OK;
  if (stat(path, &st) != 0) {
    s = fdl_fail(err, FDL_IO, "cannot open the tokenizer %s: %s", path, strerror(errno));
  } else if (S_ISDIR(st.st_mode)) {
    s = load_json(t, path, NULL, err);
  } else if (is_gguf(path)) {
    snprintf(t->files[0].name, sizeof t->files[0].name, "%s", fdl_path_base(path));
    s = fdl_tk_load_gguf(t, path, &t->files[0], err);
    t->n_files = 1;
    snprintf(t->source, sizeof t->source, "gguf");
    snprintf(t->id, sizeof t->id, "gguf-sha256-%.16s", t->files[0].sha256);
  } else if (fdl_ends_with(path, ".json")) {
    char dir[4096];
    if (!fdl_dirname(path, dir, sizeof dir) || !dir[0]) snprintf(dir, sizeof dir, ".");
    s = load_json(t, dir, path, err);
  } else {
    s = fdl_fail(err, FDL_INVALID,
                 "%s: not a model directory, a tokenizer.json or a GGUF file (no \"GGUF\" magic)",
                 path);
  }
  if (s == FDL_OK && !t->kind[0]) snprintf(t->kind, sizeof t->kind, "BPE");
  if (s != FDL_OK) {
    fdl_tok_free(t);
    return s;
  }
  *out = t;
  return FDL_OK;
}

void fdl_tok_free(fdl_tok *t) {
  if (!t) return;
  fdl_tk_release(t);
  fdl_tk_scratch_free(&t->scratch);
  free(t->added_order);
  free(t->pairs);
  if (t->mc) pcre2_match_context_free(t->mc);
  if (t->jit) pcre2_jit_stack_free(t->jit);
  free(t);
}

void fdl_tok_get_info(const fdl_tok *t, fdl_tok_info *i) {
  *i = (fdl_tok_info){t->n,    t->bos,    t->eos, t->add_bos, t->add_eos,
                      t->kind, t->source, t->id,  t->files,   t->n_files};
}
