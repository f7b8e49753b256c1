/* ops.h - parsing tokenizer.json's step objects (ops.c). */
#ifndef FDL_TOKENIZER_OPS_H
#define FDL_TOKENIZER_OPS_H

#include <jansson.h>

#include "tokenizer/internal.h"

fdl_status fdl_tk_parse_normalizer(fdl_tok *t, const json_t *o, fdl_err *err);
fdl_status fdl_tk_parse_pretokenizer(fdl_tok *t, const json_t *o, fdl_err *err);
fdl_status fdl_tk_parse_decoder(fdl_tok *t, const json_t *o, fdl_err *err);

#endif
