/* A rank's pipeline timeline of one step: when each micro-batch's forward and backward ran and
 * when the rank waited for a transfer or a gradient reduction, in seconds since a start common to
 * all ranks (rank 0's clock when the layout was built, each rank's clock aligned to rank 0's:
 * comm_clock_offset). The log's /pipeline/events holds them (doc/formats.md). The timeline is a
 * subscriber of the engine's events (core/events.h): a pass, a wait or a reduction runs from its
 * event to the next one that is not inside it (a node's events are inside a pass). */
#ifndef SURGE_PIPE_TIMELINE_H
#define SURGE_PIPE_TIMELINE_H

#include <stddef.h>

#include "comm/comm.h"
#include "pipe/pipe_log.h"

/* Most events a rank keeps of a step (rank 0 gathers them all: a bound on its memory); a step of
 * more than about 680 micro-batches loses its last events. */
#define PIPE_TIMELINE_MAX 4096

typedef struct pipe_timeline {
  log_pipe_event_t *ev;
  int n, cap;   /* events recorded this step; room (the same on every rank) */
  int rank, stage;
  double epoch; /* the common start on this rank's surge_now() clock */
  int open_kind, open_mb; /* the interval under way (open_kind -1: none) and since when */
  double open_t0;
} pipe_timeline_t;

/* Start recording the events from now on (pipe_timeline_free stops). */
void pipe_timeline_init(pipe_timeline_t *tl, int cap, int rank, int stage, double epoch);
void pipe_timeline_free(pipe_timeline_t *tl);
void pipe_timeline_reset(pipe_timeline_t *tl);
/* Collective over world: every rank's events to rank 0 (*all, malloc'd there; NULL elsewhere).
 * Returns how many rank 0 got (0 elsewhere). */
size_t pipe_timeline_gather(const pipe_timeline_t *tl, comm_t *world, log_pipe_event_t **all);

#endif
