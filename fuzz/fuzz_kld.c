/* fuzz_kld.c - llama.cpp's .kld base-file reader over arbitrary bytes: any input either has its
 * header refused, or every token and every row of it can be read and decoded (or the row
 * refused) without a byte read outside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "fidelis/fidelis.h"
#include "fidelis/llamacpp_kld.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fdl_kld k = {{data, size, NULL, false}, {0}, NULL};
  fdl_err err;
  if (fdl_kld_parse_header(data, size, "fuzz.kld", &k.info, &err) != FDL_OK) return 0;
  if (k.info.size != size) __builtin_trap();
  volatile int32_t sink = 0;
  for (uint64_t i = 0; i < (uint64_t)k.info.n_chunk * k.info.n_ctx; i++)
    sink ^= fdl_kld_token(&k, i);
  (void)sink;
  float *row = malloc((size_t)k.info.n_vocab * sizeof *row);
  if (!row) return 0;
  for (uint32_t c = 0; c < k.info.n_chunk; c++)
    for (uint32_t r = 0; r < k.info.rows; r++) {
      uint64_t floor = 0;
      if (fdl_kld_decode_row(&k, c, r, row, &floor, &err) == FDL_OK && floor > k.info.n_vocab)
        __builtin_trap();
    }
  free(row);
  return 0;
}
