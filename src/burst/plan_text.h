/* The text of a burst plan file (doc/burst.md, "Plan files") as a run keeps it for its log: the file
 * itself, or the text of a plan searched at start-up. (Its predictions are data lines that
 * burst_plan_read reads into the plan.) */
#ifndef SURGE_BURST_PLAN_TEXT_H
#define SURGE_BURST_PLAN_TEXT_H

#include "burst/plan.h"

/* The whole plan file, malloc'd; a file that cannot be read is an input error naming it. */
char *plan_text_read(const char *path);

/* The plan file text of plan (burst_plan_write's format, with its predictions), malloc'd. */
char *plan_text_of(const graph_t *g, const char *model, const burst_plan_t *plan);

#endif
