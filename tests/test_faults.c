/* test_faults.c - every allocation and every I/O call of a pack, a validate, a compare, a report,
 * a model load, a generate, a quantize, a capture, a divergence request, a path attribution, a
 * panel from text, a .kld import, a synth, a model init and a tokenizer's load, encode and decode
 * can fail, and each failure gives a clean error with nothing left behind.
 *
 * For each operation the test first counts the calls a clean run makes through base/sys.c (with
 * the fault hook of base/fault.h armed to count only), then re-runs it once per N failing the
 * Nth allocation, then once per N failing the Nth I/O call. Every such run must return an error
 * status with a message (compare: FDL_REFUSED with a refusal code), or, where the library may
 * legitimately absorb the fault, succeed with its whole output. After every run the working
 * directory that holds the output must be as before: no partial output, no staging directory.
 * A run that absorbed its fault must give exactly the clean run's result (same dataset seal,
 * same receipt), never a silently different one. Under ASan a leak check follows each sweep
 * (and LeakSanitizer checks again at exit); FDL_FAULT_LEAK_EACH=1 checks after every run
 * instead, so that a leak names the N that caused it (slower).
 *
 * The pack packs inputs the test writes (panel, hidden states, head, meta); validate and compare
 * read a pair made once by fdl_synth; load, generate, quantize and capture use the tiny-random
 * model made once by fdl_model_write (generate on a model loaded before the fault is armed, so
 * its sweep is the run's own scratch and cache); divergence and attribute build Kiln records
 * from the shared first-divergence request ($FDL_SHARED/vectors/kiln), written to a file. panel
 * cuts a short text with the tiny model's tokenizer; kld imports a two-chunk .kld over its
 * vocabulary (with --panel-out); synth writes the smallest pair; model_write writes the
 * tiny-random model; tokenize loads its tokenizer and encodes and decodes a chat turn. Their
 * result is every file they wrote (path, size, sha256), hashed after the run with faults off,
 * or for tokenize the tokenizer's id, the ids and the decoded text.
 * Everything lives under /dev/shm where it exists: the library fsyncs every file it writes, and
 * thousands of runs on a disk would take minutes. FDL_FAULT_STRIDE=K (default 1) tries every Kth N
 * only, for a quick local run; FDL_FAULT_OPS=compare (or pack, validate, load, generate, quantize,
 * capture, divergence, attribute, report, panel, kld, synth, model_write, tokenize, a list)
 * sweeps those operations only.
 * FDL_FAULT_ONLY=OP:KIND:N (e.g. compare:alloc:4201) runs that one case, to debug it (a
 * breakpoint on the fault_fired store in base/sys.c shows the failing call). */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fault.h"
#include "base/fs.h"
#include "fidelis/capture.h"
#include "fidelis/compare.h"
#include "fidelis/digest.h"
#include "fidelis/dataset.h"
#include "fidelis/fidelis.h"
#include "fidelis/generate.h"
#include "fidelis/kiln.h"
#include "fidelis/llamacpp_kld.h"
#include "fidelis/model.h"
#include "fidelis/panel.h"
#include "fidelis/synth.h"
#include "fidelis/tokenizer.h"
#include "compare/compare_json.h"
#include "tensor/safetensors_json.h"
#include "attr/kiln_json.h"
#include "json/json.h"

#if defined(__SANITIZE_ADDRESS__)
#define FDL_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FDL_TEST_LSAN 1
#endif
#endif
#ifdef FDL_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

static int failures;
static int absorbed;

/* The distinct error codes (refusal codes, else status names) one sweep produced, with counts:
 * printed after the sweep, so a change in how failures are reported shows in the log. */
#define MAX_CODES 32
static struct {
  char code[64];
  int count;
} codes[MAX_CODES];
static size_t n_codes;

static void count_code(const char *code) {
  size_t i = 0;
  while (i < n_codes && strcmp(codes[i].code, code)) i++;
  if (i == n_codes) {
    if (n_codes == MAX_CODES) return;
    snprintf(codes[n_codes].code, sizeof codes[0].code, "%s", code);
    codes[n_codes++].count = 0;
  }
  codes[i].count++;
}

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    failures++;                                                                                    \
    printf("FAIL: " __VA_ARGS__);                                                                  \
    printf("\n");                                                                                  \
    fflush(stdout);                                                                                \
  } while (0)

static const char *kind_name(fdl_fault_kind k) {
  return k == FDL_FAULT_ALLOC ? "allocation" : "I/O call";
}

/* ---- the work directory ----------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void rm_tree(const char *path) {
  nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* How many entries dir holds, and their names in readdir order into out. */
static size_t list_dir(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  size_t n = 0;
  out[0] = '\0';
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    n++;
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s", len ? " " : "", e->d_name);
  }
  closedir(d);
  return n;
}

/* Removes every entry of dir whose name is not in the space-separated list keep. */
static void remove_new(const char *dir, const char *keep) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    size_t n = strlen(e->d_name);
    const char *k = keep;
    bool kept = false;
    while (!kept && (k = strstr(k, e->d_name)) != NULL) {
      kept = (k == keep || k[-1] == ' ') && (k[n] == ' ' || k[n] == '\0');
      k += n;
    }
    if (kept) continue;
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    rm_tree(p);
  }
  closedir(d);
}

/* ---- the operations --------------------------------------------------------------------- */

