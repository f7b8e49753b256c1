/* eos.c - the ids that end a model's generation (fidelis/generate.h): generation_config.json's
 * eos_token_id (what transformers' generate stops at), else config.json's (the text config's
 * for a wrapped checkpoint), or a GGUF's tokenizer.ggml.eos_token_id. One id or an array;
 * each must be a token of the vocabulary. */
#include <stdlib.h>

#include "engine/internal.h"
#include "fidelis/generate.h"
#include "fidelis/hub.h"
#include "json/json.h"

/* v (an id or an array of ids) into ids; where names it in messages. */
static fdl_status take(const fdl_model *m, const json_t *v, const char *where, int32_t *ids,
                       size_t cap, size_t *n, fdl_err *err) {
  size_t k = json_is_array(v) ? json_array_size(v) : 1;
  if (k > cap)
    return fdl_fail(err, FDL_PARSE, "%s: eos_token_id lists %zu ids, at most %zu are read", where,
                    k, cap);
  for (size_t i = 0; i < k; i++) {
    const json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
    if (!json_is_integer(e) || json_integer_value(e) < 0 ||
        (size_t)json_integer_value(e) >= m->info.vocab)
      return fdl_fail(err, FDL_PARSE, "%s: eos_token_id must be token ids below %zu", where,
                      m->info.vocab);
    ids[i] = (int32_t)json_integer_value(e);
  }
  *n = k;
  return FDL_OK;
}

static fdl_status from_gguf(const fdl_model *m, int32_t *ids, size_t *n, fdl_err *err) {
  const fdl_gguf_kv *kv = fdl_gguf_find(m->gguf, "tokenizer.ggml.eos_token_id");
  int64_t v;
  fdl_status s = kv ? fdl_gguf_get_int(m->gguf, kv, &v, err) : FDL_OK;
  if (s || !kv) return s;
  if (v < 0 || (uint64_t)v >= m->info.vocab)
    return fdl_fail(err, FDL_PARSE, "%s: tokenizer.ggml.eos_token_id %lld is not a token id",
                    m->gguf->path, (long long)v);
  ids[0] = (int32_t)v;
  *n = 1;
  return FDL_OK;
}

fdl_status fdl_model_eos(const fdl_model *m, const char *dir, int32_t *ids, size_t cap, size_t *n,
                         fdl_err *err) {
  *n = 0;
  if (m->gguf) return cap ? from_gguf(m, ids, n, err) : FDL_OK;
  char *path = NULL;
  fdl_status s = fdl_model_member(dir, "generation_config.json", &path, err);
  json_t *gc = NULL;
  if (!s && path) s = fdl_hub_blob_check_file(path, err); /* small: a separate pass */
  if (!s && path) s = fdl_json_load_file(path, NULL, &gc, err);
  free(path);
  if (s) return s;
  const json_t *v = fdl_eng_cfg_given(gc, "eos_token_id");
  if (v) {
    s = take(m, v, "generation_config.json", ids, cap, n, err);
    json_decref(gc);
    return s;
  }
  json_decref(gc);
  const json_t *c = m->config, *tc = json_object_get(c, "text_config");
  v = fdl_eng_cfg_given(c, "eos_token_id");
  if (!v) v = fdl_eng_cfg_given(tc, "eos_token_id");
  return v ? take(m, v, "config.json", ids, cap, n, err) : FDL_OK;
}
