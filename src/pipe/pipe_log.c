/* A 3d run's records in the metrics log (pipe/pipe_log.h). */
#include "pipe/pipe_log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static void put_pipeline(run_log_t *log, const log_pipe_info_t *info) {
  char kinds[256] = "";
  for (int k = 0; k < LOG_PIPE_KIND_COUNT; k++)
    snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", k ? "," : "", log_pipe_kind_name[k]);
  const log_attr_t attr[] = {
      LOG_ATTR_INT(LOG_PIPE_TP, info->tp),
      LOG_ATTR_INT(LOG_PIPE_PP, info->pp),
      LOG_ATTR_INT(LOG_PIPE_DP, info->dp),
      LOG_ATTR_INT(LOG_PIPE_MICRO_BATCHES, info->micro_batches),
      LOG_ATTR_TEXT(LOG_PIPE_SCHEDULE, info->schedule),
      LOG_ATTR_TEXT(LOG_PIPE_EVENT_KINDS, kinds),
      LOG_ATTR_REAL(LOG_PIPE_BUBBLE_THEORY, info->bubble_theory),
  };
  run_log_attrs(log, LOG_PIPE, attr, (int)(sizeof attr / sizeof attr[0]));
  size_t n = (size_t)info->pp;
  int *index = xcalloc(n + 1, sizeof *index);
  for (size_t i = 0; i < n; i++) index[i] = (int)i;
  const void *values[LOG_PIPE_STAGE_COLUMN_COUNT] = {index, info->first_block, info->blocks, info->mflop, info->held,
                                                      info->act_bytes};
  log_column_decl_t col[LOG_PIPE_STAGE_COLUMN_COUNT];
  for (int j = 0; j < LOG_PIPE_STAGE_COLUMN_COUNT; j++)
    col[j] = (log_column_decl_t){log_pipe_stage_info[j], j < LOG_PIPE_STAGE_MFLOP ? LOG_VALUE_INT : LOG_VALUE_REAL, 0};
  run_log_table(log, LOG_PIPE_STAGES, col, values, LOG_PIPE_STAGE_COLUMN_COUNT, n, NULL, NULL);
  free(index);
}

static log_rows_t *declare_events(run_log_t *log) {
  log_column_decl_t col[LOG_PIPE_COLUMN_COUNT];
  for (int c = 0; c < LOG_PIPE_COLUMN_COUNT; c++)
    col[c] = (log_column_decl_t){log_pipe_info[c], c >= LOG_PIPE_START ? LOG_VALUE_REAL : LOG_VALUE_INT, 0};
  log_group_decl_t d = {.path = LOG_PIPE_EVENTS, .feature = "the pipeline timeline", .each_step = 0,
                        .ncolumns = LOG_PIPE_COLUMN_COUNT, .column = col};
  return run_log_rows(log, &d);
}

static log_rows_t *declare_compress(run_log_t *log, int boundaries) {
  log_column_decl_t col[LOG_CMP_METRIC_COUNT];
  for (int c = 0; c < LOG_CMP_METRIC_COUNT; c++)
    col[c] = (log_column_decl_t){log_compress_info[c], LOG_VALUE_REAL, c >= LOG_CMP_PER_BOUNDARY ? boundaries : 0};
  log_group_decl_t d = {.path = LOG_CMP_GROUP, .feature = "compression", .each_step = 0,
                        .ncolumns = LOG_CMP_METRIC_COUNT, .column = col};
  return run_log_rows(log, &d);
}

void pipe_log_open(pipe_log_t *pl, run_log_t *log, const log_pipe_info_t *info, const char *compress_summary) {
  memset(pl, 0, sizeof *pl);
  put_pipeline(log, info);
  pl->events = declare_events(log);
  if (!compress_summary) return;
  pl->boundaries = info->pp > 1 ? info->pp - 1 : 1;
  pl->compress = declare_compress(log, pl->boundaries);
  const log_attr_t summary = LOG_ATTR_TEXT(LOG_CMP_SUMMARY, compress_summary);
  run_log_attrs(log, LOG_CMP_GROUP, &summary, 1);
}

void pipe_log_events(pipe_log_t *pl, long step, const log_pipe_event_t *ev, size_t n) {
  if (!run_log_rows_active(pl->events)) return;
  for (size_t i = 0; i < n; i++) {
    const log_pipe_event_t *e = &ev[i];
    const void *values[LOG_PIPE_COLUMN_COUNT] = {
        [LOG_PIPE_RANK] = &e->rank, [LOG_PIPE_STAGE] = &e->stage, [LOG_PIPE_MICRO_BATCH] = &e->mb,
        [LOG_PIPE_KIND] = &e->kind, [LOG_PIPE_START] = &e->start, [LOG_PIPE_END] = &e->end,
    };
    run_log_append(pl->events, step, values);
  }
}

void pipe_log_compress(pipe_log_t *pl, long step, const log_compress_row_t *row) {
  if (!run_log_rows_active(pl->compress)) return;
  if (row->boundaries != pl->boundaries)
    surge_runtime_error("log: a /compress row of %d boundaries where the run has %d", row->boundaries, pl->boundaries);
  const void *values[LOG_CMP_METRIC_COUNT] = {
      [LOG_CMP_ACT_GRAD_RAW] = &row->act_grad_raw_bytes, [LOG_CMP_DP_RAW] = &row->dp_raw_bytes,
      [LOG_CMP_SECONDS] = &row->seconds, [LOG_CMP_COS_MEAN] = &row->lep_cos_mean,
      [LOG_CMP_ERROR_NORM] = row->error_norm, [LOG_CMP_COS] = row->lep_cos,
  };
  run_log_append(pl->compress, step, values);
}
