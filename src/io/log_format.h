/* The names of a Surge metrics log (layout: doc/formats.md), spelt once for the writer (log.c)
 * and the reader (log_read.c): its groups, the series of each group with their units and
 * descriptions, the attributes of /run, /plan and /multiplex, what makes a file a Surge log, and
 * the documented order of each group's columns. */
#ifndef SURGE_LOG_FORMAT_H
#define SURGE_LOG_FORMAT_H

#include <hdf5.h>

#include "io/h5util.h"

/* /run@program of every Surge log. */
#define LOG_PROGRAM "surge-train"

/* Groups whose series share their rows: each has a step scale (GROUP_RANKS: /metrics/step). */
typedef enum log_group {
  LOG_METRICS = 0,
  LOG_RANKS,
  LOG_EVAL,
  LOG_EVENTS,
  LOG_MULTIPLEX, /* multiplexed runs only */
  LOG_PIPELINE,  /* "/pipeline/events": 3D runs only */
  LOG_COMPRESS,  /* "/compress": 3D runs with compression only */
  LOG_SAMPLES,   /* "/samples": runs with [run] sample_every only (logs written before it have none) */
  LOG_GROUP_COUNT
} log_group_t;
extern const char *const log_group_path[LOG_GROUP_COUNT]; /* "/metrics", ... */

/* A dataset of the log: its name in its group, its units attribute, its description attribute. */
typedef struct log_series_info {
  const char *name, *units, *description;
} log_series_info_t;

/* Each group's scale: "step" of /metrics (whose rows /ranks shares), /eval, /events and
 * /multiplex; "rank" of /ranks (its columns). */
#define LOG_STEP "step"
extern const log_series_info_t log_scale_info[LOG_GROUP_COUNT];

/* /metrics, after the step: the metrics of a step, then LOG_BYTES_PREFIX + traffic_name() of each
 * comm traffic category (comm/comm.h). */
typedef enum log_metric {
  LOG_LOSS = 0,
  LOG_LR,
  LOG_GRAD_NORM,
  LOG_STEP_TIME,
  LOG_SAMPLES_PER_SEC,
  LOG_METRIC_COUNT
} log_metric_t;
extern const log_series_info_t log_metric_info[LOG_METRIC_COUNT];
#define LOG_BYTES_PREFIX "bytes_"
/* /metrics: LOG_INTERNODE_PREFIX + category: of those bytes, the ones that crossed nodes */
#define LOG_INTERNODE_PREFIX "internode_bytes_"

/* /ranks: LOG_PHASE_PREFIX + the phase's name, (steps, ranks) seconds per rank; the phases in the
 * order they run within a step. */
typedef enum log_phase {
  PHASE_DATA = 0,   /* fetching the batch */
  PHASE_FORWARD,    /* forward + loss */
  PHASE_BACKWARD,
  PHASE_WAIT,       /* waiting for the slowest rank before the gradient allreduce */
  PHASE_COMM,       /* inside collectives (gradient allreduce, metric reductions) */
  PHASE_OPTIMIZER,  /* clipping + optimizer update */
  PHASE_BACKGROUND, /* foreground: time its background partner ran during the step (lent time) */
  PHASE_PAUSED,     /* background: time paused at the gate, waiting for its foreground to be idle */
  PHASE_OFFERED,    /* foreground: time it published as idle or waiting (offered to its partner) */
  PHASE_COUNT
} log_phase_t;
extern const log_series_info_t log_phase_info[PHASE_COUNT]; /* name without the prefix */
#define LOG_PHASE_PREFIX "phase_"
/* The background and paused phases exist in the logs of multiplexed runs only. */
int log_phase_multiplexed(log_phase_t p);

/* /eval, /events and /multiplex after their step scale. */
typedef enum log_eval { LOG_EVAL_LOSS = 0, LOG_EVAL_ACCURACY, LOG_EVAL_COUNT } log_eval_t;
extern const log_series_info_t log_eval_info[LOG_EVAL_COUNT];
typedef enum log_event { LOG_EVENT_TIME = 0, LOG_EVENT_TEXT, LOG_EVENT_COUNT } log_event_t;
extern const log_series_info_t log_event_info[LOG_EVENT_COUNT];
/* /samples after its step scale: the text a run's model generated after an evaluation. */
typedef enum log_sample { LOG_SAMPLE_TEXT = 0, LOG_SAMPLE_COUNT } log_sample_t;
extern const log_series_info_t log_sample_info[LOG_SAMPLE_COUNT];
typedef enum log_mux_metric {
  LOG_MUX_FG_SPS = 0,
  LOG_MUX_BG_SPS,
  LOG_MUX_TOTAL_SPS,
  LOG_MUX_ACTIVE,
  LOG_MUX_METRIC_COUNT
} log_mux_metric_t;
extern const log_series_info_t log_multiplex_info[LOG_MUX_METRIC_COUNT];

/* /pipeline (3D runs): the layout's attributes, one row per stage in /pipeline/stages, and per
 * logged step one row per event of each rank in /pipeline/events (after its step scale). An event's
 * kind is a number: its index in log_pipe_kind_name (also the /pipeline@event_kinds attribute). */
#define LOG_PIPE "/pipeline"
#define LOG_PIPE_STAGES "/pipeline/stages"
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
#define LOG_CMP_SUMMARY "summary"

/* /run: attributes, and the resolved deck as a scalar string dataset. */
#define LOG_RUN "/run"
#define LOG_RUN_PROGRAM "program"
#define LOG_RUN_VERSION "version"
#define LOG_RUN_START_TIME "start_time"
#define LOG_RUN_RANKS "ranks"
#define LOG_RUN_LAYOUT "layout"
#define LOG_RUN_MODEL "model"
#define LOG_RUN_PARAMETERS "parameters"
#define LOG_RUN_GLOBAL_BATCH "global_batch"
#define LOG_RUN_FLUSH_EVERY "flush_every"
#define LOG_RUN_DECK "deck"
#define LOG_RUN_ID "run_id" /* the run's identity (io/run_dir.h), shared with its checkpoints */

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

/* /multiplex attributes (multiplexed runs). */
#define LOG_MUX_ROLE "role"
#define LOG_MUX_CHANNEL "channel"
#define LOG_MUX_PRIORITY "priority"
#define LOG_MUX_ON_FOREGROUND_END "on_foreground_end"
#define LOG_MUX_FOREGROUND_SLOWDOWN "foreground_slowdown"
/* and the run's totals under the names of log_multiplex_info[LOG_MUX_FG_SPS .. LOG_MUX_TOTAL_SPS] */

/* Every series dataset's attributes. */
#define LOG_UNITS "units"
#define LOG_DESCRIPTION "description"

/* Why an open HDF5 file is not a Surge log ("no /run group", "/run@program is not
 * \"surge-train\""), or NULL when it is one. HDF5 failures go to chk. */
const char *log_not_surge(hid_t file, h5util_check_t *chk);

/* Where column `name` of `group` (a path of log_group_path, or "/plan") goes when a log is read:
 * the documented columns in the order of the tables above (step first), then any other (a newer
 * log's) after them. Equal values: order by name. */
int log_column_order(const char *group, const char *name);

#endif
