/* A 3d run's records in its metrics log (doc/formats.md): /pipeline (the grid, the schedule, the
 * theoretical bubble, a row per stage), /pipeline/events (the timeline of logged steps) and
 * /compress (the compressor's numbers per step): their names, the writer (pipe_log_*), and the log
 * parts that read them back (pipe_log_part, pipe_compress_log_part; io/log_part.h). */
#ifndef SURGE_PIPE_LOG_H
#define SURGE_PIPE_LOG_H

#include <stddef.h>

#include "io/log.h"
#include "io/log_part.h"

/* /pipeline (3D runs): the layout's attributes, one row per stage in /pipeline/stages, and per
 * logged step one row per event of each rank in /pipeline/events (after its step scale). An event's
 * kind is a number: its index in log_pipe_kind_name (also the /pipeline@event_kinds attribute). */
#define LOG_PIPE "/pipeline"
#define LOG_PIPE_STAGES "/pipeline/stages"
#define LOG_PIPE_EVENTS "/pipeline/events"
typedef enum log_pipe_kind {
  LOG_PIPE_FORWARD = 0,     /* a micro-batch's forward pass (with its loss on the last stage) */
  LOG_PIPE_BACKWARD,        /* a micro-batch's backward pass */
  LOG_PIPE_RECV_ACTIVATION, /* waiting for a micro-batch's activation from the previous stage */
  LOG_PIPE_RECV_GRADIENT,   /* waiting for the gradient of a micro-batch's output from the next stage */
  LOG_PIPE_SEND_WAIT,       /* waiting for a send to complete (before reusing its buffer, at the step's end) */
  LOG_PIPE_GRAD_SYNC,       /* finishing the data-parallel gradient sum */
  LOG_PIPE_EMBED_SYNC,      /* summing the tied word embedding's gradient over first and last stage */
  LOG_PIPE_KIND_COUNT
} log_pipe_kind_t;
extern const char *const log_pipe_kind_name[LOG_PIPE_KIND_COUNT];
typedef enum log_pipe_column {
  LOG_PIPE_RANK = 0,
  LOG_PIPE_STAGE,
  LOG_PIPE_MICRO_BATCH,
  LOG_PIPE_KIND,
  LOG_PIPE_START,
  LOG_PIPE_END,
  LOG_PIPE_COLUMN_COUNT
} log_pipe_column_t;
extern const log_series_info_t log_pipe_info[LOG_PIPE_COLUMN_COUNT];
typedef enum log_pipe_stage_column {
  LOG_PIPE_STAGE_INDEX = 0,
  LOG_PIPE_STAGE_FIRST_BLOCK,
  LOG_PIPE_STAGE_BLOCKS,
  LOG_PIPE_STAGE_MFLOP,
  LOG_PIPE_STAGE_HELD,
  LOG_PIPE_STAGE_ACT_BYTES,
  LOG_PIPE_STAGE_COLUMN_COUNT
} log_pipe_stage_column_t;
extern const log_series_info_t log_pipe_stage_info[LOG_PIPE_STAGE_COLUMN_COUNT];
#define LOG_PIPE_TP "tp"
#define LOG_PIPE_PP "pp"
#define LOG_PIPE_DP "dp"
#define LOG_PIPE_MICRO_BATCHES "micro_batches"
#define LOG_PIPE_SCHEDULE "schedule"
#define LOG_PIPE_EVENT_KINDS "event_kinds"
#define LOG_PIPE_BUBBLE_THEORY "theoretical_bubble"

/* /compress (3d runs with [compress] on): per step, after its step scale, the compressor's numbers;
 * the per-boundary ones are 2-D (steps, boundaries), boundary j between stages j and j + 1 (the
 * gradients stage j + 1 sends to stage j). /compress@summary: the choices, as printed at start. */
