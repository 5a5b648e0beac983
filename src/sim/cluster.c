/* One rank count G: data parallelism alone against burst plans with a background in their idle
 * time. Every evaluated frontier point's plan is recovered, laid out over one iteration, and
 * filled with the background; the best is the one with the most samples per second in total. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/timer.h"
#include "sim/sim.h"

/* Foreground and background throughput of a plan. */
static void outcome(const burst_plan_t *pl, const sim_bg_t *bg, double slowdown, int index, sim_point_t *pt) {
  sim_timeline_t tl;
  sim_timeline_of(pl, &tl);
  *pt = (sim_point_t){.index = index, .iter_us = pl->iter_us, .rank_us = pl->rank_us, .ranks_used = pl->ranks_used,
                      .idle_rank_us = tl.idle_rank_us};
  pt->bg_sps = bg ? sim_bg_fill(bg, &tl, &pt->bg_ideal_sps) : 0;
  double fg_us = pl->iter_us * (pt->bg_sps > 0 ? slowdown : 1);
  pt->fg_sps = pl->batch / fg_us * 1e6;
  pt->total_sps = pt->fg_sps + pt->bg_sps;
  sim_timeline_free(&tl);
}

void sim_cluster_run(const bgraph_t *g, const burst_profile_t *p, const sim_bg_t *bg, const sim_opts_t *so,
                     sim_result_t *r) {
  memset(r, 0, sizeof *r);
  if (!(so->fg_slowdown >= 1) || !isfinite(so->fg_slowdown))
    surge_input_error("foreground slowdown %g must be a finite number >= 1", so->fg_slowdown);
  r->ranks = so->o.ranks;
  r->batch = so->o.batch;
  burst_plan_t pl;
  burst_uniform(g, p, &so->o, burst_dp_ranks(&so->o), &pl);
  outcome(&pl, NULL, 1, -1, &r->dp); /* data parallelism alone: the baseline */
  burst_plan_free(&pl);

  double t0 = surge_now();
  burst_frontier_t fr;
  burst_frontier_build(g, p, &so->o, so->tol, &fr);
  r->seconds = surge_now() - t0;
  r->nfront = fr.n;
  r->front = xmalloc((size_t)fr.n * sizeof *r->front);
  memcpy(r->front, fr.pt, (size_t)fr.n * sizeof *r->front);
  int want = so->max_eval < 2 ? 2 : so->max_eval;
  r->neval = fr.n < want ? fr.n : want;
  r->eval = xmalloc((size_t)r->neval * sizeof *r->eval);
  for (int x = 0; x < r->neval; x++) {
    int i = r->neval == fr.n ? x : (int)llround((double)x * (fr.n - 1) / (r->neval - 1));
    burst_frontier_plan(&fr, i, &pl);
    outcome(&pl, bg, so->fg_slowdown, i, &r->eval[x]);
    burst_plan_free(&pl);
  }
  r->fastest = r->eval[0];
  r->best = r->eval[0];
  for (int x = 1; x < r->neval; x++)
    if (r->eval[x].total_sps > r->best.total_sps) r->best = r->eval[x];
  burst_frontier_free(&fr);
}

void sim_cluster_given(const bgraph_t *g, const burst_profile_t *p, const sim_bg_t *bg, const sim_opts_t *so,
                       const char *plan_path, sim_result_t *r) {
  burst_plan_t pl;
  burst_plan_read_bg(plan_path, g, &so->o, &pl);
  burst_evaluate(g, p, &so->o, &pl);
  outcome(&pl, bg, so->fg_slowdown, -1, &r->given);
  r->has_given = 1;
  burst_plan_free(&pl);
}

void sim_result_free(sim_result_t *r) {
  free(r->front);
  free(r->eval);
  memset(r, 0, sizeof *r);
}
