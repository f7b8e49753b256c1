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
  fdl_ds_manifest m;
  fdl_ds_manifest_decode(docs->manifest, &m);
  const char *head_digest = m.head.tensor_content_sha256;
  fdl_buf b;
  fdl_buf_init(&b, 0);
  fdl_buf_puts(&b, "---\nlicense: ");
  scalar(&b, m.dataset.license ? m.dataset.license : "other");
  fdl_buf_puts(&b, "\ntags:\n- fidelity-dataset\n- " FDL_DS_SCHEMA "\n");
  fdl_buf_puts(&b, "x_fidelity:\n");
  kv(&b, "  ", "schema", FDL_DS_SCHEMA);
  fdl_buf_puts(&b, "  fidelity_dataset:\n");
  kv(&b, "    ", "id", c->dataset_id);
  kv(&b, "    ", "role", c->role);
  kv(&b, "    ", "form", c->form);
  kv(&b, "    ", "dtype", m.capture.dtype);
  kv(&b, "    ", "capture_content_digest", c->content_digest);
  kv(&b, "    ", "suite_token_hash_sha256", m.panel.suite_token_hash_sha256);
  kv(&b, "    ", "head_tensor_content_sha256", head_digest);
  kv(&b, "    ", "panel_id", m.panel.panel_id);
  kv(&b, "    ", "lane", c->lane);
  kv(&b, "    ", "weights_repository", m.weights.repository);
  kv(&b, "    ", "weights_revision", m.weights.revision);
  fdl_buf_printf(&b, "    records: %" PRId64 "\n    scored_positions_total: %" PRId64 "\n",
                 m.capture.records_count, m.panel.scored_positions_total);
  fdl_buf_puts(&b, "    # dataset_sha256 is published from fidelity-dataset.json: this card is\n"
                   "    # inside the seal, so it cannot carry the seal itself.\n"
                   "    dataset_sha256: null\n");
  fdl_buf_puts(&b, "x_fidelis:\n");
  kv(&b, "  ", "tool", "fidelis pack");
  kv(&b, "  ", "version", fdl_version());
  kv(&b, "  ", "engine", c->engine_name);
  kv(&b, "  ", "engine_version", c->engine_version);
  fdl_buf_puts(&b, "---\n\n# ");
  fdl_buf_puts(&b, m.dataset.name ? m.dataset.name : c->dataset_id);
  fdl_buf_printf(&b,
                 "\n\nA `%s` dataset: one %s-form capture of `%s` over a panel of %zu "
                 "contexts (%" PRId64 " scored positions, vocabulary %" PRId64 "), lane `%s`.\n\n",
                 FDL_DS_SCHEMA, c->form, m.weights.repository, c->n, m.panel.scored_positions_total,
                 m.capture.vocab_size, c->lane);
  fdl_buf_printf(&b,
                 "| | |\n|---|---|\n| role | %s |\n| capture content digest | `%s` |\n"
                 "| suite token hash | `%s` |\n| head content digest | `%s` |\n\n",
                 c->role, c->content_digest, m.panel.suite_token_hash_sha256,
                 head_digest ? head_digest : "none");
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
