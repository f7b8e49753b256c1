/* ctensors_config.c - a compressed-tensors quantization_config (llm-compressor): which of its
 * schemes the engine decodes exactly at load (ctensors.c, docs/MODELS.md), the rest refused by
 * name.
 *
 * Read: one config group targeting Linear layers, whose weights are either
 *   - format pack-quantized: type int, num_bits 4 or 8, strategy group (group_size) or channel,
 *     symmetric or with zero points, activation order allowed (weight_g_idx), or
 *   - format float-quantized: type float, num_bits 8 (FP8 E4M3), strategy tensor or channel.
 * Weight-only: a pack-quantized scheme that also quantizes activations is refused (the int8 GEMM
 * it implies is not reproduced); FP8 checkpoints usually quantize activations dynamically too
 * (FP8_DYNAMIC), which the capture's weights_decode discloses as not reproduced (the engine runs
 * the weights' reconstruction in float32, as for every quantized checkpoint). KV-cache schemes,
 * sparsity and other formats are refused. */
#include <string.h>

#include "engine/internal.h"
#include "json/get.h"

fdl_status fdl_eng_ct_config(const json_t *q, const char *path, fdl_model_info *info,
                             fdl_err *err) {
  const char *fmt = fdl_json_str(q, "format");
  if (!fmt || (strcmp(fmt, "pack-quantized") && strcmp(fmt, "float-quantized")))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.format %s is not read (expected pack-quantized or "
                    "float-quantized)",
                    path, fmt ? fmt : "(missing)");
  if (fdl_eng_cfg_given(q, "kv_cache_scheme") || fdl_eng_cfg_given(q, "sparsity_config"))
    return fdl_fail(
        err, FDL_UNSUPPORTED, "%s: quantization_config.%s is set: only weight quantization is read",
        path, fdl_eng_cfg_given(q, "kv_cache_scheme") ? "kv_cache_scheme" : "sparsity_config");
  const json_t *groups = json_object_get(q, "config_groups");
  if (!json_is_object(groups) || json_object_size(groups) != 1)
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: quantization_config.config_groups must hold exactly one group (one "
                    "scheme for every Linear layer)",
                    path);
  const char *gname = json_object_iter_key(json_object_iter((json_t *)groups));
  const json_t *g = json_object_get(groups, gname), *w = json_object_get(g, "weights");
  const json_t *tg = json_object_get(g, "targets");
  bool linear = false;
  for (size_t i = 0; json_is_array(tg) && i < json_array_size(tg); i++)
    linear |= json_is_string(json_array_get(tg, i)) &&
              !strcmp(json_string_value(json_array_get(tg, i)), "Linear");
  if (!linear || !json_is_object(w))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: config_groups.%s: expected weights for the targets [\"Linear\"]", path,
                    gname);
  if (fdl_json_str(g, "format") && strcmp(fdl_json_str(g, "format"), fmt))
    return fdl_fail(err, FDL_UNSUPPORTED, "%s: config_groups.%s.format %s differs from %s", path,
                    gname, fdl_json_str(g, "format"), fmt);
  bool packed = !strcmp(fmt, "pack-quantized");
  const char *type = fdl_json_str(w, "type"), *strategy = fdl_json_str(w, "strategy");
  const json_t *nb = json_object_get(w, "num_bits");
  json_int_t bits = json_is_integer(nb) ? json_integer_value(nb) : 0;
  if (!type || strcmp(type, packed ? "int" : "float") ||
      (packed ? bits != 4 && bits != 8 : bits != 8))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: config_groups.%s.weights: %s %lld-bit weights are not read in %s "
                    "(expected %s)",
                    path, gname, type ? type : "(no type)", (long long)bits, fmt,
                    packed ? "int, 4 or 8 bits" : "float, 8 bits (FP8 E4M3)");
  bool by_group = strategy && !strcmp(strategy, "group");
  if (!strategy ||
      !(by_group || !strcmp(strategy, "channel") || (!packed && !strcmp(strategy, "tensor"))))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: config_groups.%s.weights.strategy %s is not read (expected %s)", path,
                    gname, strategy ? strategy : "(missing)",
                    packed ? "group or channel" : "tensor or channel");
  if (json_is_true(json_object_get(w, "dynamic")) || fdl_eng_cfg_given(w, "block_structure"))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: config_groups.%s.weights: dynamic or block-structured weight scales are "
                    "not read",
                    path, gname);
  if (fdl_eng_cfg_given(g, "output_activations") ||
      (packed && fdl_eng_cfg_given(g, "input_activations")))
    return fdl_fail(err, FDL_UNSUPPORTED,
                    "%s: config_groups.%s quantizes %s activations: only weight-only "
                    "pack-quantized schemes are read",
                    path, gname, fdl_eng_cfg_given(g, "output_activations") ? "output" : "input");
  size_t group = 0;
  if (by_group) {
    const json_t *gs = json_object_get(w, "group_size");
    if (!json_is_integer(gs) || json_integer_value(gs) <= 0)
      return fdl_fail(err, FDL_PARSE, "%s: config_groups.%s.weights.group_size must be positive",
                      path, gname);
    group = (size_t)json_integer_value(gs);
  }
  info->ct_format = packed ? "pack-quantized" : "float-quantized";
  info->ct.bits = (unsigned)bits;
  info->ct.group = group;
  /* compressed-tensors' default is symmetric */
  info->ct.symmetric = !packed || !fdl_eng_cfg_given(w, "symmetric") ||
                       json_is_true(json_object_get(w, "symmetric"));
  return FDL_OK;
}
