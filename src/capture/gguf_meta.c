/* gguf_meta.c - the scope and weights_decode blocks of a capture from a GGUF file.
 *
 * A GGUF mixes ggml types per tensor (a Q4_K_M file holds Q4_K and Q6_K matrices and F32
 * norms), so the scope names, per tensor class, every type its tensors are stored in, in the
 * order first met, and the bits per weight averaged over the class's elements. A tied head is
 * the embedding's. */
#include <stdio.h>
#include <string.h>

#include "capture/gguf_meta.h"
#include "fidelis/ggml_quant.h"

static const char *const CLASSES[] = {"embed_tokens", "attn.qkv", "attn.o", "mlp.gate",
                                      "mlp.up",       "mlp.down", "norm",   "lm_head"};
#define N_CLASSES (sizeof CLASSES / sizeof *CLASSES)

static int class_of(const char *name) {
  static const struct {
    const char *part;
    int cls;
  } map[] = {{"embed_tokens.", 0}, {"q_proj.", 1},    {"k_proj.", 1},  {"v_proj.", 1},
             {"o_proj.", 2},       {"gate_proj.", 3}, {"up_proj.", 4}, {"down_proj.", 5},
             {"norm.", 6},         {"layernorm.", 6}, {"lm_head.", 7}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (strstr(name, map[i].part)) return map[i].cls;
  return -1;
}

typedef struct {
  char types[96];
  double bits, elems;
  bool quantized, any;
} class_acc;

static void add(class_acc *a, uint32_t type, uint64_t n) {
  const fdl_ggml_type_info *ti = fdl_ggml_type(type);
  const char *nm = ti ? ti->name : "unknown";
  char probe[40];
  snprintf(probe, sizeof probe, "+%s+", nm);
  char have[100];
  snprintf(have, sizeof have, "+%s+", a->types);
  if (!strstr(have, probe))
    snprintf(a->types + strlen(a->types), sizeof a->types - strlen(a->types), "%s%s",
             a->any ? "+" : "", nm);
  a->any = true;
  a->quantized |= !fdl_ggml_is_float(type);
  if (ti && ti->block_elems) a->bits += (double)n * 8.0 * ti->block_bytes / ti->block_elems;
  a->elems += (double)n;
}

json_t *fdl_capture_gguf_scope(const fdl_model *m) {
  class_acc acc[N_CLASSES] = {{{0}, 0, 0, false, false}};
  const char *name;
  uint32_t type;
  uint64_t n;
  for (size_t i = 0; fdl_model_gguf_tensor(m, i, &name, &type, &n); i++) {
    int c = class_of(name);
    if (c >= 0) add(&acc[c], type, n);
    if (c == 0 && fdl_model_get_info(m)->tied) add(&acc[7], type, n);
  }
  json_t *a = json_array();
  bool head_q = false;
  for (size_t i = 0; i < N_CLASSES; i++) {
    if (!acc[i].any) continue;
    if (i == 7) head_q = acc[i].quantized;
    json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:f, s:n}", "tensor_class", CLASSES[i],
                                       "treatment", acc[i].quantized ? "quantized" : "native",
                                       "format", acc[i].types, "bits_per_weight",
                                       acc[i].elems ? acc[i].bits / acc[i].elems : 0.0,
                                       "layer_range"));
  }
  return json_pack("{s:o, s:s, s:s, s:s}", "assignments", a, "policy", "mixed", "head_policy",
                   head_q ? "quantized" : "native", "kv_cache_dtype", "f32");
}

json_t *fdl_capture_gguf_decode(const fdl_model *m) {
  json_t *types = json_object();
  const char *name;
  uint32_t type;
  uint64_t n;
  for (size_t i = 0; fdl_model_gguf_tensor(m, i, &name, &type, &n); i++) {
    const fdl_ggml_type_info *ti = fdl_ggml_type(type);
    const char *k = ti ? ti->name : "unknown";
    json_object_set_new(types, k, json_integer(json_integer_value(json_object_get(types, k)) + 1));
  }
  return json_pack("{s:s, s:s, s:s, s:o}", "method", "gguf-dequant-to-float32", "scope",
                   "weights_reconstructed", "output_dtype", "float32", "ggml_types", types);
}
