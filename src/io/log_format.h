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

/* The groups every log has, whose series share their rows: each has a step scale (LOG_RANKS:
 * /metrics/step). The parts' groups (a burst plan, a pipeline, multiplexing) are the parts' own
 * (io/log_part.h). */
typedef enum log_group {
  LOG_METRICS = 0,
  LOG_RANKS,
  LOG_EVAL,
  LOG_EVENTS,
  LOG_GROUP_COUNT
} log_group_t;
extern const char *const log_group_path[LOG_GROUP_COUNT]; /* "/metrics", ... */

/* A dataset of the log: its name in its group, its units attribute, its description attribute. */
typedef struct log_series_info {
  const char *name, *units, *description;
} log_series_info_t;

/* Each group's scale: "step" of /metrics (whose rows /ranks shares), /eval and /events; "rank" of
 * /ranks (its columns). */
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

/* /eval and /events after their step scale. */
typedef enum log_eval { LOG_EVAL_LOSS = 0, LOG_EVAL_ACCURACY, LOG_EVAL_COUNT } log_eval_t;
extern const log_series_info_t log_eval_info[LOG_EVAL_COUNT];
typedef enum log_event { LOG_EVENT_TIME = 0, LOG_EVENT_TEXT, LOG_EVENT_COUNT } log_event_t;
extern const log_series_info_t log_event_info[LOG_EVENT_COUNT];
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

/* Every series dataset's attributes. */
#define LOG_UNITS "units"
#define LOG_DESCRIPTION "description"

/* Why an open HDF5 file is not a Surge log ("no /run group", "/run@program is not
 * \"surge-train\""), or NULL when it is one. HDF5 failures go to chk. */
const char *log_not_surge(hid_t file, h5util_check_t *chk);

/* Where column `name` of `group` (a path of log_group_path, or a part's group: io/log_part.h) goes
 * when a log is read: the documented columns in the order of the tables above or the part's format
 * (step first), then any other (a newer log's) after them. Equal values: order by name. */
int log_column_order(const char *group, const char *name);

#endif
