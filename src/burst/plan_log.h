/* A burst plan's record in the run's metrics log (/plan, doc/formats.md). */
#ifndef SURGE_BURST_PLAN_LOG_H
#define SURGE_BURST_PLAN_LOG_H

#include "burst/plan.h"
#include "io/log.h"
#include "nn/graph.h"

/* Collective (rank 0 writes): /plan for the plan the run executes; g is the graph it is for. */
void burst_plan_log(const burst_plan_t *plan, const graph_t *g, const char *plan_text, run_log_t *log);

#endif
