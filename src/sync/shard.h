/* The distributed optimizer's shards ([parallel] shard_optimizer; ZeRO stage 1 over the data-parallel
 * ranks): the parameter slab of n floats is cut into R consecutive shards, rank r owning
 * [bounds[r], bounds[r + 1]) (bounds[0] = 0, bounds[R] = n). Each rank receives the gradient sum of its
 * shard only (a reduce-scatter per bucket, reducer_scatter), updates its shard with moments held for
 * it alone, and the updated shards are all-gathered before the next forward pass reads them.
 *
 * A bound lies on a row boundary of the tensor it falls in (a multiple of the floats per index of
 * the tensor's first dimension from the tensor's start), the one nearest n r / R, so every rank's piece
 * of every tensor is a box of whole rows: the moments go into checkpoints as hyperslabs of the
 * global tensors (one box each, train/state.c), readable by any layout and rank count. The shards
 * are then as even as the rows allow: each within one row of n / R. */
#ifndef SURGE_SHARD_H
#define SURGE_SHARD_H

#include <stddef.h>

#include "comm/comm.h"
#include "core/slab.h"

/* bounds (R + 1) of the R shards of L's slab (R >= 1), non-decreasing, row-aligned (see above). */
void shard_bounds(const slab_layout_t *L, int R, size_t *bounds);

/* The floats of each rank's shard within [off, off + n): part_off[r], part_cnt[r] relative to off
 * (consecutive, summing to n; empty where the shard misses the range). */
void shard_parts(const size_t *bounds, int R, size_t off, size_t n, size_t *part_off, size_t *part_cnt);

/* Rows [*row_lo, *row_hi) of tensor t (its first dimension) that lie in [lo, hi): the shard's piece of
 * it (empty: row_lo == row_hi). The bounds must be row-aligned in t (shard_bounds'). */
void shard_rows(const slab_tensor_t *t, size_t lo, size_t hi, size_t *row_lo, size_t *row_hi);

/* A sharded optimizer over rank groups (gradsync_init builds it where gradsync_opts_t.shard asks):
 * the tensors summed over one group (data parallelism's ranks; a burst plan's rank set of a node; the
 * 3d layout's data-parallel group of a stage, and its fused embedding group for the word embedding
 * the first and the last stage share) are concatenated in slab order and cut into that group's R
 * shards by shard_bounds over the concatenation, rank k of the group owning shard k; a tensor marked
 * atomic is never cut (one row: the 3d layout's layer norms, which every tensor-parallel rank holds
 * at another offset of its slab, so that each of them holds the moments of a whole one or none).
 * A group of one rank owns all its tensors. This rank's shard is the union over the groups it is a
 * member of: sorted, disjoint ranges of the slab, each tensor's part of it whole rows of it (for
 * data parallelism, one group of every tensor: [bounds[r], bounds[r + 1]) as above). */
typedef struct shard_plan {
  const slab_layout_t *L; /* borrowed */
  int ngroups;
  int *ranks;       /* [ngroups] R of each group (0: this rank is not a member) */
  size_t **bounds;  /* [ngroups] R + 1 bounds over the group's concatenation; NULL where not a member */
  int *group;       /* [L->n] each tensor's group */
  size_t *voff;     /* [L->n] each tensor's offset in its group's concatenation */
  size_t *ranges;   /* (nranges, 2) this rank's shard: [ranges[2i], ranges[2i+1]) of the slab */
  int nranges;
  size_t floats;    /* in all of them */
} shard_plan_t;

/* The plan of L's tensors, tensor t summed over groups[group[t]] (every group[t] >= 0; a comm of size
 * 0 where this rank is not a member); atomic: NULL, or per tensor 1 where it must not be cut. */
void shard_plan_init(shard_plan_t *p, const slab_layout_t *L, const int *group, const comm_t *groups, int ngroups,
                     const unsigned char *atomic);
void shard_plan_free(shard_plan_t *p);
/* The parts of each rank of tensor t's group (a member's) within the floats [L->t[t].off, + n): its
 * tensors t.. of that group (a gradient bucket), as shard_parts gives them. */
void shard_plan_parts(const shard_plan_t *p, int t, size_t n, size_t *part_off, size_t *part_cnt);

#endif
