/* Internals shared by the planner's files: the model graph as a series-parallel tree, the cost
 * tables of one search, the Pareto sets of the search (plan_pareto.c) and the search itself
 * (planner.c, plan_recover.c). */
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
 * the join. A branch with n == 0 is a direct edge from the fork to the join (a residual identity). */
struct sp_block {
  int nbranch;
  sp_seq_t *branch;
};

/* Decompose g into its top series: node 0 (the input) first, the output node last. A graph that is
 * not series-parallel, or has a node whose output no later node uses, is an input error. */
void sp_build(const bgraph_t *g, sp_seq_t *top);
void sp_free(sp_seq_t *s);

#define BURST_INF HUGE_VAL

/* Everything one search or evaluation needs. */
typedef struct burst_ctx {
  const bgraph_t *g;
  const burst_profile_t *p;
  burst_opts_t o;
  sp_seq_t top;
  double grad_total;  /* bgraph_grad_total(g): the per-step work's shares (burst_ctx_comp_us) */
  /* [node] the first node of its limit group: the nodes that run on one rank set (bgraph_node_t.with)
   * and a tied weight's users are one choice of rank count, which the amplification limit judges by
   * their sums (a fused ReLU with its node, a recomputed block as a whole); the node itself when alone */
  int *group;
  /* batch norm's sums (plan_bn.c): the nodes whose work hides node v's forward (pass 0) or backward
   * (pass 1) sum, hid[hid_lo[2v + pass] .. hid_hi[2v + pass]); none when the run blocks on them */
  int *hid_lo, *hid_hi, *hid;
  /* candidate configurations (burst_ctx_tables): k = 0..C-1, cn ascending, cn[0] = 1 */
  int C;
  int *cn, *cb;       /* rank count, per-rank batch */
  double *comp, *sync; /* [node * C + k] */
  double *w;          /* [node * C + k] comp + sync, or BURST_INF where the limit forbids it */
} burst_ctx_t;

/* The graph part (series-parallel tree); checks the options and the profile's fit. */
void burst_ctx_init(burst_ctx_t *c, const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o);
/* Node v's compute at a per-rank batch: its pass and its share of the per-step work
 * (burst_profile_us, without rescanning the graph); the last node of a recomputed segment also
 * re-runs the forward of the segment's other nodes before its backward (burst_profile_rerun_us:
 * they run on its ranks). */
double burst_ctx_comp_us(const burst_ctx_t *c, int v, int batch);
/* Node v's syncs on n ranks at a per-rank batch: its gradient's (burst_sync_us) and batch norm's sums
 * less what the pass order hides of them (burst_ctx_bn_us; plan_bn.c). */
double burst_ctx_sync_us(const burst_ctx_t *c, int v, int batch, int n);
double burst_ctx_bn_us(const burst_ctx_t *c, int v, int batch, int n);
/* The hiding nodes of every batch norm (burst_ctx_init calls it), and their release. */
void burst_ctx_bn_init(burst_ctx_t *c);
void burst_ctx_bn_free(burst_ctx_t *c);
/* The candidate tables: every candidate's time must be in the profile (an input error otherwise). */
void burst_ctx_tables(burst_ctx_t *c);
void burst_ctx_free(burst_ctx_t *c);

/* Re-shard cost of src's output from candidate a to candidate b. */
static inline double burst_ctx_xfer(const burst_ctx_t *c, int src, int a, int b, int moved) {
  if (!moved && a == b) return 0;
  double s = burst_link_samples(c->cb[a], c->cb[b], moved); /* computed here: a C x C table was gigabytes */
  return 2 * (c->p->net.p2p_alpha_us + s * c->g->v[src].act_bytes / c->p->net.p2p_bytes_per_us);
}

/* Predict plan's costs (its n and first set) in an initialised context (tables not needed). */
void burst_ctx_evaluate(const burst_ctx_t *c, burst_plan_t *plan);

/* Lowest and highest+1 rank used by the nodes of s (recursing into blocks). */
void sp_seq_extent(const sp_seq_t *s, const burst_plan_t *plan, int *lo, int *hi);

/* ---- Pareto sets (plan_pareto.c) ----
 * A set of (time, rank-time) points, each with back-pointers (k, i, j) whose meaning the set's
 * producer defines. After pf_prune a set is a Pareto front: time ascending, rank-time descending,
 * no point beaten in both. */
typedef struct pf_pt {
  double t, r;
  int k, i, j;
} pf_pt_t;

typedef struct pf_set {
  int n, cap;
  pf_pt_t *p;
} pf_set_t;

void pf_push(pf_set_t *s, double t, double r, int k, int i, int j);
void pf_clear(pf_set_t *s);
void pf_free(pf_set_t *s);
/* Sort by (t, r) and keep the Pareto front; keep_one: only its fastest point. */
void pf_prune(pf_set_t *s, int keep_one);
/* acc := front of acc and (b shifted by (dt, dr)); b's points enter with back-pointers (k, index in
 * b, j). Both must be fronts. keep_one: only the fastest point of the result. */
void pf_merge_shifted(pf_set_t *acc, const pf_set_t *b, double dt, double dr, int k, int j, int keep_one,
                      pf_set_t *tmp);
/* acc := front of acc and {a_x + b_y + (dt, dr)} over all pairs, entering with back-pointers (k, x, y). */
void pf_merge_sum(pf_set_t *acc, const pf_set_t *a, const pf_set_t *b, double dt, double dr, int k, int keep_one,
                  pf_set_t *tmp);
/* acc := front of acc and {(max(a_x.t, b_y.t), a_x.r + b_y.r)}: two things at once, back-pointers
 * (k, x, y). */
