/* rng.c - xoshiro256** seeded by splitmix64 (see rng.h). */
#include "base/rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

void fdl_rng_seed(fdl_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

uint64_t fdl_rng_next(fdl_rng *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

uint64_t fdl_rng_below(fdl_rng *r, uint64_t n) {
  __extension__ typedef unsigned __int128 u128;
  u128 m = (u128)fdl_rng_next(r) * n;
  uint64_t lo = (uint64_t)m;
  if (lo < n) {
    uint64_t thresh = (0 - n) % n;
    while (lo < thresh) {
      m = (u128)fdl_rng_next(r) * n;
      lo = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

double fdl_rng_unit(fdl_rng *r) {
  return (double)(fdl_rng_next(r) >> 11) * 0x1p-53;
}
