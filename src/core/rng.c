#include "core/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void rng_seed(rng_t *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

void rng_seed_stream(rng_t *r, uint64_t seed, uint64_t a, uint64_t b) {
  uint64_t x = seed;
  uint64_t h = splitmix64(&x);
  x = h ^ (a * 0xd1342543de82ef95ULL);
  h = splitmix64(&x);
  x = h ^ (b * 0x2545f4914f6cdd1dULL + 0x632be59bd9b4e019ULL);
  rng_seed(r, splitmix64(&x));
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_u64(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t rng_below(rng_t *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* reject the biased tail */
  uint64_t v;
  do v = rng_u64(r);
  while (v >= limit);
  return v % n;
}

void rng_fill_u64(rng_t *r, uint64_t *u, size_t n) {
  for (size_t i = 0; i < n; i++) u[i] = rng_u64(r);
}

float rng_uniform(rng_t *r) { return (float)(rng_u64(r) >> 40) * (1.0f / 16777216.0f); }

float rng_normal(rng_t *r) {
  double u1 = ((double)(rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0); /* (0, 1] */
  double u2 = (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void rng_fill_uniform(rng_t *r, float *x, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * rng_uniform(r);
}

void rng_fill_normal(rng_t *r, float *x, size_t n, float mean, float std) {
  for (size_t i = 0; i < n; i++) x[i] = mean + std * rng_normal(r);
}

void rng_permutation(rng_t *r, uint32_t *perm, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) perm[i] = i;
  for (uint32_t i = n; i > 1; i--) {
    uint32_t j = (uint32_t)rng_below(r, i);
    uint32_t t = perm[i - 1];
    perm[i - 1] = perm[j];
    perm[j] = t;
  }
}
