/* An evaluation's walk over a split: part k of positions [0, n) over `parts` (the even share rule,
 * core/share.h), in consecutive chunks of at most `window` positions, so every layout evaluates
 * its share of a split the same way. */
#ifndef SURGE_DATA_WALK_H
#define SURGE_DATA_WALK_H

#include <stdint.h>

#include "data/dataset.h"

/* One chunk: positions ids[0..B) of split (global positions), chunk number c of the walk; adds its
 * loss sum and correct targets into sums. */
typedef void (*data_chunk_fn)(void *ctx, const dataset_t *ds, data_split_t split, const uint64_t *ids, int B,
                              int c, double sums[2]);

/* Walk part k of [0, n) of split over `parts` in chunks of at most window (>= 1) positions; sums
 * start at 0. */
void data_walk(const dataset_t *ds, data_split_t split, uint64_t n, uint64_t k, uint64_t parts, int window,
               data_chunk_fn fn, void *ctx, double sums[2]);

#endif
