/* tool_num.c - drives the numerical core from raw files for tests/test_num_oracle.py.
 *
 *   tool_num kl --vocab V --rows R --ref F --cand F --out F [--ref-hidden H --ref-head F]
 *               [--cand-hidden H --cand-head F] [--threads T]
 *               [--isa auto|scalar|avx2|avx512] [--js] [--block-rows N]
 *               [--dump-ref F] [--dump-cand F]
 *   tool_num stats --in F --lengths F --count C --total N --out F [qVALUE ...]
 *
 * Inputs are raw little-endian float32 (rows x width) or float64 arrays. `kl` writes one record
 * per row: kl f64, top1 i64, ref_argmax i64, cand_argmax i64, abs_sum f64, abs_max f64, js f64.
 * --dump-* writes the replayed float32 logits of a hidden side, produced by the GEMM the
 * driver uses, so the oracle can check the estimator on exactly those logits. --block-rows
 * cuts the panel into blocks of that many rows (default and maximum: FDL_NUM_TILE_ROWS).
 * `stats` takes several float64 arrays back to back (int64 lengths in --lengths) and writes per
 * array: mean, neumaier_mean, max, the linear quantile for each q, then fdl_num_summarize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/num.h"
#include "num/gemm_run.h"

static void *slurp(const char *path, size_t want) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  void *p = malloc(want ? want : 1);
  if (p && fread(p, 1, want, f) != want) {
    free(p);
    p = NULL;
  }
  fclose(f);
  return p;
}

static int spit(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(p, 1, n, f) == n;
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

static const char *arg(int argc, char **argv, const char *name) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0) return argv[i + 1];
  return NULL;
}

static int flag(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], name) == 0) return 1;
  return 0;
}

static size_t num(int argc, char **argv, const char *name, size_t dflt) {
  const char *v = arg(argc, argv, name);
  return v ? strtoull(v, NULL, 10) : dflt;
}

typedef struct {
  double kl;
  int64_t top1, ra, ca;
  double abs_sum, abs_max, js;
} record;

/* Replays every row of a hidden side through the GEMM the driver uses (its contract makes a
 * logit independent of blocks, tiles and threads) and writes the logits. */
static int dump_logits(const fdl_num_opts *o, const fdl_num_side *sd, size_t rows,
                       const char *path) {
  float *outl = malloc(rows * o->vocab * sizeof *outl);
  fdl_gemm *g = NULL;
  fdl_err err;
  if (!outl || fdl_gemm_new(o->isa, o->threads, &g, &err) != FDL_OK) {
    free(outl);
    return -1;
  }
  fdl_gemm_args x = {rows,          o->vocab, sd->hidden, sd->data, sd->ld, sd->head, sd->hidden,
                     sd->head_type, outl,     o->vocab,   NULL,     NULL,   0,        NULL};
  int rc =
      fdl_gemm_run(g, &x, &err) == FDL_OK ? spit(path, outl, rows * o->vocab * sizeof *outl) : -1;
  fdl_gemm_free(g);
  free(outl);
  return rc;
}

static int load_side(int argc, char **argv, const char *which, size_t rows, size_t vocab,
                     fdl_num_side *sd, float **data, float **head) {
  char key[64];
  snprintf(key, sizeof key, "--%s-hidden", which);
  size_t hidden = num(argc, argv, key, 0);
  const char *path = arg(argc, argv, strcmp(which, "ref") == 0 ? "--ref" : "--cand");
  size_t width = hidden ? hidden : vocab;
  if (!path || !(*data = slurp(path, rows * width * sizeof(float)))) return -1;
  memset(sd, 0, sizeof *sd);
  sd->data = *data;
  sd->ld = width;
  if (!hidden) return 0;
  snprintf(key, sizeof key, "--%s-head", which);
  const char *hp = arg(argc, argv, key);
  if (!hp || !(*head = slurp(hp, vocab * hidden * sizeof(float)))) return -1;
  sd->form = FDL_NUM_HIDDEN;
  sd->hidden = hidden;
  sd->head = *head;
  return 0;
}

