/* fuzz_npy.c - the .npy reader over arbitrary bytes: any input either is refused or yields a
 * view whose every byte lies inside the input and whose size matches its shape. */
#include <stddef.h>
#include <stdint.h>

#include "fidelis/fidelis.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fdl_npy *np = NULL;
  fdl_err err;
  if (fdl_npy_open_mem(data, size, &np, &err) != FDL_OK) return 0;
  const fdl_tensor *t = fdl_npy_tensor(np);
  volatile uint8_t sink = 0;
  for (uint64_t b = 0; b < t->nbytes; b++) sink ^= t->data[b];
  (void)sink;
  if (fdl_tensor_numel(t) * fdl_dtype_size(t->dtype) != t->nbytes) __builtin_trap();
  if (t->offset + t->nbytes != size) __builtin_trap();
  fdl_npy_close(np);
  return 0;
}
