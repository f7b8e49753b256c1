/* fidelis/refusal.h - the one refusal record shared by pack, validate and compare.
 *
 * A refusal says which rule stopped the work (code), at which stage (gate), and what the user
 * can do about it (remedy); the message travels in the fdl_err beside it, like every other
 * failure. status is the failure's cause, so a caller can tell a refused input (FDL_REFUSED,
 * FDL_MISMATCH, ...) from an I/O failure or exhausted memory (FDL_IO, FDL_NOMEM) without
 * parsing the code. */
#ifndef FIDELIS_REFUSAL_H
#define FIDELIS_REFUSAL_H

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest code today is "self_compare_disagreement" (25 bytes); room for longer ones. */
#define FDL_REFUSAL_CODE_MAX 48
/* Gates are short stage names ("panel", "coverage", "publish"). */
#define FDL_REFUSAL_GATE_MAX 24
/* Remedies name override flags or say why there is none, in one or two sentences. */
#define FDL_REFUSAL_REMEDY_MAX 640

typedef struct {
  fdl_status status;                   /* the cause; FDL_OK while nothing was refused */
  char code[FDL_REFUSAL_CODE_MAX];     /* "panel_mismatch", "bad_input", ...; "" when none */
  char gate[FDL_REFUSAL_GATE_MAX];     /* the stage that refused; "" when none */
  char remedy[FDL_REFUSAL_REMEDY_MAX]; /* "" when there is nothing to suggest */
} fdl_refusal;

/* Fills r (code, gate, remedy; NULL gate or remedy is "") and err (status and the message), and
 * returns status. Texts longer than their field are cut. */
FDL_API fdl_status fdl_refuse(fdl_refusal *r, fdl_err *err, fdl_status status, const char *code,
                              const char *gate, const char *remedy, const char *fmt, ...)
    FDL_PRINTF(7, 8);
FDL_API fdl_status fdl_refusev(fdl_refusal *r, fdl_err *err, fdl_status status, const char *code,
                               const char *gate, const char *remedy, const char *fmt, va_list ap);

#ifdef __cplusplus
}
#endif
#endif
