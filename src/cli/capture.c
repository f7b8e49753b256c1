/* capture.c - `fidelis capture`: run a model over a panel with fidelis' engine and seal a
 * fidelity dataset (fdl_capture). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f) {
  fprintf(f,
          "usage: fidelis capture --model DIR --panel PANEL.jsonl --out DATASET [options]\n\n"
          "Runs the model in DIR (Hugging Face layout: config.json and safetensors; Llama,\n"
          "Qwen2 and Qwen3 dense decoders, Qwen3.5 hybrids (docs/QWEN35.md; a vision tower is\n"
          "ignored and disclosed), BF16/F16/F32 weights or a `fidelis quantize` GPTQ\n"
          "checkpoint) over every context of PANEL (the JSONL `fidelis pack` reads) and writes\n"
          "DATASET, a sealed fidelity dataset made by pack: the hidden states after the final\n"
          "norm (BF16, or F32) or the full logits (F32) of every scored row, the head as\n"
          "stored, and a runtime naming fidelis' engine by the digests of its source files.\n"
          "The arithmetic is fixed (docs/NUMERICS.md): the same model and panel give the same\n"
          "bytes on any x86-64 machine, --threads and --isa, given the same created_utc\n"
          "(SOURCE_DATE_EPOCH or --created-utc). A GPTQ checkpoint is captured from its affine\n"
          "reconstruction, and says so (role quant, weights_decode: compare discloses\n"
          "weights_reconstructed).\n\n"
          "options (default in brackets):\n"
          "  --model DIR          the model directory, a Hugging Face cache snapshot read in\n"
          "                       place, or hf://ORG/NAME@REV (from the cache, fetched into\n"
          "                       it when missing: docs/HUB.md); a snapshot's repository and\n"
          "                       commit become weights.repository and weights.revision\n"
          "  --panel FILE         the panel, JSONL (docs/PACK.md); masks must be right padding;\n"
          "                       or hf://datasets/ORG/NAME@REV/FILE\n"
          "  --out DATASET        where the dataset goes (must not exist)\n"
          "  --form hidden|logit  what to store [hidden]\n"
          "  --hidden-dtype bf16|f32  hidden form: the stored dtype [bf16]; f32 keeps the\n"
          "                       engine's values exactly (dtype_lossless, no\n"
          "                       quantized_capture_dtype caveat in compare) at twice the size\n"
          "  --path prefill|decode  the engine's path: the whole context at once, or one\n"
          "                       token at a time with a KV cache [prefill]; on Qwen3.5 the\n"
          "                       DeltaNet layers run chunked (prefill) or recurrent (decode)\n"
          "  --layers FILE        also write each record's layer boundaries (the last row's\n"
          "                       hidden state after the embedding, every layer and the final\n"
          "                       norm) as safetensors for `fidelis layers diff`; must not exist\n"
          "  --id ID              dataset.id [fidelity--local.<model dir name>.<form>]\n"
          "  --repository NAME    weights.repository [local/<model dir name>]\n"
          "  --tokenizer-id ID    tokenizer.id [tokenizer.json-sha256-<16 hex> of the model's\n"
          "                       tokenizer.json; unknown-tokenizer-vocab-<N> without one]\n"
          "  --created-utc T      created_utc, YYYY-MM-DDTHH:MM:SSZ [SOURCE_DATE_EPOCH, else now]\n"
          "  --threads N          1 to %d [all cores; under mpirun, per rank: its bound cores,\n"
          "                       or its share of the machine's]; no bit depends on it\n"
          "  --isa NAME           GEMM kernels: auto, scalar, avx2, avx512 [auto]; no bit\n"
          "                       depends on it\n"
          "  --progress           a progress line on stderr even when it is not a terminal\n"
          "  --quiet              no progress line\n"
          "  --json               print the result as JSON\n" FDL_CLI_HUB_HELP
          "  -h, --help           show this help\n\n"
          "The MPI build runs as `mpirun -n R fidelis capture ...`: records dealt to the ranks\n"
          "in turn, the same dataset bytes as one process (docs/SCALE.md).\n\n"
          "exit codes: 0 written; 3 refused (nothing written: DATASET exists, an unsupported or\n"
          "corrupt model, a panel or record pack refuses); 4 bad usage, an input that cannot be\n"
          "opened, a write that failed, out of memory\n",
          FDL_POOL_MAX_THREADS);
}

static const char *const FORMS[] = {"hidden", "logit", NULL};
static const char *const PATHS[] = {"prefill", "decode", NULL};
static const char *const HIDDEN_DTYPES[] = {"bf16", "f32", NULL};

typedef struct {
  fdl_capture_opts o;
  fdl_cli_hub hub;
  char repo[2 * FDL_HUB_NAME_MAX + 2], commit[FDL_HUB_COMMIT_LEN + 1];
  char panel_repo[2 * FDL_HUB_NAME_MAX + 2], panel_commit[FDL_HUB_COMMIT_LEN + 1];
  bool json;
  int progress;
  char created[FDL_CLI_UTC_LEN + 1];
} args;

static int parse(args *a, int argc, char **argv, FILE *out, FILE *diag) {
  memset(a, 0, sizeof *a);
  int form = 0, path = 0, isa = 0, hdt = -1;
  bool progress = false, quiet = false;
  const char *created = NULL;
  const fdl_cli_opt opts[] = {
      FDL_CLI_OPT_PATH("--model", &a->o.model_dir),
      FDL_CLI_OPT_PATH("--panel", &a->o.panel_path),
      FDL_CLI_OPT_OUT("--out", &a->o.out_dir),
      FDL_CLI_OPT_OUT("--layers", &a->o.layers_path),
      {"--form", NULL, FDL_CLI_CHOICE, &form, 0, 0, FORMS},
      {"--path", NULL, FDL_CLI_CHOICE, &path, 0, 0, PATHS},
      {"--hidden-dtype", NULL, FDL_CLI_CHOICE, &hdt, 0, 0, HIDDEN_DTYPES},
      FDL_CLI_OPT_TEXT("--id", &a->o.dataset_id),
      FDL_CLI_OPT_TEXT("--repository", &a->o.repository),
      FDL_CLI_OPT_TEXT("--tokenizer-id", &a->o.tokenizer_id),
      FDL_CLI_OPT_TEXT("--created-utc", &created),
      FDL_CLI_THREADS(&a->o.threads),
      FDL_CLI_ISA(&isa),
      FDL_CLI_OPT_FLAG("--progress", &progress),
      FDL_CLI_OPT_FLAG("--quiet", &quiet),
      FDL_CLI_OPT_FLAG("--json", &a->json),
      FDL_CLI_HUB_OPTS(&a->hub),
  };
  static const char *const conflicts[] = {"--progress", "--quiet"};
  fdl_cli_spec s = {"capture", usage, opts, FDL_CLI_N(opts), conflicts, 1, NULL, 0, 0,
                    out,       diag,  0};
  int rc = fdl_cli_parse(&s, 1, argc, argv);
  if (rc != FDL_CLI_GO) return rc;
  if (!a->o.model_dir || !a->o.panel_path || !a->o.out_dir)
    return fdl_cli_usage_error(&s, "--model DIR, --panel FILE and --out DATASET are required");
  if (created && (rc = fdl_cli_created_utc(&s, created, a->created)) != FDL_CLI_GO) return rc;
  a->o.created_utc = created ? a->created : fdl_cli_source_date(a->created, sizeof a->created);
  a->o.form = form ? FDL_CAPTURE_LOGITS : FDL_CAPTURE_HIDDEN;
  if (form && hdt >= 0)
    return fdl_cli_usage_error(&s, "--hidden-dtype is for --form hidden; logits are stored F32");
  a->o.hidden_f32 = hdt == 1;
  a->o.path = path ? FDL_ENGINE_DECODE : FDL_ENGINE_PREFILL;
  a->o.isa = fdl_cli_isa_of[isa];
  a->progress = progress ? 1 : quiet ? -1 : 0;
  a->hub.progress = a->progress;
  return FDL_CLI_GO;
}

/* One rank's capture: rank 0 alone shows progress and prints (see fdl_cli_ranks). Every rank
 * resolves an hf:// input itself (docs/HUB.md: under mpirun, fetch first). */