static char work[64];
static char ref_dir[128], cand_dir[128];
static char model_dir[128];  /* the tiny-random model, made once */
static json_t *kiln_request; /* the shared first-divergence request */
static fdl_model *loaded;    /* generate's model, loaded before each run with faults off */

typedef struct {
  fdl_status status;
  fdl_err err;
  char code[64];                     /* the refusal code where the operation has one */
  bool complete;                     /* on FDL_OK: the whole output is there */
  char seal[FDL_SHA256_HEX_LEN + 1]; /* pack: the dataset seal */
  json_t *receipt;                   /* compare: the receipt (owned) */
  char *result;                      /* the others: what a clean run must reproduce (owned) */
  char where[128];                   /* the directory that must hold nothing new after a failure */
  char out[160];                     /* the output to remove after a success */
  char tree[160]; /* on FDL_OK: the file or directory whose files are the result, hashed after
                     the run with faults off */
} outcome;

#define V 48  /* vocabulary */
#define H 32  /* hidden width */
#define CTX 3 /* panel records */
#define TOK 9 /* tokens per record */

static const char META[] =
    "{\"role\":\"root\",\"form\":\"hidden\",\"lane\":\"other\",\"device\":\"cpu\","
    "\"vocab_size\":48,\"engine\":{\"name\":\"fault-test\",\"version\":\"1\"},"
    "\"dtypes\":{\"forward\":\"BF16\"},\"tokenizer\":{\"id\":\"fault-test\"},"
    "\"dataset\":{\"id\":\"fidelity--fidelis.fault-test\"},"
    "\"weights\":{\"repository\":\"fidelis/fault-test\",\"revision\":null},"
    "\"created_utc\":\"2026-01-01T00:00:00Z\"}";

/* The pack inputs under work/inputs, written once with faults off. */
static int write_pack_inputs(void) {
  char p[256];
  snprintf(p, sizeof p, "%s/inputs", work);
  if (mkdir(p, 0755)) return -1;
  snprintf(p, sizeof p, "%s/inputs/tensors", work);
  if (mkdir(p, 0755)) return -1;
  char panel[CTX * (TOK * 4 + 32)], *w = panel;
  uint16_t hidden[(TOK - 1) * H], head[V * H];
  for (size_t i = 0; i < sizeof head / sizeof *head; i++)
    head[i] = (uint16_t)(0x3c00 + (i * 37) % 256); /* BF16 values in [2^-7, 2^-6) */
  for (int c = 0; c < CTX; c++) {
    w += sprintf(w, "{\"index\":%d,\"tokens\":[", c);
    for (int t = 0; t < TOK; t++) w += sprintf(w, "%s%d", t ? "," : "", (c * 7 + t * 5) % V);
    w += sprintf(w, "]}\n");
    for (size_t i = 0; i < sizeof hidden / sizeof *hidden; i++)
      hidden[i] = (uint16_t)(0x3f00 + (i * 13 + (size_t)c * 101) % 512); /* about 0.5 .. 2 */
    int64_t shape[2] = {TOK - 1, H};
    fdl_tensor_in t = {"hidden_states", FDL_DTYPE_BF16, 2, shape, hidden};
    snprintf(p, sizeof p, "%s/inputs/tensors/%04d.safetensors", work, c);
    if (fdl_safetensors_write(p, &t, 1, NULL, NULL) != FDL_OK) return -1;
  }
  int64_t hshape[2] = {V, H};
  fdl_tensor_in t = {"lm_head.weight", FDL_DTYPE_BF16, 2, hshape, head};
  snprintf(p, sizeof p, "%s/inputs/head.safetensors", work);
  if (fdl_safetensors_write(p, &t, 1, NULL, NULL) != FDL_OK) return -1;
  snprintf(p, sizeof p, "%s/inputs/panel.jsonl", work);
  if (fdl_write_file(p, panel, (size_t)(w - panel), NULL) != FDL_OK) return -1;
  snprintf(p, sizeof p, "%s/inputs/meta.json", work);
  return fdl_write_file(p, META, sizeof META - 1, NULL) == FDL_OK ? 0 : -1;
}

static void pack(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/pack", work);
  snprintf(oc->out, sizeof oc->out, "%s/ds", oc->where);
  char panel[256], tensors[256], head[256], meta[256];
  snprintf(panel, sizeof panel, "%s/inputs/panel.jsonl", work);
  snprintf(tensors, sizeof tensors, "%s/inputs/tensors", work);
  snprintf(head, sizeof head, "%s/inputs/head.safetensors", work);
  snprintf(meta, sizeof meta, "%s/inputs/meta.json", work);
  fdl_ds_pack_opts o = {.panel_path = panel,
                        .tensor_dir = tensors,
                        .head_path = head,
                        .meta_path = meta,
                        .out_dir = oc->out,
                        .threads = 1}; /* one thread: the Nth call is the same in every run */
  fdl_ds_pack_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_ds_pack(&o, &r, &oc->err);
  snprintf(oc->code, sizeof oc->code, "%s", fdl_refusal_name(r.refusal.code));
  if (oc->status == FDL_OK) {
    char p[256];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", oc->out, FDL_DS_MANIFEST_NAME);
    oc->complete = stat(p, &st) == 0 && r.records == CTX;
    memcpy(oc->seal, r.dataset_sha256, sizeof oc->seal);
  }
}

