/* Multiplexing's record in a run's metrics log (/multiplex, doc/formats.md): its names and the log
 * part that reads it back (mux_log_part, io/log_part.h). The run's side (train/multiplex.c) writes it. */
#ifndef SURGE_MUX_LOG_H
#define SURGE_MUX_LOG_H

#include "io/log_part.h"

/* /multiplex: per step (after its step scale, the same steps as /metrics) these series. */
typedef enum log_mux_metric {
  LOG_MUX_FG_SPS = 0,
  LOG_MUX_BG_SPS,
  LOG_MUX_TOTAL_SPS,
  LOG_MUX_ACTIVE,
  LOG_MUX_METRIC_COUNT
} log_mux_metric_t;
extern const log_series_info_t log_multiplex_info[LOG_MUX_METRIC_COUNT];

/* /multiplex (multiplexed runs): per step log_multiplex_info's series, and attributes. */
#define LOG_MUX_GROUP "/multiplex"
#define LOG_MUX_ROLE "role"
#define LOG_MUX_CHANNEL "channel"
#define LOG_MUX_PRIORITY "priority"
#define LOG_MUX_ON_FOREGROUND_END "on_foreground_end"
#define LOG_MUX_FOREGROUND_SLOWDOWN "foreground_slowdown"
/* and the run's totals under the names of log_multiplex_info[LOG_MUX_FG_SPS .. LOG_MUX_TOTAL_SPS] */


/* A multiplexed run's /multiplex, as read back. */
typedef struct log_mux {
  char role[16];                /* "foreground" or "background" */
  char channel[72], priority[32], on_foreground_end[16];
  double fg_samples_per_sec, bg_samples_per_sec, total_samples_per_sec; /* the run's totals; NaN when absent */
  double fg_slowdown;           /* foreground step time with / without a partner; NaN: not measured */
  log_table_t series;           /* per step: step, foreground_samples_per_sec, background_samples_per_sec,
                                 * total_samples_per_sec, background_ranks_active; row i is /metrics/step[i] */
} log_mux_t;

/* The part's name: log_part_data(log, MUX_LOG_PART) is a multiplexed run's log_mux_t. */
#define MUX_LOG_PART "multiplex"
extern const log_part_t mux_log_part;
/* Its views in surge-report (report/report.h): a section, the per-step series, JSON, table columns. */
extern const struct report_view mux_report_view;

#endif
