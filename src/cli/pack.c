/* pack.c - `fidelis pack`: per-record dumps into a sealed fidelity dataset. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fputs(
      "usage: fidelis pack --panel PANEL.jsonl --tensors DIR --meta META.json [--head FILE]\n"
      "                    [--allow-partial] [--hidden-dtype bf16|f32] [--threads N] --out OUT\n"
      "       fidelis pack --from-llamacpp-kld BASE.kld --tokenizer PATH [--meta META.json]\n"
      "                    [--panel-out PANEL.jsonl] [--threads N] --out OUT\n"
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
      "                    BF16, dtype_lossless false; kept with --hidden-dtype f32); key\n"
      "                    hidden_states (or the only tensor)\n"
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
  fputs("  --from-llamacpp-kld FILE  import a llama-perplexity --kl-divergence-base file as a\n"
        "                  derived, lossy, logit-form dataset (docs/LLAMACPP-KLD.md): the panel\n"
        "                  is rebuilt from its tokens as llama-perplexity -c n_ctx chunks them\n"
        "                  (BOS at position 0 of every chunk when the tokenizer adds one,\n"
        "                  positions n_ctx/2..n_ctx-2 scored), each row decoded as\n"
        "                  scale*q + min_log_prob in float32 (16-bit codes; logits at or\n"
        "                  below max_logit-16 clamped). Not with --panel, --tensors, --head,\n"
        "                  --allow-partial or --hidden-dtype\n"
        "  --tokenizer PATH  with --from-llamacpp-kld: the model's tokenizer (a .gguf, a model\n"
        "                  directory or a tokenizer.json); its vocabulary must be the file's\n"
        "                  n_vocab. It also gives the head's width (GGUF embedding_length or\n"
        "                  config.json hidden_size), else META must give head.shape\n"
        "  --panel-out FILE  with --from-llamacpp-kld: also write the panel (JSONL), for\n"
        "                  `fidelis capture --panel FILE` of a candidate over the same tokens\n"
        "  --meta FILE     with --from-llamacpp-kld, optional: keys that replace the generated\n"
        "                  meta's (weights, dataset, engine, device, ...; objects merged one\n"
        "                  level deep, disclosures appended); form, lossy_codec, vocab_size,\n"
        "                  runtime_source, tokenizer.id and the scoring window are the file's\n",
        f);
  fprintf(f,
          "  --out DIR       the dataset directory to create\n"
          "  --allow-partial records without a tensor file make an incomplete dataset\n"
          "  --hidden-dtype bf16|f32  hidden form: the stored dtype [bf16]; f32 takes F32\n"
          "                  records only and stores them as they are (dtype_lossless)\n"
          "  --threads N     hashing threads for the final validation, 1 to %d (default: one\n"
          "                  per CPU)\n"
          "  -h, --help      show this help\n"
          "\n"
          "Refusals (exit 3) name a code: bad_input (a meta or panel file that breaks its\n"
          "rules), panel_binding (row count vs scored rows, ragged panel, mask length, token id\n"
          "outside the vocabulary), non_finite (naming record, row, column),\n"
          "head_mismatch (hidden form without a head digest, head/width disagreement),\n"
          "digest_mismatch (duplicate index), bad_tensor_file, missing_file, schema_invalid,\n"
          "destination_exists, dataset_invalid. A .kld is refused as bad_input (magic, a count\n"
          "or size the file cannot hold, naming the expected and actual sizes), non_finite\n"
          "(scale or min_log_prob, naming chunk and row) or panel_binding (n_vocab and the\n"
          "tokenizer's vocabulary differ, naming both; a token outside it; no BOS first).\n"
          "exit codes: 0 packed; 3 refused (nothing written); 4 bad usage, a named input that\n"
          "cannot be opened (missing, wrong kind, unreadable), a read or write that failed\n"
          "(io_error), out of memory, or output that cannot be written\n",
          FDL_POOL_MAX_THREADS);
}

static const char *const HIDDEN_DTYPES[] = {"bf16", "f32", NULL};

typedef struct {
  fdl_ds_pack_opts o;
  fdl_kld_import_opts k; /* k.kld_path set: --from-llamacpp-kld */
  char created[FDL_CLI_UTC_LEN + 1];
} pack_args;

