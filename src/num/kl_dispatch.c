/* kl_dispatch.c - picks the chunk kernels for this CPU (the rule is in isa.c). */
#include "num/isa.h"
#include "num/kl.h"

fdl_status fdl_kl_kernels_pick(fdl_num_isa want, const kl_kernels **out, fdl_err *err) {
  const void *const by_isa[4] = {
      [FDL_NUM_ISA_SCALAR] = fdl_kl_kernels_scalar(),
      [FDL_NUM_ISA_AVX2] = fdl_kl_kernels_avx2(),
      [FDL_NUM_ISA_AVX512] = fdl_kl_kernels_avx512(),
  };
  const void *k;
  fdl_status s = fdl_num_isa_pick(want, by_isa, "KL", &k, err);
  if (s == FDL_OK) *out = k;
  return s;
}
