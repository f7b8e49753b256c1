/* isa.c - run-time instruction-set choice shared by every kernel family. The choice is made
 * per context and stored there; there is no global state. Kernels of one family give the same
 * bits, so the choice only changes speed. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "num/isa.h"

#if defined(__x86_64__) && defined(__GNUC__)
/* GCC's __builtin_cpu_supports reads what libgcc learnt from CPUID once; clang 14's does not
 * know "f16c", so there CPUID leaf 1 is asked (ECX bit 29). CPUID traps to the hypervisor in a
 * VM (about 7 us), which matters to callers that ask per row. */
static int has_f16c(void) {
#if defined(__clang__)
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
#else
  return __builtin_cpu_supports("f16c");
#endif
}
#endif

int fdl_num_cpu_has(fdl_num_isa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (isa == FDL_NUM_ISA_AVX512) return __builtin_cpu_supports("avx512f");
  if (isa == FDL_NUM_ISA_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
#endif
  return isa == FDL_NUM_ISA_SCALAR;
}

fdl_status fdl_num_isa_pick(fdl_num_isa want, const void *const by_isa[4], const char *what,
                            const void **out, fdl_err *err) {
  if (want == FDL_NUM_ISA_AUTO) {
    static const fdl_num_isa order[] = {FDL_NUM_ISA_AVX512, FDL_NUM_ISA_AVX2};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
      if (by_isa[order[i]] && fdl_num_cpu_has(order[i])) {
        *out = by_isa[order[i]];
        return FDL_OK;
      }
    }
    *out = by_isa[FDL_NUM_ISA_SCALAR];
    return FDL_OK;
  }
  if (want != FDL_NUM_ISA_SCALAR && want != FDL_NUM_ISA_AVX2 && want != FDL_NUM_ISA_AVX512)
    return fdl_fail(err, FDL_INVALID, "unknown kernel choice %d", (int)want);
  if (!by_isa[want] || !fdl_num_cpu_has(want))
    return fdl_fail(err, FDL_UNSUPPORTED, "the %s %s kernels cannot run on this CPU or build",
                    fdl_num_isa_name(want), what);
  *out = by_isa[want];
  return FDL_OK;
}

const char *fdl_num_isa_name(fdl_num_isa isa) {
  switch (isa) {
  case FDL_NUM_ISA_AVX512:
    return "avx512";
  case FDL_NUM_ISA_AVX2:
    return "avx2";
  case FDL_NUM_ISA_SCALAR:
    return "scalar";
  case FDL_NUM_ISA_AUTO:
    return "auto";
  }
  return "unknown";
}
