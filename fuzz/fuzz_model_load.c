/* fuzz_model_load.c - the engine's model-directory loader on directories built from the input:
 * any directory is either refused with a message or loads into a model that runs.
 *
 * The loader is an on-disk walker as much as a parser (config.json, a shard index, the shards it
 * names, what else lies in the directory), so each input is a small directory rather than one
 * file. Input layout:
 *
 *   byte 0        selector: bits 0-1 the weights' layout (0 model.safetensors, 1 an index and two
 *                 shards, 2 both at once, 3 no weights); bit 2 a stray file beside them; bit 3 no
 *                 config.json; bit 4 (layouts 1 and 3) model.safetensors is a symlink to the
 *                 first shard; bit 5 (layouts 1 and 2) the second shard is a directory
 *   then blobs    each a little-endian u16 length and that many bytes (clipped to what is left):
 *                 config.json, then model.safetensors for layouts 0 and 2, then the index and the
 *                 two shards for layouts 1 and 2, then the stray file
 *   bytes after   the run's context length and token ids (see run_model)
 *
 * The directory is made once per process and rewritten for every input, with O_NOFOLLOW so that
 * a symlink the previous input planted never redirects a write. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/engine.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATH 1024

/* The scratch the engine sizes from the config is bounded too, not only the harness's outputs:
 * a config may declare dimensions whose products are far beyond what the few weights it carries
 * suggest, and an out-of-memory report there says nothing about the loader. */
#define MAX_FLOATS ((size_t)1 << 20)

static char g_dir[MAX_PATH];
static char g_base[MAX_PATH];

static const char *const NAMES[] = {"config.json",
                                    "model.safetensors",
                                    "model.safetensors.index.json",
                                    "model-00001-of-00002.safetensors",
                                    "model-00002-of-00002.safetensors",
                                    "extra.safetensors"};
enum { N_CONFIG, N_SINGLE, N_INDEX, N_SHARD1, N_SHARD2, N_STRAY, N_NAMES };

typedef struct {
  const uint8_t *p;
  size_t n;
} input;

static unsigned take(input *in) {
  if (!in->n) return 0;
  in->n--;
  return *in->p++;
}

static input blob(input *in) {
  size_t len = take(in);
  len |= (size_t)take(in) << 8;
  if (len > in->n) len = in->n;
  input b = {in->p, len};
  in->p += len;
  in->n -= len;
  return b;
}

static void clear_dir(void) {
  int dir = open(g_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  if (dir < 0) abort();
  for (int i = 0; i < N_NAMES; i++)
    if (unlinkat(dir, NAMES[i], 0) != 0 && errno != ENOENT)
      (void)unlinkat(dir, NAMES[i], AT_REMOVEDIR);
  close(dir);
}

static void put(int name, input b) {
  char path[MAX_PATH];
  snprintf(path, sizeof path, "%s/%s", g_dir, NAMES[name]);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  if (fd < 0) abort();
  while (b.n) {
    ssize_t w = write(fd, b.p, b.n);
    if (w <= 0) abort();
    b.p += w;
    b.n -= (size_t)w;
  }
  close(fd);
}

static void remove_base(void) {
  clear_dir();
  rmdir(g_dir);
  rmdir(g_base);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_base, sizeof g_base, "%s/fdl-fuzz-model-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_base)) abort();
  snprintf(g_dir, sizeof g_dir, "%s/model", g_base);
  if (mkdir(g_dir, 0755) != 0) abort();
  atexit(remove_base);
  return 0;
}

/* a * b, or SIZE_MAX when it overflows, so a chain of products saturates. */
static size_t mul(size_t a, size_t b) {
  return a && b > SIZE_MAX / a ? SIZE_MAX : a * b;
}

static bool small_enough(const fdl_model_info *in, size_t n) {
  size_t qd = mul(in->heads, in->head_dim), kd = mul(in->kv_heads, in->head_dim);
  size_t cd = in->lin_k_heads * in->lin_k_dim * 2 + in->lin_v_heads * in->lin_v_dim;
  size_t sizes[] = {mul(n, in->vocab),
                    mul(in->layers + 2, in->hidden),
                    mul(n, in->hidden),
                    mul(n, mul(qd, 2)),
                    mul(mul(n, kd), in->layers),
                    mul(n, in->intermediate),
                    mul(mul(n, cd), in->linear_layers),
                    mul(mul(in->lin_v_heads, mul(in->lin_k_dim, in->lin_v_dim)), in->linear_layers),
                    mul(64, in->lin_k_dim + in->lin_v_dim + 64)};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (sizes[i] > MAX_FLOATS) return false;
  return true;
}

static bool all_finite(const float *x, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(x[i])) return false;
  return true;
}

