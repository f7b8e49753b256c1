/* engine/config_json.h - a loaded model's config.json as a parsed tree (json_t): the private tier
 * of fidelis/engine.h (docs/layers.tsv), which keeps jansson out of the installed headers. */
#ifndef FIDELIS_CONFIG_JSON_H
#define FIDELIS_CONFIG_JSON_H

#include <jansson.h>

#include "fidelis/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* config.json as the loader parsed it (for a GGUF, the config its metadata stands for), from the
 * bytes fdl_model_file_digest digests. Borrowed: lives as long as the model. */
const json_t *fdl_model_config(const fdl_model *m);

#ifdef __cplusplus
}
#endif
#endif
