/* Internals shared by the planner's files: the model graph as a series-parallel tree, and the cost
 * tables of one search. */
#ifndef SURGE_BURST_PLAN_IMPL_H
#define SURGE_BURST_PLAN_IMPL_H

#include "burst/plan.h"

typedef struct sp_block sp_block_t;

/* One step of a series: arrive at `node` from the previous step's node (or from the series'
 * source for the first step), by a direct edge (via == NULL) or through a fork/join block whose
 * join is `node`. */
typedef struct sp_step {
  int node;
  sp_block_t *via;
} sp_step_t;

typedef struct sp_seq {
  int n;
  sp_step_t *step;
} sp_seq_t;

/* A fork/join block: branches from the fork (the node before the join in the enclosing series) to
 * the join. A branch with n == 0 is a direct edge from the fork to the join (a residual identity).
 * Joins have at most LAYER_MAX_IN inputs, so a block has at most that many branches. */
struct sp_block {
  int nbranch;
  sp_seq_t *branch;
};

/* Decompose g into its top series: node 0 (the input) first, the output node last. A graph that is
 * not series-parallel, or has a node whose output no later node uses, is an input error. */
void sp_build(const graph_t *g, sp_seq_t *top);
void sp_free(sp_seq_t *s);

#define BURST_INF HUGE_VAL

/* Everything one search or evaluation needs. */
typedef struct burst_ctx {
  const graph_t *g;
  const burst_profile_t *p;
  burst_opts_t o;
  sp_seq_t top;
  double *act;  /* [node] bytes per sample of the output */
  double *grad; /* [node] gradient bytes */
  /* candidate configurations (burst_ctx_tables): k = 0..C-1, cn ascending, cn[0] = 1 */
  int C;
  int *cn, *cb;       /* rank count, per-rank batch */
  double *comp, *sync; /* [node * C + k] */
  double *w;          /* [node * C + k] comp + sync, or BURST_INF where the limit forbids it */
  double *lk, *lm;    /* [a * C + b] busiest-link samples of a re-shard: kept in place, moved */
} burst_ctx_t;

/* The graph part (series-parallel tree, bytes); checks the options and the profile's fit. */
void burst_ctx_init(burst_ctx_t *c, const graph_t *g, const burst_profile_t *p, const burst_opts_t *o);
/* The candidate tables: every candidate's time must be in the profile (an input error otherwise). */
void burst_ctx_tables(burst_ctx_t *c);
void burst_ctx_free(burst_ctx_t *c);

/* Re-shard cost of src's output from candidate a to candidate b. */
static inline double burst_ctx_xfer(const burst_ctx_t *c, int src, int a, int b, int moved) {
  if (!moved && a == b) return 0;
  double s = moved ? c->lm[a * c->C + b] : c->lk[a * c->C + b];
  return 2 * (c->p->net.p2p_alpha_us + s * c->act[src] / c->p->net.p2p_bytes_per_us);
}

/* Predict plan's costs (its n and first set) in an initialised context (tables not needed). */
void burst_ctx_evaluate(const burst_ctx_t *c, burst_plan_t *plan);

/* Lowest and highest+1 rank used by the nodes of s (recursing into blocks). */
void sp_seq_extent(const sp_seq_t *s, const burst_plan_t *plan, int *lo, int *hi);

#endif
