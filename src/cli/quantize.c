/* quantize.c - `fidelis quantize MODEL OUT`: int4 round-to-nearest of a model's MLP (or every
 * linear layer) into a GPTQ-v1 packed checkpoint (fdl_gptq_quantize_model). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fputs("usage: fidelis quantize [--codec int4] [--group-size N] [--scope mlp|all-linear]\n"
        "                        [--json] MODEL OUT\n\n"
        "Quantizes the Hugging Face model directory MODEL (config.json, model.safetensors or\n"
        "shards with model.safetensors.index.json) into the new directory OUT, a GPTQ-v1\n"
        "packed checkpoint (shards stay shards): each weight in scope X.weight\n"
        "[out, in] becomes X.qweight (I32 [in/8, out]), X.qzeros (I32 [in/N, out/8], stored\n"
        "zero - 1), X.scales (F16 [in/N, out]) and X.g_idx (I32 [in], i / N); every other\n"
        "tensor is copied as stored, config.json gains a quantization_config (quant_method\n"
        "gptq, bits 4, sym false, desc_act false, checkpoint_format gptq), and the other files\n"
        "of MODEL (tokenizer, generation config, panel) are copied. Round to nearest,\n"
        "asymmetric, per group of N input columns: lo = min(0, min w), hi = max(0, max w),\n"
        "scale = f16((hi - lo) / 15), zero = rint(-lo / scale), q = clamp(rint(w / scale) +\n"
        "zero, 0, 15), ties to even (docs/MODELS.md). The decode (q - zero) * scale is exact.\n"
        "OUT appears whole or not at all.\n\n"
        "options (default in brackets):\n"
        "  --codec int4          the codec [int4]\n"
        "  --group-size N        input columns per scale and zero [32]\n"
        "  --scope mlp           mlp.{gate,up,down}_proj, each expert's and the shared\n"
        "                        expert's (fused experts split per expert; the router\n"
        "                        and shared_expert_gate stay float) [mlp]\n"
        "  --scope all-linear    those and self_attn.{q,k,v,o}_proj\n"
        "  --json                print the result as JSON\n"
        "  -h, --help            show this help\n\n"
        "exit codes: 0 written; 3 refused (MODEL is not a model directory or is malformed,\n"
        "already quantized, an index that disagrees with its shards, a weight cannot be packed: in "
        "or out not a multiple of 8,\n"
        "N does not divide in, a non-finite weight; or OUT exists); 4 bad usage, a MODEL that\n"
        "cannot be opened as a directory, a write that failed, out of memory\n",
        f);
}

static const char *const CODECS[] = {"int4", NULL};
static const char *const SCOPES[] = {"mlp", "all-linear", NULL};

typedef struct {
  fdl_gptq_opts o;
  bool json;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  a->o.group = 32;
  int codec = 0, scope = 0;
  const char *pos[2] = {NULL, NULL};
  const fdl_cli_opt opts[] = {
      {"--codec", NULL, FDL_CLI_CHOICE, &codec, 0, 0, CODECS},
      FDL_CLI_OPT_SIZE("--group-size", &a->o.group, 1, (uint64_t)1 << 20),
      {"--scope", NULL, FDL_CLI_CHOICE, &scope, 0, 0, SCOPES},
      FDL_CLI_OPT_FLAG("--json", &a->json),
  };
  fdl_cli_spec s = {"quantize", usage, opts, FDL_CLI_N(opts), NULL, 0, pos, 2,
                    0,          out,   diag, 1u << 1 /* OUT */};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (s.npos != 2) return fdl_cli_usage_error(&s, "MODEL and OUT are required");
  a->o.model_dir = pos[0];
  a->o.out_dir = pos[1];
  a->o.scope = scope ? FDL_GPTQ_SCOPE_ALL_LINEAR : FDL_GPTQ_SCOPE_MLP;
  return FDL_CLI_GO;
}

static int work(args *a) {
  if (fdl_cli_input_dir("quantize", a->o.model_dir) != 0) return FDL_EXIT_USAGE;
  fdl_gptq_opts o = a->o;
  o.notice = fdl_cli_notice;
  o.notice_arg = "quantize";
  fdl_gptq_result r;
  fdl_err err = {FDL_OK, ""};
  double t0 = fdl_cli_now();
  fdl_status s = fdl_gptq_quantize_model(&o, &r, &err);
  double dt = fdl_cli_now() - t0;
  if (s != FDL_OK) return fdl_cli_refused("quantize", NULL, s, FDL_REF_QUANTIZE_REFUSED, &err);
  if (a->json) {
    json_t *j = json_pack(
        "{s:o, s:o, s:s, s:I, s:s, s:I, s:I, s:I, s:I}", "model", fdl_cli_json_text(o.model_dir),
        "out", fdl_cli_json_text(o.out_dir), "codec", "int4", "group_size", (json_int_t)o.group,
        "scope", fdl_gptq_scope_name(o.scope), "quantized_tensors", (json_int_t)r.quantized,
        "copied_tensors", (json_int_t)r.copied, "quantized_parameters",
        (json_int_t)r.params_quantized, "safetensors_bytes", (json_int_t)r.bytes);
    return fdl_cli_print_json(j, FDL_JSON_ASCII);
  }
  char m[FDL_QUOTE_CAP], q[FDL_QUOTE_CAP];
  printf("fidelis quantize: wrote %s from %s: int4 g%zu, scope %s, %zu weights quantized "
         "(%llu parameters), %zu tensors copied, model.safetensors %llu bytes, in %.2f s\n",
         fdl_cli_shown(o.out_dir, q, sizeof q), fdl_cli_shown(o.model_dir, m, sizeof m), o.group,
         fdl_gptq_scope_name(o.scope), r.quantized, (unsigned long long)r.params_quantized,
         r.copied, (unsigned long long)r.bytes, dt);
  return FDL_EXIT_OK;
}

FDL_CLI_COMMAND(fdl_cli_quantize, fdl_cli_quantize_check, args, parse, work)