typedef enum log_compress_metric {
  LOG_CMP_ACT_GRAD_RAW = 0, /* bytes the compressed pipeline gradients would have taken exact */
  LOG_CMP_DP_RAW,           /* bytes the compressed data-parallel matrices would have taken exact */
  LOG_CMP_SECONDS,          /* the compressor's own arithmetic, the slowest rank */
  LOG_CMP_COS_MEAN,         /* the LEP diagnostic over every boundary */
  LOG_CMP_ERROR_NORM,       /* (steps, boundaries) */
  LOG_CMP_COS,              /* (steps, boundaries) */
  LOG_CMP_METRIC_COUNT
} log_compress_metric_t;
extern const log_series_info_t log_compress_info[LOG_CMP_METRIC_COUNT];
#define LOG_CMP_PER_BOUNDARY LOG_CMP_ERROR_NORM /* this one and the ones after it are 2-D */
#define LOG_CMP_GROUP "/compress"
#define LOG_CMP_SUMMARY "summary"

/* A 3d run's /pipeline, as read back. */
typedef struct log_pipe {
  long long tp, pp, dp, micro_batches; /* -1 when absent */
  char schedule[16];
  double bubble_theory;                /* NaN when absent */
  log_table_t stages;                  /* /pipeline/stages: stage, first_block, blocks, ... */
  log_table_t events;                  /* /pipeline/events: step, rank, stage, micro_batch, kind, start, end */
} log_pipe_t;

/* A 3d run's /compress, as read back. */
typedef struct log_compress {
  char summary[512];    /* /compress@summary: the choices in words; "" when absent */
  log_table_t series;   /* step, activation_grad_raw_bytes, dp_raw_bytes, compress_seconds, lep_cos_mean */
  log_table_t boundary; /* (rows, boundaries): error_norm, lep_cos; row i is series row i */
} log_compress_t;

/* The parts' names: log_part_data(log, PIPE_LOG_PART) is a 3d run's log_pipe_t, and
 * log_part_data(log, PIPE_COMPRESS_PART) its log_compress_t when it compressed. */
#define PIPE_LOG_PART "pipeline"
#define PIPE_COMPRESS_PART "compress"
extern const log_part_t pipe_log_part, pipe_compress_log_part;
/* Their sections of surge-report's summary (report/report.h), and the pipeline's Gantt chart. */
extern const struct report_view pipe_report_view, pipe_compress_report_view;

/* The pipeline: its grid, schedule, theoretical bubble and one row per stage (arrays of pp). */
typedef struct log_pipe_info {
  int tp, pp, dp, micro_batches;
  const char *schedule;
  double bubble_theory;
  const int *first_block, *blocks;          /* (pp) */
  const double *mflop, *held, *act_bytes;   /* (pp) */
} log_pipe_info_t;

/* One event of a step on a rank (/pipeline/events): kind is a log_pipe_kind_t, mb -1 for the step. */
typedef struct log_pipe_event {
  int rank, stage, mb, kind;
  double start, end; /* seconds since the layout started */
} log_pipe_event_t;

/* The compression of a step (/compress; io/log_format.h says what each is). */
typedef struct log_compress_row {
  double act_grad_raw_bytes, dp_raw_bytes, seconds, lep_cos_mean;
  int boundaries;                    /* pp - 1 */
  const double *error_norm, *lep_cos; /* (boundaries) */
} log_compress_row_t;

/* The log's handles of a 3d run's groups. */
typedef struct pipe_log {
  log_rows_t *events, *compress; /* compress: NULL without compression */
  int boundaries;                /* pp - 1 (at least 1): the per-boundary values of a /compress row */
} pipe_log_t;

/* Collective: /pipeline's attributes and /pipeline/stages (a resumed run replaces them), the events'
 * group, and with compression (compress_summary not NULL: the choices in words) /compress. */
void pipe_log_open(pipe_log_t *pl, run_log_t *log, const log_pipe_info_t *info, const char *compress_summary);
/* Rank 0 writes ev, the events of every rank: a step's rows of /pipeline/events. */
void pipe_log_events(pipe_log_t *pl, long step, const log_pipe_event_t *ev, size_t n);
/* Rank 0 writes: a step's row of /compress. */
void pipe_log_compress(pipe_log_t *pl, long step, const log_compress_row_t *row);

#endif
