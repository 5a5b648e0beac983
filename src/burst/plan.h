/* Burst-parallel plans (DeepPool): every node of a model graph runs on its own number of ranks n,
 * the contiguous rank range [first, first + n), each rank holding at most ceil(B/n) of the global
 * batch's B samples. The planner chooses n per node: the fastest plan (least predicted iteration
 * time), or the whole Pareto frontier of iteration time against rank-time, optionally under a hard
 * per-layer amplification limit A, never using more ranks than the job has.
 *
 * Cost model (doc/burst.md has the derivations), all in microseconds:
 *   compute  comp(l, n) = profiled forward+backward time of l at per-rank batch ceil(B/n)
 *   sync     sync(l, n) = 0 for n = 1, else 2 ceil(log2 n) alpha_ar + 2 (n-1)/n P_l / beta_ar
 *            (P_l = gradient bytes of l's own parameter tensors), plus for a batch norm its two sums
 *            of statistics a step priced the same way (burst_bn_sum_us), each less the work of the
 *            nodes the executor's pass order runs while it is in flight, at l's per-rank batch
 *            (a third of their profiled time forward, two thirds backward; none when the profile's
 *            run blocks on them, burst_profile_t.bn_blocking), at least 0
 *   re-shard between a node and its consumer (activations forward, their gradients backward):
 *            0 when both use the same ranks, else 2 (alpha_p2p + s S / beta_p2p), S = bytes per
 *            sample of the producer's output and s = samples on the busiest link:
 *            max(|b_s - b_d|, min(b_s, b_d)) when both ranges start at the same rank (ranks in
 *            both layers keep what they can), max(b_s, b_d) when they start at different ranks
 *   time     critical path over the graph's chains and fork/join blocks: a node starts when its
 *            inputs have arrived; the branches of a block whose rank ranges overlap run one after
 *            another, groups of branches on disjoint ranges run at once
 *   rank-time  sum over nodes of n (re-shard in + comp + sync); amplification = rank-time over the
 *            time of one rank running the whole batch (sum of comp(l, 1)).
 * Limit: a node may use n ranks only if n (comp + sync)(l, n) <= A comp(l, 1); nodes that must share
 * a rank set (bgraph_node_t.with, weight_of) are judged as one, by their sums.
 *
 * The planner works on a bgraph_t (bgraph.h); the functions taking a graph_t convert it. */
#ifndef SURGE_BURST_PLAN_H
#define SURGE_BURST_PLAN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "burst/bgraph.h"
#include "burst/profile.h"
#include "nn/graph.h"

/* Which rank counts n the planner may give a node (always also 1 and the data-parallel count).
 * A count whose busiest-rank batch ceil(B/n) a smaller count already gives is replaced by that
 * smaller count, so each candidate is the fewest ranks for its per-rank batch. */
typedef enum burst_ranks_policy {
  BURST_RANKS_DIVISORS = 0, /* n divides B: every rank gets B/n samples (default) */
  BURST_RANKS_POW2,         /* powers of two, as the original DeepPool */
  BURST_RANKS_ANY,          /* every n up to G: finest, slowest search on branchy graphs */
} burst_ranks_policy_t;
/* Its name, as --policy takes it. */
const char *burst_policy_name(burst_ranks_policy_t policy);

#define BURST_NO_LIMIT HUGE_VAL /* amplification without a limit */
#define BURST_MAX_RANKS (1 << 24) /* a job's ranks, as surge-sim's --ranks lists take them */
#define BURST_MAX_BATCH (1 << 30) /* a global batch (ceil(B/n) stays within an int) */

typedef struct burst_opts {
  int ranks;   /* G: ranks of the job */
  int batch;   /* B: global batch */
  double amp;  /* A >= 1, or BURST_NO_LIMIT */
  burst_ranks_policy_t policy;
} burst_opts_t;

