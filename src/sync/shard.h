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

#include "core/slab.h"

/* bounds (R + 1) of the R shards of L's slab (R >= 1), non-decreasing, row-aligned (see above). */
void shard_bounds(const slab_layout_t *L, int R, size_t *bounds);

/* The floats of each rank's shard within [off, off + n): part_off[r], part_cnt[r] relative to off
 * (consecutive, summing to n; empty where the shard misses the range). */
void shard_parts(const size_t *bounds, int R, size_t off, size_t n, size_t *part_off, size_t *part_cnt);

/* Rows [*row_lo, *row_hi) of tensor t (its first dimension) that lie in [lo, hi): the shard's piece of
 * it (empty: row_lo == row_hi). The bounds must be row-aligned in t (shard_bounds'). */
void shard_rows(const slab_tensor_t *t, size_t lo, size_t hi, size_t *row_lo, size_t *row_hi);

#endif
