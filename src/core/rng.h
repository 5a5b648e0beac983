/* Deterministic random numbers (xoshiro256** seeded by splitmix64): the same seed gives the same
 * stream on every machine and rank, so runs repeat bit for bit and state fits in a checkpoint. */
#ifndef SURGE_RNG_H
#define SURGE_RNG_H

#include <stdint.h>
#include <stddef.h>

typedef struct rng {
  uint64_t s[4];
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
/* A stream derived from (seed, a, b): independent streams for e.g. (layer, epoch). */
void rng_seed_stream(rng_t *r, uint64_t seed, uint64_t a, uint64_t b);
uint64_t rng_u64(rng_t *r);
/* u[0..n) = the next n values of rng_u64, drawn in a loop the compiler can inline. */
void rng_fill_u64(rng_t *r, uint64_t *u, size_t n);
/* Uniform integer in [0, n), unbiased. n > 0. */
uint64_t rng_below(rng_t *r, uint64_t n);
/* Uniform float in [0, 1) with 24 random bits. */
float rng_uniform(rng_t *r);
/* Standard normal (Box-Muller, one value per call, double precision inside). */
float rng_normal(rng_t *r);
/* Fill x[0..n) uniform in [lo, hi) or normal N(mean, std). */
void rng_fill_uniform(rng_t *r, float *x, size_t n, float lo, float hi);
void rng_fill_normal(rng_t *r, float *x, size_t n, float mean, float std);
/* perm[0..n) = a uniformly random permutation of 0..n-1 (Fisher-Yates). */
void rng_permutation(rng_t *r, uint32_t *perm, uint32_t n);

#endif
