/* The HDF5 metrics log of a run (layout in doc/formats.md). Rank 0 writes the file; the per-step
 * call is collective because it gathers every rank's phase times. The file is readable while the
 * run goes (flushed every [log] flush_every steps) and after a kill (up to the last flush). */
#ifndef SURGE_LOG_H
#define SURGE_LOG_H

#include <stdint.h>

#include "burst/plan.h"
#include "comm/comm.h"
#include "io/config.h"
#include "io/log_format.h"
#include "nn/graph.h"

/* The per-rank phases of a step (log_phase_t, io/log_format.h) by name: "data", "forward",
 * "backward", "wait", "comm", "optimizer", "background", "paused"; "unknown" for another value. */
const char *log_phase_name(log_phase_t p);

typedef struct log_row {
  long step;              /* steps completed after this one (1-based) */
  double loss;            /* mean over the global batch */
  double lr;
  double grad_norm;       /* before clipping */
  double step_sec;        /* wall time of the step (slowest rank) */
  double samples_per_sec; /* global batch / step_sec */
  uint64_t bytes[TRAFFIC_COUNT]; /* bytes moved in this step, summed over ranks */
  uint64_t internode_bytes[TRAFFIC_COUNT]; /* of those, bytes that crossed nodes (comm/comm.h) */
  double phase[PHASE_COUNT];     /* THIS rank's phase times (the log gathers them) */
  const double *rank_phase;      /* NULL, or (ranks, PHASE_COUNT) every rank's phase times, already
                                  * reduced by the caller (then run_log_step gathers nothing) */
  /* multiplexed runs only (/multiplex): DeepPool's accounting of the step */
  double fg_samples_per_sec;     /* the foreground job's samples/s (its slowest rank) */
  double bg_samples_per_sec;     /* the background ranks' samples/s, summed */
  double total_samples_per_sec;  /* both */
  double bg_ranks_active;        /* foreground ranks whose partner ran during the step */
} log_row_t;

/* A multiplexed run's /multiplex attributes: its role and setting at the start, and the run's
 * totals at the end (NaN where unknown). */
typedef struct log_mux_info {
  const char *role, *channel, *priority, *on_foreground_end;
  double fg_samples_per_sec, bg_samples_per_sec, total_samples_per_sec;
  double fg_slowdown;            /* foreground step time with / without a background partner */
} log_mux_info_t;

typedef struct run_log run_log_t;

/* Collective over world. Create the log (or, when resume_step >= 0, reopen it and drop rows after
 * resume_step so a resumed run continues the series). Stores the /run attributes (program,
 * version, ranks, layout, start time, model, parameter count of the params layout) and the resolved
 * deck text. Errors
 * (unwritable path, an existing file that is not a Surge log) name the path. */
run_log_t *run_log_open(const char *path, const config_t *cfg, const char *deck_text, const slab_layout_t *params,
                        comm_t *world, long resume_step);
/* Collective (rank 0 writes): the /multiplex attributes. A log created with cfg->mux_role set has
 * the /multiplex series; call it after run_log_open and again at the end with the totals. A
 * resumed log keeps what it began as: a multiplexed log resumed by a plain run gets NaN rows there
 * (and keeps its attributes), a plain log resumed by a multiplexed run gets no /multiplex (an event
 * says so). */
void run_log_multiplex(run_log_t *log, const log_mux_info_t *info);
/* Collective: append one step. */
void run_log_step(run_log_t *log, const log_row_t *row);
/* Collective (rank 0 writes): an evaluation result. accuracy is a fraction. */
void run_log_eval(run_log_t *log, long step, double loss, double accuracy);
/* Collective: a free-form event ("checkpoint written", "stopped by SIGTERM") at a step. */
void run_log_event(run_log_t *log, long step, const char *text);
/* Rank 0 writes: a sample of the model's text at a step, in /samples (a log begun without /samples,
 * by a run that did not sample, takes none). */
void run_log_sample(run_log_t *log, long step, const char *text);
/* Collective (rank 0 writes): the burst plan the run executes, as /plan: per node its index, name,
 * kind, rank count, first rank and per-rank batch, the predicted compute / transfer-in / sync times
 * when the plan has them (some node's compute time is positive), the plan-wide predictions as
 * attributes (NaN when plan->one_rank_us is 0: a plan file read without a profile), and the plan
 * file's text. g is the graph the plan is for. A resumed run replaces the /plan it finds. */
void run_log_plan(run_log_t *log, const burst_plan_t *plan, const graph_t *g, const char *plan_text);
/* Collective (rank 0 writes): /run@run_id, the run's identity, unless the log has one already (a
 * resumed run keeps it). */
void run_log_identify(run_log_t *log, const char *run_id);
/* A 3d run's pipeline (/pipeline): its grid, schedule, theoretical bubble and one row per stage
 * (arrays of pp values). */
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
/* Collective (rank 0 writes): /pipeline's attributes and /pipeline/stages (a resumed run replaces
 * them). */
void run_log_pipeline(run_log_t *log, const log_pipe_info_t *info);
/* Collective (rank 0 writes ev, the events of every rank): a step's rows of /pipeline/events. A log
 * created by another layout has none and takes none. */
void run_log_pipeline_events(run_log_t *log, long step, const log_pipe_event_t *ev, size_t n);
/* A 3d run's compression in a step (/compress; io/log_format.h says what each is). */
typedef struct log_compress_row {
  double act_grad_raw_bytes, dp_raw_bytes, seconds, lep_cos_mean;
  int boundaries;                    /* pp - 1 */
  const double *error_norm, *lep_cos; /* (boundaries) */
} log_compress_row_t;
/* Rank 0 writes: a step's row of /compress (a log without /compress takes none). */
void run_log_compress(run_log_t *log, long step, const log_compress_row_t *row);
/* Rank 0 writes: /compress@summary, the run's compression choices in words. */
void run_log_compress_summary(run_log_t *log, const char *text);
/* Collective: flush and close. */
void run_log_close(run_log_t *log);

#endif
