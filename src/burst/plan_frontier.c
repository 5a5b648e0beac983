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
  pf_run_t top;
  pf_set_t front; /* k = the last node's configuration, i = the point's index in its set */
} frontier_impl_t;

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

static void frontier_run(const bgraph_t *g, const burst_profile_t *p, const burst_opts_t *o, double tol,
                         int keep_one, burst_frontier_t *f) {
  if (!(tol >= 0) || !isfinite(tol)) surge_input_error("frontier tolerance %g must be finite and >= 0", tol);
  memset(f, 0, sizeof *f);
  frontier_impl_t *F = xcalloc(1, sizeof *F);
  burst_ctx_init(&F->c, g, p, o);
  burst_ctx_tables(&F->c);
  int C = F->c.C;
  f->blocks = count_blocks(&F->c.top);
  f->tol = tol;
  F->E = (pf_engine_t){&F->c, keep_one, tol > 0 && f->blocks ? log1p(tol) / (2.0 * f->blocks) : 0};
  pf_seq_run(&F->E, &F->c.top, -1, -1, C - 1, 0, &F->top);
  pf_set_t tmp = {0, 0, NULL};
  const pf_set_t *last = F->top.st + (size_t)(F->top.n - 1) * C;
  for (int e = 0; e < C; e++) pf_merge_shifted(&F->front, &last[e], 0, 0, e, -1, keep_one, &tmp);
  pf_free(&tmp);
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

void burst_frontier_plan(const burst_frontier_t *f, int i, burst_plan_t *plan) {
  frontier_impl_t *F = f->impl;
  if (i < 0 || i >= f->n) surge_runtime_error("burst frontier: no point %d (it has %d)", i, f->n);
  burst_plan_alloc(plan, F->c.g->n, &F->c.o);
  const pf_pt_t *q = &F->front.p[i];
  pf_recover_seq(&F->E, &F->c.top, -1, F->c.C - 1, 0, &F->top, q->k, q->i, 0, plan);
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
    pf_run_free(&F->top);
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
