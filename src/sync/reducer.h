/* Gradient reducers: how one bucket of the gradient slab is summed over a group of ranks. The
 * exact reducer is one non-blocking allreduce per bucket; the PowerSGD reducer (reducer_powersgd.c,
 * Optimus-CC's data-parallel compression) fills the same table, keeps per-matrix state (error
 * feedback, warm-start factors) and gives it to checkpoints through reducer_ops_t.state.
 *
 * Protocol per step: begin once, then start(b) once per bucket this rank takes part in (in the same
 * bucket order on every rank of its group), test(b) any number of times to progress it (test starts
 * no collective, so every rank starts them in one order), wait(b) in bucket order before the
 * bucket's gradients are read. After wait(b) the bucket holds the SUM over the group (callers
 * scale), exactly or as the compressor approximates it. */
#ifndef SURGE_REDUCER_H
#define SURGE_REDUCER_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "core/slab.h"
#include "core/state.h"

typedef struct reducer reducer_t;

typedef struct reducer_ops {
  const char *name;
  /* 1: a bucket's floats are summed exactly, whatever they are, so a few scalars may ride after the
   * slab in the first bucket (gradsync.h, side slots); 0: the reducer knows its tensors (compresses). */
  int sums_extra_floats;
  /* Before a step's first start. NULL: nothing to do. */
  void (*begin)(reducer_t *r);
  /* Begin reducing data (n floats, backend memory of the gradient slab) over c as bucket b. */
  void (*start)(reducer_t *r, int b, comm_t *c, float *data, size_t n);
  /* Progress bucket b; 1 when its result is in place. */
  int (*test)(reducer_t *r, int b);
  /* Complete bucket b. */
  void (*wait)(reducer_t *r, int b);
  /* Collective over the job: the reducer's state regions for a checkpoint, host views made current:
   * how many it filled into out (at most max). NULL: no state. */
  int (*state)(reducer_t *r, state_region_t *out, int max);
  /* After a checkpoint was read into the regions state gave: take the values. NULL: nothing. */
  void (*loaded)(reducer_t *r);
  void (*free)(reducer_t *r);
} reducer_ops_t;

struct reducer {
  const reducer_ops_t *ops;
  int nbuckets;
  double raw_bytes; /* this step: bytes the compressed matrices would have taken as exact sums */
  double seconds;   /* this step: time in the compressor's own arithmetic */
  void *impl;
};

/* A bucket as reducers see it: floats [off, off + n) of the gradient slab, holding its tensors
 * t_first .. t_first + t_count - 1 (consecutive in the slab). */
typedef struct reducer_bucket {
  size_t off, n;
  int t_first, t_count;
} reducer_bucket_t;

/* The PowerSGD reducer's settings (the exact one ignores them). */
typedef struct reducer_psgd_opts {
  int rank;          /* the rank R of each matrix's approximation; 0: compress none (every bucket exact) */
  double min_rate;   /* send a matrix exact unless it shrinks by at least this much (psgd_rank); <= 0: off */
  long warmup_steps; /* the first steps are exact */
  long run_steps;    /* [run] steps: the most steps a checkpoint's count may hold (one written by a run
                      * with more steps, and so a later warm-up's end, holds more than warmup_steps) */
  uint64_t seed;     /* initial Q of every matrix: the same on every rank of a group */
} reducer_psgd_opts_t;

/* What a reducer is made for. */
typedef struct reducer_setup {
  int nbuckets;
  const reducer_bucket_t *b; /* (nbuckets) in start order */
  const slab_layout_t *L;    /* the gradient slab's tensors (shapes) */
  const backend_t *be;       /* whose memory the slab is */
  comm_t *job;               /* every rank of the job (state regions are collective over it) */
  reducer_psgd_opts_t psgd;
} reducer_setup_t;

/* The exact sum: one comm_iallreduce_sum per bucket (traffic category dp). */
reducer_t *reducer_exact(int nbuckets);
/* The exact sum for a sharded optimizer (sync/shard.h): one in-place reduce-scatter per bucket over its
 * group, each rank receiving the sum of the floats of its shard within the bucket (plan's parts;
 * traffic dp_scatter); the bucket's other floats are left undefined. */
typedef struct shard_plan shard_plan_t;
reducer_t *reducer_scatter(const reducer_setup_t *s, const shard_plan_t *plan);
/* Optimus-CC's PowerSGD of data-parallel gradients (reducer_powersgd.c): collective over s->job. */
reducer_t *reducer_powersgd(const reducer_setup_t *s);
/* Buckets shared by two reducers (reducer_split.c): bucket b goes to first where which[b] is 0, to second
 * where it is 1, each reducer made for its buckets alone in their start order; the state is both
 * reducers' regions. Takes both. sums_extra_floats 0. */
reducer_t *reducer_split(int nbuckets, const int *which, reducer_t *first, reducer_t *second);
void reducer_free(reducer_t *r);

#endif
