#include "io/log_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "io/log_format.h"

#define MAX_RANKS 16777216.0    /* 2^24: more ranks than any job */
#define MAX_SECONDS 1e9         /* a phase or step of 30 years is damage */
#define MAX_UNIX_TIME 1e11      /* year 5138 */

static const log_range_t any = {-INFINITY, INFINITY, 1, 1, 0};
static const log_range_t step = {0, LOG_MAX_STEP, 0, 0, 1};
static const log_range_t seconds = {0, MAX_SECONDS, 1, 0, 0};
static const log_range_t rate = {0, INFINITY, 1, 1, 0};
static const log_range_t count = {0, 18446744073709551616.0, 0, 0, 1}; /* bytes: uint64 */

static int is(const char *group, int g) { return strcmp(group, log_group_path[g]) == 0; }

static int has_prefix(const char *name, const char *prefix) { return strncmp(name, prefix, strlen(prefix)) == 0; }

log_range_t log_column_range(const char *group, const char *name) {
  if (strcmp(name, LOG_STEP) == 0 && strcmp(group, LOG_PLAN) != 0) return step;
  if (is(group, LOG_METRICS)) {
    if (strcmp(name, log_metric_info[LOG_LR].name) == 0) return (log_range_t){0, INFINITY, 1, 0, 0};
    if (strcmp(name, log_metric_info[LOG_GRAD_NORM].name) == 0) return rate;
    if (strcmp(name, log_metric_info[LOG_STEP_TIME].name) == 0) return seconds;
    if (strcmp(name, log_metric_info[LOG_SAMPLES_PER_SEC].name) == 0) return rate;
    if (has_prefix(name, LOG_BYTES_PREFIX)) return count;
  } else if (is(group, LOG_RANKS)) {
    if (has_prefix(name, LOG_PHASE_PREFIX)) return seconds;
  } else if (is(group, LOG_EVAL)) {
    if (strcmp(name, log_eval_info[LOG_EVAL_ACCURACY].name) == 0) return (log_range_t){0, 1, 1, 0, 0};
  } else if (is(group, LOG_EVENTS)) {
    if (strcmp(name, log_event_info[LOG_EVENT_TIME].name) == 0) return (log_range_t){0, MAX_UNIX_TIME, 1, 0, 0};
  } else if (is(group, LOG_MULTIPLEX)) {
    if (strcmp(name, log_multiplex_info[LOG_MUX_ACTIVE].name) == 0) return (log_range_t){0, MAX_RANKS, 1, 0, 0};
    for (int m = 0; m < LOG_MUX_METRIC_COUNT; m++)
      if (strcmp(name, log_multiplex_info[m].name) == 0) return rate;
  } else if (strcmp(group, LOG_PLAN) == 0) {
    if (strcmp(name, log_plan_info[LOG_PLAN_NODE].name) == 0 ||
        strcmp(name, log_plan_info[LOG_PLAN_FIRST_RANK].name) == 0)
      return (log_range_t){0, MAX_RANKS, 0, 0, 1};
    if (strcmp(name, log_plan_info[LOG_PLAN_RANKS].name) == 0) return (log_range_t){1, MAX_RANKS, 0, 0, 1};
    if (strcmp(name, log_plan_info[LOG_PLAN_PER_RANK_BATCH].name) == 0) return (log_range_t){0, 2147483647.0, 0, 0, 1};
    if (strcmp(name, log_plan_info[LOG_PLAN_COMPUTE_US].name) == 0 ||
        strcmp(name, log_plan_info[LOG_PLAN_TRANSFER_IN_US].name) == 0 ||
        strcmp(name, log_plan_info[LOG_PLAN_SYNC_US].name) == 0)
      return (log_range_t){0, 1e6 * MAX_SECONDS, 1, 0, 0};
  } else if (is(group, LOG_PIPELINE)) {
    if (strcmp(name, log_pipe_info[LOG_PIPE_RANK].name) == 0 || strcmp(name, log_pipe_info[LOG_PIPE_STAGE].name) == 0)
      return (log_range_t){0, MAX_RANKS, 0, 0, 1};
    if (strcmp(name, log_pipe_info[LOG_PIPE_MICRO_BATCH].name) == 0) return (log_range_t){-1, 2147483647.0, 0, 0, 1};
    if (strcmp(name, log_pipe_info[LOG_PIPE_KIND].name) == 0) return (log_range_t){0, LOG_PIPE_KIND_COUNT - 1, 0, 0, 1};
    if (strcmp(name, log_pipe_info[LOG_PIPE_START].name) == 0 || strcmp(name, log_pipe_info[LOG_PIPE_END].name) == 0)
      return seconds;
  } else if (is(group, LOG_COMPRESS)) {
    if (strcmp(name, log_compress_info[LOG_CMP_ACT_GRAD_RAW].name) == 0 ||
        strcmp(name, log_compress_info[LOG_CMP_DP_RAW].name) == 0)
      return count;
    if (strcmp(name, log_compress_info[LOG_CMP_SECONDS].name) == 0) return seconds;
  } else if (strcmp(group, LOG_PIPE_STAGES) == 0) {
    if (strcmp(name, log_pipe_stage_info[LOG_PIPE_STAGE_INDEX].name) == 0 ||
        strcmp(name, log_pipe_stage_info[LOG_PIPE_STAGE_FIRST_BLOCK].name) == 0 ||
        strcmp(name, log_pipe_stage_info[LOG_PIPE_STAGE_BLOCKS].name) == 0 ||
        strcmp(name, log_pipe_stage_info[LOG_PIPE_STAGE_HELD].name) == 0)
      return (log_range_t){0, 2147483647.0, 0, 0, 1};
    if (strcmp(name, log_pipe_stage_info[LOG_PIPE_STAGE_MFLOP].name) == 0 ||
        strcmp(name, log_pipe_stage_info[LOG_PIPE_STAGE_ACT_BYTES].name) == 0)
      return (log_range_t){0, INFINITY, 1, 0, 0};
  }
  return any; /* the losses, and columns the format does not document */
}

