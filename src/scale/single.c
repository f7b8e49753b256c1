/* single.c - the group of one process (see fidelis/scale.h): the plain build's implementation, and
 * the library's in every build. */

#include "fidelis/scale.h"

fdl_status fdl_scale_open(const char *fault, fdl_scale **out, fdl_err *err) {
  (void)fault, (void)err;
  *out = NULL;
  return FDL_OK;
}

void fdl_scale_close(fdl_scale *sc) {
  (void)sc;
}

bool fdl_scale_built(void) {
  return false;
}

int fdl_scale_rank(const fdl_scale *sc) {
  (void)sc;
  return 0;
}

int fdl_scale_size(const fdl_scale *sc) {
  (void)sc;
  return 1;
}

unsigned fdl_scale_threads(const fdl_scale *sc, unsigned requested) {
  (void)sc;
  return requested;
}

fdl_status fdl_scale_agree(const fdl_scale *sc, fdl_status s, fdl_refusal *r, fdl_err *err) {
  (void)sc, (void)r, (void)err;
  return s;
}

fdl_status fdl_scale_same(const fdl_scale *sc, const char *text, int *differs, fdl_err *err) {
  (void)sc, (void)text, (void)err;
  *differs = -1;
  return FDL_OK;
}

fdl_status fdl_scale_or(const fdl_scale *sc, void *bytes, size_t n, fdl_err *err) {
  (void)sc, (void)bytes, (void)n, (void)err;
  return FDL_OK;
}

fdl_status fdl_scale_send(const fdl_scale *sc, int to, const void *p, size_t n, fdl_err *err) {
  (void)sc, (void)p, (void)n;
  return fdl_fail(err, FDL_INVALID, "no rank %d in a group of one process", to);
}

fdl_status fdl_scale_recv(const fdl_scale *sc, int from, void *p, size_t n, fdl_err *err) {
  (void)sc, (void)p, (void)n;
  return fdl_fail(err, FDL_INVALID, "no rank %d in a group of one process", from);
}

fdl_status fdl_scale_gather_f64(const fdl_scale *sc, double v, double *all, fdl_err *err) {
  (void)sc, (void)err;
  if (all) all[0] = v;
  return FDL_OK;
}

int fdl_scale_bcast_int(const fdl_scale *sc, int v) {
  (void)sc;
  return v;
}
