/* fuzz_json.c - the strict reader must never crash, and whatever it accepts must write
 * canonically in every dialect and read back to the same canonical bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fixed point violated is a real bug, so stop loudly for the fuzzer to record. */
static void expect(int ok, const char *what, const fdl_err *err) {
  if (ok) return;
  fprintf(stderr, "fuzz_json: %s (%s)\n", what, err ? err->msg : "");
  abort();
}

static void check_dialects(const json_t *v) {
  for (unsigned flags = 0; flags < 4; flags++) {
    fdl_buf once, twice;
    fdl_err err;
    fdl_buf_init(&once, 0);
    fdl_buf_init(&twice, 0);
    expect(fdl_json_dump(v, flags, &once, &err) == FDL_OK, "dump of a parsed value failed", &err);
    json_t *back = NULL;
    expect(fdl_json_parse(once.data, once.len, NULL, &back, &err) == FDL_OK,
           "canonical text does not read back", &err);
    expect(fdl_json_dump(back, flags, &twice, &err) == FDL_OK, "second dump failed", &err);
    expect(once.len == twice.len && !memcmp(once.data, twice.data, once.len),
           "canonical text is not a fixed point", NULL);
    json_decref(back);
    fdl_buf_free(&once);
    fdl_buf_free(&twice);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int kiln = 0; kiln < 2; kiln++) {
    fdl_json_read_opts opts = {0, kiln != 0};
    json_t *v = NULL;
    fdl_err err;
    if (fdl_json_parse((const char *)data, size, &opts, &v, &err) != FDL_OK) continue;
    check_dialects(v);
    json_decref(v);
  }
  return 0;
}