static void validate_side(outcome *oc, const char *dir) {
  snprintf(oc->where, sizeof oc->where, "%s", dir);
  oc->out[0] = '\0';
  fdl_ds_validate_opts o = {.verify_tensors = true, .threads = 1};
  fdl_ds_report rep;
  fdl_ds_report_init(&rep);
  oc->status = fdl_ds_validate(dir, &o, &rep, &oc->err);
  if (oc->status == FDL_OK && rep.errors.count) {
    /* The fault surfaced as a finding: the run is invalid and says why. */
    const fdl_ds_finding *f = &rep.errors.items[0];
    oc->status = FDL_REFUSED;
    snprintf(oc->code, sizeof oc->code, "%s", fdl_ds_code_name(f->code));
    snprintf(oc->err.msg, sizeof oc->err.msg, "%s", f->message ? f->message : "");
  } else if (oc->status == FDL_OK) {
    oc->complete = rep.level == FDL_DS_LEVEL_SEALED;
  }
  fdl_ds_report_free(&rep);
}

static void validate(outcome *oc) {
  validate_side(oc, cand_dir);
}

static void compare(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/cmp", work);
  snprintf(oc->out, sizeof oc->out, "%s/out", oc->where);
  fdl_compare_opts o;
  fdl_compare_opts_default(&o);
  o.reference = ref_dir;
  o.candidate = cand_dir;
  o.out_dir = oc->out;
  o.own_heads = true;
  o.threads = 1;
  o.bootstrap_samples = 50;
  o.created_utc = "2026-01-01T00:00:00Z";
  fdl_compare_result r;
  oc->status = fdl_compare(&o, &r, &oc->err);
  snprintf(oc->code, sizeof oc->code, "%s", fdl_refusal_name(r.refusal.code));
  if (oc->status == FDL_OK) {
    struct stat st;
    oc->complete = r.receipt && stat(r.receipt_path, &st) == 0 && stat(r.tokenwise_path, &st) == 0;
    oc->receipt = json_incref(fdl_compare_receipt_json(&r));
  }
  fdl_compare_result_free(&r);
}

static char receipt_dir[128]; /* a receipt made once with faults off, for report */

static void report(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/rpt", work);
  snprintf(oc->out, sizeof oc->out, "%s/page.html", oc->where);
  const char *dirs[1] = {receipt_dir};
  fdl_report_result r;
  oc->status = fdl_report_write(dirs, 1, oc->out, &r, &oc->err);
  struct stat st;
  oc->complete = oc->status == FDL_OK && r.trusted && stat(oc->out, &st) == 0;
}

static void load(outcome *oc) {
  fdl_model_opts o = {.threads = 1};
  fdl_model *m = NULL;
  oc->status = fdl_model_load(model_dir, &o, &m, &oc->err);
  if (oc->status == FDL_OK) {
    const fdl_model_info *in = fdl_model_get_info(m);
    char hex[65];
    const char *name;
    uint64_t bytes;
    oc->complete = in->vocab == 272 && fdl_model_file_digest(m, 0, &name, &bytes, hex);
    oc->result = strdup(hex);
  }
  fdl_model_free(m);
}

static void load_model(void) {
  fdl_model_opts o = {.threads = 1};
  fdl_err err = {FDL_OK, ""};
  if (fdl_model_load(model_dir, &o, &loaded, &err) != FDL_OK) FAIL("cannot load: %s", err.msg);
}

static void free_model(void) {
  fdl_model_free(loaded);
  loaded = NULL;
}

static void generate(outcome *oc) {
  const int32_t prompt[5] = {256, 17, 99, 3, 200};
  int32_t out[6];
  size_t n = 0;
  fdl_generate_opts o = {.n_new = 6, .path = FDL_ENGINE_DECODE};
  if (!loaded) {
    oc->status = fdl_fail(&oc->err, FDL_INVALID, "no model");
    return;
  }
  oc->status = fdl_generate_greedy(loaded, prompt, 5, &o, out, &n, &oc->err);
  if (oc->status == FDL_OK) {
    char text[128], *w = text;
    for (size_t i = 0; i < n; i++) w += sprintf(w, "%d,", (int)out[i]);
    oc->complete = n == 6;
    oc->result = strdup(text);
  }
}

static void quantize(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/quant", work);
  snprintf(oc->out, sizeof oc->out, "%s/q", oc->where);
  fdl_gptq_opts o = {
      .model_dir = model_dir, .out_dir = oc->out, .group = 32, .scope = FDL_GPTQ_SCOPE_ALL_LINEAR};
  fdl_gptq_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_gptq_quantize_model(&o, &r, &oc->err);
  if (oc->status == FDL_OK) {
    char p[256], text[64];
    struct stat st;
    snprintf(p, sizeof p, "%s/config.json", oc->out);
    oc->complete = stat(p, &st) == 0 && r.quantized > 0;
    snprintf(text, sizeof text, "%zu quantized, %zu copied", r.quantized, r.copied);
    oc->result = strdup(text);
  }
}

