/* model.c - `fidelis model init --preset NAME --seed S OUT`: a deterministic random model in
 * Hugging Face layout (fdl_model_write), with the built-in panel beside it. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: fidelis model init --preset NAME [--seed S] [--json] [--no-weights] OUT\n\n"
             "Writes a random model in Hugging Face layout into the new directory OUT:\n"
             "  config.json             the keys transformers writes for the architecture\n"
             "  generation_config.json  bos and eos, greedy\n"
             "  model.safetensors       BF16 weights under the HF tensor names (Qwen3.5\n"
             "                          keeps A_log in F32, as its releases do)\n"
             "  panel.jsonl             the built-in panel for `fidelis pack` / capture: 4\n"
             "                          contexts x 64 tokens (garden, arithmetic, code,\n"
             "                          instructions), token = 256 (bos) then ASCII bytes\n"
             "The bytes are a function of (NAME, S) only: byte-identical on every machine.\n"
             "The panel does not depend on S. Weights: embeddings N(0, 1), projections\n"
             "N(0, 1/fan_in), norms 1 + N(0, 0.05^2) (Qwen3.5's zero-centred norms store\n"
             "the N(0, 0.05^2) part), from integer Irwin-Hall sums (docs/MODELS.md). OUT\n"
             "appears whole or not at all.\n\n"
             "presets:\n");
  size_t n;
  const fdl_model_preset *p = fdl_model_presets(&n);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "  %-20s %s\n  %-20s %llu parameters\n", p[i].name, p[i].about, "",
            (unsigned long long)fdl_model_preset_params(&p[i]));
  fprintf(f, "\noptions:\n"
             "  --preset NAME   one of the presets above (required)\n"
             "  --seed S        the weights' seed [0]\n"
             "  --json          print the result as JSON\n"
             "  --no-weights    write everything but model.safetensors (a big preset's\n"
             "                  config in seconds; parameters and tensors still counted)\n"
             "  -h, --help      show this help\n\n"
             "exit codes: 0 written; 3 refused (OUT exists: it is left untouched); 4 bad usage\n"
             "(an unknown preset), a write that failed, out of memory, or output that cannot\n"
             "be written\n");
}

typedef struct {
  fdl_model_write_opts o;
  bool json;
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  const char *pos[1] = {NULL};
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_TEXT("--preset", &a->o.preset),
      FDL_CLI_OPT_NUMBER("--seed", &a->o.seed, 0, UINT64_MAX),
      FDL_CLI_OPT_FLAG("--json", &a->json),
      FDL_CLI_OPT_FLAG("--no-weights", &a->o.no_weights),
  };
  fdl_cli_spec s = {"model init", usage, opts, FDL_CLI_N(opts), NULL, 0, pos, 1, 0,
                    out,          diag,  1u /* OUT */};
  int rc = fdl_cli_parse_sub(&s, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->o.preset) return fdl_cli_usage_error(&s, "--preset NAME is required");
  if (!fdl_model_preset_find(a->o.preset)) {
    char names[256] = "";
    size_t n;
    const fdl_model_preset *p = fdl_model_presets(&n);
    for (size_t i = 0; i < n; i++)
      snprintf(names + strlen(names), sizeof names - strlen(names), " %s", p[i].name);
    return fdl_cli_usage_error(&s, "--preset '%s': expected one of%s", a->o.preset, names);
  }
  if (s.npos != 1) return fdl_cli_usage_error(&s, "OUT is required");
  a->o.out_dir = pos[0];
  return FDL_CLI_GO;
}

static int work(args *a) {
  fdl_model_write_opts o = a->o;
  o.notice = fdl_cli_notice;
  o.notice_arg = "model init";
  fdl_model_write_result r;
  fdl_err err = {FDL_OK, ""};
  double t0 = fdl_cli_now();
  fdl_status s = fdl_model_write(&o, &r, &err);
  double dt = fdl_cli_now() - t0;
  if (s != FDL_OK) return fdl_cli_refused("model init", NULL, s, FDL_REF_MODEL_INIT_FAILED, &err);
  if (a->json) {
    json_t *j = json_pack(
        "{s:o, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "out", fdl_cli_json_text(o.out_dir), "preset",
        o.preset, "seed", (json_int_t)o.seed, "parameters", (json_int_t)r.params, "tensors",
        (json_int_t)r.tensors, "safetensors_bytes", (json_int_t)r.bytes, "panel_contexts",
        (json_int_t)r.panel_contexts, "panel_tokens", (json_int_t)r.panel_tokens);
    return fdl_cli_print_json(j, FDL_JSON_ASCII);
  }
  char shown[FDL_QUOTE_CAP], weights[64] = "no model.safetensors (--no-weights)";
  if (!o.no_weights)
    snprintf(weights, sizeof weights, "model.safetensors %llu bytes", (unsigned long long)r.bytes);
  printf("fidelis model init: wrote %s (preset %s, seed %llu): %zu tensors, %llu parameters, "
         "%s, panel %zu x %zu tokens, in %.2f s\n",
         fdl_cli_shown(o.out_dir, shown, sizeof shown), o.preset, (unsigned long long)o.seed,
         r.tensors, (unsigned long long)r.params, weights, r.panel_contexts, r.panel_tokens, dt);
  return FDL_EXIT_OK;
}

FDL_CLI_COMMAND(fdl_cli_model, fdl_cli_model_check, args, parse, work)
