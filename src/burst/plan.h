/* Burst-parallel plans (DeepPool): every node of a model graph runs on its own number of ranks n,
 * the contiguous rank range [first, first + n), each rank holding at most ceil(B/n) of the global
 * batch's B samples. The planner chooses n per node to minimise the predicted iteration time under
 * a hard per-layer amplification limit A, never using more ranks than the job has.
 *
 * Cost model (doc/burst.md has the derivations), all in microseconds:
 *   compute  comp(l, n) = profiled forward+backward time of l at per-rank batch ceil(B/n)
 *   sync     sync(l, n) = 0 for n = 1, else 2 ceil(log2 n) alpha_ar + 2 (n-1)/n P_l / beta_ar
 *            (P_l = gradient bytes of l's own parameter tensors)
 *   re-shard between a node and its consumer (activations forward, their gradients backward):
 *            0 when both use the same ranks, else 2 (alpha_p2p + s S / beta_p2p), S = bytes per
 *            sample of the producer's output and s = samples on the busiest link:
 *            max(|b_s - b_d|, min(b_s, b_d)) when both ranges start at the same rank (ranks in
 *            both layers keep what they can), max(b_s, b_d) when they start at different ranks
 *   time     critical path over the graph's chains and fork/join blocks: a node starts when its
 *            inputs have arrived; the two branches of a block run at once on disjoint rank ranges,
 *            or one after the other when their ranges overlap
 *   rank-time  sum over nodes of n (re-shard in + comp + sync); amplification = rank-time over the
 *            time of one rank running the whole batch (sum of comp(l, 1)).
 * Limit: a node may use n ranks only if n (comp + sync)(l, n) <= A comp(l, 1). */
#ifndef SURGE_BURST_PLAN_H
#define SURGE_BURST_PLAN_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

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

#define BURST_NO_LIMIT HUGE_VAL /* amplification without a limit */

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
  double iter_us;    /* predicted iteration time (critical path) */
  double rank_us;    /* rank-time */
  double one_rank_us; /* one rank running the whole batch: the amplification denominator */
  int ranks_used;    /* highest rank used + 1 */
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

/* Plans. Each fills every field of plan (allocating it; free with burst_plan_free). */
void burst_plan_alloc(burst_plan_t *plan, int nodes, const burst_opts_t *o);
void burst_plan_free(burst_plan_t *plan);
/* The least predicted iteration time under the limit. */
void burst_plan_search(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);
/* Every node on the data-parallel count (all ranks, per-rank batch ceil(B/G)). */
void burst_plan_data_parallel(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o,
                              burst_plan_t *plan);
/* Every node on rank 0 with the whole batch. */
void burst_plan_one_rank(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);
/* Predict the costs of plan->n and plan->first (set by the caller, e.g. read from a file) with the
 * cost model. A rank range outside the job is an input error. */
void burst_plan_evaluate(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan);

/* The Pareto frontier of iteration time against rank-time: plans for a sweep of A over the
 * per-layer amplification breakpoints (at most max_plans of them), keeping the points no other
 * point beats in both. Sorted by rank-time ascending (so iteration time descending). */
typedef struct burst_pareto_point {
  double amp_limit; /* the least swept A that reaches the point */
  double iter_us, rank_us, amp;
  int ranks_used;
} burst_pareto_point_t;
int burst_pareto(const graph_t *g, const burst_profile_t *p, const burst_opts_t *o, int max_plans,
                 burst_pareto_point_t **points);

/* Human-readable output: the per-node table with the data-parallel plan beside it, and the frontier. */
void burst_plan_print(FILE *f, const graph_t *g, const burst_plan_t *plan, const burst_plan_t *dp);
void burst_pareto_print(FILE *f, const burst_pareto_point_t *pts, int n, const burst_plan_t *dp);

/* Plan files (text, one line per node; doc/burst.md). The reader checks the file against the
 * model name, the graph's fingerprint, the job's rank count and global batch: any mismatch or
 * malformed line is an input error naming file:line. It sets plan->n, first, per_rank, amp_limit;
 * burst_plan_evaluate then predicts its costs. */
void burst_plan_write(const char *path, const graph_t *g, const char *model, const burst_plan_t *plan);
/* The same text onto an open stream (path names it in errors), e.g. a memory stream. */
void burst_plan_fwrite(FILE *f, const char *path, const graph_t *g, const char *model, const burst_plan_t *plan);
void burst_plan_read(const char *path, const graph_t *g, const char *model, const burst_opts_t *o,
                     burst_plan_t *plan);

#endif