static void capture(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/cap", work);
  snprintf(oc->out, sizeof oc->out, "%s/ds", oc->where);
  char panel[256];
  snprintf(panel, sizeof panel, "%s/inputs/capture.jsonl", work);
  fdl_capture_opts o = {.model_dir = model_dir,
                        .panel_path = panel,
                        .out_dir = oc->out,
                        .form = FDL_CAPTURE_HIDDEN,
                        .path = FDL_ENGINE_PREFILL,
                        .threads = 1,
                        .created_utc = "2026-01-01T00:00:00Z"};
  fdl_capture_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_capture(&o, &r, &oc->err);
  snprintf(oc->code, sizeof oc->code, "%s", fdl_refusal_name(r.refusal.code));
  if (oc->status == FDL_OK) {
    char p[256];
    struct stat st;
    snprintf(p, sizeof p, "%s/%s", oc->out, FDL_DS_MANIFEST_NAME);
    oc->complete = stat(p, &st) == 0 && r.records == 2;
    oc->result = strdup(r.dataset_sha256);
  }
}

/* Writes v to oc->out (staged, as the CLI does) and keeps it as the result. */
static void publish(outcome *oc, json_t *v) {
  if (oc->status == FDL_OK)
    oc->status = fdl_json_write_file(oc->out, v, FDL_JSON_ASCII | FDL_JSON_PRETTY, &oc->err);
  if (oc->status == FDL_OK) {
    struct stat st;
    oc->complete = stat(oc->out, &st) == 0;
    oc->receipt = json_incref(v);
  }
  json_decref(v);
}

static void divergence(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/kiln", work);
  snprintf(oc->out, sizeof oc->out, "%s/request.json", oc->where);
  const json_t *q = kiln_request, *pre = json_object_get(q, "continuation_prefix");
  const json_t *cands = json_object_get(q, "candidates"), *src = json_object_get(q, "source");
  const json_t *prompt = json_object_get(q, "prompt"), *gen = json_object_get(prompt, "generator");
  json_t *ref = json_array(), *cand = json_array();
  size_t i;
  const json_t *t;
  json_array_foreach(pre, i, t) {
    json_array_append(ref, json_object_get(t, "token_id"));
    json_array_append(cand, json_object_get(t, "token_id"));
  }
  json_array_append(ref, json_object_get(json_array_get(cands, 1), "token_id"));
  json_array_append_new(ref, json_integer(42));
  json_array_append(cand, json_object_get(json_array_get(cands, 0), "token_id"));
  fdl_kiln_divergence_in in = {
      .prompt_ids = json_object_get(prompt, "token_ids"),
      .reference_ids = ref,
      .candidate_ids = cand,
      .prompt_text = json_string_value(
          json_object_get(json_array_get(json_object_get(prompt, "messages"), 0), "content")),
      .id = json_string_value(json_object_get(q, "id")),
      .source_commit = json_string_value(json_object_get(src, "source_commit")),
      .run_id = json_string_value(json_object_get(gen, "run_id")),
      .phase = json_string_value(json_object_get(gen, "phase")),
      .kiln_receipt = json_object_get(src, "kiln_receipt"),
      .vllm_receipt = json_object_get(src, "vllm_receipt"),
      .model_identity = json_object_get(q, "model_identity")};
  json_t *out = NULL;
  size_t step = 0;
  oc->status = fdl_kiln_divergence(&in, &out, &step, &oc->err);
  json_decref(ref);
  json_decref(cand);
  publish(oc, out);
}

#define KILN_V 32768 /* the reference's width: above every token id of the request */

static void attribute(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/kiln", work);
  snprintf(oc->out, sizeof oc->out, "%s/attribution.json", oc->where);
  float *ref = malloc(KILN_V * sizeof *ref), *full = malloc(KILN_V * sizeof *full);
  json_t *ids = json_array();
  const json_t *cands = json_object_get(kiln_request, "candidates");
  for (size_t i = 0; ref && full && i < KILN_V; i++)
    ref[i] = full[i] = (float)((i * 7919) % 1009) / 64.0f;
  if (ref && full) {
    json_int_t kiln_id = json_integer_value(json_object_get(json_array_get(cands, 0), "token_id"));
    json_int_t vllm_id = json_integer_value(json_object_get(json_array_get(cands, 1), "token_id"));
    ref[vllm_id] = 100.0f;                             /* the reference picks vllm's token */
    full[vllm_id] = 90.0f;                             /* the full path does too */
    json_array_append_new(ids, json_integer(kiln_id)); /* the greedy path diverges */
  }
  fdl_kiln_path_in paths[2] = {{.name = "eager_full", .full = true, .rows = full, .nrows = 1},
                               {.name = "graph_greedy", .full = false, .ids = ids}};
  json_t *out = NULL;
  oc->status = ref && full ? fdl_kiln_attribute(kiln_request, ref, KILN_V, paths, 2, NULL, NULL,
                                                &out, &oc->err)
                           : fdl_fail(&oc->err, FDL_NOMEM, "out of memory");
  json_decref(ids);
  free(ref);
  free(full);
  publish(oc, out);
}

/* ---- the operations whose result is the files they write -------------------------------- */

static void panel(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/panel", work);
  snprintf(oc->out, sizeof oc->out, "%s/panel.jsonl", oc->where);
  char text[256];
  snprintf(text, sizeof text, "%s/inputs/story.txt", work);
  const fdl_panel_text t = {.path = text};
  fdl_panel_opts o = {.tokenizer = model_dir,
                      .texts = &t,
                      .n_texts = 1,
                      .context = 8,
                      .out = oc->out,
                      .tokenizer_repository =
                          "fidelis/tiny-random"}; /* the header's optional members too */
  fdl_panel_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_panel_from_text(&o, &r, &oc->err);
  if (oc->status == FDL_OK) {
    oc->complete = r.records > 1;
    snprintf(oc->tree, sizeof oc->tree, "%s", oc->out);
  }
}

