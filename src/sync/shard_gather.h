/* The sharded optimizer's all-gather of the updated parameters (sync/shard.h), overlapped with the
 * next forward pass: after the update each gradient bucket's range of the parameter slab starts one
 * non-blocking in-place all-gather of the shards within it (traffic dp_gather), the buckets of the
 * first layers first; before a node's forward pass the buckets holding tensors it reads are waited
 * for, and the others progressed. Whatever reads the whole slab otherwise (evaluation, checkpoints,
 * the model file) waits for all first (shard_gather_finish). */
#ifndef SURGE_SHARD_GATHER_H
#define SURGE_SHARD_GATHER_H

#include <stddef.h>

#include "comm/comm.h"
#include "core/slab.h"
#include "sync/gradsync.h"

typedef struct shard_gather {
  float *params;        /* borrowed: the parameter slab */
  int nbuckets;
  comm_t **c;           /* [nbuckets] borrowed: each bucket's group, NULL where this rank takes no part */
  size_t *off;          /* [nbuckets] each bucket's first float in the slab */
  int *first_node;      /* [nbuckets] the first node (in forward order) that reads one of its tensors */
  int most;             /* the largest group's ranks: the row stride of part_off, part_cnt */
  size_t *part_off, *part_cnt; /* (nbuckets, most) the shards within each bucket, relative to it */
  comm_op_t *ops;       /* [nbuckets] */
  int pending;          /* started and not all waited for */
} shard_gather_t;

/* The gradient sync's buckets (s, planned over L with its shard plan) as gather ranges of params, each
 * over its bucket's group. */
void shard_gather_init(shard_gather_t *g, const gradsync_t *s, const slab_layout_t *L, float *params);
void shard_gather_free(shard_gather_t *g);
/* Collective: start every bucket's all-gather (after each rank updated its shard). */
void shard_gather_start(shard_gather_t *g);
/* Before node's forward pass: wait for the buckets it reads, progress the others. */
void shard_gather_before(shard_gather_t *g, int node);
/* shard_gather_before as an executor's before_forward hook (arg: the shard_gather_t). */
void shard_gather_hook(void *g, int node);
/* Wait for every bucket still in flight (nothing when none is). */
void shard_gather_finish(shard_gather_t *g);

#endif
