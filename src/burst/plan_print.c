/* Human-readable plan tables and the Pareto frontier (doc/burst.md explains how to read them). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "burst/plan.h"
#include "core/error.h"

static void print_limit(FILE *f, double a) {
  if (isinf(a))
    fprintf(f, "none");
  else
    fprintf(f, "%g", a);
}

/* Why the limit loses to data parallelism: how many nodes break it there, and the first three of
 * its limit groups that do (a group by its first node and how many more it holds, its amplification
 * the group's). */
static void print_dp_note(FILE *f, const bgraph_t *g, const burst_plan_t *plan, const burst_plan_t *dp) {
  int *group = xmalloc((size_t)g->n * sizeof *group), *size = xcalloc((size_t)g->n, sizeof *size);
  bgraph_limit_groups(g, group);
  for (int v = 0; v < g->n; v++) size[group[v]]++;
  int over = 0, groups = 0;
  char names[240] = "";
  for (int v = 0; v < g->n; v++) {
    if (!(dp->amp[v] > plan->amp_limit * (1 + 1e-12))) continue;
    over++;
    if (group[v] != v || groups++ >= 3) continue; /* the first three groups, each named by its first node */
    size_t used = strlen(names);
    char more[32] = "";
    if (size[v] > 1) snprintf(more, sizeof more, " with %d more", size[v] - 1);
    snprintf(names + used, sizeof names - used, "%s%s%s %.2f", used ? ", " : "", g->v[v].name, more, dp->amp[v]);
  }
  if (over)
    fprintf(f, "note: data parallelism predicts %.3f us, faster than this plan, and %d node%s break%s the limit "
               "A = %g there (%s%s)\n",
            dp->iter_us, over, over == 1 ? "" : "s", over == 1 ? "s" : "", plan->amp_limit, names,
            groups > 3 ? ", ..." : "");
  free(group);
  free(size);
}

void burst_plan_print_bg(FILE *f, const bgraph_t *g, const burst_plan_t *plan, const burst_plan_t *dp) {
  fprintf(f, "burst plan: %d ranks, global batch %d, amplification limit A = ", plan->ranks, plan->batch);
  print_limit(f, plan->amp_limit);
  fprintf(f, "\n%4s  %-24s %-12s %5s %5s %6s %11s %11s %11s %7s", "node", "name", "kind", "ranks", "first", "batch",
          "comp_us", "xfer_us", "sync_us", "amp");
  if (dp) fprintf(f, " | %5s %11s", "dp_n", "dp_us");
  fprintf(f, "\n");
  for (int v = 0; v < plan->nodes; v++) {
    fprintf(f, "%4d  %-24s %-12s %5d %5d %6d %11.3f %11.3f %11.3f %7.3f", v, g->v[v].name, g->v[v].kind,
            plan->n[v], plan->first[v], plan->per_rank[v], plan->comp_us[v],
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
  if (dp && dp->iter_us < plan->iter_us && !isinf(plan->amp_limit)) print_dp_note(f, g, plan, dp);
  int segments = 0;
  for (int v = 0; v < g->n; v++) segments += g->v[v].recompute_from > 0;
  if (segments)
    fprintf(f, "recomputed segments: %d, each on one rank set; its last node's comp_us holds its re-run forwards "
               "(doc/recompute.md)\n", segments);
}

/* The largest node amplification of a plan: the least limit A that admits it. */
static double plan_max_amp(const burst_plan_t *pl) {
  double a = 1;
  for (int v = 0; v < pl->nodes; v++)
    if (pl->amp[v] > a) a = pl->amp[v];
  return a;
}

void burst_frontier_print(FILE *f, const burst_frontier_t *fr, const burst_plan_t *dp, int max_rows) {
  int rows = fr->n < max_rows ? fr->n : max_rows < 2 ? 2 : max_rows;
  if (rows > fr->n) rows = fr->n;
  fprintf(f, "Pareto frontier of iteration time against rank-time: %d plans no other plan beats in both%s\n", fr->n,
          fr->tol > 0 && fr->blocks ? "" : " (exact)");
  if (fr->tol > 0 && fr->blocks)
    fprintf(f, "(within a factor %g: every plan has a frontier point at most that much worse in both)\n",
            1 + fr->tol);
  if (rows < fr->n) fprintf(f, "%d of them, leanest first, evenly spread:\n", rows);
  fprintf(f, "%11s %15s %7s %6s %9s", "iter_us", "rank_us", "amp", "ranks", "max_A");
  if (dp) fprintf(f, " %9s %9s", "vs_dp", "idle");
  fprintf(f, "\n");
  for (int r = 0; r < rows; r++) {
    /* row r of rows, leanest first: point index from n-1 down to 0 */
    int x = rows == 1 ? 0 : fr->n - 1 - (int)llround((double)r * (fr->n - 1) / (rows - 1));
    burst_plan_t pl;
    burst_frontier_plan(fr, x, &pl);
    fprintf(f, "%11.3f %15.3f %7.3f %6d %9.4g", fr->pt[x].iter_us, fr->pt[x].rank_us,
            fr->pt[x].rank_us / fr->one_rank_us, pl.ranks_used, plan_max_amp(&pl));
    if (dp) /* a residual skip's re-shard counts in rank-time beside its branch: idle can round below 0 */
      fprintf(f, " %8.3fx %8.1f%%", dp->iter_us / fr->pt[x].iter_us,
              fmax(0, 100 * (1 - fr->pt[x].rank_us / (fr->pt[x].iter_us * pl.ranks))));
    fprintf(f, "\n");
    burst_plan_free(&pl);
  }
  if (dp)
    fprintf(f, "data parallel: %.3f us, %.3f rank-us, amplification %.3f\n", dp->iter_us, dp->rank_us,
            dp->rank_us / dp->one_rank_us);
}