static void check_err(const fdl_err *err) {
  if (!err->msg[0]) {
    fprintf(stderr, "fuzz_model_load: a failure without a message\n");
    abort();
  }
}

/* Prefill and decode over up to three ids from the input; on the dense architectures the two
 * paths promise the same bits, which a finite run must show. */
static void run_model(fdl_model *m, input *in) {
  const fdl_model_info *info = fdl_model_get_info(m);
  size_t n = 1 + take(in) % 3;
  if (n > info->max_positions) n = info->max_positions;
  if (!small_enough(info, n)) return;
  int32_t ids[3];
  for (size_t i = 0; i < n; i++) ids[i] = (int32_t)(take(in) % info->vocab);
  size_t H = info->hidden, V = info->vocab, nl = (info->layers + 2) * H;
  float *hid[2], *logit[2], *lay[2];
  int32_t greedy[2][3];
  for (int p = 0; p < 2; p++) {
    hid[p] = malloc(n * H * sizeof(float));
    logit[p] = malloc(n * V * sizeof(float));
    lay[p] = malloc(nl * sizeof(float));
    if (!hid[p] || !logit[p] || !lay[p]) abort();
  }
  fdl_status s[2];
  for (int p = 0; p < 2; p++) {
    fdl_engine_out out = {hid[p], logit[p], greedy[p], lay[p]};
    fdl_err err;
    memset(&err, 0, sizeof err);
    s[p] = fdl_engine_run(m, ids, n, p ? FDL_ENGINE_DECODE : FDL_ENGINE_PREFILL, &out, &err);
    if (s[p] != FDL_OK) {
      check_err(&err);
      continue;
    }
    for (size_t i = 0; i < n; i++)
      if (greedy[p][i] < -1 || greedy[p][i] >= (int64_t)V) {
        fprintf(stderr, "fuzz_model_load: greedy id %d outside [-1, %zu)\n", (int)greedy[p][i], V);
        abort();
      }
  }
  if (s[0] == FDL_OK && s[1] == FDL_OK && !info->linear && all_finite(hid[0], n * H) &&
      all_finite(logit[0], n * V) &&
      (memcmp(hid[0], hid[1], n * H * sizeof(float)) ||
       memcmp(logit[0], logit[1], n * V * sizeof(float)))) {
    fprintf(stderr, "fuzz_model_load: prefill and decode differ on %s\n", info->arch);
    abort();
  }
  for (int p = 0; p < 2; p++) {
    free(hid[p]);
    free(logit[p]);
    free(lay[p]);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  input in = {data, size};
  unsigned sel = take(&in);
  clear_dir();
  input config = blob(&in);
  if (!(sel & 8)) put(N_CONFIG, config);
  unsigned layout = sel & 3;
  if (layout == 0 || layout == 2) put(N_SINGLE, blob(&in));
  if (layout == 1 || layout == 2) {
    put(N_INDEX, blob(&in));
    put(N_SHARD1, blob(&in));
    input second = blob(&in);
    char path[MAX_PATH];
    snprintf(path, sizeof path, "%s/%s", g_dir, NAMES[N_SHARD2]);
    if (sel & 32) {
      if (mkdir(path, 0755) != 0) abort();
    } else {
      put(N_SHARD2, second);
    }
  }
  if (sel & 4) put(N_STRAY, blob(&in));
  if ((sel & 16) && layout != 0 && layout != 2) {
    char path[MAX_PATH];
    snprintf(path, sizeof path, "%s/%s", g_dir, NAMES[N_SINGLE]);
    if (symlink(NAMES[N_SHARD1], path) != 0) abort();
  }

  fdl_model_opts o = {1, FDL_NUM_ISA_AUTO};
  fdl_model *m = NULL;
  fdl_err err;
  memset(&err, 0, sizeof err);
  if (fdl_model_load(g_dir, &o, &m, &err) != FDL_OK) {
    if (m) abort();
    check_err(&err);
    return 0;
  }
  run_model(m, &in);
  fdl_model_free(m);
  return 0;
}
