/* fuzz_kiln_check.c - the Kiln request / v1 and v2 result checker must never crash on any
 * document the strict reader accepts, and a document it accepts must keep its identity when
 * written in Kiln's file layout and read back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "attr/kiln_json.h"
#include "json/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const fdl_json_read_opts opts = {0, true};
  json_t *v = NULL;
  fdl_err err;
  if (fdl_json_parse((const char *)data, size, &opts, &v, &err) != FDL_OK) return 0;
  fdl_kiln_checked res;
  if (fdl_kiln_check_doc(v, "fuzz", &res, &err) == FDL_OK) {
    fdl_buf b;
    fdl_buf_init(&b, 0);
    json_t *back = NULL;
    fdl_kiln_checked again;
    if (fdl_json_dump(v, FDL_JSON_ASCII | FDL_JSON_PRETTY, &b, &err) != FDL_OK ||
        fdl_json_parse(b.data, b.len, &opts, &back, &err) != FDL_OK ||
        fdl_kiln_check_doc(back, "fuzz", &again, &err) != FDL_OK ||
        strcmp(res.identity, again.identity) != 0) {
      fprintf(stderr, "fuzz_kiln_check: an accepted document does not round-trip (%s)\n", err.msg);
      abort();
    }
    json_decref(back);
    fdl_buf_free(&b);
  }
  json_decref(v);
  return 0;
}