void pf_merge_max(pf_set_t *acc, const pf_set_t *a, const pf_set_t *b, int k, int keep_one, pf_set_t *tmp);
/* A front shifted by (dt, dr) whose points enter a result with back-pointers (k, index in s, fixed)
 * (how = PF_TAG_I), (k, fixed, index in s) (PF_TAG_J) or their own (PF_TAG_KEEP). */
enum { PF_TAG_KEEP, PF_TAG_I, PF_TAG_J };
typedef struct pf_stream {
  const pf_set_t *s;
  double dt, dr;
  int k, fixed, how;
  int pos; /* used by pf_front_of */
} pf_stream_t;
/* out := the front of the union of the streams (keep_one: its fastest point). */
void pf_front_of(pf_stream_t *st, int n, pf_set_t *out, int keep_one);
/* Thin a front so that every dropped point has a kept one within a factor (1 + eps) in both
 * measures (eps > 0). */
void pf_thin(pf_set_t *s, double eps);

/* ---- the search (planner.c) ----
 * One search: the per-layer limit in the context's tables, and what the sets keep: only the fastest
 * point (burst_plan_search) or the whole front, thinned by eps after every block (0: exact). */
typedef struct pf_engine {
  const burst_ctx_t *c;
  int keep_one;
  double eps;
} pf_engine_t;

/* The sets of a series run: st[i * C + e] for step i and configuration e of its node. A point of a
 * step's set has k = the previous step's (or, at a block, the fork's) configuration, i = its index
 * in that set (step 0 of a series with a source: the source's single start point), j = its index in
 * the block's arrival set (-1 after a direct edge). */
typedef struct pf_run {
  int n, C;
  pf_set_t *st;
} pf_run_t;

/* Run series s from its source src in configuration a (src < 0: the top series, from the input) on
 * configurations <= cap; moved_in: the series runs on other ranks than its source. */
void pf_seq_run(const pf_engine_t *E, const sp_seq_t *s, int src, int a, int cap, int moved_in, pf_run_t *run);
void pf_run_free(pf_run_t *run);

/* The arrival sets of a block (from the fork in a to the join in e <= jcap), and what the recovery
 * needs to walk back through them. */
#define PF_LANE_BRANCHES 4 /* lane arrangements are searched for blocks of up to this many branches */

/* A branch's span sets for one (cap, placement): sp[e] from the fork's end until its output has
 * reached the join in e. A point has k = the tail's configuration f, i = its index in the run's
 * last set. The run is kept when the block is kept for recovery. */
typedef struct pf_span {
  int done;
  pf_run_t run;
  pf_set_t *sp; /* [C] */
} pf_span_t;

/* Lane sets of one (branch set, off) by range width (any rank count): lanes(mask, width[x], off)
 * = sets[x], each [C]. */
typedef struct pf_lane_memo {
  int n, cap;
  int *width;
  pf_set_t **sets;
} pf_lane_memo_t;

typedef struct pf_block {
  const pf_engine_t *E;
  const sp_block_t *blk;
  int fork, join, a, jcap, moved_in, keep;
  int nb, *bi;         /* the non-empty branches */
  double *dmax, *dsum; /* [C] direct edges into the join in e: the longest, and all together */
  pf_span_t *span;     /* [(x * C + cap) * 2 + off] */
  pf_set_t **serial;   /* [(mask slot * C + cap) * 2 + off] -> [C] sets, or NULL */
  pf_lane_memo_t *lanes; /* [mask slot * 2 + off]: lane arrangements by range width */
  pf_set_t *arr;       /* [C] arrival sets: a point's i indexes lanes(all, jcap, 0) */
  pf_set_t tmp;
} pf_block_t;

/* The memoised sets of a block (planner.c): the span sets of its non-empty branch x (index into bi)
 * on configurations <= cap, placed at the enclosing range's start (off = 0) or after another lane
 * (off = 1: every sample moves in and out); the branches of mask one after another (a point's i
 * indexes the lowest branch's span set, j serial(the others)); every lane arrangement of mask in a
 * range of `width` ranks, any count (k = -1 and i indexing serial(mask, cap_for(width)), or k =
 * first * C + f: the first lane's branches on candidate f, the others on the width - cn[f] ranks
 * after it, i indexing serial(first, f), j lanes(the others, width - cn[f], 1)). */
const pf_set_t *pf_block_span(pf_block_t *b, int x, int cap, int off);
const pf_set_t *pf_block_serial(pf_block_t *b, int mask, int cap, int off);
const pf_set_t *pf_block_lanes(pf_block_t *b, int mask, int width, int off);
pf_block_t *pf_block_solve(const pf_engine_t *E, const sp_block_t *blk, int fork, int join, int a, int jcap,
                           int moved_in, int keep);
const pf_set_t *pf_block_arrival(const pf_block_t *b, int e);
void pf_block_free(pf_block_t *b);

/* Set plan->n and first of every node of the series from run's point (e_last, idx) of its last
 * step, the series placed from rank `base` (plan_recover.c). */
void pf_recover_seq(const pf_engine_t *E, const sp_seq_t *s, int src, int cap, int moved_in, const pf_run_t *run,
                    int e_last, int idx, int base, burst_plan_t *plan);
/* The same through a block: its arrival point (e, idx) for the fork in a. */
void pf_recover_block(const pf_engine_t *E, pf_block_t *b, int e, int idx, int base, burst_plan_t *plan);

/* The largest candidate with at most n ranks. */
int burst_ctx_cap_for(const burst_ctx_t *c, int n);

#endif