static int cmd_kl(int argc, char **argv) {
  fdl_num_opts o;
  fdl_num_opts_default(&o);
  o.vocab = num(argc, argv, "--vocab", 0);
  o.threads = (unsigned)num(argc, argv, "--threads", 1);
  o.js = flag(argc, argv, "--js");
  const char *isa = arg(argc, argv, "--isa");
  if (isa && strcmp(isa, "scalar") == 0) o.isa = FDL_NUM_ISA_SCALAR;
  if (isa && strcmp(isa, "avx2") == 0) o.isa = FDL_NUM_ISA_AVX2;
  if (isa && strcmp(isa, "avx512") == 0) o.isa = FDL_NUM_ISA_AVX512;
  size_t rows = num(argc, argv, "--rows", 0);
  size_t block_rows = num(argc, argv, "--block-rows", FDL_NUM_TILE_ROWS);
  const char *out = arg(argc, argv, "--out");
  if (!rows || !o.vocab || !out || !block_rows) {
    fprintf(stderr, "tool_num kl: --vocab, --rows and --out are required\n");
    return 4;
  }
  fdl_num_side ref, cand;
  float *rd = NULL, *cd = NULL, *rh = NULL, *ch = NULL;
  if (load_side(argc, argv, "ref", rows, o.vocab, &ref, &rd, &rh) ||
      load_side(argc, argv, "cand", rows, o.vocab, &cand, &cd, &ch)) {
    fprintf(stderr, "tool_num kl: cannot read an input file\n");
    return 4;
  }
  const char *dr = arg(argc, argv, "--dump-ref"), *dc = arg(argc, argv, "--dump-cand");
  if ((dr && dump_logits(&o, &ref, rows, dr)) || (dc && dump_logits(&o, &cand, rows, dc))) {
    fprintf(stderr, "tool_num kl: dump failed\n");
    return 4;
  }
  size_t nb = (rows + block_rows - 1) / block_rows;
  fdl_num_block *blocks = calloc(nb, sizeof *blocks);
  double *kl = calloc(rows, 8), *as = calloc(rows, 8), *am = calloc(rows, 8), *js = calloc(rows, 8);
  uint8_t *top1 = calloc(rows, 1);
  int64_t *ra = calloc(rows, 8), *ca = calloc(rows, 8);
  record *rec = calloc(rows, sizeof *rec);
  if (!blocks || !kl || !as || !am || !js || !top1 || !ra || !ca || !rec) return 4;
  for (size_t b = 0; b < nb; b++) {
    size_t r0 = b * block_rows;
    blocks[b].rows = rows - r0 < block_rows ? rows - r0 : block_rows;
    blocks[b].ref = ref;
    blocks[b].ref.data = ref.data + r0 * ref.ld;
    blocks[b].cand = cand;
    blocks[b].cand.data = cand.data + r0 * cand.ld;
  }
  fdl_num_out res = {kl, top1, ra, ca, as, am, o.js ? js : NULL, NULL, NULL};
  fdl_num_ctx *ctx;
  fdl_err err;
  int rc = 0;
  if (fdl_num_ctx_new(&o, &ctx, &err) != FDL_OK || fdl_num_run(ctx, blocks, nb, &res, &err)) {
    fprintf(stderr, "tool_num kl: %s: %s\n", fdl_status_name(err.status), err.msg);
    rc = 3;
  } else {
    fdl_num_ctx_free(ctx);
    for (size_t r = 0; r < rows; r++)
      rec[r] = (record){kl[r], top1[r], ra[r], ca[r], as[r], am[r], o.js ? js[r] : 0.0};
    if (spit(out, rec, rows * sizeof *rec)) rc = 4;
  }
  free(blocks), free(kl), free(as), free(am), free(js), free(top1), free(ra), free(ca), free(rec);
  free(rd), free(cd), free(rh), free(ch);
  return rc;
}

static int cmp_double(const void *pa, const void *pb) {
  double a = *(const double *)pa, b = *(const double *)pb;
  return (a > b) - (a < b);
}

/* Several arrays in one call (process start-up dominates under sanitizers): --in holds them
 * back to back, --lengths their int64 lengths; per array the output is mean, neumaier_mean, max,
 * each q's quantile, then the summary's six values. */
static int cmd_stats(int argc, char **argv) {
  size_t count = num(argc, argv, "--count", 0), total = num(argc, argv, "--total", 0);
  const char *in = arg(argc, argv, "--in"), *lp = arg(argc, argv, "--lengths");
  const char *out = arg(argc, argv, "--out");
  double *all = in ? slurp(in, total * 8) : NULL;
  int64_t *len = lp ? slurp(lp, count * 8) : NULL;
  double qs[32];
  size_t nq = 0;
  for (int i = 1; i < argc && nq < 32; i++)
    if (argv[i][0] == 'q') qs[nq++] = strtod(argv[i] + 1, NULL);
  size_t per = 3 + nq + 6;
  double *res = malloc((count ? count : 1) * per * 8);
  if (!all || !len || !out || !res) return 4;
  size_t off = 0;
  for (size_t c = 0; c < count; c++) {
    size_t n = (size_t)len[c];
    const double *a = all + off;
    off += n;
    double *sorted = malloc(n * 8), *r = res + c * per;
    memcpy(sorted, a, n * 8);
    qsort(sorted, n, 8, cmp_double);
    r[0] = fdl_num_mean(a, n);
    r[1] = fdl_num_neumaier_mean(a, n);
    r[2] = sorted[n - 1];
    for (size_t i = 0; i < nq; i++) r[3 + i] = fdl_num_quantile_sorted(sorted, n, qs[i]);
    fdl_num_summary s;
    fdl_err err;
    if (fdl_num_summarize(a, n, &s, &err) != FDL_OK) return 3;
    double tail[6] = {s.mean, s.median, s.p95, s.p99, s.p99_9, s.max};
    memcpy(r + 3 + nq, tail, sizeof tail);
    free(sorted);
  }
  int rc = spit(out, res, count * per * 8) ? 4 : 0;
  free(all), free(len), free(res);
  return rc;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "kl") == 0) return cmd_kl(argc, argv);
  if (argc > 1 && strcmp(argv[1], "stats") == 0) return cmd_stats(argc, argv);
  fprintf(stderr, "usage: tool_num kl|stats ...\n");
  return 4;
}
