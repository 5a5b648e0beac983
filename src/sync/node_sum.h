/* Data parallelism on one node through node-shared memory: gradients summed and parameters updated
 * without messages, each rank doing 1/R of the work (the optimizer sharded as ZeRO stage 1 shards
 * it, on one node).
 *
 * The parameter slab lives once per node in shared memory (comm/node_shm.h); every rank's gradient
 * slab lives in shared memory too, where the others can read it. Rank r of R owns the slice
 * [lo_r, hi_r) of the slab (lo_r = 16 * floor(floor(n / 16) * r / R), hi_r = lo_{r+1}, hi_{R-1} = n:
 * whole 64-byte lines). A step:
 *   node_sum_reduce   after the backward pass: a barrier; rank r adds the other ranks' gradients of
 *                     its slice into its own (read from their slabs in place, in rank order after
 *                     its own) and takes its slice's sum of squares (unless the update takes it);
 *                     the step's scalars (loss, stop request, sum of squares) are summed over the
 *                     ranks in rank order, the same on all;
 *   (the caller)      clips and updates only its slice: params[lo, hi) from grads[lo, hi), with the
 *                     optimizer moments of that slice (each rank's moments are right only there);
 *   node_sum_updated  a barrier: every rank then reads the whole updated slab; a sum of squares
 *                     the update took rides on it, summed over the ranks like the scalars.
 * Each slice is summed once, by its owner, so the parameters are one set, not replicas that could
 * drift; the sum is the same as an allreduce's up to float rounding order. node_sum_gather makes a
 * rank-private slab whole (the optimizer moments, before a checkpoint).
 *
 * Per step and rank this moves (R-1)/R of a gradient slab (reads of the others' slices) and
 * updates 1/R of the parameters, where an allreduce moves 2(R-1)/R of it through MPI's buffers and
 * every rank updates all of them. */
#ifndef SURGE_NODE_SUM_H
#define SURGE_NODE_SUM_H

#include <stddef.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "comm/node_shm.h"

/* A step's scalars, summed over the ranks. */
enum { NODE_SUM_LOSS, NODE_SUM_STOP, NODE_SUM_SCALARS };
/* The scalars' segment holds two doubles more per rank: the sums of squares node_sum_updated and
 * node_sum_total sum. */
enum { NODE_SUM_UPDATE_SUMSQ = NODE_SUM_SCALARS, NODE_SUM_NORM, NODE_SUM_SLOTS };

typedef struct node_sum {
  comm_t *c;             /* borrowed: the node's ranks */
  const backend_t *be;   /* host memory */
  size_t n;              /* floats in the parameter slab */
  size_t lo, hi;         /* this rank's slice */
  const size_t *bounds;  /* NULL, or every rank's slice (c->size + 1 bounds: node_sum_set_slices) */
  node_shm_t params;     /* rank 0's segment: the slab (n floats) */
  node_shm_t grads;      /* every rank's gradient slab (grad_floats) */
  node_shm_t scalars;    /* every rank's NODE_SUM_SLOTS doubles */
} node_sum_t;

/* Whether a group can use it: 2+ ranks, all on one node, on a backend whose memory is the host's.
 * When only the backend's memory stands in the way, why says so (for the run's banner). */
int node_sum_possible(const comm_t *c, const backend_t *be, char *why, size_t why_len);
/* Collective over c (node_sum_possible): whether the shared slabs of node_sum_init(n, grad_floats)
 * fit in the free space of the file system that backs node-shared memory (Open MPI's
 * osc_sm_backing_directory, /dev/shm by default: a container's is often 64 MiB); when not, 0 and
 * why (for the run's banner). The same answer on every rank. */
int node_sum_fits(comm_t *c, size_t n, size_t grad_floats, char *why, size_t why_len);
/* Collective over c (node_sum_possible): a parameter slab of n floats and gradient slabs of
 * grad_floats >= n (a caller's spare floats after the slab), zeroed. */
void node_sum_init(node_sum_t *s, comm_t *c, const backend_t *be, size_t n, size_t grad_floats);
void node_sum_free(node_sum_t *s);
/* Before the first step: rank r's slice becomes [bounds[r], bounds[r + 1]) (borrowed; they tile the
 * slab, in rank order) instead of whole 64-byte lines: a sharded optimizer's shards (sync/shard.h),
 * so that its moments, held for the slice alone, go into checkpoints as whole rows. */
void node_sum_set_slices(node_sum_t *s, const size_t *bounds);
/* The node's parameter slab and this rank's gradient slab. */
float *node_sum_params(const node_sum_t *s);
float *node_sum_grads(const node_sum_t *s);
/* Collective, after the backward pass: this rank's slice of the gradient summed over the ranks (see
 * above); mine: this rank's scalars; sum: their sums over the ranks. */
void node_sum_reduce(node_sum_t *s, const double mine[NODE_SUM_SCALARS], double sum[NODE_SUM_SCALARS]);
/* Collective, between node_sum_reduce and the update: the sum over the ranks of part (each rank's
 * sum of squares of its summed slice, when the step clips before its update). */
double node_sum_total(node_sum_t *s, double part);
/* Collective, after every rank updated its slice of the parameters: the sum over the ranks of
 * their sumsq (a sum of squares of its slice the update took; 0 where none). */
double node_sum_updated(node_sum_t *s, double sumsq);
/* Collective: each rank's slice of a rank-private slab of n floats (host memory) to every rank. */
void node_sum_gather(node_sum_t *s, float *slab);

#endif
