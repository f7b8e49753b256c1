/* kl_dispatch.c - picks the chunk kernels for this CPU. The choice is made per context and
 * stored there; there is no global state. All kernels give the same bits, so the choice only
 * changes speed. */
#include "num/kl.h"

static int cpu_has(fdl_num_isa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (isa == FDL_NUM_ISA_AVX512) return __builtin_cpu_supports("avx512f");
  if (isa == FDL_NUM_ISA_AVX2)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  return isa == FDL_NUM_ISA_SCALAR;
}

static const kl_kernels *compiled(fdl_num_isa isa) {
  switch (isa) {
  case FDL_NUM_ISA_AVX512:
    return fdl_kl_kernels_avx512();
  case FDL_NUM_ISA_AVX2:
    return fdl_kl_kernels_avx2();
  case FDL_NUM_ISA_SCALAR:
    return fdl_kl_kernels_scalar();
  case FDL_NUM_ISA_AUTO:
    break;
  }
  return NULL;
}

fdl_status fdl_kl_kernels_pick(fdl_num_isa want, const kl_kernels **out, fdl_err *err) {
  if (want == FDL_NUM_ISA_AUTO) {
    static const fdl_num_isa order[] = {FDL_NUM_ISA_AVX512, FDL_NUM_ISA_AVX2};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
      if (compiled(order[i]) && cpu_has(order[i])) {
        *out = compiled(order[i]);
        return FDL_OK;
      }
    }
    *out = fdl_kl_kernels_scalar();
    return FDL_OK;
  }
  if (want != FDL_NUM_ISA_SCALAR && want != FDL_NUM_ISA_AVX2 && want != FDL_NUM_ISA_AVX512)
    return fdl_fail(err, FDL_INVALID, "unknown kernel choice %d", (int)want);
  if (!compiled(want) || !cpu_has(want))
    return fdl_fail(err, FDL_UNSUPPORTED, "the %s kernels cannot run on this CPU or build",
                    fdl_num_isa_name(want));
  *out = compiled(want);
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
