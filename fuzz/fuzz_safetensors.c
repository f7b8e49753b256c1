/* fuzz_safetensors.c - the safetensors reader over arbitrary bytes: any input either is refused
 * or yields views whose every byte and every metadata string can be read. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "tensor/safetensors_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fdl_safetensors *st = NULL;
  fdl_err err;
  if (fdl_safetensors_open_mem(data, size, &st, &err) != FDL_OK) return 0;
  volatile uint8_t sink = 0;
  uint64_t end = fdl_safetensors_data_start(st);
  for (size_t i = 0; i < fdl_safetensors_count(st); i++) {
    const fdl_tensor *t = fdl_safetensors_at(st, i);
    for (uint64_t b = 0; b < t->nbytes; b++) sink ^= t->data[b];
    sink ^= (uint8_t)strlen(t->name);
    if (fdl_safetensors_find(st, t->name) == NULL) __builtin_trap();
    if (t->offset < end && t->nbytes > 0) __builtin_trap(); /* sorted, disjoint */
    if (t->nbytes > 0) end = t->offset + t->nbytes;
    if (t->offset + t->nbytes > size) __builtin_trap();
  }
  const json_t *meta = fdl_safetensors_metadata(st);
  if (meta) {
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)meta, key, value) {
      sink ^= (uint8_t)(strlen(key) + strlen(json_string_value(value)));
    }
  }
  (void)sink;
  fdl_safetensors_close(st);
  return 0;
}
