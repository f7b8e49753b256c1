/* fuzz_manifest.c - dataset manifests and pack panels on arbitrary bytes: never crash.
 *
 * The bytes are read twice: as a fidelity-dataset.json (strict parse, then the schema layer, the
 * path walk, the scope digest and the seal recomputation validate runs on it) and as a pack panel
 * JSONL (parsed and checked as pack does). Invariants: a panel that checks has at least one record
 * and scores at least one position per record; findings are always countable and serialisable. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/dataset.h"
#include "json/json.h"
#include "digest/seal_json.h"
#include "dataset/dataset_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void as_manifest(const char *text, size_t size) {
  json_t *doc = NULL;
  if (fdl_json_parse(text, size, NULL, &doc, NULL) != FDL_OK) return;
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  fdl_ds_check_manifest(doc, &rep);
  if (rep.errors.count && !*fdl_ds_code_name(rep.errors.items[0].code)) abort();
  json_t *out = NULL;
  if (fdl_ds_report_to_json(&rep, true, &out, NULL) != FDL_OK && rep.oom == FDL_OK) abort();
  json_decref(out);
  fdl_ds_report_free(&rep);
  fdl_buf b;
  fdl_buf_init(&b, 0);
  (void)fdl_ds_scope_digest(json_object_get(doc, "scope"), &b, NULL);
  fdl_buf_free(&b);
  if (json_is_object(doc)) {
    char seal[80];
    (void)fdl_seal_compute(doc, FDL_SEAL_FIDELITY_BLANK, "dataset_sha256", seal, NULL);
  }
  json_decref(doc);
}

static void as_panel(const char *text, size_t size) {
  size_t records = 0;
  int64_t positions = 0;
  fdl_err err;
  if (fdl_ds_panel_check(text, size, &records, &positions, &err) == FDL_OK) {
    if (records == 0 || positions < (int64_t)records) abort();
  } else if (!err.msg[0]) {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A private NUL-terminated copy: the parsers take lengths, but messages print strings. */
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  as_manifest(text, size);
  as_panel(text, size);
  free(text);
  return 0;
}
