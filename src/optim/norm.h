/* The gradient norm as part of the optimizer's step. A layout states once, at build, which float
 * ranges of its local gradient slab this rank counts (every global value counted by exactly one
 * rank) and how the ranks' parts add up (norm_plan_t); this module takes this rank's part, either
 * from the update's own pass over the gradients (where the step does not clip: each block's squares
 * taken just before its update reads it again from L1, so a step reads the gradients once) or
 * apart before the update (to clip first). The trainer adds the parts up as the plan says and
 * reads one number. */
#ifndef SURGE_OPTIM_NORM_H
#define SURGE_OPTIM_NORM_H

#include <stddef.h>

#include "optim/optim.h"

/* How the ranks' parts of the squared norm add up. */
typedef enum norm_sum {
  NORM_SUM_JOB = 0, /* over the job, in the trainer's reduction of the step's metrics */
  NORM_SUM_NONE,    /* not at all: every rank counted every tensor, its part is the whole norm */
  NORM_SUM_LAYOUT,  /* by the layout's own collectives (layout_ops_t.updated, .norm_sum) */
} norm_sum_t;

typedef struct norm_plan {
  const size_t *ranges; /* sorted disjoint [ranges[2i], ranges[2i+1]) of the local slab (the layout's
                         * memory); NULL: all the floats this rank updates */
  int nranges;
  norm_sum_t sum;
} norm_plan_t;

/* Append the range [off, off + n) to r (room for it), one more in *count. For a layout building its
 * plan, before norm_ranges_merge. */
static inline void norm_ranges_push(size_t *r, int *count, size_t off, size_t n) {
  r[2 * *count] = off;
  r[2 * *count + 1] = off + n;
  (*count)++;
}

/* Sort n ranges [r[2i], r[2i+1]) (empty ones dropped) and merge the ones that touch or overlap;
 * returns how many are left. For a layout building its plan. */
int norm_ranges_merge(size_t *r, int n);

/* This rank's part of the squared norm of grads (backend memory) within [lo, hi), apart, added to
 * *acc (one double of backend memory: on a device it stays there until the host reads it). */
void norm_part(const backend_t *be, const float *grads, size_t lo, size_t hi, const norm_plan_t *p, double *acc);

/* The optimizer's update of the floats [lo, hi) at rate lr (optim_step_part), adding this rank's
 * part of the squared norm from the same pass to *acc (norm_part's value, on a host backend its
 * blocks added in another order). */
void norm_update(optim_t *o, float *params, const float *grads, float lr, size_t lo, size_t hi, const norm_plan_t *p,
                 double *acc);

#endif
