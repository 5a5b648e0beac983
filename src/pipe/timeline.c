#include "pipe/timeline.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/events.h"
#include "core/timer.h"

enum { INSIDE = -2, NONE = -1 }; /* what an event starts: an event inside the open interval; none */

/* The interval an event starts (a log_pipe_kind_t, *mb its micro-batch, -1 the step's), INSIDE for
 * the events within a pass (its nodes, tensor-parallel sums), or NONE (it ends the open one). */
static int kind_of(const ev_t *e, int *mb) {
  *mb = e->where;
  switch (e->phase) {
  case EV_FORWARD:
  case EV_BACKWARD:
  case EV_LOSS:
  case EV_TP_SUM: return INSIDE;
  case EV_MB_FORWARD: return LOG_PIPE_FORWARD;
  case EV_MB_BACKWARD: return LOG_PIPE_BACKWARD;
  case EV_RECV_ACT: return e->activity == EV_WAIT ? LOG_PIPE_RECV_ACTIVATION : NONE;
  case EV_RECV_GRAD: return e->activity == EV_WAIT ? LOG_PIPE_RECV_GRADIENT : NONE;
  case EV_SEND: return e->activity == EV_WAIT ? LOG_PIPE_SEND_WAIT : NONE;
  case EV_SYNC:
    *mb = -1;
    if (e->activity != EV_COLLECTIVE) return NONE;
    return e->where == 1 ? LOG_PIPE_EMBED_SYNC : LOG_PIPE_GRAD_SYNC;
  default: return NONE;
  }
}

/* An event of kind (log_pipe_kind_t) of micro-batch mb (-1: the step) from t0 to t1 (surge_now()).
 * Events past cap are dropped. */
static void pipe_timeline_add(pipe_timeline_t *tl, int kind, int mb, double t0, double t1) {
  if (tl->n >= tl->cap) return;
  tl->ev[tl->n++] = (log_pipe_event_t){.rank = tl->rank, .stage = tl->stage, .mb = mb, .kind = kind,
                                       .start = t0 - tl->epoch, .end = t1 - tl->epoch};
}

static void on_event(void *ctx, const ev_t *e) {
  pipe_timeline_t *tl = ctx;
  int mb, kind = kind_of(e, &mb);
  if (kind == INSIDE) return;
  double now = surge_now();
  if (tl->open_kind != NONE) pipe_timeline_add(tl, tl->open_kind, tl->open_mb, tl->open_t0, now);
  tl->open_kind = kind;
  tl->open_mb = mb;
  tl->open_t0 = now;
}

void pipe_timeline_init(pipe_timeline_t *tl, int cap, int rank, int stage, double epoch) {
  *tl = (pipe_timeline_t){.ev = xcalloc((size_t)cap, sizeof *tl->ev), .cap = cap, .rank = rank, .stage = stage,
                          .epoch = epoch, .open_kind = NONE};
  ev_subscribe(on_event, tl);
}

void pipe_timeline_free(pipe_timeline_t *tl) {
  if (tl->ev) ev_unsubscribe(on_event, tl);
  free(tl->ev);
  tl->ev = NULL;
}

void pipe_timeline_reset(pipe_timeline_t *tl) {
  tl->n = 0;
  tl->open_kind = NONE;
}

enum { HEAD = 2, PER_EVENT = 4 }; /* packed: (count, stage), then (kind, mb, start, end) per event */

size_t pipe_timeline_gather(const pipe_timeline_t *tl, comm_t *world, log_pipe_event_t **all) {
  size_t per_rank = HEAD + (size_t)PER_EVENT * (size_t)tl->cap;
  double *mine = xcalloc(per_rank, sizeof *mine), *every = NULL;
  mine[0] = tl->n;
  mine[1] = tl->stage;
  for (int i = 0; i < tl->n; i++) {
    double *e = mine + HEAD + (size_t)PER_EVENT * (size_t)i;
    e[0] = tl->ev[i].kind, e[1] = tl->ev[i].mb, e[2] = tl->ev[i].start, e[3] = tl->ev[i].end;
  }
  if (world->rank == 0) every = xcalloc(surge_mul_size(per_rank, (size_t)world->size, "timeline"), sizeof *every);
  comm_gather_double(world, mine, (int)per_rank, every, 0, TRAFFIC_OTHER);
  free(mine);
  *all = NULL;
  if (world->rank != 0) return 0;
  size_t n = 0;
  for (int r = 0; r < world->size; r++) n += (size_t)every[(size_t)r * per_rank];
  log_pipe_event_t *ev = xcalloc(n + 1, sizeof *ev);
  size_t k = 0;
  for (int r = 0; r < world->size; r++) {
    const double *p = every + (size_t)r * per_rank;
    for (int i = 0; i < (int)p[0]; i++) {
      const double *e = p + HEAD + (size_t)PER_EVENT * (size_t)i;
      ev[k++] = (log_pipe_event_t){.rank = r, .stage = (int)p[1], .kind = (int)e[0], .mb = (int)e[1],
                                   .start = e[2], .end = e[3]};
    }
  }
  free(every);
  *all = ev;
  return n;
}
