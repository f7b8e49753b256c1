/* quantize_scope.c - which tensors `fidelis quantize` quantizes (docs/MODELS.md): the MLP (a
 * MoE's experts and shared expert included), or every linear layer; matched by whole module
 * name. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "engine/quantize_scope.h"
#include "base/path.h"

static const char *const MLP[] = {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
/* Qwen3.5 MoE's shared expert: a SwiGLU MLP beside the routed ones, in scope as the dense MLP
 * is. Its one-row sigmoid gate (mlp.shared_expert_gate) is not, nor is the router
 * (mlp.gate.weight, [experts, hidden]): the published GPTQ MoE releases leave the router in
 * float (it chooses the experts, and is a rounding error of the model's size), and int4 on
 * either would move which experts are chosen and how much each counts. */
static const char *const SHARED[] = {"mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj",
                                     "mlp.shared_expert.down_proj"};
static const char *const ATTN[] = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                   "self_attn.o_proj"};
/* Gated DeltaNet's attention-sized projections (Qwen3.5). in_proj_a and in_proj_b, one row per
 * value head, and the depthwise conv1d stay as stored: int4 buys nothing on them and would
 * perturb the decay and the write strength of every head. */
static const char *const DELTANET[] = {"linear_attn.in_proj_qkv", "linear_attn.in_proj_z",
                                       "linear_attn.out_proj"};
/* The modules matched by their whole name, in the order quantization_config lists them. */
typedef struct {
  const char *const *names;
  size_t n;
  bool all_linear; /* only in scope all-linear */
} module_set;
static const module_set FIXED[] = {
    {ATTN, 4, true}, {DELTANET, 3, true}, {MLP, 3, false}, {SHARED, 3, false}};
#define NFIXED (sizeof FIXED / sizeof *FIXED)
/* A routed expert's projections: "mlp.experts.E.<proj>.weight", one tensor each (Qwen3 MoE, and
 * Qwen3.5 MoE as some writers store it), both scopes. */
static const char *const PROJ[] = {"gate_proj", "up_proj", "down_proj"};
/* Never quantized, whatever their names: a vision tower and multi-token-prediction heads,
 * which the engine does not run. */
static const char *const FOREIGN[] = {"model.visual.", "mtp."};

const char *fdl_qs_proj(size_t i) {
  return PROJ[i];
}

const char *fdl_gptq_scope_name(fdl_gptq_scope s) {
  return s == FDL_GPTQ_SCOPE_ALL_LINEAR ? "all-linear" : "mlp";
}

/* The index of proj in PROJ, with the rest of the name exactly rest; or -1. */
static int proj_index(const char *s, const char *rest) {
  size_t m = strlen(rest);
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(PROJ[i]);
    if (!strncmp(s, PROJ[i], n) && !strncmp(s + n, rest, m) && !s[n + m]) return i;
  }
  return -1;
}

/* name's last ".mlp.experts." followed by "E.<proj>.weight", "gate_up_proj" or "down_proj".
 * The router "mlp.gate.weight" and "mlp.shared_expert_gate.weight" never fdl_qs_match here: the one
 * has no "experts." and the other no "." after "shared_expert". */
static fdl_qs_match expert_match(const char *name) {
  const char *at = NULL;
  for (const char *p = strstr(name, "." FDL_QS_EXPERTS); p; p = strstr(p + 1, "." FDL_QS_EXPERTS))
    at = p;
  fdl_qs_match none = {FDL_QS_NONE, 0};
  if (!at) return none;
  const char *p = at + 1 + strlen(FDL_QS_EXPERTS);
  size_t module = (size_t)(at + 1 - name), d = strspn(p, "0123456789");
  if (!strcmp(p, "gate_up_proj")) return (fdl_qs_match){FDL_QS_GATE_UP, module};
  if (!strcmp(p, "down_proj")) return (fdl_qs_match){FDL_QS_DOWN, module};
  if (d && p[d] == '.' && proj_index(p + d + 1, ".weight") >= 0)
    return (fdl_qs_match){FDL_QS_MATRIX, module};
  return none;
}

/* Whether name is in scope, and as what. Names are matched by suffix ("<prefix>.<module>.weight"),
 * so model.language_model.layers.N.mlp.* qualifies as model.layers.N.mlp.* does. */
fdl_qs_match fdl_qs_match_name(const char *name, fdl_gptq_scope scope) {
  fdl_qs_match none = {FDL_QS_NONE, 0};
  for (size_t i = 0; i < sizeof FOREIGN / sizeof *FOREIGN; i++)
    if (!strncmp(name, FOREIGN[i], strlen(FOREIGN[i]))) return none;
  char want[64];
  size_t len = strlen(name);
  for (size_t s = 0; s < NFIXED; s++)
    for (size_t i = 0;
         i < FIXED[s].n && (scope == FDL_GPTQ_SCOPE_ALL_LINEAR || !FIXED[s].all_linear); i++) {
      snprintf(want, sizeof want, ".%s.weight", FIXED[s].names[i]);
      if (fdl_ends_with(name, want)) return (fdl_qs_match){FDL_QS_MATRIX, len - strlen(want) + 1};
    }
  return expert_match(name);
}

/* Rank of a fixed module in FIXED's order; past the last for anything else (an expert). */
static size_t fixed_rank(const char *m) {
  size_t r = 0;
  for (size_t s = 0; s < NFIXED; s++)
    for (size_t i = 0; i < FIXED[s].n; i++, r++)
      if (!strcmp(m, FIXED[s].names[i])) return r;
  return r;
}

/* The order of quantization_config's module list: the fixed modules as FIXED lists them, then
 * the experts by index (numerically: a shorter digit string first, so 2 before 10, with no
 * overflow whatever the name holds), gate, up, down within an expert. */
int fdl_qs_module_cmp(const void *pa, const void *pb) {
  const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
  size_t ra = fixed_rank(a), rb = fixed_rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (strncmp(a, FDL_QS_EXPERTS, strlen(FDL_QS_EXPERTS)) ||
      strncmp(b, FDL_QS_EXPERTS, strlen(FDL_QS_EXPERTS)))
    return strcmp(a, b);
  a += strlen(FDL_QS_EXPERTS);
  b += strlen(FDL_QS_EXPERTS);
  size_t da = strspn(a, "0123456789"), db = strspn(b, "0123456789");
  if (da != db) return da < db ? -1 : 1;
  int c = memcmp(a, b, da);
  if (c) return c;
  return proj_index(a + da + 1, "") - proj_index(b + db + 1, "");
}