/* The .kld import's file: KLD_CHUNKS chunks of KLD_CTX tokens (each chunk's first the tiny
 * model's BOS) and every scored row's log-probabilities over its 272 ids, coded as llama.cpp
 * codes them (16-bit steps from the row's minimum). */
#define KLD_CTX 8
#define KLD_CHUNKS 2
#define KLD_V 272

static int write_kld(const char *path) {
  const uint32_t rows = KLD_CTX - 1 - KLD_CTX / 2, words = 2 * ((KLD_V + 1) / 2) + 4;
  static uint8_t file[FDL_KLD_HEADER_BYTES + 4 * KLD_CHUNKS * KLD_CTX +
                      2 * KLD_CHUNKS * (KLD_CTX - 1 - KLD_CTX / 2) * (KLD_V + 4)];
  uint8_t *w = file;
  const int32_t head[3] = {KLD_CTX, KLD_V, KLD_CHUNKS};
  memcpy(w, FDL_KLD_MAGIC, 8);
  memcpy(w + 8, head, sizeof head); /* little-endian, as every host the tests run on */
  w += FDL_KLD_HEADER_BYTES;
  for (int32_t i = 0; i < KLD_CHUNKS * KLD_CTX; i++, w += 4) {
    int32_t id = i % KLD_CTX ? 'a' + (i * 7) % 26 : 256;
    memcpy(w, &id, 4);
  }
  for (uint32_t c = 0; c < KLD_CHUNKS; c++)
    for (uint32_t r = 0; r < rows; r++) {
      double lp[KLD_V], max = -1e30, sum = 0, lo = 1e30;
      for (uint32_t i = 0; i < KLD_V; i++) {
        lp[i] = (double)((i * 37 + r * 11 + c * 5) % 97) / 8.0;
        if (lp[i] > max) max = lp[i];
      }
      for (uint32_t i = 0; i < KLD_V; i++) sum += exp(lp[i] - max);
      for (uint32_t i = 0; i < KLD_V; i++) {
        lp[i] -= max + log(sum);
        if (lp[i] < lo) lo = lp[i];
      }
      const float scale = (float)(-lo / 65535.0), min_log_prob = (float)lo;
      memcpy(w, &scale, 4);
      memcpy(w + 4, &min_log_prob, 4);
      for (uint32_t i = 0; i < KLD_V; i++) {
        uint16_t q = (uint16_t)lround((lp[i] - lo) / (double)scale);
        memcpy(w + 8 + 2 * i, &q, 2);
      }
      w += 2 * words;
    }
  return fdl_write_file(path, file, (size_t)(w - file), NULL) == FDL_OK ? 0 : -1;
}

static void kld(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/kld", work);
  snprintf(oc->out, sizeof oc->out, "%s/ds", oc->where);
  char in[256], panel_out[256];
  snprintf(in, sizeof in, "%s/inputs/base.kld", work);
  snprintf(panel_out, sizeof panel_out, "%s/panel.jsonl", oc->where);
  fdl_kld_import_opts o = {.kld_path = in,
                           .tokenizer = model_dir,
                           .out_dir = oc->out,
                           .panel_out = panel_out,
                           .threads = 1,
                           .created_utc = "2026-01-01T00:00:00Z"};
  fdl_kld_import_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_kld_import(&o, &r, &oc->err);
  snprintf(oc->code, sizeof oc->code, "%s", fdl_refusal_name(r.pack.refusal.code));
  if (oc->status == FDL_OK) {
    oc->complete = r.pack.records == KLD_CHUNKS;
    snprintf(oc->tree, sizeof oc->tree, "%s", oc->where); /* the dataset and the panel */
  }
}

static void synth(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/synth", work);
  snprintf(oc->out, sizeof oc->out, "%s/pair", oc->where);
  fdl_synth_opts o;
  fdl_synth_opts_default(&o);
  o.out_dir = oc->out;
  o.seed = 7;
  o.vocab = 8; /* the smallest pair: its cost is the runs of pack and validate, not the sizes */
  o.hidden = 32;
  o.contexts = 1;
  o.tokens_per_context = 2;
  o.threads = 1;
  o.created_utc = "2026-01-01T00:00:00Z";
  fdl_synth_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_synth(&o, &r, &oc->err);
  if (oc->status == FDL_OK) {
    oc->complete = r.rows > 0;
    snprintf(oc->tree, sizeof oc->tree, "%s", oc->out);
  }
}

static void model_write(outcome *oc) {
  snprintf(oc->where, sizeof oc->where, "%s/mw", work);
  snprintf(oc->out, sizeof oc->out, "%s/model", oc->where);
  fdl_model_write_opts o = {.preset = "tiny-random", .out_dir = oc->out};
  fdl_model_write_result r;
  memset(&r, 0, sizeof r);
  oc->status = fdl_model_write(&o, &r, &oc->err);
  if (oc->status == FDL_OK) {
    oc->complete = r.tensors > 0;
    snprintf(oc->tree, sizeof oc->tree, "%s", oc->out);
  }
}

/* Loads the tiny model's tokenizer, encodes a chat turn (specials parsed, BOS added) and decodes
 * it back: the result is the tokenizer's id, the ids and the text. */
