/* gguf_meta.c - the scope and weights_decode blocks of a capture from a GGUF file, and the
 * quantization_config a safetensors checkpoint's weights_decode copies.
 *
 * A GGUF mixes ggml types per tensor (a Q4_K_M file holds Q4_K and Q6_K matrices and F32
 * norms), so the scope names, per tensor class, every type its tensors are stored in, in the
 * order first met, and the bits per weight averaged over the class's elements. A tied head is
 * the embedding's. */
#include <stdio.h>
#include <string.h>

#include "fidelis/vocab.h"
#include "capture/gguf_meta.h"
#include "engine/config_json.h"
#include "fidelis/ggml_quant.h"

static int class_of(const char *name) {
  static const struct {
    const char *part;
    int cls;
  } map[] = {{"embed_tokens.", FDL_TCLASS_EMBED}, {"q_proj.", FDL_TCLASS_ATTN_QKV},
             {"k_proj.", FDL_TCLASS_ATTN_QKV},    {"v_proj.", FDL_TCLASS_ATTN_QKV},
             {"o_proj.", FDL_TCLASS_ATTN_O},      {"gate_proj.", FDL_TCLASS_MLP_GATE},
             {"up_proj.", FDL_TCLASS_MLP_UP},     {"down_proj.", FDL_TCLASS_MLP_DOWN},
             {"norm.", FDL_TCLASS_NORM},          {"layernorm.", FDL_TCLASS_NORM},
             {"lm_head.", FDL_TCLASS_LM_HEAD}};
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
  class_acc acc[FDL_TCLASS_COUNT] = {{{0}, 0, 0, false, false}};
  const char *name;
  uint32_t type;
  uint64_t n;
  for (size_t i = 0; fdl_model_gguf_tensor(m, i, &name, &type, &n); i++) {
    int c = class_of(name);
    if (c >= 0) add(&acc[c], type, n);
    if (c == FDL_TCLASS_EMBED && fdl_model_get_info(m)->tied)
      add(&acc[FDL_TCLASS_LM_HEAD], type, n);
  }
  json_t *a = json_array();
  bool head_q = false;
  for (size_t i = 0; i < FDL_TCLASS_COUNT; i++) {
    if (!acc[i].any) continue; /* no tensor maps to moe.experts: GGUF models here are dense */
    if (i == FDL_TCLASS_LM_HEAD) head_q = acc[i].quantized;
    json_array_append_new(
        a, json_pack("{s:s, s:s, s:s, s:f, s:n}", "tensor_class", fdl_tensor_class_names[i],
                     "treatment", acc[i].quantized ? "quantized" : "native", "format", acc[i].types,
                     "bits_per_weight", acc[i].elems ? acc[i].bits / acc[i].elems : 0.0,
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

const json_t *fdl_capture_quant_config(const fdl_model *m) {
  return json_object_get(fdl_model_config(m), "quantization_config");
}
