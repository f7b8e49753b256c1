/* pack.c - `fidelis pack`: per-record dumps into a sealed fidelity dataset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "fidelis/dataset.h"

static void usage(FILE *f) {
  fputs(
      "usage: fidelis pack --panel PANEL.jsonl --tensors DIR --meta META.json [--head FILE]\n"
      "                    [--allow-partial] [--threads N] --out OUT\n"
      "\n"
      "Turns any engine's per-record dumps into a sealed malaiwah.fidelity-dataset.v1 directory.\n"
      "OUT must not exist; it appears whole (built beside it, validated, renamed) or not at all.\n"
      "\n"
      "  --panel FILE    JSONL, one context per line:\n"
      "                    index       integer >= 0; the indices are exactly 0..N-1\n"
      "                    tokens      [id, ...] token ids (>= 2); every line the same length\n"
      "                    mask        optional [0|1, ...] attention mask, one entry per token;\n"
      "                                if any line has one, every record gets a mask file\n"
      "                    domain, window_id, allocation_stratum, document_id, role,\n"
      "                    semantic_class, source_cluster_id, partition   optional strings\n"
      "                  Scored rows (section 7.3): row i predicts token i+1 and is kept when\n"
      "                  mask[i] and mask[i+1] are 1 (no mask: all ones) and i >= score_from;\n"
      "                  so a record of L tokens without a mask scores L-1 rows.\n"
      "  --tensors DIR   NNNN.safetensors or NNNN.npy per record (NNNN = %04d index):\n"
      "                    hidden form [scored_rows, hidden]: BF16 (kept) or F32 (rounded to\n"
      "                    BF16, dtype_lossless false); key hidden_states (or the only tensor)\n"
      "                    logit form [scored_rows, vocab]: F32, BF16, F16 or F64, kept as is;\n"
      "                    key logits (or the only tensor)\n"
      "  --head FILE     [vocab, hidden] head weight (BF16, F16 or F32; .safetensors key\n"
      "                  lm_head.weight, weight or the only tensor; or .npy). Required for role\n"
      "                  root and, unless META gives head.tensor_content_sha256, hidden form.\n",
      f);
  fputs("  --meta FILE     JSON describing the artifact and its runtime:\n"
        "                    role            root | quant | derived               (required)\n"
        "                    form            hidden | logit                       (required)\n"
        "                    dataset         {id (required), name, license, repository,\n"
        "                                     revision, author, base_capture}\n"
        "                    weights         {repository (required), revision (required, hex or\n"
        "                                     null), model_revision, quantized, config_sha256,\n"
        "                                     index_sha256, checkpoint_identity_sha256,\n"
        "                                     artifact_ref, model_ref, codec, declared_bits,\n"
        "                                     declared_head_bits}\n"
        "                    scope           {policy, head_policy, kv_cache_dtype, assignments}\n"
        "                                    (required unless root; root: the native scope)\n"
        "                    lane            sealed-ep8 | streaming | local-mps |\n"
        "                                    local-cuda-budget | other            (required)\n"
        "                    engine          {name, version}                      (required)\n"
        "                    device          e.g. cpu, cuda:0                     (required)\n"
        "                    device_name     e.g. NVIDIA H200\n"
        "                    dtypes          {forward: BF16|F16|F32|F64 (the cut's dtype in the\n"
        "                                     forward; default: the input's), weights, compute}\n"
        "                    tokenizer       {id (required), vocab_size, repository, revision,\n"
        "                                     add_special_tokens, chat_template_applied}\n"
        "                    panel           {panel_id, name, repository, revision,\n"
        "                                     scoring_window}\n"
        "                    vocab_size      checked against the head / logit width\n"
        "                    semantic_point  logit form: lm_head_output_before_sampling (default)\n"
        "                                    or live_lm_head_output_before_sampling\n"
        "                    head            {source, quantized, bits, and without --head:\n"
        "                                     tensor_content_sha256, file_sha256, shape, dtype}\n"
        "                    head_separable, head_not_separable_reason   (logit form)\n"
        "                    lossy_codec, disclosures, created_utc, run_name, runtime_source,\n"
        "                    source_files, subset_detail, weights_decode, numeric_policy\n"
        "                  Unknown keys are refused. docs/PACK.md describes every field.\n",
        f);
  fputs("  --out DIR       the dataset directory to create\n"
        "  --allow-partial records without a tensor file make an incomplete dataset\n"
        "  --threads N     hashing threads for the final validation (default: one per CPU)\n"
        "\n"
        "Refusals (exit 3) name a code: panel_binding (row count vs scored rows, ragged panel,\n"
        "mask length, token id outside the vocabulary), non_finite (naming record, row, column),\n"
        "head_mismatch (hidden form without a head digest, head/width disagreement),\n"
        "digest_mismatch (duplicate index), bad_tensor_file, missing_file, schema_invalid,\n"
        "destination_exists, dataset_invalid. Bad usage or unreadable inputs exit 4.\n",
        f);
}

int fdl_cli_pack(int argc, char **argv) {
  fdl_ds_pack_opts o;
  memset(&o, 0, sizeof o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (fdl_cli_is_help(a)) {
      usage(stdout);
      return FDL_EXIT_OK;
    } else if (!strcmp(a, "--allow-partial")) {
      o.allow_partial = true;
    } else if (next && !strcmp(a, "--panel")) {
      o.panel_path = argv[++i];
    } else if (next && !strcmp(a, "--tensors")) {
      o.tensor_dir = argv[++i];
    } else if (next && !strcmp(a, "--head")) {
      o.head_path = argv[++i];
    } else if (next && !strcmp(a, "--meta")) {
      o.meta_path = argv[++i];
    } else if (next && !strcmp(a, "--out")) {
      o.out_dir = argv[++i];
    } else if (next && !strcmp(a, "--threads")) {
      char *end;
      unsigned long n = strtoul(argv[++i], &end, 10);
      if (*end || n > 1024) {
        fprintf(stderr, "fidelis pack: --threads wants a number from 0 to 1024\n");
        return FDL_EXIT_USAGE;
      }
      o.threads = (unsigned)n;
    } else {
      fprintf(stderr, "fidelis pack: unexpected argument '%s'\n\n", a);
      usage(stderr);
      return FDL_EXIT_USAGE;
    }
  }
  if (!o.panel_path || !o.tensor_dir || !o.meta_path || !o.out_dir) {
    fprintf(stderr, "fidelis pack: --panel, --tensors, --meta and --out are required\n\n");
    usage(stderr);
    return FDL_EXIT_USAGE;
  }
  char created[32];
  o.created_utc = fdl_cli_source_date(created, sizeof created);
  fdl_ds_pack_result res;
  fdl_err err;
  o.notice = fdl_cli_notice;
  o.notice_arg = "pack";
  if (fdl_ds_pack(&o, &res, &err) != FDL_OK) {
    fprintf(stderr, "fidelis pack: REFUSED [%s]: %s\n", res.code, err.msg);
    if (!strcmp(res.code, "bad_input") || !strcmp(res.code, "bad_usage")) return FDL_EXIT_USAGE;
    return FDL_EXIT_REFUSED;
  }
  printf("packed %s: %zu record(s), %llu scored row(s)\n", o.out_dir, res.records,
         (unsigned long long)res.scored_rows);
  printf("dataset_sha256          %s\n", res.dataset_sha256);
  printf("capture_content_digest  %s\n", res.capture_content_digest);
  return FDL_EXIT_OK;
}
