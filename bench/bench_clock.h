/* bench_clock.h - the clocks and the memory figure every benchmark prints, in one place. */
#ifndef FDL_BENCH_CLOCK_H
#define FDL_BENCH_CLOCK_H

#include <sys/resource.h>
#include <time.h>

/* Wall seconds (monotonic). */
static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process: on a shared machine this counts the work done, not the
 * time other processes held the cores. */
static inline double bench_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Peak resident set of the process in MiB, or -1 when getrusage fails. */
static inline double bench_peak_rss_mib(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return -1.0;
  return (double)ru.ru_maxrss / 1024.0;
}

#endif
