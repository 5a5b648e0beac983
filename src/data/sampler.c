/* The training stream: position k of the endless stream is sample perm_e[k % n] with epoch
 * e = k / n, and perm_e the permutation drawn from stream (seed, e). Only the current epoch's
 * permutation is kept; a batch that crosses an epoch boundary redraws it once. */
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
    if (epoch != s->epoch) draw_epoch(s, epoch);
    ids[i] = s->perm[k % s->n];
  }
}
