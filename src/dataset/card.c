/* card.c - README.md, the dataset card, with YAML frontmatter.
 *
 * The frontmatter carries an `x_fidelity` block (the identities a registry or model card cites:
 * capture content digest, suite token hash, head digest, lane) and an `x_fidelis` block (the
 * producer). It cannot carry dataset_sha256: README.md is covered by checksums.txt, which the
 * seal covers, so the seal of the dataset is published from fidelity-dataset.json instead.
 * Every scalar is written as a JSON string or number, which YAML reads unchanged. */
#include <inttypes.h>

#include "dataset/pack.h"
#include "json/json.h"

/* A YAML-safe scalar: JSON text of a string (ASCII-escaped), or null. */
static void scalar(fdl_buf *b, const char *s) {
  if (!s) {
    fdl_buf_puts(b, "null");
    return;
  }
  json_t *v = json_string(s);
  /* Out of memory is the buffer's sticky error (the card is refused), never a "null" that
   * would publish a wrong value. */
  if (!v || fdl_json_dump(v, FDL_JSON_ASCII, b, NULL) != FDL_OK) b->err = FDL_NOMEM;
  json_decref(v);
}

static void kv(fdl_buf *b, const char *indent, const char *key, const char *val) {
  fdl_buf_printf(b, "%s%s: ", indent, key);
  scalar(b, val);
  fdl_buf_putc(b, '\n');
}

fdl_status fdl_pk_write_card(pk_ctx *c, const fdl_ds_docs *docs, fdl_err *err) {
  const json_t *m = docs->manifest;
  const json_t *ds = fdl_json_obj(m, "dataset"), *panel = fdl_json_obj(m, "panel"),
               *capture = fdl_json_obj(m, "capture"), *head = fdl_json_obj(m, "head"),
               *weights = fdl_json_obj(m, "weights");
  const char *license = fdl_json_str(ds, "license");
  const char *name = fdl_json_str(ds, "name");
  int64_t positions = 0, records = 0, vocab = 0;
  (void)fdl_json_int(panel, "scored_positions_total", &positions);
  (void)fdl_json_int(capture, "records_count", &records);
  (void)fdl_json_int(capture, "vocab_size", &vocab);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_buf_puts(&b, "---\nlicense: ");
  scalar(&b, license ? license : "other");
  fdl_buf_puts(&b, "\ntags:\n- fidelity-dataset\n- " FDL_DS_SCHEMA "\n");
  fdl_buf_puts(&b, "x_fidelity:\n");
  kv(&b, "  ", "schema", FDL_DS_SCHEMA);
  fdl_buf_puts(&b, "  fidelity_dataset:\n");
  kv(&b, "    ", "id", c->dataset_id);
  kv(&b, "    ", "role", c->role);
  kv(&b, "    ", "form", c->form);
  kv(&b, "    ", "dtype", fdl_json_str(capture, "dtype"));
  kv(&b, "    ", "capture_content_digest", c->content_digest);
  kv(&b, "    ", "suite_token_hash_sha256", fdl_json_str(panel, "suite_token_hash_sha256"));
  kv(&b, "    ", "head_tensor_content_sha256", fdl_json_str(head, "tensor_content_sha256"));
  kv(&b, "    ", "panel_id", fdl_json_str(panel, "panel_id"));
  kv(&b, "    ", "lane", c->lane);
  kv(&b, "    ", "weights_repository", fdl_json_str(weights, "repository"));
  kv(&b, "    ", "weights_revision", fdl_json_str(weights, "revision"));
  fdl_buf_printf(&b, "    records: %" PRId64 "\n    scored_positions_total: %" PRId64 "\n", records,
                 positions);
  fdl_buf_puts(&b, "    # dataset_sha256 is published from fidelity-dataset.json: this card is\n"
                   "    # inside the seal, so it cannot carry the seal itself.\n"
                   "    dataset_sha256: null\n");
  fdl_buf_puts(&b, "x_fidelis:\n");
  kv(&b, "  ", "tool", "fidelis pack");
  kv(&b, "  ", "version", fdl_version());
  kv(&b, "  ", "engine", fdl_pk_meta_str(c, "engine", "name"));
  kv(&b, "  ", "engine_version", fdl_pk_meta_str(c, "engine", "version"));
  fdl_buf_puts(&b, "---\n\n# ");
  fdl_buf_puts(&b, name ? name : c->dataset_id);
  fdl_buf_printf(&b,
                 "\n\nA `%s` dataset: one %s-form capture of `%s` over a panel of %zu "
                 "contexts (%" PRId64 " scored positions, vocabulary %" PRId64 "), lane `%s`.\n\n",
                 FDL_DS_SCHEMA, c->form, fdl_json_str(weights, "repository"), c->n, positions,
                 vocab, c->lane);
  fdl_buf_printf(&b,
                 "| | |\n|---|---|\n| role | %s |\n| capture content digest | `%s` |\n"
                 "| suite token hash | `%s` |\n| head content digest | `%s` |\n\n",
                 c->role, c->content_digest, fdl_json_str(panel, "suite_token_hash_sha256"),
                 fdl_json_str(head, "tensor_content_sha256")
                     ? fdl_json_str(head, "tensor_content_sha256")
                     : "none");
  fdl_buf_puts(&b, "## Verify\n\n```\nsha256sum --check checksums.txt\n"
                   "fidelis validate --verify-tensors .\n```\n\n"
                   "`fidelity-dataset.json` seals everything: its `dataset_sha256` covers "
                   "`checksums.txt`, which covers every other file.\n");
  if (fdl_buf_status(&b) != FDL_OK) {
    fdl_buf_free(&b);
    return fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_NOMEM, "README.md: out of memory");
  }
  char path[PATH_MAX];
  fdl_status s = fdl_pk_stage_path(c, "README.md", path, sizeof path, err);
  if (s == FDL_OK && fdl_write_file(path, b.data, b.len, err) != FDL_OK)
    s = fdl_pk_refuse(c, err, FDL_REF_IO_ERROR, FDL_IO, "%s", fdl_err_msg(err));
  fdl_buf_free(&b);
  return s;
}
