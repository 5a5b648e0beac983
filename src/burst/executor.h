/* The burst-parallel executor (DeepPool): runs a training step under a burst plan (burst/plan.h),
 * node i on the world ranks [first_i, first_i + n_i), rank first_i + k on the positions
 * share(B, k, n_i) = [floor(B k / n_i), floor(B (k+1) / n_i)) of the global batch.
 *
 * Every rank's model buffers hold the WHOLE global batch (B_cap = B) and keep each sample at its
 * global position, so moving samples between rank sets is copying position ranges:
 *   data      each rank fetches the positions its consumers of the input node need (and, on the
 *             output node's ranks, the targets of its share) by global sample id;
 *   forward   before node i runs, every position of its share that the rank does not own in an
 *             input's set is received from the rank that does (TRAFFIC_ACT);
 *   backward  node i's ranks accumulate input gradients on their share; the positions they do not
 *             own in the input's set are sent to the owner, who adds them (TRAFFIC_ACT_GRAD), and
 *             cleared, so a fork's consumers each add their own part once;
 *   sync      each node's parameter gradients are summed over its set (one communicator per
 *             distinct set, TRAFFIC_DP).
 * A rank outside a node's set holds stale parameters (and optimizer moments) for it, never used;
 * burst_exec_gather brings the true ones to every rank before anything reads the whole slab
 * (evaluation, model file, checkpoint). */
#ifndef SURGE_BURST_EXECUTOR_H
#define SURGE_BURST_EXECUTOR_H

#include "burst/plan.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "nn/model.h"

typedef struct burst_exec {
  const graph_t *g;
  model_t *m;           /* B_cap >= batch */
  comm_t *world;
  int batch;            /* B */
  int *n, *first;       /* [nodes] the plan's rank sets */
  int nsets;
  int *set_of;          /* [nodes] index of the node's set in sets */
  comm_t *sets;         /* [nsets] communicator of each distinct set (size 0 where not a member) */
  int data_lo, data_hi; /* positions whose samples this rank fetches: [data_lo, data_hi) */
  float *x, *y;         /* host batch of those positions */
  float *recv;          /* backend scratch for received activation gradients: the largest share */
} burst_exec_t;

/* Phase times of a step on this rank (seconds). */
typedef struct burst_times {
  double data, forward, backward, comm, wait;
} burst_times_t;

/* Collective over world: bind a plan (already checked against g, world->size and B) to a model
 * whose buffers hold B samples. A tied output layer on another rank set than its embedding is an
 * input error. */
void burst_exec_init(burst_exec_t *ex, const burst_plan_t *plan, const graph_t *g, model_t *m, comm_t *world,
                     int B, size_t sample_floats, size_t target_floats);
void burst_exec_free(burst_exec_t *ex);

/* Collective: one step's gradients for the global batch ids[0..B) of ds's training split. Returns
 * this rank's part of the loss sum (the output node's share; sum over world for the total), with
 * the gradients scaled by grad_scale (1 / global targets). On return every rank holds, for every
 * node of its sets, the node's gradient summed over the batch; other nodes' gradients are 0. */
double burst_exec_step(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale,
                       burst_times_t *times);

/* Collective: the global gradient norm (each node counted once, from its set's first rank). */
double burst_exec_grad_norm(const burst_exec_t *ex);

/* Collective over world: every node's tensors of each non-NULL slab (params, optimizer moments),
 * broadcast from the first rank of the node's set, so every rank holds the true values. */
void burst_exec_gather(const burst_exec_t *ex, float *slabs[], int nslabs);

#endif
