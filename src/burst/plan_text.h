/* The text of a burst plan file (doc/burst.md, "Plan files") as a run keeps it for its log: the
 * file itself, and the plan-wide predictions burst_plan_write records in its "# predicted:" comment
 * (burst_plan_read skips comments, so a plan read without a profile has none of its own). */
#ifndef SURGE_BURST_PLAN_TEXT_H
#define SURGE_BURST_PLAN_TEXT_H

#include "burst/plan.h"

/* The whole plan file, malloc'd; a file that cannot be read is an input error naming it. */
char *plan_text_read(const char *path);

/* The plan file text of plan (burst_plan_write's format, with its predictions), malloc'd. */
char *plan_text_of(const graph_t *g, const char *model, const burst_plan_t *plan);

/* When plan has no predictions (one_rank_us is 0), take them from text's line
 * "# predicted: iteration I us, rank-time R rank-us, amplification A, ...": iter_us = I,
 * rank_us = R, one_rank_us = R / A. A text without such a line leaves plan as it is. */
void plan_text_predictions(const char *text, burst_plan_t *plan);

#endif
