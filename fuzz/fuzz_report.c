/* fuzz_report.c - `fidelis report`'s loader and charts on receipt directories built from the
 * input: every receipt is either refused or shown (page and Markdown), never a crash, a write
 * outside a buffer or a non-finite SVG coordinate (issue 20: a subnormal-only KL array once
 * wrote below the histogram's bins).
 *
 * A random receipt would fail its seal and never reach the charts, so the harness can repair
 * what the loader checks before drawing. Input layout:
 *
 *   byte 0       flags: bit 0 point tokenwise at the array with its real SHA-256, bit 1 set
 *                panel.scored_positions to the array's length, bit 2 spread the array's rows
 *                over per_context (scored_rows, in order), bit 3 reseal the receipt
 *   u16 + bytes  comparison-receipt.json (little-endian length, clipped to what is left)
 *   the rest     tokenwise-kld.npy's values: float64, little-endian (a partial last one dropped)
 *
 * Everything lives under /dev/shm where it exists (the page is published with fsync). */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fidelis/fidelis.h"
#include "base/fs.h"
#include "digest/seal_json.h"
#include "json/json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PATH 1024
#define MAX_VALUES (1u << 16) /* the largest array drawn: enough for every chart's code path */

static char g_dir[MAX_PATH], g_receipt[MAX_PATH], g_npy[MAX_PATH], g_page[MAX_PATH];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/fdl-fuzz-report-%ld", base, (long)getpid());
  if (mkdir(g_dir, 0700) != 0) abort();
  snprintf(g_receipt, sizeof g_receipt, "%s/comparison-receipt.json", g_dir);
  snprintf(g_npy, sizeof g_npy, "%s/tokenwise-kld.npy", g_dir);
  snprintf(g_page, sizeof g_page, "%s.html", g_dir);
  return 0;
}

static void set_rows(json_t *doc, size_t n) {
  json_t *pc = json_object_get(doc, "per_context");
  size_t m = json_array_size(pc);
  for (size_t i = 0; i < m; i++) {
    json_t *c = json_array_get(pc, i);
    if (!json_is_object(c)) return;
    size_t rows = n / m + (i + 1 == m ? n % m : 0);
    json_object_set_new(c, "scored_rows", json_integer((json_int_t)rows));
  }
}

/* Points the receipt at the array, repairs the counts and reseals, as the flags ask. */
static void repair(json_t *doc, unsigned flags, size_t n) {
  if (flags & 1) {
    char *data = NULL;
    size_t len = 0;
    fdl_err err;
    fdl_sha256 d;
    char hex[FDL_SHA256_HEX_BUF];
    if (fdl_read_file(g_npy, (size_t)1 << 26, &data, &len, &err) == FDL_OK &&
        fdl_sha256_buf(data, len, &d, &err) == FDL_OK) {
      fdl_sha256_hex(&d, hex);
      json_object_set_new(doc, "tokenwise",
                          json_pack("{s:s, s:s}", "path", "tokenwise-kld.npy", "sha256", hex));
    }
    free(data);
  }
  if (flags & 2) {
    json_t *panel = json_object_get(doc, "panel");
    if (json_is_object(panel))
      json_object_set_new(panel, "scored_positions", json_integer((json_int_t)n));
  }
  if (flags & 4) set_rows(doc, n);
  if (flags & 8) {
    fdl_err err;
    (void)fdl_seal_apply(doc, FDL_SEAL_FIDELITY_BLANK, "receipt_sha256", &err);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  unsigned flags = data[0];
  size_t jlen = (size_t)data[1] | (size_t)data[2] << 8;
  data += 3, size -= 3;
  if (jlen > size) jlen = size;
  const char *json = (const char *)data;
  size_t nv = (size - jlen) / 8;
  if (nv > MAX_VALUES) nv = MAX_VALUES;
  double *kl = malloc((nv ? nv : 1) * sizeof *kl);
  if (!kl) return 0;
  memcpy(kl, data + jlen, nv * sizeof *kl);

  unlink(g_npy), unlink(g_receipt), unlink(g_page);
  fdl_err err;
  int64_t shape[1] = {(int64_t)nv};
  if (fdl_npy_write(g_npy, FDL_DTYPE_F64, 1, shape, kl, &err) != FDL_OK) abort();
  free(kl);
  json_t *doc = NULL;
  fdl_json_read_opts opts = {0, false, false};
  if (fdl_json_parse(json, jlen, &opts, &doc, &err) == FDL_OK && json_is_object(doc)) {
    repair(doc, flags, nv);
    if (fdl_json_write_file(g_receipt, doc, FDL_JSON_PRETTY, &err) != FDL_OK) abort();
  } else {
    FILE *f = fopen(g_receipt, "wb"); /* the bytes as they are: the loader's refusals */
    if (!f || fwrite(json, 1, jlen, f) != jlen || fclose(f) != 0) abort();
  }
  json_decref(doc);

  const char *dirs[1] = {g_dir};
  fdl_report_result res;
  fdl_buf md;
  fdl_buf_init(&md, 0);
  (void)fdl_report_markdown(dirs, 1, &md, &res, &err);
  fdl_buf_free(&md);
  fdl_status s = fdl_report_write(dirs, 1, g_page, &res, &err);
  if (s == FDL_OK || s == FDL_MISMATCH) {
    /* A written page never holds a non-finite number where a coordinate goes. */
    char *page = NULL;
    size_t len = 0;
    if (fdl_read_file(g_page, (size_t)1 << 28, &page, &len, &err) == FDL_OK) {
      if (strstr(page, "=\"nan") || strstr(page, "=\"inf") || strstr(page, "=\"-nan") ||
          strstr(page, "=\"-inf"))
        abort();
      free(page);
    }
  }
  return 0;
}
