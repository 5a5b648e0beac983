/* The order of a step's node phases in the burst executor (executor.c): where each node's sum over
 * its ranks (batch norm's statistics, layer_group_t) completes. A node runs in two phases, start (its
 * forward or backward up to that sum, or all of it) and finish (the rest, after the sum); a node
 * with a sum may have its finish deferred past other nodes' phases, so the sum is in flight while
 * they run (model_*_node_start / _finish).
 *
 * The order is a function of the graph, the fusion plan and the rank sets alone, so every rank runs
 * the same sequence whatever part of it is its own: the sums, the gradient buckets and the routes of
 * every communicator start in the same order on each of its ranks, as MPI requires of collectives
 * (and the routes' tags, one slot number per call, of point-to-point messages). A pass is a list
 * schedule: the next event is the finish of the oldest deferred node once another node has done work
 * since it started (one node's work to hide its sum behind; its input is still close in cache), else
 * the start of the ready node first in the pass's node order (forward 1..n-1, backward n-1..1), else
 * the oldest deferred finish. Ready:
 *   forward   every input finished (through a fused ReLU's shared buffer too);
 *   backward  the output's gradient complete (every reader of the node's buffer finished: its
 *             consumers, its fused ReLU), and every node after it in node order that adds into one of
 *             its inputs' gradients finished: the additions into a shared input gradient keep the
 *             blocking executor's order, so its sums, and every bit of the step, are the same.
 * Without deferral (overlap 0, or no node sums) that is the executor's old order exactly. */
#ifndef SURGE_PASS_ORDER_H
#define SURGE_PASS_ORDER_H

#include "nn/graph.h"

typedef struct pass_event {
  int node;
  int finish;    /* 0: the node's start, 1: its finish */
  int deferred;  /* the node's finish comes after other nodes' events (on both of its events) */
  int sync_node; /* backward: after this event, every node >= sync_node has final parameter gradients
                  * (gradsync_node_done(sync_node)); 0: no news */
} pass_event_t;

typedef struct pass_order {
  pass_event_t *fwd, *bwd; /* [2 (n - 1)] each: the forward pass's events, the backward pass's */
  int nfwd, nbwd;
} pass_order_t;

/* The passes' events for g, where fused is the model's fusion plan (model_t.fused: a node and its
 * ReLU share one buffer) and sums[i] says that node i starts a sum over its ranks in each pass (the
 * same on every rank). overlap 0: each finish right after its start (the blocking order). */
void pass_order_build(pass_order_t *o, const graph_t *g, const int *fused, const int *sums, int overlap);
/* The same for a DAG given by its nodes' inputs (node 0 the input, inputs earlier nodes): the burst
 * planner's graph (bgraph.h), whose cost model asks which nodes run while a sum is in flight. */
void pass_order_build_dag(pass_order_t *o, int nodes, const int *nin, const int *const *in, const int *fused,
                          const int *sums, int overlap);
void pass_order_free(pass_order_t *o);

#endif
