/* The planner's entry points on a planner graph: the frontier (every undominated plan), its
 * queries, and the fastest plan (the search with sets of one point).
 *
 * The bound with tol > 0: thinning a front to (1 + eps) leaves, for every dropped point, a kept one
 * within (1 + eps) in both measures, and the search's later steps (adding costs, sums, maxima)
 * keep such a cover. The sets are thinned at most twice per block (its arrival sets and the
 * series' sets after it), so a plan's point passes at most 2 b thinnings for the b blocks of the
 * graph; eps = log1p(tol) / (2 b) keeps the compound factor (1 + eps)^(2 b) within 1 + tol. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan_impl.h"
#include "core/error.h"

typedef struct frontier_impl {
  burst_ctx_t c;
  pf_engine_t E;
  int ties;        /* nodes that use an earlier node's weight (bgraph_node_t.weight_of) */
  int *tie;        /* [ties] those nodes */
  double *w;       /* [nodes * C] the cost table before a run's exclusions (c.w) */
  int runs;        /* the searches: one per choice of configurations of the ties, C^ties */
  pf_run_t *top;   /* [runs] */
  pf_set_t front;  /* k = run * C + the last node's configuration, i = the point's index in its set */
} frontier_impl_t;

/* A node that uses another's weight runs on its ranks (the executor does not sum a tied weight's
 * gradient across two sets), which the series search cannot ask of two nodes far apart: it runs once
 * for each configuration the pairs share, all others of both nodes excluded, and the front is the
 * union of the runs'. Both must be steps of the top series, where every configuration starts at the
 * first rank. */
static void find_ties(frontier_impl_t *F) {
  const bgraph_t *g = F->c.g;
  unsigned char *on_top = xcalloc((size_t)g->n, 1);
  for (int i = 0; i < F->c.top.n; i++) on_top[F->c.top.step[i].node] = 1;
  F->tie = xmalloc((size_t)g->n * sizeof *F->tie);
  F->runs = 1;
  for (int v = 0; v < g->n; v++) {
    int o = g->v[v].weight_of;
    if (!o) continue;
    if (!on_top[v] || !on_top[o])
      surge_input_error("burst planner: node %d '%s' uses the weight of node %d '%s', and the planner keeps such "
                        "pairs on one rank set only on the model's main chain (hint: write the plan by hand)",
                        v, g->v[v].name, o, g->v[o].name);
    if ((double)F->runs * F->c.C > 4096)
      surge_input_error("burst planner: %d tied weights over %d rank counts need %.0f searches, one per choice of "
                        "their rank counts (at most 4096) (hint: --policy pow2 or divisors has fewer counts)",
                        F->ties + 1, F->c.C, (double)F->runs * F->c.C);
    F->tie[F->ties++] = v;
    F->runs *= F->c.C;
  }
  free(on_top);
  size_t cells = (size_t)g->n * (size_t)F->c.C;
  F->w = xmalloc(cells * sizeof *F->w);
  memcpy(F->w, F->c.w, cells * sizeof *F->w);
}

/* The cost table of run r (-1: none excluded): tie x and its weight's owner in configuration
 * (r / C^x) mod C only. */
static void restrict_run(frontier_impl_t *F, int r) {
  burst_ctx_t *c = &F->c;
  int C = c->C;
  memcpy(c->w, F->w, (size_t)c->g->n * C * sizeof *c->w);
  for (int x = 0, rest = r; r >= 0 && x < F->ties; x++, rest /= C) {
    int v = F->tie[x], o = c->g->v[v].weight_of;
    for (int k = 0; k < C; k++)
      if (k != rest % C) c->w[(size_t)v * C + k] = c->w[(size_t)o * C + k] = BURST_INF;
  }
}

static int count_blocks(const sp_seq_t *s) {
  int n = 0;
  for (int i = 0; i < s->n; i++) {
    const sp_block_t *b = s->step[i].via;
    if (!b) continue;
    n++;
    for (int k = 0; k < b->nbranch; k++) n += count_blocks(&b->branch[k]);
  }
  return n;
}

/* Run r of the search, its last step's sets into the front (k = r * C + the configuration). */
static void run_one(frontier_impl_t *F, int r, pf_set_t *tmp) {
  int C = F->c.C;
  restrict_run(F, F->ties ? r : -1);
  pf_seq_run(&F->E, &F->c.top, -1, -1, C - 1, 0, &F->top[r]);
  const pf_set_t *last = F->top[r].st + (size_t)(F->top[r].n - 1) * C;
  for (int e = 0; e < C; e++) pf_merge_shifted(&F->front, &last[e], 0, 0, r * C + e, -1, F->E.keep_one, tmp);
}

static double fastest_in(const pf_set_t *s) {
  double t = HUGE_VAL;
  for (int x = 0; x < s->n; x++) t = s->p[x].t < t ? s->p[x].t : t;
  return t;
}

/* Every run; but for the fastest plan of a graph with one tie whose user is the top series' last
 * node (the gpt's output layer), only the runs that can beat the fastest found: the search without
 * the tie (one run more) bounds run e from below by its fastest plan ending with the user in e (run
 * e only adds its owner's restriction), and the runs go in that bound's order until it reaches the
 * fastest found. On the gpt's 24 blocks, 256 ranks, batch 1024 and `--policy any` (60 rank counts)
 * the search took 40.8 s running them all, 1.4 s so, 0.9 s without the tie (make_plan's profile). */
