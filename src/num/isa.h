/* isa.h - internal to src/num: which instruction-set kernels this CPU and build can run. Every
 * kernel family (KL chunks, GEMM) resolves its choice here, so "auto" means the same thing for
 * all of them. */
#ifndef FDL_NUM_ISA_H
#define FDL_NUM_ISA_H

#include "fidelis/num.h"

/* 1 when the CPU runs the instructions of isa (AVX2 means AVX2 + FMA + F16C). */
int fdl_num_cpu_has(fdl_num_isa isa);

/* Picks from a family's kernels, indexed by fdl_num_isa (NULL: not compiled in). AUTO takes
 * AVX-512, then AVX2, then scalar; a forced choice the CPU or build lacks is FDL_UNSUPPORTED.
 * what names the family in the message. */
fdl_status fdl_num_isa_pick(fdl_num_isa want, const void *const by_isa[4], const char *what,
                            const void **out, fdl_err *err);

#endif
