/* A burst plan's record in the run's metrics log (/plan, doc/formats.md): its names, the writer
 * (burst_plan_log) and the log part that reads it back (burst_plan_log_part, io/log_part.h). */
#ifndef SURGE_BURST_PLAN_LOG_H
#define SURGE_BURST_PLAN_LOG_H

#include "burst/plan.h"
#include "io/log.h"
#include "io/log_part.h"
#include "nn/graph.h"

/* /plan (burst runs): one row per graph node, the plan file's text, and attributes. */
#define LOG_PLAN "/plan"
typedef enum log_plan_column {
  LOG_PLAN_NODE = 0,
  LOG_PLAN_NAME,
  LOG_PLAN_KIND,
  LOG_PLAN_RANKS,
  LOG_PLAN_FIRST_RANK,
  LOG_PLAN_PER_RANK_BATCH,
  LOG_PLAN_COMPUTE_US,     /* the predicted times: only in plans that have them */
  LOG_PLAN_TRANSFER_IN_US,
  LOG_PLAN_SYNC_US,
  LOG_PLAN_COLUMN_COUNT
} log_plan_column_t;
extern const log_series_info_t log_plan_info[LOG_PLAN_COLUMN_COUNT];
#define LOG_PLAN_TEXT "text"
#define LOG_PLAN_ITERATION_US "predicted_iteration_us"
#define LOG_PLAN_RANK_US "predicted_rank_us"
#define LOG_PLAN_ONE_RANK_US "one_rank_us"
#define LOG_PLAN_JOB_RANKS "job_ranks"
#define LOG_PLAN_GLOBAL_BATCH "global_batch"
#define LOG_PLAN_AMPLIFICATION_LIMIT "amplification_limit"

/* The burst plan a burst run executed, as read back from /plan. */
typedef struct log_plan {
  log_table_t nodes; /* numeric per-node datasets: node, ranks, first_rank, per_rank_batch, and
                      * compute_us, transfer_in_us, sync_us when the plan had predictions */
  char **name;       /* (nodes.rows) node names; "" where the log has none */
  double iteration_us, rank_us, one_rank_us, amplification_limit; /* NaN when absent */
  long long job_ranks, global_batch;                              /* -1 when absent */
  char *text;        /* the plan file; "" when absent */
} log_plan_t;

/* The part's name: log_part_data(log, BURST_PLAN_PART) is the log_plan_t of a burst run's log. */
#define BURST_PLAN_PART "plan"
extern const log_part_t burst_plan_log_part;
/* Its section of surge-report's summary (report/report.h). */
extern const struct report_view burst_plan_report_view;

/* Collective (rank 0 writes): /plan for the plan the run executes; g is the graph it is for. */
void burst_plan_log(const burst_plan_t *plan, const graph_t *g, const char *plan_text, run_log_t *log);

#endif