static void tokenize(outcome *oc) {
  static const char TEXT[] = "<|im_start|>user\nh\xc3\xa9llo, w\xe2\x82\xacrld<|im_end|>\n";
  fdl_tok *tok = NULL;
  int32_t *ids = NULL;
  size_t n = 0, len = 0;
  char *text = NULL;
  oc->status = fdl_tok_load(model_dir, &tok, &oc->err);
  if (oc->status == FDL_OK)
    oc->status = fdl_tok_encode(tok, TEXT, sizeof TEXT - 1,
                                FDL_TOK_ADD_SPECIAL | FDL_TOK_PARSE_SPECIAL, &ids, &n, &oc->err);
  if (oc->status == FDL_OK) oc->status = fdl_tok_decode(tok, ids, n, &text, &len, &oc->err);
  if (oc->status == FDL_OK) {
    fdl_tok_info in;
    fdl_tok_get_info(tok, &in);
    char *r = malloc(strlen(in.id) + 12 * n + len + 4), *w = r;
    if (r) {
      w += sprintf(w, "%s ", in.id);
      for (size_t i = 0; i < n; i++) w += sprintf(w, "%d,", (int)ids[i]);
      sprintf(w, " %s", text);
    }
    oc->complete = r && n > 1 && len == sizeof TEXT - 1;
    oc->result = r;
  }
  free(text);
  free(ids);
  fdl_tok_free(tok);
}

typedef struct {
  const char *name;
  void (*run)(outcome *);
  bool refusal_code; /* its failures must carry a refusal code */
  bool refused;      /* ... and be FDL_REFUSED, whatever the cause (fdl_compare's contract) */
  const char *dir;   /* the directory under work that must hold nothing new after a failure
                        (NULL: validate's candidate) */
  void (*before)(void), (*after)(void); /* around each run, with faults off */
} operation;

static const operation OPS[] = {
    {"pack", pack, true, false, "pack", NULL, NULL},
    {"validate", validate, false, false, NULL, NULL, NULL},
    {"compare", compare, true, true, "cmp", NULL, NULL},
    {"report", report, false, false, "rpt", NULL, NULL},
    {"load", load, false, false, "load", NULL, NULL},
    {"generate", generate, false, false, "load", load_model, free_model},
    {"quantize", quantize, false, false, "quant", NULL, NULL},
    {"capture", capture, false, false, "cap", NULL, NULL},
    {"divergence", divergence, false, false, "kiln", NULL, NULL},
    {"attribute", attribute, false, false, "kiln", NULL, NULL},
    {"panel", panel, false, false, "panel", NULL, NULL},
    {"kld", kld, true, false, "kld", NULL, NULL},
    {"synth", synth, false, false, "synth", NULL, NULL},
    {"model_write", model_write, false, false, "mw", NULL, NULL},
    {"tokenize", tokenize, false, false, "tok", NULL, NULL},
};
#define N_OPS (sizeof OPS / sizeof *OPS)
static char *clean_result[N_OPS]; /* each operation's clean result */

/* ---- the loop --------------------------------------------------------------------------- */

/* Every file under a tree (or the one file it is), as sorted lines "path bytes sha256". */
static char **tree_lines;
static size_t n_tree_lines;
static const char *tree_root;

static int tree_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)ftw;
  if (flag != FTW_F) return 0;
  fdl_sha256 d;
  char hex[FDL_SHA256_HEX_BUF], line[512];
  fdl_err err = {FDL_OK, ""};
  if (fdl_sha256_file(path, &d, NULL, &err) != FDL_OK) return -1;
  fdl_sha256_hex(&d, hex);
  snprintf(line, sizeof line, "%s %lld %s", path + strlen(tree_root), (long long)st->st_size, hex);
  char **grown = realloc(tree_lines, (n_tree_lines + 1) * sizeof *grown);
  if (!grown) return -1;
  tree_lines = grown;
  return (tree_lines[n_tree_lines++] = strdup(line)) ? 0 : -1;
}

