/* The cost profile the burst planner plans from: for every graph node, the forward+backward time
 * (microseconds, on the busiest rank) at each per-rank batch the planner may choose, and the
 * network's latency and bandwidth for point-to-point re-sharding and gradient allreduce.
 * The profiler measures it (one entry per node and per-rank batch of burst_profile_batches);
 * tests and benchmarks fill it by hand. The input node costs nothing and needs no entries. */
#ifndef SURGE_BURST_PROFILE_H
#define SURGE_BURST_PROFILE_H

#include <stdint.h>

#include "burst/bgraph.h"
#include "nn/graph.h"

typedef struct burst_net {
  double p2p_alpha_us;     /* latency of one point-to-point message */
  double p2p_bytes_per_us; /* point-to-point bandwidth of one rank's link */
  double ar_alpha_us;      /* latency of one step of an allreduce */
  double ar_bytes_per_us;  /* allreduce bandwidth per rank */
} burst_net_t;

typedef struct burst_step_costs {
  double data_us_per_sample;  /* fetching one sample of the input */
  double loss_us_per_sample;  /* the loss and its gradient at the output, per sample */
  double step_us;             /* gradient norm, optimizer update, zeroing the parameter gradients and
                               * metric reduction of a step */
} burst_step_costs_t;

/* The ranges every profile and network constant must be in, whatever file they come from: times up
 * to 1e12 us (11 days a layer), latencies up to 1e9 us, bandwidths from 1e-6 to 1e12 bytes/us. The
 * planner's sums over thousands of nodes and ranks then stay far from overflow. */
#define BURST_MAX_US 1e12
#define BURST_MAX_LATENCY_US 1e9
#define BURST_MIN_BYTES_PER_US 1e-6
#define BURST_MAX_BYTES_PER_US 1e12

/* Measured times of one node, sorted by batch. */
typedef struct burst_profile_row {
  int n, cap;
  int *batch;
  double *us;
} burst_profile_row_t;

typedef struct burst_profile {
  char source[256];     /* where it came from (a file name, "synthetic"), for messages */
  int nodes;            /* graph nodes it covers */
  uint64_t fingerprint; /* burst_graph_fingerprint of the graph it was measured on; 0: unknown */
  burst_profile_row_t *row;
  burst_net_t net;
  /* A per-rank batch a row lacks: 0 (default) an input error; 1 interpolated linearly between the
   * row's measured batches, proportional (t(b) = t(bmax) b / bmax) above the largest and t(bmin)
   * below the smallest (imported profiles, whose batch grids are coarse). */
  int interpolate;
  /* The rest of a training step, beside the nodes' forward and backward (surge-profile measures it;
   * 0 where a profile has none): the data fetch per sample of the nodes that read the input, the
   * loss per sample of the output node, and per step the zeroing of the parameter gradients, their
   * norm, the optimizer update and the metrics reduction. burst_profile_us charges them to the
   * nodes: data to the input's readers, loss to the output node, and the per-step work to every
   * node in proportion to its parameter bytes (burst_profile_update_us): each rank that holds a
   * node zeroes, sums and updates that node's parameters, so a node on n ranks pays its share n
   * times; the metrics reduction (3 doubles, microseconds) is not measured apart and rides along. */
  burst_step_costs_t step;
  /* Batch norm's sums (plan.h's sync): 0 (default) the run keeps each in flight while the nodes of
   * its pass order run ([parallel] bn_overlap = true, as surge-train does by default); 1 it waits
   * for each at once (bn_overlap = false). surge-plan and surge-sim take it from the deck when they
   * have one; without a deck it is 0. */
  int bn_blocking;
  /* How a profile file was measured ([backend] name and precision, [train] optimizer, whose update is in
   * step): "" where it does not say (graph files, DeepPool's, profiles written before 2026-12-07). */
  char backend[16], precision[8], optimizer[16];
} burst_profile_t;

/* The run's settings a profile's times depend on. */
typedef struct burst_setting {
  const char *backend, *precision, *optimizer;
} burst_setting_t;
/* Into note (NUL-terminated, "" when they agree or the profile does not say): a sentence saying that
 * p was measured with another backend, precision or optimizer than the run's, so its times are not the
 * run's. */
void burst_profile_setting_note(const burst_profile_t *p, const burst_setting_t *run, char *note, size_t size);

void burst_profile_init(burst_profile_t *p, int nodes, const char *source);
/* Step costs in range (finite, in [0, BURST_MAX_US]), or an input error naming what. */
void burst_step_costs_check(const burst_step_costs_t *s, const char *what);
void burst_profile_free(burst_profile_t *p);
/* Record (or replace) node's time at a per-rank batch. Bad arguments are input errors. */
void burst_profile_set(burst_profile_t *p, int node, int batch, double us);
/* The time of node at batch: 0 and *us set, or -1 when the profile holds no such entry. */
int burst_profile_find(const burst_profile_t *p, int node, int batch, double *us);
/* The time of node at batch; a missing entry is an input error naming the node and the batch. */
double burst_profile_time(const burst_profile_t *p, const graph_t *g, int node, int batch);
/* The same for a planner graph (bgraph.h), with the node's share of the step costs (p->step; its
 * share of the per-step work is burst_profile_update_us, O(nodes) here): the input node costs 0;
 * with p->interpolate a missing batch is interpolated; otherwise a missing one is an input error
 * naming the node (and its file line when it came from a file) and the batches the row has. */
double burst_profile_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch);
/* node's share of the per-step work p->step.step_us (us): step_us grad_bytes(node) / grad_total,
 * with grad_total = bgraph_grad_total(bg) (a caller looping over nodes computes it once); where no
 * node has parameters, the output node's whole. It does not depend on the node's rank count: each
 * rank holding the node updates all of its parameters (they are replicated). */
double burst_profile_update_us(const burst_profile_t *p, const bgraph_t *bg, int node, double grad_total);
/* burst_profile_us without the per-step cost (optimizer and metrics, p->step.step_us): one pass of
 * the node over a batch, with its per-sample data and loss shares (a pipeline stage runs a node
 * once per micro-batch but steps its optimizer once). */
double burst_profile_pass_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch);
/* A node's forward share of its profiled forward + backward time (backward is about twice forward). */
#define BURST_FORWARD_SHARE (1.0 / 3)
/* The forward the backward of node re-runs first when it ends a recomputed segment
 * (bgraph_node_t.recompute_from; [train] recompute): BURST_FORWARD_SHARE of the passes of the
 * segment's other nodes at the batch; 0 for any other node. */
double burst_profile_rerun_us(const burst_profile_t *p, const bgraph_t *bg, int node, int batch);
/* Check that p fits g (node count, fingerprint when recorded) and that the network numbers are
 * positive and finite: an input error otherwise. */
void burst_profile_check(const burst_profile_t *p, const graph_t *g);
/* The same checks for a planner graph (its fingerprint when the profile recorded one). */
void burst_profile_check_bg(const burst_profile_t *p, const bgraph_t *bg);
/* Check network numbers (latencies finite >= 0, bandwidths finite > 0): an input error naming `what`. */
void burst_net_check(const burst_net_t *net, const char *what);

#endif