static int capture_run(args *a, fdl_cli_ranks *ranks) {
  int rc;
  if ((rc = fdl_cli_hub_input("capture", &a->hub, &a->o.model_dir, true)) ||
      (rc = fdl_cli_hub_input("capture", &a->hub, &a->o.panel_path, false)) ||
      (rc = fdl_cli_input_model("capture", a->o.model_dir)) ||
      (rc = fdl_cli_input_file("capture", a->o.panel_path)))
    return rc;
  /* a Hub snapshot (named by hf:// or by its path) records where it came from */
  if (!a->o.repository && fdl_hub_snapshot_identity(a->o.model_dir, a->repo, a->commit)) {
    a->o.repository = a->repo;
    a->o.revision = a->commit;
  }
  if (fdl_hub_snapshot_identity(a->o.panel_path, a->panel_repo, a->panel_commit)) {
    a->o.panel_repository = a->panel_repo;
    a->o.panel_revision = a->panel_commit;
  }
  if ((rc = fdl_cli_hub_file_real(&a->hub, &a->o.model_dir))) return rc;
  a->o.scale = ranks->sc;
  a->o.threads = fdl_scale_threads(ranks->sc, a->o.threads);
  if (!ranks->lead) a->progress = -1;
  fdl_cli_progress pr;
  fdl_cli_progress_init(&pr, "capture", a->progress);
  pr.unit = "records";
  a->o.progress = fdl_cli_progress_cb;
  a->o.progress_arg = &pr;
  a->o.notice = fdl_cli_notice;
  a->o.notice_arg = "capture";
  fdl_capture_result r;
  fdl_err err = {FDL_OK, ""};
  double t0 = fdl_cli_now();
  fdl_status s = fdl_capture(&a->o, &r, &err);
  fdl_cli_progress_end(&pr);
  fdl_cli_ranks_time(ranks, fdl_cli_now() - t0, a->o.threads);
  if (s != FDL_OK) return fdl_cli_refused("capture", &r.refusal, s, FDL_REF_CAPTURE_FAILED, &err);
  if (!ranks->lead) return FDL_EXIT_OK;
  if (a->json) {
    json_t *j = json_pack("{s:o, s:s, s:s, s:I, s:I, s:b}", "out", fdl_cli_json_text(a->o.out_dir),
                          "dataset_sha256", r.dataset_sha256, "capture_content_digest",
                          r.capture_content_digest, "records", (json_int_t)r.records, "scored_rows",
                          (json_int_t)r.scored_rows, "quantized", r.quantized);
    if (j) fdl_cli_ranks_json(ranks, j);
    return fdl_cli_print_json(j, FDL_JSON_ASCII);
  }
  char shown[FDL_QUOTE_CAP];
  printf("fidelis capture: wrote %s (%zu records, %llu scored rows%s)\n",
         fdl_cli_shown(a->o.out_dir, shown, sizeof shown), r.records,
         (unsigned long long)r.scored_rows,
         r.quantized ? ", from the GPTQ checkpoint's affine reconstruction" : "");
  printf("  dataset_sha256          %s\n", r.dataset_sha256);
  printf("  capture_content_digest  %s\n", r.capture_content_digest);
  return FDL_EXIT_OK;
}

/* The hf:// inputs resolved for this rank are its own to release. */
static int capture_in(void *arg, fdl_cli_ranks *ranks) {
  args a = *(args *)arg;
  int rc = capture_run(&a, ranks);
  fdl_cli_hub_free(&a.hub);
  return rc;
}

static int work(args *a) {
  return fdl_cli_ranks_main("capture", capture_in, a);
}

FDL_CLI_COMMAND(fdl_cli_capture, fdl_cli_capture_check, args, parse, work)
