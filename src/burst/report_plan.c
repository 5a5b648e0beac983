/* The burst plan section of the one-run summary: the plan's per-node table as the run logged it
 * (/plan), and the planner's predicted iteration time against the run's median measured step. */
#include <math.h>

#include "burst/plan_log.h"
#include "report/report.h"

/* One node's cell of a per-node column; "-" where the log has no value. */
static void add_cell(report_grid_t *g, const log_column_t *c, size_t row, const char *fmt) {
  if (c && isfinite(c->v[row]))
    report_grid_add(g, fmt, c->v[row]);
  else
    report_grid_add(g, "-");
}

static const log_column_t *plan_column(const log_plan_t *p, log_plan_column_t c) {
  return log_column(&p->nodes, log_plan_info[c].name);
}

static void print_nodes(FILE *f, const log_plan_t *p) {
  static const log_plan_column_t times[] = {LOG_PLAN_COMPUTE_US, LOG_PLAN_TRANSFER_IN_US, LOG_PLAN_SYNC_US};
  static const char *const heads[] = {"compute us", "transfer-in us", "sync us"};
  const log_column_t *node = plan_column(p, LOG_PLAN_NODE), *ranks = plan_column(p, LOG_PLAN_RANKS),
                     *first = plan_column(p, LOG_PLAN_FIRST_RANK), *batch = plan_column(p, LOG_PLAN_PER_RANK_BATCH),
                     *time[3];
  const char *head[3];
  int ntimes = 0;
  for (int i = 0; i < 3; i++) {
    const log_column_t *c = plan_column(p, times[i]);
    if (c) {
      time[ntimes] = c;
      head[ntimes++] = heads[i];
    }
  }
  report_grid_t g;
  report_grid_init(&g, 5 + ntimes, "rlrrrr");
  report_grid_add(&g, "node");
  report_grid_add(&g, "name");
  report_grid_add(&g, "ranks");
  report_grid_add(&g, "first");
  report_grid_add(&g, "batch/rank");
  for (int k = 0; k < ntimes; k++) report_grid_add(&g, "%s", head[k]);
  for (size_t r = 0; r < p->nodes.rows; r++) {
    if (node)
      add_cell(&g, node, r, "%.0f");
    else
      report_grid_add(&g, "%zu", r);
    report_grid_add(&g, "%s", p->name[r]);
    add_cell(&g, ranks, r, "%.0f");
    add_cell(&g, first, r, "%.0f");
    add_cell(&g, batch, r, "%.0f");
    for (int k = 0; k < ntimes; k++) add_cell(&g, time[k], r, "%.1f");
  }
  report_grid_print(f, &g, "  ");
  report_grid_free(&g);
}

static void print_plan(FILE *f, const log_data_t *L, const void *data, const report_values_t *v) {
  (void)L;
  const log_plan_t *p = data;
  fprintf(f, "  %zu nodes on %lld ranks, global batch %lld, amplification limit ", p->nodes.rows, p->job_ranks,
          p->global_batch);
  if (isfinite(p->amplification_limit))
    fprintf(f, "%g\n", p->amplification_limit);
  else
    fprintf(f, "none\n");
  print_nodes(f, p);
  if (isfinite(p->rank_us) && isfinite(p->one_rank_us) && p->one_rank_us > 0)
    fprintf(f, "  predicted rank-time %.1f rank-us, amplification %.3f (one rank: %.1f us)\n", p->rank_us,
            p->rank_us / p->one_rank_us, p->one_rank_us);
  double measured_us = 1e6 * v->step_median;
  if (!isfinite(p->iteration_us)) {
    fprintf(f, "  iteration   predicted: none (the plan file records none for its rank sets); measured %.1f us (median "
               "step)\n",
            measured_us);
    return;
  }
  fprintf(f, "  iteration   predicted %.1f us, measured %.1f us (median step), measured/predicted %.3f\n",
          p->iteration_us, measured_us, measured_us / p->iteration_us);
}

const report_view_t burst_plan_report_view = {
    .part = BURST_PLAN_PART, .title = "Burst plan (predicted by the planner, measured by this run)", .early = 0,
    .print = print_plan,
};
