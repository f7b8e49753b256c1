/* commands.c - the table of subcommands, apart from main() so that the fuzz target can link
 * every command's parser without a second main. */
#include "cli/cli.h"

static const fdl_cli_command COMMANDS[] = {
    {"tokenize", "text to the model's token ids, or ids back to text", fdl_cli_tokenize,
     fdl_cli_tokenize_check},
    {"panel", "a pack panel cut from text files with the model's tokenizer", fdl_cli_panel,
     fdl_cli_panel_check},
    {"verify", "recompute the seal of sealed JSON documents", fdl_cli_verify, fdl_cli_verify_check},
    {"json", "canonical JSON (json canon)", fdl_cli_json, fdl_cli_json_check},
    {"tensor", "list tensors of safetensors and .npy files (tensor ls)", fdl_cli_tensor,
     fdl_cli_tensor_check},
    {"compare", "compare two fidelity datasets into a sealed receipt", fdl_cli_compare,
     fdl_cli_compare_check},
    {"synth", "write a synthetic reference/candidate dataset pair", fdl_cli_synth,
     fdl_cli_synth_check},
    {"capture", "run a model over a panel with fidelis' engine into a sealed dataset",
     fdl_cli_capture, fdl_cli_capture_check},
    {"generate", "greedy tokens, logits or argmaxes of a model over given ids", fdl_cli_generate,
     fdl_cli_generate_check},
    {"pack", "turn per-record dumps into a sealed fidelity dataset", fdl_cli_pack,
     fdl_cli_pack_check},
    {"validate", "check a fidelity dataset (structural, or sealed with tensors)", fdl_cli_validate,
     fdl_cli_validate_check},
    {"inspect", "summarise a fidelity dataset", fdl_cli_inspect, fdl_cli_inspect_check},
    {"logits", "Kiln compare_logits between two logit vectors (logits diff)", fdl_cli_logits,
     fdl_cli_logits_check},
    {"layers", "Kiln compare_boundary over per-boundary hidden rows (layers diff)", fdl_cli_layers,
     fdl_cli_layers_check},
    {"check", "re-check Kiln requests, v1 results and fidelis attribution records", fdl_cli_check,
     fdl_cli_check_check},
    {"divergence", "write a Kiln first-divergence request from two token streams",
     fdl_cli_divergence, fdl_cli_divergence_check},
    {"attribute", "attribute a first divergence to the first path that leaves the reference",
     fdl_cli_attribute, fdl_cli_attribute_check},
    {"model", "write a deterministic random model in Hugging Face layout (model init)",
     fdl_cli_model, fdl_cli_model_check},
    {"quantize", "int4 GPTQ-v1 packed checkpoint of a model's MLP (round to nearest)",
     fdl_cli_quantize, fdl_cli_quantize_check},
    {"report", "an HTML page (or Markdown table) of verified comparison receipts",
     fdl_cli_report_page, fdl_cli_report_page_check},
    {"fetch", "a Hugging Face Hub repository into the Hugging Face cache (hf://ORG/NAME@REV)",
     fdl_cli_fetch, fdl_cli_fetch_check},
};

const fdl_cli_command *fdl_cli_commands(size_t *n) {
  *n = sizeof COMMANDS / sizeof COMMANDS[0];
  return COMMANDS;
}
