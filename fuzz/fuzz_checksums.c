/* fuzz_checksums.c - checksums.txt parsing on arbitrary bytes: never crash, and whatever parses
 * formats to text that parses back to the same listing (and formats identically). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/digest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Same set of (path, hex) pairs, in any order. */
static void same_listing(const fdl_checksums *a, const fdl_checksums *b) {
  if (a->count != b->count) abort();
  for (size_t i = 0; i < a->count; i++) {
    const fdl_checksum_entry *e = fdl_checksums_find(b, a->items[i].path);
    if (!e || strcmp(e->hex, a->items[i].hex) != 0) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fdl_checksums c, again;
  fdl_checksums_init(&c);
  fdl_checksums_init(&again);
  fdl_buf text, text2;
  fdl_buf_init(&text, 0);
  fdl_buf_init(&text2, 0);
  fdl_err err;
  if (fdl_checksums_parse((const char *)data, size, &c, &err) == FDL_OK) {
    if (fdl_checksums_format(&c, &text, &err) != FDL_OK) abort();
    if (fdl_checksums_parse(text.data ? text.data : "", text.len, &again, &err) != FDL_OK) abort();
    same_listing(&c, &again);
    if (fdl_checksums_format(&again, &text2, &err) != FDL_OK) abort();
    if (text.len != text2.len || (text.len && memcmp(text.data, text2.data, text.len))) abort();
  }
  fdl_buf_free(&text);
  fdl_buf_free(&text2);
  fdl_checksums_free(&c);
  fdl_checksums_free(&again);
  return 0;
}
