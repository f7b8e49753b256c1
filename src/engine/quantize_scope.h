/* quantize_scope.h - internal to src/engine: which tensors `fidelis quantize` quantizes, and as
 * what (quantize_scope.c). */
#ifndef FDL_ENGINE_QUANTIZE_SCOPE_H
#define FDL_ENGINE_QUANTIZE_SCOPE_H

#include <stddef.h>

#include "fidelis/model.h"

/* What a tensor is to the quantizer: a matrix in scope (a Linear's X.weight), one of Qwen3.5
 * MoE's fused expert tensors (3-D, split into one matrix per expert and projection), or
 * nothing (copied as stored). */
typedef enum { FDL_QS_NONE, FDL_QS_MATRIX, FDL_QS_GATE_UP, FDL_QS_DOWN } fdl_qs_kind;

typedef struct {
  fdl_qs_kind k;
  size_t module; /* where the block-relative module name ("mlp.up_proj") starts in the name */
} fdl_qs_match;

/* A routed expert's modules are "mlp.experts.E.<proj>"; proj i of gate_proj, up_proj,
 * down_proj. */
#define FDL_QS_EXPERTS "mlp.experts."
const char *fdl_qs_proj(size_t i);

/* Whether name is in scope, and as what. */
fdl_qs_match fdl_qs_match_name(const char *name, fdl_gptq_scope scope);

/* qsort order of block-relative module names (const char *) for quantization_config's
 * modules_in_block_to_quantize: attention, DeltaNet, dense MLP, shared expert, then the experts
 * by index, gate, up, down within one. */
int fdl_qs_module_cmp(const void *a, const void *b);

#endif
