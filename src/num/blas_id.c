/* blas_id.c - which BLAS and which CPU replay the hidden states. The replay's sgemm is the one
 * computation whose bits depend on the BLAS build and the kernel it picks for the CPU, so the
 * num layer, which calls it, is the one that says what it is. */
#include <cblas.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fidelis/num.h"

/* /proc/cpuinfo's first processor block is well under this; "model name" is in it. */
#define CPUINFO_HEAD_BYTES 8192
#define OPENBLAS_PREFIX "OpenBLAS "

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

void fdl_num_blas_identity_get(fdl_num_blas_identity *id) {
  memset(id, 0, sizeof *id);
  id->library = "openblas";
  id->configuration = openblas_get_config();
  id->core = openblas_get_corename();
  snprintf(id->version, sizeof id->version, "unknown");
  const char *cfg = id->configuration;
  if (cfg && !strncmp(cfg, OPENBLAS_PREFIX, sizeof OPENBLAS_PREFIX - 1)) {
    const char *v = cfg + sizeof OPENBLAS_PREFIX - 1;
    snprintf(id->version, sizeof id->version, "%.*s", (int)strcspn(v, " "), v);
  }
  cpu_model(id->cpu_model, sizeof id->cpu_model);
}
