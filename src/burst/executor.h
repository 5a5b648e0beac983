/* The burst-parallel executor (DeepPool), the engine of every per-node layout: node i runs on the
 * world ranks [first_i, first_i + n_i), rank first_i + k on the positions
 * share(B, k, n_i) = [floor(B k / n_i), floor(B (k+1) / n_i)) of the global batch. Data parallelism
 * is the plan in which every node has all ranks.
 *
 * Micro-batches ([train] micro_batches = M, doc/burst.md): a step runs the global batch as M
 * micro-batches, micro-batch u being positions share(B, u, M), each split over every node's ranks
 * by the same rule: rank first_i + k holds positions mb_lo + share(mb_n, k, n_i) of micro-batch u
 * (none where the micro-batch is smaller than n_i). Every node thus runs micro-batch u on the same
 * positions, so the routes below stay within one micro-batch. Parameter gradients are zeroed before
 * the first and summed over all M; the gradient sync runs in the last one's backward pass (its
 * overlap kept). M = 1: the whole batch at once.
 *
 * Memory: every buffer holds at most `window` samples, the largest share this rank has at any node
 * in any micro-batch (B/R for data parallelism in one micro-batch, about B/(M R) in M). Node i's
 * output rows are this rank's positions [lo_i, lo_i + cnt_i) of the micro-batch being run. Where
 * a node's share on this rank differs from its producer's (in a micro-batch of either size), the
 * node reads that input from a staging buffer of its own (model_t.in) and adds its gradient there
 * (model_t.din):
 *   data      each rank fetches by global sample id the positions of the input its nodes read and
 *             the targets of its share of the output node;
 *   forward   before node j runs, its staged inputs are filled: the positions this rank computed
 *             itself are copied, the others received from the producer's ranks (TRAFFIC_ACT);
 *   backward  after node j's backward, a staged input's gradient goes back: the part this rank
 *             computed is added locally, the rest sent to the ranks that own it, who add it
 *             (TRAFFIC_ACT_GRAD);
 *   sync      each node's parameter gradients are summed over its set, bucket by bucket, started
 *             during the backward pass (sync/gradsync.h, one communicator per distinct set);
 *   sums      a batch norm's statistics are summed over its set inside its forward and backward
 *             (layer_group_t: a non-blocking allreduce over the set's communicator, TRAFFIC_BN); the
 *             nodes run as pass_order.h's list schedule, which lets the nodes that do not depend on
 *             a sum run while it is in flight ([parallel] bn_overlap), in a sequence that is the
 *             same on every rank, so every communicator's collectives start in one order on all of
 *             its ranks.
 * A rank outside a node's set holds stale parameters (and optimizer moments) for it, never used;
 * burst_exec_gather brings the true ones to every rank before anything reads the whole slab
 * (evaluation, model file, checkpoint). */
#ifndef SURGE_BURST_EXECUTOR_H
#define SURGE_BURST_EXECUTOR_H

#include "burst/pass_order.h"
#include "burst/plan.h"
#include "comm/comm.h"
#include "data/dataset.h"
#include "nn/model.h"
#include "sync/gradsync.h"
#include "sync/node_sum.h"

typedef struct burst_exec {
  const graph_t *g;
  model_t m;            /* this rank's buffers: B_cap = window */
  comm_t *world;
  int batch;            /* B */
  int micro;            /* M: micro-batches per step, 1 <= M <= B */
  int mb_lo, mb_n;      /* the micro-batch being run: positions [mb_lo, mb_lo + mb_n) of the batch */
  int window;           /* most samples this rank holds at any node in any micro-batch */
  int *n, *first;       /* [nodes] the plan's rank sets */
  int *lo, *cnt;        /* [nodes] this rank's share of the micro-batch being run: positions [lo, lo +
                         * cnt) of the batch (cnt 0: none); node 0's is its first consumer's */
  int *cap;             /* [nodes] the most rows this rank holds at the node in any micro-batch */
  int nsets;
  int *set_of;          /* [nodes] index of the node's set in sets */
  comm_t *sets;         /* [nsets] communicator of each distinct set (size 0 where not a member) */
  float *(*stage)[LAYER_MAX_IN];  /* [nodes] staged input slots (window rows), NULL where the slot reads
                                   * its producer's rows directly */
  float *(*dstage)[LAYER_MAX_IN]; /* [nodes] their gradients, NULL where none is needed */
  int all_ranks_everywhere; /* every node on every rank: replicas never go stale */
  int summed;           /* every node on every rank and (2+ ranks) the side slots ride, or shared: a
                         * step's loss and stop request come back summed over the job, and every rank
                         * holds the whole gradient (shared: its slice of it) (see burst_metrics_t) */
  float *x, *y;         /* host batch: (window, sample), (window, targets) */
  float *recv;          /* backend scratch for received activation gradients: the largest share */
  gradsync_t sync;
  node_sum_t *shared;   /* data parallelism on one node through node-shared memory (sync/node_sum.h):
                         * the parameter slab is the node's, gradients are summed there, not by
                         * gradsync (which then has no bucket), and each rank updates only its
                         * slice (shared->lo, hi); NULL otherwise */
  char shared_refused[320]; /* why node-shared memory did not run where it was asked for on one node (a device
                             * backend; the slabs did not fit, node_sum_fits), or "" */
  layer_group_t *groups; /* [nodes] each node's set as its layer sees it (model_t.group: batch norm's
                          * sums over a node's ranks, TRAFFIC_BN), where it sums; NULL when no node does */
  const layer_group_t **group_of; /* [nodes] the model's model_t.group: &groups[i] where node i sums
                                   * here (a member of a set of 2+ ranks), else NULL */
  struct burst_sum *sums; /* [nodes] each such node's sum in flight (executor.c) */
  int *flying, nflying;  /* the nodes whose sums are in flight on this rank now */
  int step_sums, step_overlapped; /* the step's sums so far, and those another node's work overlapped */
  float *group_buf;      /* the groups' buffers, each node's its set's size times its group_floats */
  int overlap_sums;      /* [parallel] bn_overlap: a node's sum in flight while later nodes run */
  pass_order_t order;    /* the passes' node phases (pass_order.h) */
  int local_bufs;        /* some node keeps buffers of its own samples (local batch norm): replicas of
                          * the buffers differ until burst_exec_gather_bufs */
  void (*before_forward)(void *arg, int node); /* NULL, or called before each node's forward pass in a
                                                * step (a sharded optimizer's all-gather waits there,
                                                * sync/shard_gather.h); its time counts as comm */
  void *before_arg;
} burst_exec_t;

