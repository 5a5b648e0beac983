/* The burst plan a run executes, in its metrics log as /plan (doc/formats.md; the names are
 * burst/plan_log.h's, the columns' table plan_log_part.c's): per node its index, name, kind, rank
 * count, first rank and per-rank batch, the predicted compute / transfer-in / sync times when the
 * plan has them (some node's compute time is positive), the plan-wide predictions as attributes (NaN when plan->one_rank_us is 0: a
 * plan file read without a profile), and the plan file's text. A resumed run replaces it. */
#include "burst/plan_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"


static const log_value_t plan_value[LOG_PLAN_COLUMN_COUNT] = {
    [LOG_PLAN_NODE] = LOG_VALUE_INT,       [LOG_PLAN_NAME] = LOG_VALUE_TEXT,
    [LOG_PLAN_KIND] = LOG_VALUE_TEXT,      [LOG_PLAN_RANKS] = LOG_VALUE_INT,
    [LOG_PLAN_FIRST_RANK] = LOG_VALUE_INT, [LOG_PLAN_PER_RANK_BATCH] = LOG_VALUE_INT,
    [LOG_PLAN_COMPUTE_US] = LOG_VALUE_REAL, [LOG_PLAN_TRANSFER_IN_US] = LOG_VALUE_REAL,
    [LOG_PLAN_SYNC_US] = LOG_VALUE_REAL,
};

void burst_plan_log(const burst_plan_t *plan, const graph_t *g, const char *plan_text, run_log_t *log) {
  size_t n = (size_t)plan->nodes;
  int *index = xcalloc(n + 1, sizeof *index);
  const char **name = xcalloc(n + 1, sizeof *name), **kind = xcalloc(n + 1, sizeof *kind);
  int costed = 0;
  for (int v = 0; v < plan->nodes; v++) {
    index[v] = v;
    name[v] = g->l[v].name;
    kind[v] = layer_kind_name(g->l[v].kind);
    costed |= plan->comp_us[v] > 0;
  }
  log_column_decl_t col[LOG_PLAN_COLUMN_COUNT];
  for (int c = 0; c < LOG_PLAN_COLUMN_COUNT; c++) col[c] = (log_column_decl_t){log_plan_info[c], plan_value[c], 0};
  const void *values[LOG_PLAN_COLUMN_COUNT] = {
      [LOG_PLAN_NODE] = index,          [LOG_PLAN_NAME] = name,
      [LOG_PLAN_KIND] = kind,           [LOG_PLAN_RANKS] = plan->n,
      [LOG_PLAN_FIRST_RANK] = plan->first, [LOG_PLAN_PER_RANK_BATCH] = plan->per_rank,
      [LOG_PLAN_COMPUTE_US] = costed ? plan->comp_us : NULL,
      [LOG_PLAN_TRANSFER_IN_US] = costed ? plan->xfer_us : NULL,
      [LOG_PLAN_SYNC_US] = costed ? plan->sync_us : NULL,
  };
  run_log_table(log, LOG_PLAN, col, values, LOG_PLAN_COLUMN_COUNT, n, LOG_PLAN_TEXT, plan_text ? plan_text : "");
  int predicted = plan->one_rank_us > 0;
  const log_attr_t attr[] = {
      LOG_ATTR_REAL(LOG_PLAN_ITERATION_US, predicted ? plan->iter_us : NAN),
      LOG_ATTR_REAL(LOG_PLAN_RANK_US, predicted ? plan->rank_us : NAN),
      LOG_ATTR_REAL(LOG_PLAN_ONE_RANK_US, predicted ? plan->one_rank_us : NAN),
      LOG_ATTR_INT(LOG_PLAN_JOB_RANKS, plan->ranks),
      LOG_ATTR_INT(LOG_PLAN_GLOBAL_BATCH, plan->batch),
      LOG_ATTR_REAL(LOG_PLAN_AMPLIFICATION_LIMIT, plan->amp_limit),
  };
  run_log_attrs(log, LOG_PLAN, attr, (int)(sizeof attr / sizeof attr[0]));
  free(index);
  free(name);
  free(kind);
}