int log_in_range(const log_range_t *r, double v) {
  if (isnan(v)) return r->nan_ok;
  if (isinf(v)) return r->inf_ok;
  return v >= r->lo && v <= r->hi && (!r->whole || v == floor(v));
}

/* The i-th name of a group whose step scale comes first, then the n names of table (prefixed). */
static int nth_after_step(int i, const log_series_info_t *table, int n, const char *prefix, char *name, size_t len) {
  if (i == 0) snprintf(name, len, "%s", LOG_STEP);
  else if (i - 1 < n) snprintf(name, len, "%s%s", prefix, table[i - 1].name);
  return i <= n;
}

int log_expected_column(const char *group, int i, int multiplexed, char *name, size_t n) {
  if (i < 0) return 0;
  if (is(group, LOG_METRICS)) {
    if (i <= LOG_METRIC_COUNT) return nth_after_step(i, log_metric_info, LOG_METRIC_COUNT, "", name, n);
    i -= LOG_METRIC_COUNT + 1;
    if (i >= TRAFFIC_COUNT) return 0;
    snprintf(name, n, "%s%s", LOG_BYTES_PREFIX, traffic_name((traffic_t)i));
    return 1;
  }
  if (is(group, LOG_RANKS)) {
    for (int p = 0; p < PHASE_COUNT; p++) {
      if (!multiplexed && log_phase_multiplexed((log_phase_t)p)) continue;
      if (i-- == 0) {
        snprintf(name, n, "%s%s", LOG_PHASE_PREFIX, log_phase_info[p].name);
        return 1;
      }
    }
    return 0;
  }
  if (is(group, LOG_EVAL)) return nth_after_step(i, log_eval_info, LOG_EVAL_COUNT, "", name, n);
  if (is(group, LOG_EVENTS)) return nth_after_step(i, log_event_info, LOG_EVENT_TIME + 1, "", name, n);
  if (is(group, LOG_MULTIPLEX)) return nth_after_step(i, log_multiplex_info, LOG_MUX_METRIC_COUNT, "", name, n);
  if (is(group, LOG_PIPELINE)) return nth_after_step(i, log_pipe_info, LOG_PIPE_COLUMN_COUNT, "", name, n);
  if (is(group, LOG_COMPRESS)) /* the 1-D columns; the per-boundary 2-D ones are read apart */
    return nth_after_step(i, log_compress_info, LOG_CMP_PER_BOUNDARY, "", name, n);
  if (strcmp(group, LOG_PIPE_STAGES) == 0) {
    if (i >= LOG_PIPE_STAGE_COLUMN_COUNT) return 0;
    snprintf(name, n, "%s", log_pipe_stage_info[i].name);
    return 1;
  }
  if (strcmp(group, LOG_PLAN) == 0) {
    static const log_plan_column_t required[] = {LOG_PLAN_NODE, LOG_PLAN_RANKS, LOG_PLAN_FIRST_RANK,
                                                 LOG_PLAN_PER_RANK_BATCH};
    if (i >= (int)(sizeof required / sizeof required[0])) return 0;
    snprintf(name, n, "%s", log_plan_info[required[i]].name);
    return 1;
  }
  return 0;
}