static void run_all(frontier_impl_t *F) {
  const sp_seq_t *top = &F->c.top;
  int C = F->c.C;
  pf_set_t tmp = {0, 0, NULL};
  if (!F->E.keep_one || F->ties != 1 || F->tie[0] != top->step[top->n - 1].node) {
    for (int r = 0; r < F->runs; r++) run_one(F, r, &tmp);
  } else {
    pf_run_t untied;
    restrict_run(F, -1);
    pf_seq_run(&F->E, top, -1, -1, C - 1, 0, &untied);
    double *bound = xmalloc((size_t)C * sizeof *bound);
    int *order = xmalloc((size_t)C * sizeof *order);
    for (int e = 0; e < C; e++) { /* by bound, ascending (insertion: equal bounds keep their order) */
      bound[e] = fastest_in(&untied.st[(size_t)(top->n - 1) * C + e]);
      int x = e;
      for (; x > 0 && bound[order[x - 1]] > bound[e]; x--) order[x] = order[x - 1];
      order[x] = e;
    }
    pf_run_free(&untied);
    for (int x = 0; x < C && bound[order[x]] < fastest_in(&F->front); x++) run_one(F, order[x], &tmp);
    free(bound);
    free(order);
  }
  restrict_run(F, -1);
  pf_free(&tmp);
}

static void frontier_run(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, double tol,
                         int keep_one, burst_frontier_t *f) {
  if (!(tol >= 0) || !isfinite(tol)) surge_input_error("frontier tolerance %g must be finite and >= 0", tol);
  memset(f, 0, sizeof *f);
  frontier_impl_t *F = xcalloc(1, sizeof *F);
  burst_ctx_init(&F->c, g, p, o);
  burst_ctx_tables(&F->c);
  f->blocks = count_blocks(&F->c.top);
  f->tol = tol;
  F->E = (pf_engine_t){&F->c, keep_one, tol > 0 && f->blocks ? log1p(tol) / (2.0 * f->blocks) : 0};
  find_ties(F);
  F->top = xcalloc((size_t)F->runs, sizeof *F->top);
  run_all(F);
  if (F->front.n == 0) surge_runtime_error("burst planner: no plan found (every configuration was excluded)");
  f->n = F->front.n;
  f->pt = xmalloc((size_t)f->n * sizeof *f->pt);
  for (int x = 0; x < f->n; x++) f->pt[x] = (burst_front_point_t){F->front.p[x].t, F->front.p[x].r};
  for (int v = 0; v < g->n; v++) f->one_rank_us += burst_ctx_comp_us(&F->c, v, o->batch);
  f->impl = F;
}

void burst_frontier_build(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, double tol,
                          burst_frontier_t *f) {
  frontier_run(g, p, o, tol, 0, f);
}

static int agrees(double a, double b) { return fabs(a - b) <= 1e-9 * (1 + fabs(b)); }

/* The search's plan keeps every rule of what shares a rank set (bgraph_node_t.with, weight_of). */
static void check_kept(const bgraph_t *g, const burst_plan_t *pl) {
  for (int v = 0; v < g->n; v++) {
    const int must[2] = {bgraph_set_of(g, v), g->v[v].weight_of ? g->v[v].weight_of : v}; /* v's ranks are theirs */
    for (int k = 0; k < 2; k++) {
      int u = must[k];
      if (pl->n[v] != pl->n[u] || pl->first[v] != pl->first[u])
        surge_runtime_error("burst planner: its plan puts node %d '%s' on ranks %d..%d, not on those of node %d '%s' "
                            "(%d..%d), which it must share (a bug)",
                            v, g->v[v].name, pl->first[v], pl->first[v] + pl->n[v] - 1, u, g->v[u].name,
                            pl->first[u], pl->first[u] + pl->n[u] - 1);
    }
  }
}

void burst_frontier_plan(const burst_frontier_t *f, int i, burst_plan_t *plan) {
  frontier_impl_t *F = f->impl;
  if (i < 0 || i >= f->n) surge_runtime_error("burst frontier: no point %d (it has %d)", i, f->n);
  burst_plan_alloc(plan, F->c.g->n, &F->c.o);
  const pf_pt_t *q = &F->front.p[i];
  int C = F->c.C, r = q->k / C;
  restrict_run(F, F->ties ? r : -1); /* the run's blocks are solved again on its table */
  pf_recover_seq(&F->E, &F->c.top, -1, C - 1, 0, &F->top[r], q->k % C, q->i, 0, plan);
  restrict_run(F, -1);
  check_kept(F->c.g, plan);
  burst_ctx_evaluate(&F->c, plan);
  if (!agrees(plan->iter_us, q->t) || !agrees(plan->rank_us, q->r))
    surge_runtime_error("burst planner: the search predicted %.6f us and %.6f rank-us but its plan evaluates to "
                        "%.6f us and %.6f rank-us",
                        q->t, q->r, plan->iter_us, plan->rank_us);
}

int burst_frontier_fastest_within(const burst_frontier_t *f, double rank_us) {
  for (int x = 0; x < f->n; x++)
    if (f->pt[x].rank_us <= rank_us) return x;
  return -1;
}

int burst_frontier_leanest_within(const burst_frontier_t *f, double iter_us) {
  int best = -1;
  for (int x = 0; x < f->n && f->pt[x].iter_us <= iter_us; x++) best = x;
  return best;
}

void burst_frontier_free(burst_frontier_t *f) {
  frontier_impl_t *F = f->impl;
  if (F) {
    for (int r = 0; r < F->runs; r++) pf_run_free(&F->top[r]);
    free(F->top);
    free(F->tie);
    free(F->w);
    pf_free(&F->front);
    burst_ctx_free(&F->c);
    free(F);
  }
  free(f->pt);
  memset(f, 0, sizeof *f);
}

void burst_search(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, burst_plan_t *plan) {
  burst_frontier_t f;
  frontier_run(g, p, o, 0, 1, &f);
  burst_frontier_plan(&f, 0, plan);
  burst_frontier_free(&f);
}