/* Phase times of a step on this rank (seconds), and when the backward pass ended (surge_now()). */
typedef struct burst_times {
  double data, forward, backward, comm, wait;
  double backward_done;
} burst_times_t;

/* A step's scalars. In: stop, this rank's stop request (0 or 1). Out: loss, this rank's part of the
 * loss sum (the output node's share); with summed, loss and stop are the job's sums: they rode on
 * the gradient reduction (the loss as a float pair, to about float precision of the sum). */
typedef struct burst_metrics {
  double loss, stop;
  long step;        /* in: the step's number (dropout's masks) */
  double *loss_acc; /* in: one double of backend memory (zero) the loss sum may go to, or NULL: it goes
                     * there unless the node-shared sum needs it on the host, and stays there
                     * (loss_on_device, loss 0) where no side slots bring the job's sum back */
  int loss_on_device;
  int summed;
  int sums, sums_overlapped; /* this rank's sums over a node's ranks (batch norm's) in the step, and of
                              * them those in flight while another node's work ran here */
} burst_metrics_t;

/* Collective over world: bind a plan (already checked against g, world->size and B) run in M
 * micro-batches (1 <= M <= B) to buffers of its window on backend be. A tied output layer on
 * another rank set than its embedding is an input error. Parameters are not initialised
 * (model_init_params). node_shared: where the plan is data parallelism and
 * node_sum_possible, sum and update through node-shared memory (burst_exec_t.shared)
 * instead of gradsync's reducer. overlap_sums: a node's sum over its ranks (batch norm's) stays in
 * flight while the nodes that do not depend on it run (pass_order.h); 0: each completes at once. */
void burst_exec_init(burst_exec_t *ex, const burst_plan_t *plan, const graph_t *g, const backend_t *be,
                     comm_t *world, int B, int M, const gradsync_opts_t *sync, int node_shared, int overlap_sums);
void burst_exec_free(burst_exec_t *ex);

/* Collective: one step's gradients for the global batch ids[0..B) of ds's training split, in its
 * micro-batches, with the gradients scaled by grad_scale (1 / global targets); the loss and stop in
 * mx (see burst_metrics_t; the loss summed over the micro-batches). On return every rank holds, for
 * every node of its sets, the node's gradient summed over the batch; other nodes' gradients are 0.
 * With shared, only this rank's slice of the gradient slab is the sum (the rest is this rank's own
 * part). */
void burst_exec_step(burst_exec_t *ex, const dataset_t *ds, const uint64_t *ids, float grad_scale,
                     burst_metrics_t *mx, burst_times_t *times);

/* Whether this rank holds rows of no node: the plan leaves it out of every step's work. */
int burst_exec_idle(const burst_exec_t *ex);

/* Loss sum and correct targets of this rank's contiguous share of positions [0, n) of split, on
 * the parameters it holds (burst_exec_gather them first), in chunks of the window. */
void burst_exec_eval(burst_exec_t *ex, const dataset_t *ds, data_split_t split, uint64_t n, double sums[2]);

/* Collective over world: every node's buffers (running statistics) from the first rank of its set to
 * every rank, where replicas may differ (partial rank sets, local batch norm: then the first rank's
 * own, as DDP's broadcast_buffers); nothing otherwise. */
void burst_exec_gather_bufs(const burst_exec_t *ex);
/* Collective over world: every node's tensors of each non-NULL slab (params, optimizer moments),
 * broadcast from the first rank of the node's set, so every rank holds the true values. */
void burst_exec_gather(const burst_exec_t *ex, float *slabs[], int nslabs);

#endif
