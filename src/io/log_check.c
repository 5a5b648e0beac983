#include "io/log_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "comm/comm.h"
#include "io/log_format.h"
#include "io/log_part.h"

#define MAX_UNIX_TIME 1e11      /* year 5138 */

static const log_range_t any = LOG_RANGE_ANY;
static const log_range_t step = {0, LOG_MAX_STEP, 0, 0, 1};
static const log_range_t seconds = LOG_RANGE_SECONDS;
static const log_range_t rate = LOG_RANGE_RATE;
static const log_range_t count = LOG_RANGE_COUNT; /* bytes: uint64 */

static int is(const char *group, int g) { return strcmp(group, log_group_path[g]) == 0; }

static int has_prefix(const char *name, const char *prefix) { return strncmp(name, prefix, strlen(prefix)) == 0; }

log_range_t log_column_range(const char *group, const char *name) {
  const log_group_format_t *f = log_group_format(group);
  if (strcmp(name, LOG_STEP) == 0 && (!f || f->stepped)) return step;
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
  } else if (f && f->range) {
    for (int c = 0; c < f->ncolumns; c++)
      if (strcmp(name, f->column[c].name) == 0) return f->range[c];
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
  const log_group_format_t *f = log_group_format(group);
  if (!f) return 0;
  if (f->stepped && i == 0) {
    snprintf(name, n, "%s", LOG_STEP);
    return 1;
  }
  i -= f->stepped;
  if (i >= f->nexpected) return 0;
  snprintf(name, n, "%s", f->column[f->expected ? f->expected[i] : i].name);
  return 1;
}