static int parse(pack_args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  fdl_ds_pack_opts *o = &a->o;
  fdl_kld_import_opts *k = &a->k;
  int hdt = 0;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--panel", &o->panel_path),
      FDL_CLI_OPT_PATH("--tensors", &o->tensor_dir),
      FDL_CLI_OPT_PATH("--head", &o->head_path),
      FDL_CLI_OPT_PATH("--meta", &o->meta_path),
      FDL_CLI_OPT_OUT("--out", &o->out_dir),
      FDL_CLI_OPT_FLAG("--allow-partial", &o->allow_partial),
      {"--hidden-dtype", NULL, FDL_CLI_CHOICE, &hdt, 0, 0, HIDDEN_DTYPES},
      FDL_CLI_THREADS(&o->threads),
      FDL_CLI_OPT_PATH("--from-llamacpp-kld", &k->kld_path),
      FDL_CLI_OPT_PATH("--tokenizer", &k->tokenizer),
      FDL_CLI_OPT_OUT("--panel-out", &k->panel_out),
  };
  /* A .kld is the panel, the tensors and the head description all at once. */
  static const char *const conflicts[] = {
      "--from-llamacpp-kld", "--panel",       "--from-llamacpp-kld", "--tensors",
      "--from-llamacpp-kld", "--head",        "--from-llamacpp-kld", "--allow-partial",
      "--from-llamacpp-kld", "--hidden-dtype"};
  fdl_cli_spec s = {
      "pack", usage, opts, FDL_CLI_N(opts), conflicts, FDL_CLI_N(conflicts) / 2, NULL, 0, 0,
      out,    diag,  0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  /* Either way of packing: SOURCE_DATE_EPOCH fixes created_utc, notes go to stderr. */
  o->created_utc = k->created_utc = fdl_cli_source_date(a->created, sizeof a->created);
  o->notice = k->notice = fdl_cli_notice;
  o->notice_arg = k->notice_arg = "pack";
  if (k->kld_path) {
    if (!k->tokenizer || !o->out_dir)
      return fdl_cli_usage_error(&s, "--from-llamacpp-kld needs --tokenizer and --out");
    k->out_dir = o->out_dir;
    k->meta_path = o->meta_path;
    k->threads = o->threads;
    return FDL_CLI_GO;
  }
  if (k->tokenizer || k->panel_out)
    return fdl_cli_usage_error(&s, "--tokenizer and --panel-out go with --from-llamacpp-kld");
  if (!o->panel_path || !o->tensor_dir || !o->meta_path || !o->out_dir)
    return fdl_cli_usage_error(&s, "--panel, --tensors, --meta and --out are required");
  o->hidden_f32 = hdt == 1;
  return FDL_CLI_GO;
}

static void print_packed(const char *out_dir, const fdl_ds_pack_result *res) {
  fputs("packed ", stdout);
  fdl_cli_put_text(stdout, out_dir);
  printf(": %zu record(s), %llu scored row(s)\n", res->records,
         (unsigned long long)res->scored_rows);
  printf("dataset_sha256          %s\n", res->dataset_sha256);
  printf("capture_content_digest  %s\n", res->capture_content_digest);
}

/* --from-llamacpp-kld: the import is the library's (fdl_kld_import); this prints its result. */
static int pack_kld(fdl_kld_import_opts *k) {
  int rc;
  if ((rc = fdl_cli_input_file("pack", k->kld_path)) != 0) return rc;
  if ((rc = fdl_cli_input_tokenizer("pack", k->tokenizer)) != 0) return rc;
  if (k->meta_path && (rc = fdl_cli_input_file("pack", k->meta_path)) != 0) return rc;
  fdl_kld_import_result r;
  fdl_err err = {FDL_OK, ""};
  fdl_status st = fdl_kld_import(k, &r, &err);
  if (st != FDL_OK) {
    fdl_cli_print_refusal("pack", &r.pack.refusal, &err);
    return fdl_cli_exit_for(r.pack.refusal.status);
  }
  print_packed(k->out_dir, &r.pack);
  printf("llama.cpp .kld          n_ctx %u, n_vocab %u, %u chunk(s) of %u scored row(s)\n",
         r.info.n_ctx, r.info.n_vocab, r.info.n_chunk, r.info.rows);
  printf("tokenizer               %s (BOS at every chunk start: %s)\n", r.tokenizer_id,
         r.bos ? "yes" : "no");
  printf("lossy                   %llu entries and %llu scored target(s) at their row's floor\n",
         (unsigned long long)r.floor_entries, (unsigned long long)r.floor_targets);
  if (k->panel_out) {
    fputs("panel                   ", stdout);
    fdl_cli_put_text(stdout, k->panel_out);
    fputc('\n', stdout);
  }
  return FDL_EXIT_OK;
}

static int work(pack_args *a) {
  int rc;
  if (a->k.kld_path) return pack_kld(&a->k);
  fdl_ds_pack_opts o = a->o;
  /* Every named input is opened before any work, so a typo costs nothing. */
  if ((rc = fdl_cli_input_file("pack", o.panel_path)) != 0) return rc;
  if ((rc = fdl_cli_input_file("pack", o.meta_path)) != 0) return rc;
  if (o.head_path && (rc = fdl_cli_input_file("pack", o.head_path)) != 0) return rc;
  if ((rc = fdl_cli_input_dir("pack", o.tensor_dir)) != 0) return rc;
  fdl_ds_pack_result res;
  fdl_err err;
  fdl_status st = fdl_ds_pack(&o, &res, &err);
  if (st != FDL_OK) {
    fdl_cli_print_refusal("pack", &res.refusal, &err);
    return fdl_cli_exit_for(res.refusal.status);
  }
  print_packed(o.out_dir, &res);
  return FDL_EXIT_OK;
}

FDL_CLI_COMMAND(fdl_cli_pack, fdl_cli_pack_check, pack_args, parse, work)
