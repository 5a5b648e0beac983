/* Gradient reducers: how one bucket of the gradient slab is summed over a group of ranks. The
 * exact reducer is one non-blocking allreduce per bucket; a compressing reducer (PowerSGD, the
 * compression issue) fills the same table and keeps per-bucket state (error feedback) that
 * checkpoints save through reducer_ops_t.state.
 *
 * Protocol per step: start(b) once per bucket this rank takes part in (in the same bucket order on
 * every rank of its group), test(b) any number of times to progress it, wait(b) before the bucket's
 * gradients are read. After wait(b) the bucket holds the SUM over the group (callers scale). */
#ifndef SURGE_REDUCER_H
#define SURGE_REDUCER_H

#include <stddef.h>

#include "comm/comm.h"
#include "core/state.h"

typedef struct reducer reducer_t;

typedef struct reducer_ops {
  const char *name;
  /* Begin reducing data (n floats, backend memory of the gradient slab) over c as bucket b. */
  void (*start)(reducer_t *r, int b, comm_t *c, float *data, size_t n);
  /* Progress bucket b; 1 when its result is in place. */
  int (*test)(reducer_t *r, int b);
  /* Complete bucket b. */
  void (*wait)(reducer_t *r, int b);
  /* The reducer's state regions for a checkpoint (host copies it keeps current): how many it
   * filled into out (at most max). NULL: no state. */
  int (*state)(reducer_t *r, state_region_t *out, int max);
  void (*free)(reducer_t *r);
} reducer_ops_t;

struct reducer {
  const reducer_ops_t *ops;
  int nbuckets;
  void *impl;
};

/* The exact sum: one comm_iallreduce_sum per bucket (traffic category dp). */
reducer_t *reducer_exact(int nbuckets);
void reducer_free(reducer_t *r);

#endif
