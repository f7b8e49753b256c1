/* replay_id.c - what replays the hidden states: the GEMM contract, and the CPU it ran on (an
 * observed fact the receipt format asks for, although it cannot change a bit). */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/gemm.h"
#include "fidelis/num.h"

/* /proc/cpuinfo's first processor block is well under this; "model name" is in it. */
#define CPUINFO_HEAD_BYTES 8192

/* Best effort, and deliberately not through base/sys: the CPU's name only describes the machine,
 * so a failed read says "unknown" rather than failing the receipt, and the fault-injection
 * test (which requires an absorbed fault to leave the result unchanged) must not reach it. */
static void cpu_model(char *out, size_t cap) {
  snprintf(out, cap, "unknown");
  int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[CPUINFO_HEAD_BYTES + 1];
  size_t n = 0;
  for (;;) {
    ssize_t r = read(fd, buf + n, CPUINFO_HEAD_BYTES - n);
    if (r <= 0) break;
    n += (size_t)r;
    if (n == CPUINFO_HEAD_BYTES) break;
  }
  close(fd);
  buf[n] = '\0';
  for (const char *line = buf; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, "model name", 10)) continue;
    const char *p = strchr(line, ':');
    if (!p) break;
    p++;
    while (*p == ' ' || *p == '\t') p++;
    size_t len = strcspn(p, "\r\n");
    snprintf(out, cap, "%.*s", (int)len, p);
    break;
  }
}

void fdl_num_replay_identity_get(fdl_num_replay_identity *id) {
  memset(id, 0, sizeof *id);
  id->library = "fidelis_gemm";
  id->contract = FDL_GEMM_CONTRACT;
  id->chain = "each logit is c = fmaf(hidden[k], widen(head[v][k]), c) for k ascending from +0.0 "
              "in float32, round to nearest even, subnormals kept; BF16 and F16 heads are "
              "widened exactly";
  id->kernels = "scalar fmaf, AVX2+FMA, AVX-512F (bit-identical)";
  cpu_model(id->cpu_model, sizeof id->cpu_model);
}
