/* ranks.c - the CLI's side of the scale seam (src/scale/scale.h): joining the group, keeping
 * every rank but rank 0 silent, the per-rank times of the --json summary, and one exit code for
 * the whole job. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int ranks_open(const char *cmd, fdl_cli_ranks *rk) {
  memset(rk, 0, sizeof *rk);
  fdl_err err = {FDL_OK, ""};
  /* FDL_MPI_FAULT: the MPI tests' failing rank (docs/SCALE.md); one process ignores it. */
  if (fdl_scale_open(getenv("FDL_MPI_FAULT"), &rk->sc, &err) != FDL_OK) {
    fprintf(stderr, "fidelis %s: ", cmd);
    fdl_cli_put_text(stderr, err.msg);
    fputc('\n', stderr);
    return fdl_cli_exit_for(err.status);
  }
  rk->size = fdl_scale_size(rk->sc);
  rk->lead = fdl_scale_rank(rk->sc) == 0;
  /* Rank 0 speaks for the job: the others' failures reach it through the agreements. */
  if (!rk->lead && (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)))
    return FDL_EXIT_USAGE;
  return 0;
}

void fdl_cli_ranks_time(fdl_cli_ranks *rk, double secs, unsigned threads) {
  rk->threads = threads ? threads : fdl_pool_cpu_count();
  free(rk->secs);
  rk->secs = rk->lead ? calloc((size_t)rk->size, sizeof *rk->secs) : NULL;
  fdl_err err = {FDL_OK, ""};
  if (fdl_scale_gather_f64(rk->sc, secs, rk->secs, &err) != FDL_OK && rk->lead) {
    free(rk->secs);
    rk->secs = NULL;
  }
}

void fdl_cli_ranks_json(const fdl_cli_ranks *rk, json_t *o) {
  if (!fdl_scale_built()) return; /* the plain program's summary is unchanged */
  json_t *a = json_array();
  for (int k = 0; a && rk->secs && k < rk->size; k++)
    json_array_append_new(a, json_real(rk->secs[k]));
  json_object_set_new(o, "ranks", json_integer(rk->size));
  json_object_set_new(o, "threads_per_rank", json_integer(rk->threads));
  json_object_set_new(o, "rank_seconds", a ? a : json_null());
}

static int ranks_close(fdl_cli_ranks *rk, int rc) {
  rc = fdl_scale_bcast_int(rk->sc, rc);
  free(rk->secs);
  fdl_scale_close(rk->sc);
  memset(rk, 0, sizeof *rk);
  return rc;
}

int fdl_cli_ranks_main(const char *cmd, int (*body)(void *arg, fdl_cli_ranks *rk), void *arg) {
  fdl_cli_ranks rk;
  int rc = ranks_open(cmd, &rk);
  if (rc != 0) return rc;
  return ranks_close(&rk, body(arg, &rk));
}
