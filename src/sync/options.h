/* How data-parallel gradients are summed: the deck's [parallel] keys of the gradient
 * synchronisation (buckets, overlap, node-shared memory), declared here as this part's rows
 * (core/keys.h). */
#ifndef SURGE_SYNC_OPTIONS_H
#define SURGE_SYNC_OPTIONS_H

#include <stddef.h>

#include "core/keys.h"

typedef struct sync_opts {
  double bucket_mb; /* gradient allreduce bucket size, MiB */
  int overlap;      /* start gradient buckets during the backward pass */
  int node_shared;  /* dp on one node: sum and update through node-shared memory */
  int shard_optimizer; /* dp, burst, 3d: gradients reduce-scattered, each rank updating its shard (sync/shard.h) */
} sync_opts_t;

/* The rows of sync_opts_t. */
extern const cfg_part_t sync_options;

/* A parsed configuration's values. */
static inline const sync_opts_t *sync_opts(const struct config *cfg) {
  return (const sync_opts_t *)cfg_part(cfg, &sync_options);
}

/* The bucket size in bytes (at least one float). */
static inline size_t sync_bucket_bytes(const sync_opts_t *o) {
  size_t b = (size_t)(o->bucket_mb * 1048576.0);
  return b < sizeof(float) ? sizeof(float) : b;
}

#endif
