/* compare/hooks.h - fdl_compare with test hooks (private tier: the tests, never the installed
 * API). fdl_compare is fdl_compare_hooked with no hooks. */
#ifndef FDL_COMPARE_HOOKS_H
#define FDL_COMPARE_HOOKS_H

#include "fidelis/compare.h"
#include "fidelis/status.h"

typedef struct {
  /* Called once both sides have validated and before any tensor is read for compute (tests use
   * it to change a file in between). Every tensor is hashed in the read that computes on it, so
   * such a change is always refused (seal_failed). */
  void (*on_validated)(void *arg);
  void *on_validated_arg;
} fdl_compare_hooks;

/* fdl_compare, calling the hooks h names (h NULL: none). */
fdl_status fdl_compare_hooked(const fdl_compare_opts *o, const fdl_compare_hooks *h,
                              fdl_compare_result *r, fdl_err *err);

#endif
