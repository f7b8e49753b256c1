/* hub.c - hf:// inputs on the command line: a --model, --tokenizer or --panel that names a Hub
 * repository is resolved to its cache snapshot (fetched when missing, unless --offline) before
 * the command opens it; a download draws a bar on stderr (bytes, rate, ETA). docs/HUB.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

/* The files an implicit fetch of a whole model repository takes: what a model directory is read
 * from (config, index, shards, tokenizer, chat template, generation config), not the other
 * formats a repository may also carry (.bin, .onnx, .gguf quantizations). */
static const char *const MODEL_FILES[] = {"*.json", "*.safetensors", "*.txt", "*.model", "*.jinja"};

/* A download's bar: one line per file with bytes, rate and ETA (fdl_hub_progress_fn). */
typedef struct {
  fdl_cli_progress p;
  char file[256];
  uint64_t first; /* bytes the file had when its line began (a resumed download) */
} fdl_cli_download;

static void fdl_cli_download_cb(void *arg, const char *file, uint64_t done, uint64_t total) {
  fdl_cli_download *d = arg;
  if (!d->p.enabled) return;
  double t = fdl_cli_now();
  if (strncmp(d->file, file, sizeof d->file - 1)) { /* a new file: a new line and clock */
    fdl_cli_progress_end(&d->p);
    snprintf(d->file, sizeof d->file, "%s", file);
    d->p.t0 = t;
    d->first = done;
    d->p.last = -1.0;
  }
  if (done < total && t - d->p.last < 0.1) return;
  d->p.last = t;
  enum { WIDTH = 24 };
  int fill = total ? (int)((double)done / (double)total * WIDTH) : WIDTH;
  char bar[WIDTH + 1], shown[48], q[FDL_QUOTE_CAP];
  for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  double dt = t - d->p.t0, rate = dt > 0 ? (double)(done - d->first) / dt : 0.0;
  double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0.0;
  snprintf(shown, sizeof shown, "%s", fdl_quote_text(file, strlen(file), q, sizeof q));
  fprintf(stderr, "\r%s %-32.32s [%s] %3d%%  %.1f/%.1f MB  %.1f MB/s  ETA %.0f s ", d->p.label,
          shown, bar, total ? (int)(100.0 * (double)done / (double)total) : 100, (double)done / 1e6,
          (double)total / 1e6, rate / 1e6, eta);
  fflush(stderr);
  d->p.drawn = true;
}

void fdl_cli_hub_env(fdl_hub_env *e) {
  e->hub_cache = getenv("HF_HUB_CACHE");
  e->hf_home = getenv("HF_HOME");
  e->xdg_cache_home = getenv("XDG_CACHE_HOME");
  e->home = getenv("HOME");
  e->endpoint = getenv("HF_ENDPOINT");
  e->token = getenv("HF_TOKEN");
  e->token_path = getenv("HF_TOKEN_PATH");
  e->offline = getenv("HF_HUB_OFFLINE");
}

int fdl_cli_hub_resolve(const char *cmd, const fdl_cli_hub *h, const char *uri, bool model,
                        const char *const *include, size_t n_include, fdl_hub_result *r) {
  fdl_err err = {FDL_OK, ""};
  fdl_hub_ref ref;
  fdl_status s = fdl_hub_parse(uri, &ref, &err);
  if (s != FDL_OK) {
    fprintf(stderr, "fidelis %s: ", cmd);
    fdl_cli_put_text(stderr, err.msg);
    fputc('\n', stderr);
    return FDL_EXIT_USAGE;
  }
  if (model && !ref.path[0] && !include) {
    include = MODEL_FILES;
    n_include = sizeof MODEL_FILES / sizeof *MODEL_FILES;
  }
  char label[64];
  snprintf(label, sizeof label, "%s:%s", cmd, strcmp(cmd, "fetch") ? " fetch" : "");
  fdl_cli_download d;
  memset(&d, 0, sizeof d);
  fdl_cli_progress_init(&d.p, label, h->progress);
  fdl_hub_env env;
  fdl_cli_hub_env(&env);
  fdl_hub_opts o = {.env = &env,
                    .endpoint = h->endpoint,
                    .cache = h->cache,
                    .offline = h->offline,
                    .include = include,
                    .n_include = n_include,
                    .always_ask = h->always_ask,
                    .progress = fdl_cli_download_cb,
                    .progress_arg = &d,
                    .notice = fdl_cli_notice,
                    .notice_arg = (void *)cmd};
  s = fdl_hub_resolve(&ref, &o, r, &err);
  fdl_cli_progress_end(&d.p);
  if (s != FDL_OK) {
    fprintf(stderr, "fidelis %s: (%s) ", cmd, fdl_status_name(err.status));
    fdl_cli_put_text(stderr, err.msg);
    fputc('\n', stderr);
    return fdl_cli_exit_for(s);
  }
  return 0;
}

int fdl_cli_hub_input(const char *cmd, fdl_cli_hub *h, const char **path, bool model) {
  if (!*path || !fdl_hub_is_uri(*path)) return 0;
  if (h->n == sizeof h->owned / sizeof *h->owned) return FDL_EXIT_USAGE;
  fdl_hub_result r;
  int rc = fdl_cli_hub_resolve(cmd, h, *path, model, NULL, 0, &r);
  if (rc) return rc;
  h->owned[h->n++] = r.path;
  *path = r.path;
  r.path = NULL;
  fdl_hub_result_free(&r);
  return 0;
}

int fdl_cli_hub_file_real(fdl_cli_hub *h, const char **path) {
  struct stat st;
  if (lstat(*path, &st) != 0 || !S_ISLNK(st.st_mode) || stat(*path, &st) != 0 ||
      !S_ISREG(st.st_mode))
    return 0;
  if (h->n == sizeof h->owned / sizeof *h->owned) return FDL_EXIT_USAGE;
  fdl_err err = {FDL_OK, ""};
  char *real = NULL;
  if (fdl_resolve_named(*path, &real, &err) != FDL_OK) {
    fdl_cli_report(&err);
    return FDL_EXIT_USAGE;
  }
  h->owned[h->n++] = real;
  *path = real;
  return 0;
}

void fdl_cli_hub_free(fdl_cli_hub *h) {
  for (size_t i = 0; i < h->n; i++) free(h->owned[i]);
  h->n = 0;
}
