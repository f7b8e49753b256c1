/* progress.c - a one-line progress bar on stderr, redrawn at most ten times a second. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

double fdl_cli_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void fdl_cli_progress_init(fdl_cli_progress *p, const char *label, int mode) {
  memset(p, 0, sizeof *p);
  p->label = label;
  p->enabled = mode > 0 || (mode == 0 && isatty(STDERR_FILENO));
  p->t0 = fdl_cli_now();
  p->last = -1.0;
}

void fdl_cli_progress_cb(void *arg, uint64_t done, uint64_t total) {
  fdl_cli_progress *p = arg;
  if (!p->enabled) return;
  double t = fdl_cli_now();
  if (done < total && t - p->last < 0.1) return;
  p->last = t;
  enum { WIDTH = 30 };
  int fill = total ? (int)((double)done / (double)total * WIDTH) : WIDTH;
  char bar[WIDTH + 1];
  for (int i = 0; i < WIDTH; i++) bar[i] = i < fill ? '#' : '.';
  bar[WIDTH] = '\0';
  double secs = t - p->t0, rate = secs > 0 ? (double)done / secs : 0.0;
  fprintf(stderr, "\r%s [%s] %3d%%  %llu/%llu %s  %.1f s", p->label, bar,
          total ? (int)(100.0 * (double)done / (double)total) : 100, (unsigned long long)done,
          (unsigned long long)total, p->unit ? p->unit : "rows", secs);
  /* The rate and what is left at that rate, once there is a rate to tell. */
  if (done && done < total && rate > 0)
    fprintf(stderr, "  %.1f/s  ETA %.0f s ", rate, (double)(total - done) / rate);
  else
    fputs("                    ", stderr);
  fflush(stderr);
  p->drawn = true;
}

void fdl_cli_progress_end(fdl_cli_progress *p) {
  if (p->drawn) fputc('\n', stderr);
  p->drawn = false;
}
