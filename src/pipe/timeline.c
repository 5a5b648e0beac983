#include "pipe/timeline.h"

#include <stdlib.h>

#include "core/error.h"

void pipe_timeline_init(pipe_timeline_t *tl, int cap, int rank, int stage, double epoch) {
  *tl = (pipe_timeline_t){.ev = xcalloc((size_t)cap, sizeof *tl->ev), .cap = cap, .rank = rank, .stage = stage,
                          .epoch = epoch};
}

void pipe_timeline_free(pipe_timeline_t *tl) {
  free(tl->ev);
  tl->ev = NULL;
}

void pipe_timeline_reset(pipe_timeline_t *tl) { tl->n = 0; }

void pipe_timeline_add(pipe_timeline_t *tl, int kind, int mb, double t0, double t1) {
  if (tl->n >= tl->cap) return;
  tl->ev[tl->n++] = (log_pipe_event_t){.rank = tl->rank, .stage = tl->stage, .mb = mb, .kind = kind,
                                       .start = t0 - tl->epoch, .end = t1 - tl->epoch};
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
