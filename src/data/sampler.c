/* The training stream: position k of the endless stream is sample perm_e[k % n] with epoch
 * e = k / n, and perm_e the permutation drawn from stream (seed, e). Only the current epoch's
 * permutation is kept; a batch that crosses an epoch boundary redraws it once. An implicit
 * sampler computes perm_e(i) instead: a 4-round Feistel network keyed by (seed, e) permutes
 * [0, 2^bits) (bits even, 2^bits >= n), and values >= n are fed through again (cycle walking: a
 * permutation of [0, n), fewer than 4 passes on average). */
#include <inttypes.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/rng.h"
#include "data/dataset.h"

#define SAMPLER_STREAM 0x5a

static void draw_epoch(sampler_t *s, uint64_t epoch) {
  rng_t r;
  rng_seed_stream(&r, s->seed, epoch, SAMPLER_STREAM);
  rng_permutation(&r, s->perm, (uint32_t)s->n);
  s->epoch = epoch;
}

void sampler_init(sampler_t *s, uint64_t seed, uint64_t n) {
  if (n == 0 || n > UINT32_MAX)
    surge_runtime_error("sampler_init: %" PRIu64 " training samples (expected 1 .. %" PRIu32 ")", n, UINT32_MAX);
  s->seed = seed;
  s->n = n;
  s->perm = xmalloc(surge_mul_size((size_t)n, sizeof *s->perm, "sampler permutation"));
  draw_epoch(s, 0);
}

void sampler_init_implicit(sampler_t *s, uint64_t seed, uint64_t n) {
  if (n == 0 || n > (UINT64_C(1) << 62))
    surge_runtime_error("sampler_init_implicit: %" PRIu64 " training samples (expected 1 .. 2^62)", n);
  *s = (sampler_t){.seed = seed, .n = n, .bits = 2};
  while ((UINT64_C(1) << s->bits) < n) s->bits += 2;
}

void sampler_init_for(sampler_t *s, const dataset_t *ds, uint64_t seed) {
  if (dataset_order_implicit(ds)) sampler_init_implicit(s, seed, dataset_size(ds, SPLIT_TRAIN));
  else sampler_init(s, seed, dataset_size(ds, SPLIT_TRAIN));
}

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t feistel(const sampler_t *s, uint64_t epoch, uint64_t x) {
  int h = s->bits / 2;
  uint64_t mask = (UINT64_C(1) << h) - 1, l = x >> h, r = x & mask;
  uint64_t key = mix(s->seed ^ mix(epoch + SAMPLER_STREAM));
  for (uint64_t round = 0; round < 4; round++) {
    uint64_t f = mix(key ^ mix(r + (round << 56))) & mask;
    uint64_t t = l ^ f;
    l = r;
    r = t;
  }
  return l << h | r;
}

static uint64_t implicit_at(const sampler_t *s, uint64_t epoch, uint64_t i) {
  uint64_t x = i;
  do x = feistel(s, epoch, x); while (x >= s->n);
  return x;
}

void sampler_free(sampler_t *s) {
  free(s->perm);
  s->perm = NULL;
}

void sampler_batch(sampler_t *s, long step, long global_batch, uint64_t *ids) {
  if (step < 0 || global_batch < 0)
    surge_runtime_error("sampler_batch: step %ld and batch %ld must be >= 0", step, global_batch);
  uint64_t first = (uint64_t)step * (uint64_t)global_batch;
  if (global_batch && first / (uint64_t)global_batch != (uint64_t)step)
    surge_runtime_error("sampler_batch: stream position of step %ld x batch %ld overflows", step, global_batch);
  for (long i = 0; i < global_batch; i++) {
    uint64_t k = first + (uint64_t)i;
    uint64_t epoch = k / s->n;
    if (!s->perm) {
      ids[i] = implicit_at(s, epoch, k % s->n);
      continue;
    }
    if (epoch != s->epoch) draw_epoch(s, epoch);
    ids[i] = s->perm[k % s->n];
  }
}
