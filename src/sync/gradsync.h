/* Gradient synchronisation in buckets: the gradient slab is cut into buckets of whole tensors that
 * are summed over the same rank group, at most bucket_bytes each (a larger tensor is a bucket of its
 * own), in reverse slab order, so the buckets of the last layers come first. With overlap, a bucket
 * starts (non-blocking, through the reducer) as soon as the backward pass has made its last
 * gradient final, and the remaining backward work progresses it; without overlap, every bucket
 * starts after a barrier at the end of the backward pass. Either way gradsync_finish returns with
 * every bucket summed over its group, and the sums are bitwise the same on every rank of a group.
 *
 * The bucket list is the same on every rank (it follows from the slab layout and the group of each
 * tensor); a rank takes part in the buckets of the groups it belongs to that have 2+ ranks.
 *
 * Side slots: a caller may ask for `side` floats right after the slab (its allocation must have
 * them) to ride on the first bucket, which ends at the slab's end, so that a step's few scalars
 * (the loss, a stop request) are summed without a collective of their own. They ride only where
 * that is exact and every rank gets them: the first bucket's group is the whole world and the
 * reducer sums extra floats exactly (reducer_ops_t.sums_extra_floats; a compressing one would not); gradsync_t.side says
 * whether they did (the caller writes them before the first bucket starts, reads them after
 * gradsync_finish). */
#ifndef SURGE_GRADSYNC_H
#define SURGE_GRADSYNC_H

#include <stddef.h>

#include "comm/comm.h"
#include "core/slab.h"
#include "sync/reducer.h"
#include "sync/shard.h"

typedef struct grad_bucket {
  size_t off, n;  /* floats [off, off + n) of the gradient slab */
  int t_first, t_count; /* its tensors (consecutive in the slab) */
  int group;      /* index of its rank group */
  int ready_node; /* all its gradients are final after this node's backward */
  int local;      /* this rank takes part */
  int started;
} grad_bucket_t;

typedef struct gradsync {
  int nbuckets;
  grad_bucket_t *b; /* [nbuckets] in start order */
  comm_t *groups;   /* [ngroups] borrowed: size 0 where this rank is not a member */
  comm_t *world;    /* borrowed: the barrier without overlap */
  float *grads;     /* borrowed: the gradient slab (backend memory) */
  reducer_t *reducer;
  int overlap;
  int side;         /* side slots riding on bucket 0 (counted in its n), 0 when none ride */
  int next;         /* the first bucket not yet started in this step */
  double backward_done, first_start; /* this step: surge_now() when gradsync_finish began, at the first start */
  double wait_s;    /* this step: barrier time without overlap */
  shard_plan_t *shard; /* a sharded optimizer's plan over the groups (opts.shard), or NULL */
} gradsync_t;

typedef struct gradsync_opts {
  size_t bucket_bytes; /* >= one float */
  int overlap;         /* 1: start buckets during the backward pass */
  const char *reducer; /* "exact" or "powersgd" */
  reducer_psgd_opts_t psgd; /* powersgd's settings */
  const backend_t *be; /* the gradient slab's backend (powersgd) */
  comm_t *job;         /* every rank of the job, for the reducer's state; NULL: world */
  int side;            /* side slots wanted after the slab (see above), 0: none */
  int shard;           /* 1: a sharded optimizer (sync/shard.h): gradsync_t.shard plans the shards of each
                        * group's tensors over its ranks, and the exact reducer reduce-scatters each
                        * bucket to them (reducer_scatter); a compressing reducer (powersgd, psgd.rank > 0)
                        * sums its buckets whole on every rank, each rank updating its shard of them,
                        * and the buckets of exact_groups are reduce-scattered (reducer_split); a tensor
                        * of no group is an input error */
  const unsigned char *shard_atomic; /* NULL, or per tensor 1 where no shard bound may cut it */
  const unsigned char *exact_groups; /* shard with a compressing reducer: NULL, or per group 1 where its buckets
                                      * are reduce-scattered exactly all the same */
} gradsync_opts_t;

/* The reducers gradsync_init accepts, for messages: "exact, powersgd". */
const char *gradsync_reducer_names(void);

/* tensor_group[t]: group index of slab tensor t (into groups), or -1 for a tensor summed by no
 * bucket (the caller reduces it otherwise: the 3d layout's fused embedding sync); tensor_ready[t]:
 * the node whose backward makes t's gradient final (the first node that uses it). An unknown
 * reducer is an input error. Collective over o->job (or world) when the reducer keeps state. */
void gradsync_init(gradsync_t *s, const slab_layout_t *L, const int *tensor_group, const int *tensor_ready,
                   comm_t *groups, comm_t *world, float *grads, const gradsync_opts_t *o);
void gradsync_free(gradsync_t *s);

/* Per step: before the backward pass (zeroes the reducer's raw_bytes and seconds). */
void gradsync_begin(gradsync_t *s);
/* After node's backward (called for every node in backward order on every rank, member or not):
 * with overlap, start the buckets that became final; progress the ones in flight. */
void gradsync_node_done(gradsync_t *s, int node);
/* After the backward pass: start what is left (after a barrier without overlap) and wait for all. */
void gradsync_finish(gradsync_t *s);

#endif