static int by_text(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *digest_tree(const char *root) {
  tree_root = root;
  int rc = nftw(root, tree_one, 16, FTW_PHYS);
  qsort(tree_lines, n_tree_lines, sizeof *tree_lines, by_text);
  size_t len = 1;
  for (size_t i = 0; i < n_tree_lines; i++) len += strlen(tree_lines[i]) + 1;
  char *out = rc == 0 ? malloc(len) : NULL;
  if (out) out[0] = '\0';
  for (size_t i = 0; i < n_tree_lines; i++) {
    if (out) strcat(strcat(out, tree_lines[i]), "\n");
    free(tree_lines[i]);
  }
  free(tree_lines);
  tree_lines = NULL;
  n_tree_lines = 0;
  return out ? out : strdup("(the tree could not be read)");
}

static bool leak_each; /* FDL_FAULT_LEAK_EACH or FDL_FAULT_ONLY: a leak check after every run */

static bool leaked(void) {
#ifdef FDL_TEST_LSAN
  return __lsan_do_recoverable_leak_check() != 0;
#else
  return false;
#endif
}

/* One run of op with the Nth call of kind failing (n == 0: none). */
static void one_run(const operation *op, fdl_fault_kind kind, uint64_t n, uint64_t *count) {
  outcome oc;
  memset(&oc, 0, sizeof oc);
  char before[4096], after[4096];
  char where[128];
  if (!op->dir)
    snprintf(where, sizeof where, "%s", cand_dir);
  else
    snprintf(where, sizeof where, "%s/%s", work, op->dir);
  size_t nb = list_dir(where, before, sizeof before);
  if (op->before) op->before();
  fdl_fault_arm(kind, n);
  op->run(&oc);
  bool fired = fdl_fault_fired();
  if (count) *count = fdl_fault_count(kind);
  fdl_fault_disarm();
  if (oc.status == FDL_OK && oc.tree[0] && !oc.result) oc.result = digest_tree(oc.tree);
  if (op->after) op->after();
  /* The result as a comparable string: the seal of a pack, the receipt of a compare, ... */
  char *result = oc.result    ? oc.result
                 : oc.receipt ? json_dumps(oc.receipt, JSON_COMPACT | JSON_SORT_KEYS)
                              : strdup(oc.seal[0] ? oc.seal : "");
  json_decref(oc.receipt);
  char **clean_slot = &clean_result[op - OPS];
  const char *clean = *clean_slot ? *clean_slot : "";
  if (n == 0) {
    if (oc.status != FDL_OK || !oc.complete)
      FAIL("%s without a fault: %s %s", op->name, fdl_status_name(oc.status), oc.err.msg);
    else if (!*clean_slot)
      *clean_slot = strdup(result);
    else if (strcmp(result, clean))
      FAIL("%s: two clean runs differ", op->name);
  } else if (!fired) {
    FAIL("%s: %s %" PRIu64 " was never reached (the call count changed between runs)", op->name,
         kind_name(kind), n);
  } else if (oc.status == FDL_OK) {
    /* The library absorbed the fault (an optional read, a fallback): then the output must be
     * whole, as if nothing happened. */
    absorbed++;
    printf("note: %s: failing %s %" PRIu64 " was absorbed\n", op->name, kind_name(kind), n);
    if (getenv("FDL_FAULT_ONLY")) printf("result: %s\n", result);
    fflush(stdout);
    if (!oc.complete) FAIL("%s: %s %" PRIu64 ": OK but incomplete", op->name, kind_name(kind), n);
    if (strcmp(result, clean))
      FAIL("%s: %s %" PRIu64 ": OK with a result that differs from the clean run's", op->name,
           kind_name(kind), n);
  } else {
    count_code(oc.code[0] ? oc.code : fdl_status_name(oc.status));
    if (getenv("FDL_FAULT_ONLY"))
      printf("%s: %s [%s]\n", fdl_status_name(oc.status), oc.err.msg, oc.code);
    if (!oc.err.msg[0])
      FAIL("%s: %s %" PRIu64 ": %s with an empty message", op->name, kind_name(kind), n,
           fdl_status_name(oc.status));
    if ((op->refusal_code && !oc.code[0]) || (op->refused && oc.status != FDL_REFUSED))
      FAIL("%s: %s %" PRIu64 ": %s without a refusal code (%s)", op->name, kind_name(kind), n,
           fdl_status_name(oc.status), oc.err.msg);
    size_t na = list_dir(where, after, sizeof after);
    if (na != nb || strcmp(before, after))
      FAIL("%s: %s %" PRIu64 " (%s): left behind in %s: [%s] (before: [%s])", op->name,
           kind_name(kind), n, oc.err.msg, where, after, before);
  }
  free(result);
  if (leak_each && leaked())
    FAIL("%s: %s %" PRIu64 ": leak (see the report above)", op->name, kind_name(kind), n);
  if (oc.status == FDL_OK && oc.out[0]) {
    struct stat st;
    if (stat(oc.out, &st) == 0 && !S_ISDIR(st.st_mode))
      unlink(oc.out);
    else
      rm_tree(oc.out);
  }
  /* Whatever a faulty run left, the next run starts from the same state. */
  remove_new(where, before);
}

static void sweep(const operation *op, fdl_fault_kind kind, uint64_t stride) {
  uint64_t total = 0, again = 0;
  one_run(op, kind, 0, &total);
  one_run(op, kind, 0, &again);
  if (total != again) {
    FAIL("%s: %" PRIu64 " then %" PRIu64 " %ss: the count is not reproducible", op->name, total,
         again, kind_name(kind));
    return;
  }
  int before = failures, abs_before = absorbed;
  n_codes = 0;
  for (uint64_t n = 1; n <= total; n += stride) one_run(op, kind, n, NULL);
  if (!leak_each && leaked())
    FAIL("%s: failing %ss leaks (report above; FDL_FAULT_LEAK_EACH=1 names the N)", op->name,
         kind_name(kind));
  printf("%s: %" PRIu64 " %ss, each failed in turn (stride %" PRIu64 "): %d failure(s), %d "
         "absorbed\n",
         op->name, total, kind_name(kind), stride, failures - before, absorbed - abs_before);
  printf("  errors:");
  for (size_t i = 0; i < n_codes; i++) printf(" %s x%d", codes[i].code, codes[i].count);
  printf("\n");
  fflush(stdout);
  if (total == 0) FAIL("%s made no %s: the hook is not wired", op->name, kind_name(kind));
}

int main(void) {
  const char *sv = getenv("FDL_FAULT_STRIDE");
  uint64_t stride = sv && atoi(sv) > 0 ? (uint64_t)atoi(sv) : 1;
  struct stat st;
  snprintf(work, sizeof work, "%s/fdl-faults-XXXXXX",
           stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : ".");
  if (!mkdtemp(work)) {
    perror("mkdtemp");
    return 1;
  }
  char p[256];
  snprintf(p, sizeof p, "%s/pack", work);
  mkdir(p, 0755);
  static const char *const dirs[] = {"cmp",   "load", "quant", "cap", "kiln",
                                     "panel", "kld",  "synth", "mw",  "tok"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(p, sizeof p, "%s/%s", work, dirs[i]);
    mkdir(p, 0755);
  }
  /* The pair that validate and compare read, made once with faults off. */
  fdl_synth_opts so;
  fdl_synth_opts_default(&so);
  snprintf(p, sizeof p, "%s/pair", work);
  so.out_dir = p;
  so.seed = 7;
  so.vocab = V;
  so.hidden = H;
  so.contexts = CTX;
  so.tokens_per_context = TOK;
  so.threads = 1;
  fdl_synth_result sr;
  fdl_err err = {FDL_OK, ""};
  if (fdl_synth(&so, &sr, &err) != FDL_OK || write_pack_inputs() != 0) {
    printf("FAIL: cannot make the inputs: %s\n", err.msg);
    rm_tree(work);
    return 1;
  }
  snprintf(ref_dir, sizeof ref_dir, "%s/pair/reference", work);
  snprintf(cand_dir, sizeof cand_dir, "%s/pair/candidate", work);
  snprintf(p, sizeof p, "%s/rpt", work);
  mkdir(p, 0755);
  snprintf(receipt_dir, sizeof receipt_dir, "%s/receipt", work);
  fdl_compare_opts co;
  fdl_compare_opts_default(&co);
  co.reference = ref_dir;
  co.candidate = cand_dir;
  co.out_dir = receipt_dir;
  co.own_heads = true;
  co.threads = 1;
  co.bootstrap_samples = 50;
  co.created_utc = "2026-01-01T00:00:00Z";
  fdl_compare_result cr;
  fdl_status cs = fdl_compare(&co, &cr, &err);
  fdl_compare_result_free(&cr);
  if (cs != FDL_OK) {
    printf("FAIL: cannot make the receipt for report: %s\n", err.msg);
    rm_tree(work);
    return 1;
  }

  /* The tiny-random model and a two-record panel for capture; the Kiln request. */
  snprintf(model_dir, sizeof model_dir, "%s/model", work);
  fdl_model_write_opts mo = {.preset = "tiny-random", .out_dir = model_dir};
  fdl_model_write_result mr;
  const char *shared = getenv("FDL_SHARED");
  char req_path[512];
  snprintf(req_path, sizeof req_path,
           "%s/vectors/kiln/rocm-strix-halo-greedy-c1-first-divergence-v1.json",
           shared ? shared : "../shared");
  static const char CAP_PANEL[] = "{\"index\":0,\"tokens\":[256,17,99,3,200,41,7,88]}\n"
                                  "{\"index\":1,\"tokens\":[256,5,6,7,8,9,10,11]}\n";
  snprintf(p, sizeof p, "%s/inputs/capture.jsonl", work);
  static const char STORY[] = "Once upon a time, a fox met a crow. The crow held cheese.\n";
  char story[256], kld_in[256];
  snprintf(story, sizeof story, "%s/inputs/story.txt", work);
  snprintf(kld_in, sizeof kld_in, "%s/inputs/base.kld", work);
  if (fdl_model_write(&mo, &mr, &err) != FDL_OK ||
      fdl_write_file(p, CAP_PANEL, sizeof CAP_PANEL - 1, &err) != FDL_OK ||
      fdl_json_load_file(req_path, NULL, &kiln_request, &err) != FDL_OK ||
      fdl_write_file(story, STORY, sizeof STORY - 1, &err) != FDL_OK || write_kld(kld_in)) {
    printf("FAIL: cannot make the model, the capture panel, panel's text, the .kld or read the "
           "Kiln request: %s\n",
           err.msg);
    rm_tree(work);
    return 1;
  }

  const char *only = getenv("FDL_FAULT_ONLY");
  const char *ops = getenv("FDL_FAULT_OPS"); /* e.g. "compare": sweep only those */
  leak_each = only || getenv("FDL_FAULT_LEAK_EACH");
  for (size_t i = 0; i < N_OPS; i++) {
    if (only) {
      char kind[16];
      unsigned long long n;
      size_t len = strlen(OPS[i].name);
      if (strncmp(only, OPS[i].name, len) || only[len] != ':' ||
          sscanf(only + len + 1, "%15[a-z]:%llu", kind, &n) != 2)
        continue;
      printf("%s: failing %s %llu only\n", OPS[i].name, kind, n);
      one_run(&OPS[i], strcmp(kind, "io") ? FDL_FAULT_ALLOC : FDL_FAULT_IO, n, NULL);
      continue;
    }
    if (ops && !strstr(ops, OPS[i].name)) continue;
    sweep(&OPS[i], FDL_FAULT_ALLOC, stride);
    if (OPS[i].run != generate) sweep(&OPS[i], FDL_FAULT_IO, stride); /* generate does no I/O */
  }
  rm_tree(work);
  for (size_t i = 0; i < N_OPS; i++) free(clean_result[i]);
  json_decref(kiln_request);
  printf("%d failure(s), %d absorbed fault(s)\n", failures, absorbed);
  return failures ? 1 : 0;
}
