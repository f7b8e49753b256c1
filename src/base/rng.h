/* rng.h - the one pseudo-random generator of the library (internal).
 *
 * xoshiro256** seeded through splitmix64: small, fast, and the same bits on every platform, so a
 * recorded seed reproduces a bootstrap or a synthetic dataset exactly. */
#ifndef FIDELIS_BASE_RNG_H
#define FIDELIS_BASE_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t s[4];
} fdl_rng;

/* Seeds the four state words from splitmix64 started at seed. */
void fdl_rng_seed(fdl_rng *r, uint64_t seed);
uint64_t fdl_rng_next(fdl_rng *r);
/* Uniform in [0, n) without modulo bias (Lemire's multiply-and-reject), n >= 1. */
uint64_t fdl_rng_below(fdl_rng *r, uint64_t n);
/* Uniform in [0, 1) with 53 random bits. */
double fdl_rng_unit(fdl_rng *r);

#endif
