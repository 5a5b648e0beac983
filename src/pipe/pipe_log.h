/* A 3d run's records in its metrics log (doc/formats.md; the names are io/log_format.h's):
 * /pipeline (the grid, the schedule, the theoretical bubble, a row per stage), /pipeline/events
 * (the timeline of logged steps) and /compress (the compressor's numbers per step). */
#ifndef SURGE_PIPE_LOG_H
#define SURGE_PIPE_LOG_H

#include <stddef.h>

#include "io/log.h"

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
