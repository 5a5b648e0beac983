/* A run's side of multiplexing (mux/mux.h): attach as foreground or background, the OS priority
 * and polite waits, the background's gate, DeepPool's accounting per step (for the log and the
 * summary), and what a background does when its foreground ends. Every function does nothing for
 * a run that is not multiplexed (cfg.mux_role == MUX_ROLE_NONE). */
#ifndef SURGE_TRAIN_MULTIPLEX_H
#define SURGE_TRAIN_MULTIPLEX_H

#include "io/log.h"
#include "mux/mux.h"
#include "mux/mux_log.h"
#include "train/train.h"

enum { MUX_WARMUP_STEPS = 3 }; /* steps a slowdown leaves out, here and in the baseline's log */

typedef struct run_mux {
  mux_role_t role;
  char channel[MUX_CHANNEL_MAX + 1];
  const char *priority;           /* what the OS granted (background), "none" otherwise */
  const char *device_priority;    /* what the backend did */
  mux_counters_t bg0, fg0;        /* the channel's counters when the step began */
  double offered0;                /* foreground: mux_fg_offered_s() when the step began */
  double step_t0;
  /* run totals */
  double fg_sec, fg_samples;      /* foreground: slowest-rank step times and samples */
  double warm_sec, warm_samples;  /* the same after the first MUX_WARMUP_STEPS (for the slowdown) */
  long steps;
  double bg_samples, span_sec;    /* background samples seen and the time they took */
  double with_sec, without_sec;   /* foreground step time with / without an active partner */
  long with_n, without_n;
  double paused_sec, run_sec;     /* background: paused time and step time of this rank */
  double baseline_sps;            /* foreground: [multiplex] baseline's median samples/s (0: none) */
  double partner_slowdown;        /* background: the foreground's slowdown as last published (NaN) */
  int alone;                      /* background: the foreground ended and this one carries on */
  log_rows_t *rows;               /* /multiplex in the log (run_mux_log) */
  double row[LOG_MUX_METRIC_COUNT]; /* the step's row of it */
} run_mux_t;

/* A multiplexed run's /multiplex attributes: its role and setting at the start, and the run's
 * totals at the end (NaN where unknown). */
typedef struct log_mux_info {
  const char *role, *channel, *priority, *on_foreground_end;
  double fg_samples_per_sec, bg_samples_per_sec, total_samples_per_sec;
  double fg_slowdown;            /* foreground step time with / without a background partner */
} log_mux_info_t;

/* Whether [multiplex] graphs = on (1) or off (0), where it can run; else an input error naming the
 * key: on is for a background on the cuda backend, of 1 rank (a multi-rank one's transfers wait for the device inside its pieces,
 * and NCCL's waits are not the backend's, which would break a recording rather than end it). */
int run_mux_check_graphs(const config_t *cfg, const deck_t *deck, int ranks);
/* Collective over t->world: attach (channel from [multiplex] channel, the MPMD launch, or Slurm's
 * job id; bad names blame the deck's line), then set priorities, polite waits or the gate. */
void run_mux_begin(run_mux_t *x, trainer_t *t, const deck_t *deck);
/* Before trainer_step: the counters the step starts from. */
void run_mux_step_begin(run_mux_t *x);
/* Collective, after the step's log row is made (before it is logged): the row's background or
 * paused phase, the step's /multiplex row appended, and this side's accounting published. */
void run_mux_step_end(run_mux_t *x, trainer_t *t, log_row_t *row);
/* What a background does after a step (collective over its ranks, which agree). */
typedef enum run_mux_verdict {
  RUN_MUX_GO_ON = 0, /* its foreground runs (or it ended before and this one goes on alone) */
  RUN_MUX_ALONE_NOW, /* its foreground has just ended; [multiplex] on_foreground_end = continue */
  RUN_MUX_STOP,      /* its foreground has ended; on_foreground_end = stop: checkpoint and stop */
} run_mux_verdict_t;
run_mux_verdict_t run_mux_after_step(run_mux_t *x, trainer_t *t);
/* Collective: /multiplex in the log, its rows (the first call) and its attributes: call at the
 * start and again at the end with the totals. */
void run_mux_log(run_mux_t *x, const config_t *cfg, run_log_t *log);
/* The run's totals (role, channel, samples/s, slowdown). */
void run_mux_info(const run_mux_t *x, const config_t *cfg, log_mux_info_t *info);
/* Rank 0 prints the totals; every rank detaches. */
void run_mux_end(run_mux_t *x, trainer_t *t);

#endif