typedef struct burst_plan {
  int nodes, ranks, batch;
  double amp_limit;  /* the A it was planned (or is said to be planned) under */
  int *n;            /* [nodes] rank count */
  int *first;        /* [nodes] first rank of the node's range */
  int *per_rank;     /* [nodes] ceil(B/n): samples of the busiest rank */
  double *comp_us, *xfer_us, *sync_us; /* [nodes] predicted: compute, re-shards into the node, sync */
  double *amp;       /* [nodes] n (comp + sync) / comp(1) */
  double *start_us;  /* [nodes] predicted start of the node's busy time on its ranks (re-shards in,
                        compute, sync follow) within the iteration */
  double iter_us;    /* predicted iteration time (critical path) */
  double rank_us;    /* rank-time */
  double one_rank_us; /* one rank running the whole batch: the amplification denominator; 0 when the
                         plan has no predictions (a plan file without them) */
  int ranks_used;    /* highest rank used + 1 */
  int stale_predictions_line; /* a plan file's predicted_for line where its node lines are not those the
                                 predictions were made for (they were dropped); else 0 */
} burst_plan_t;

/* Candidate rank counts, ascending, into n_out (room for min(G,B) + 1); returns how many. Bad
 * options (G < 1, B < 1, A < 1) are input errors. */
int burst_rank_counts(const burst_opts_t *o, int *n_out);
/* Per-rank batches a profile must hold for these options, descending (as burst_rank_counts). */
int burst_profile_batches(const burst_opts_t *o, int *batch_out);
/* ceil(B/n) */
static inline int burst_per_rank(int batch, int n) { return (batch + n - 1) / n; }

/* The cost primitives of the model above. */
double burst_sync_us(const burst_net_t *net, double grad_bytes, int n);
/* One of a batch norm's two sums a step over its n ranks (backward 0: the forward's n (1 + 3C)
 * floats; 1: the backward's 2C), an allreduce priced as burst_sync_us; 0 for n = 1 or no channels. */
double burst_bn_sum_us(const burst_net_t *net, double channels, int n, int backward);
/* Samples on the busiest link when b_s per rank become b_d per rank. */
double burst_link_samples(int b_s, int b_d, int moved);
double burst_xfer_us(const burst_net_t *net, double bytes_per_sample, int n_s, int b_s, int n_d, int b_d,
                     int moved);
/* Bytes per sample of node's output, and of its gradient (its own parameter tensors; a tied weight
 * counts at the node that owns it). */
double burst_act_bytes(const graph_t *g, int node);
double burst_grad_bytes(const graph_t *g, int node);
/* A hash of the graph's structure (names, kinds, inputs, shapes, parameter shapes). */
uint64_t burst_graph_fingerprint(const graph_t *g);

/* ---- plans of a planner graph ----
 * Each fills every field of plan (allocating it; free with burst_plan_free). */
void burst_plan_alloc(burst_plan_t *plan, int nodes, const burst_opts_t *o);
void burst_plan_free(burst_plan_t *plan);
/* The least predicted iteration time under the limit. */
void burst_search(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);
/* Every node on ranks [0, n). */
void burst_uniform(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, int n, burst_plan_t *plan);
/* The data-parallel rank count: all ranks, or the fewest giving the same per-rank batch. */
int burst_dp_ranks(const burst_opts_t *o);
/* Predict the costs of plan->n and plan->first (set by the caller, e.g. read from a file) with the
 * cost model. A rank range outside the job is an input error. */
void burst_evaluate(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);

/* ---- the same for a model graph (graph_t), for training ---- */
void burst_plan_search(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);
/* Every node on the data-parallel count (all ranks, per-rank batch ceil(B/G)). */
void burst_plan_data_parallel(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o,
                              burst_plan_t *plan);
/* Every node on rank 0 with the whole batch. */
void burst_plan_one_rank(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);
void burst_plan_evaluate(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);

