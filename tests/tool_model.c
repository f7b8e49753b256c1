/* tool_model.c - the library calls test_model_init.py and test_quantize.py check from Python:
 *
 *   tool_model panel FILE
 *       fdl_ds_panel_check on a pack panel; prints "records N scored_positions P"
 *   tool_model reconstruct FILE.safetensors PREFIX GROUP OUT.f32 [BITS [v2|awq]]
 *       fdl_gptq_reconstruct of PREFIX.{qweight,qzeros,scales,g_idx} (in from g_idx, out from
 *       scales; BITS 4 and the v1 zero convention unless given), or with awq
 *       fdl_awq_reconstruct of PREFIX.{qweight,qzeros,scales} (in from qweight); writes the
 *       [out, in] float32 matrix as raw little-endian bytes
 *
 * Exit 0 ok, 1 refused (the message on stderr), 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fidelis/fidelis.h"
#include "base/fs.h"

static int panel(const char *path) {
  fdl_err err = {FDL_OK, ""};
  char *text;
  size_t len, records;
  int64_t scored;
  fdl_status s = fdl_read_file(path, (size_t)1 << 26, &text, &len, &err);
  if (s == FDL_OK) {
    s = fdl_ds_panel_check(text, len, &records, &scored, &err);
    free(text);
  }
  if (s != FDL_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  printf("records %zu scored_positions %lld\n", records, (long long)scored);
  return 0;
}

static int reconstruct(const char *path, const char *prefix, const char *group_s,
                       const char *out_path, const char *bits_s, const char *kind) {
  bool v2 = !strcmp(kind, "v2"), awq = !strcmp(kind, "awq");
  fdl_err err = {FDL_OK, ""};
  fdl_safetensors *st = NULL;
  fdl_status s = fdl_safetensors_open(path, &st, &err);
  const fdl_tensor *t[4] = {NULL, NULL, NULL, NULL};
  static const char *const parts[4] = {"qweight", "qzeros", "scales", "g_idx"};
  for (int k = 0; k < 4 && s == FDL_OK; k++) {
    char name[512];
    snprintf(name, sizeof name, "%s.%s", prefix, parts[k]);
    t[k] = fdl_safetensors_find(st, name);
  }
  float *w = NULL;
  size_t in = 0, out = 0;
  if (s == FDL_OK && awq && t[0] && t[2] && t[0]->ndim == 2 && t[2]->ndim == 2) {
    in = (size_t)t[0]->shape[0];
    out = (size_t)t[2]->shape[1];
    w = malloc(in * out * sizeof *w + 1);
  } else if (s == FDL_OK && t[3] && t[2] && t[3]->ndim == 1 && t[2]->ndim == 2) {
    in = (size_t)t[3]->shape[0];
    out = (size_t)t[2]->shape[1];
    w = malloc(in * out * sizeof *w + 1);
  }
  if (s == FDL_OK && awq)
    s = fdl_awq_reconstruct(t[0], t[1], t[2], in, out, (size_t)atol(group_s), w ? w : (float *)&in,
                            &err);
  else if (s == FDL_OK)
    s = fdl_gptq_reconstruct(t[0], t[1], t[2], t[3], in, out,
                             &(fdl_gptq_format){(size_t)atol(group_s), (unsigned)atoi(bits_s), v2},
                             w ? w : (float *)&in, &err);
  if (s == FDL_OK) s = fdl_write_file(out_path, w, in * out * sizeof *w, &err);
  free(w);
  fdl_safetensors_close(st);
  if (s != FDL_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "panel")) return panel(argv[2]);
  if (argc >= 6 && argc <= 8 && !strcmp(argv[1], "reconstruct"))
    return reconstruct(argv[2], argv[3], argv[4], argv[5], argc > 6 ? argv[6] : "4",
                       argc > 7 ? argv[7] : "v1");
  fprintf(stderr,
          "usage: tool_model panel FILE | reconstruct FILE PREFIX GROUP OUT [BITS [v2|awq]]\n");
  return 2;
}
