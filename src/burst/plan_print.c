/* Human-readable plan tables and the Pareto frontier (doc/burst.md explains how to read them). */
#include <math.h>

#include "burst/plan.h"

static void print_limit(FILE *f, double a) {
  if (isinf(a))
    fprintf(f, "none");
  else
    fprintf(f, "%g", a);
}

void burst_plan_print(FILE *f, const graph_t *g, const burst_plan_t *plan, const burst_plan_t *dp) {
  fprintf(f, "burst plan: %d ranks, global batch %d, amplification limit per layer A = ", plan->ranks, plan->batch);
  print_limit(f, plan->amp_limit);
  fprintf(f, "\n%4s  %-24s %-12s %5s %5s %6s %11s %11s %11s %7s", "node", "name", "kind", "ranks", "first", "batch",
          "comp_us", "xfer_us", "sync_us", "amp");
  if (dp) fprintf(f, " | %5s %11s", "dp_n", "dp_us");
  fprintf(f, "\n");
  for (int v = 0; v < plan->nodes; v++) {
    fprintf(f, "%4d  %-24s %-12s %5d %5d %6d %11.3f %11.3f %11.3f %7.3f", v, g->l[v].name,
            layer_kind_name(g->l[v].kind), plan->n[v], plan->first[v], plan->per_rank[v], plan->comp_us[v],
            plan->xfer_us[v], plan->sync_us[v], plan->amp[v]);
    if (dp) fprintf(f, " | %5d %11.3f", dp->n[v], dp->xfer_us[v] + dp->comp_us[v] + dp->sync_us[v]);
    fprintf(f, "\n");
  }
  fprintf(f, "predicted iteration time: %.3f us", plan->iter_us);
  if (dp) fprintf(f, " (data parallel %.3f us: %.3fx)", dp->iter_us, dp->iter_us / plan->iter_us);
  fprintf(f, "; one rank with the whole batch: %.3f us\n", plan->one_rank_us);
  fprintf(f, "rank-time: %.3f rank-us, amplification %.3f", plan->rank_us, plan->rank_us / plan->one_rank_us);
  if (dp) fprintf(f, " (data parallel %.3f rank-us, amplification %.3f)", dp->rank_us, dp->rank_us / dp->one_rank_us);
  fprintf(f, "\nranks used: %d of %d\n", plan->ranks_used, plan->ranks);
}

void burst_pareto_print(FILE *f, const burst_pareto_point_t *pts, int n, const burst_plan_t *dp) {
  fprintf(f, "Pareto frontier: predicted iteration time against rank-time (a plan with A >= the first column\n"
             "reaches the row; more rank-time buys a shorter iteration)\n");
  fprintf(f, "%10s %13s %15s %7s %6s", "A", "iter_us", "rank_us", "amp", "ranks");
  if (dp) fprintf(f, " %9s", "vs_dp");
  fprintf(f, "\n");
  for (int i = 0; i < n; i++) {
    fprintf(f, "%10.4g %13.3f %15.3f %7.3f %6d", pts[i].amp_limit, pts[i].iter_us, pts[i].rank_us, pts[i].amp,
            pts[i].ranks_used);
    if (dp) fprintf(f, " %8.3fx", dp->iter_us / pts[i].iter_us);
    fprintf(f, "\n");
  }
  if (dp)
    fprintf(f, "data parallel: %.3f us, %.3f rank-us, amplification %.3f\n", dp->iter_us, dp->rank_us,
            dp->rank_us / dp->one_rank_us);
}