/* ---- the Pareto frontier of iteration time against rank-time ----
 * Every plan of the planner's plan space (doc/burst.md: every candidate rank count per node, and
 * for every fork/join block every arrangement of its branches in lanes within the enclosing range)
 * that no other plan of it beats in both measures, under the per-layer limit A of the options
 * (BURST_NO_LIMIT for none). tol = 0: exact. tol > 0: the sets are thinned after every block so
 * that every plan of the space has a frontier point within a factor (1 + tol) in both measures
 * (on a chain, which has no blocks, the frontier stays exact). Points are sorted by iteration
 * time ascending (rank-time descending): pt[0] is the fastest plan, pt[n-1] the leanest. */
typedef struct burst_front_point {
  double iter_us, rank_us;
} burst_front_point_t;

typedef struct burst_frontier {
  int n;
  burst_front_point_t *pt;
  double tol;          /* as asked */
  double one_rank_us;  /* the amplification denominator */
  int blocks;          /* fork/join blocks in the graph */
  void *impl;          /* what recovering a point's plan needs */
} burst_frontier_t;

void burst_frontier_build(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, double tol,
                          burst_frontier_t *f);
/* The plan of point i (recovered and evaluated: it agrees with the point, or the planner stops with
 * a runtime error). */
void burst_frontier_plan(const burst_frontier_t *f, int i, burst_plan_t *plan);
/* The fastest point with rank-time at most rank_us, or the leanest with iteration time at most
 * iter_us; -1 when no point qualifies. */
int burst_frontier_fastest_within(const burst_frontier_t *f, double rank_us);
int burst_frontier_leanest_within(const burst_frontier_t *f, double iter_us);
void burst_frontier_free(burst_frontier_t *f);

/* ---- human-readable output ---- */
/* The per-node table with the data-parallel plan beside it (dp may be NULL). */
void burst_plan_print_bg(FILE *f, const bgraph_t *g, const burst_plan_t *plan, const burst_plan_t *dp);
void burst_plan_print(FILE *f, const graph_t *g, const burst_plan_t *plan, const burst_plan_t *dp);
/* The frontier, at most max_rows rows (evenly spread, the fastest and the leanest always among
 * them), leanest first, each with its plan's ranks used and the least per-layer limit that admits
 * it (its largest node amplification). */
void burst_frontier_print(FILE *f, const burst_frontier_t *fr, const burst_plan_t *dp, int max_rows);

/* ---- plan files (text, one line per node; doc/burst.md) ----
 * The reader checks the file against the model name, the graph's fingerprint, the job's rank
 * count and global batch, and that no node leaves the rank set of its tied weight's other user or of
 * its recomputed segment (bgraph_node_t.weight_of, recompute_from): any mismatch or malformed line
 * is an input error naming file:line. It
 * sets plan->n, first, per_rank, amp_limit and, from a plan file of format 2, the predictions
 * iter_us, rank_us and one_rank_us (0 where the file has none: format 1, a plan written by hand, or
 * node lines that are not those its predicted_for hash names: stale_predictions_line then says
 * where); burst_plan_evaluate predicts the costs of every node. */
void burst_plan_write_bg(const char *path, const bgraph_t *g, const burst_plan_t *plan);
void burst_plan_fwrite_bg(FILE *f, const char *path, const bgraph_t *g, const burst_plan_t *plan);
void burst_plan_read_bg(const char *path, const bgraph_t *g, const burst_opts_t *o, burst_plan_t *plan);
void burst_plan_write(const char *path, const graph_t *g, const char *model, const burst_plan_t *plan);
/* The same text onto an open stream (path names it in errors), e.g. a memory stream. */
void burst_plan_fwrite(FILE *f, const char *path, const graph_t *g, const char *model, const burst_plan_t *plan);
void burst_plan_read(const char *path, const graph_t *g, const char *model, const burst_opts_t *o,
                     burst_plan_t *plan);

#endif
