/* replay_id.c - what replays the hidden states: the GEMM contract, and the CPU it ran on (an
 * observed fact the receipt format asks for, although it cannot change a bit). */
#include <string.h>

#include "base/sys.h"
#include "num/gemm_run.h"
#include "fidelis/num.h"

void fdl_num_replay_identity_get(fdl_num_replay_identity *id) {
  memset(id, 0, sizeof *id);
  id->library = "fidelis_gemm";
  id->contract = FDL_GEMM_CONTRACT;
  id->chain = "each logit is c = fmaf(hidden[k], widen(head[v][k]), c) for k ascending from +0.0 "
              "in float32, round to nearest even, subnormals kept; BF16 and F16 heads are "
              "widened exactly";
  id->kernels = "scalar fmaf, AVX2+FMA, AVX-512F (bit-identical)";
  fdl_sys_cpu_name(id->cpu_model, sizeof id->cpu_model);
}
