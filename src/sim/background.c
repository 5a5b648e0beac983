/* A background job in a foreground's idle time: its pieces (one per layer, forward+backward on one
 * rank at its batch) run in order, a piece starting only in an idle gap it fits, the rest of the
 * gap lost (the runtime's gate opens for a piece only while the partner is inactive long enough;
 * doc/multiplexing.md). The order of pieces carries over from gap to gap and iteration to
 * iteration, so the long-run rate is found by running iterations until the piece they start with
 * repeats: from there on the iterations repeat exactly. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sim/sim.h"

/* Background steps in one idle gap, at most: the whole steps stay exact in a long, and what is left of a
 * gap after them (under two steps) is one that its largest piece runs down. */
#define SIM_BG_MAX_STEPS 1e12

void sim_bg_init(sim_bg_t *bg, const bgraph_t *g, const burst_profile_t *p, int batch) {
  memset(bg, 0, sizeof *bg);
  if (batch < 1) surge_input_error("background batch %d must be at least 1", batch);
  bg->batch = batch;
  snprintf(bg->model, sizeof bg->model, "%s", g->model);
  for (int v = 0; v < g->n && !p->interpolate; v++) { /* (the planner's hint would name the foreground's batches) */
    double us;
    if (strcmp(g->v[v].kind, "input") != 0 && burst_profile_find(p, v, batch, &us) != 0)
      surge_input_error("--bg-batch %d: the background's profile %s has no time for node %d '%s' at that per-rank "
                        "batch (hint: --bg-batch one of the batches it was profiled at)", batch, p->source, v,
                        g->v[v].name);
  }
  bg->piece_us = xmalloc((size_t)g->n * sizeof *bg->piece_us);
  for (int v = 0; v < g->n; v++) { /* the step's update after the last layer, as a step runs it; a
                                     * recomputed segment's re-run forwards in its last node's piece */
    double us = burst_profile_pass_us(p, g, v, batch) + burst_profile_rerun_us(p, g, v, batch) +
                (v == g->n - 1 ? p->step.step_us : 0);
    if (us <= 0) continue; /* the input node */
    bg->piece_us[bg->npiece++] = us;
    bg->step_us += us;
  }
  if (bg->npiece == 0 || !(bg->step_us > 0)) surge_input_error("background %s: no layer takes time at batch %d", g->model, batch);
}

void sim_bg_free(sim_bg_t *bg) {
  free(bg->piece_us);
  memset(bg, 0, sizeof *bg);
}

/* Steps per iteration one rank of class c completes, in the long run. */
static double class_steps(const sim_bg_t *bg, const sim_class_t *c) {
  int L = bg->npiece;
  int *seen = xmalloc((size_t)L * sizeof *seen);
  long *steps_at = xmalloc((size_t)(L + 1) * sizeof *steps_at);
  for (int x = 0; x < L; x++) seen[x] = -1;
  int pos = 0, it = 0;
  long steps = 0;
  double rate = 0;
  for (;;) {
    if (seen[pos] >= 0) { /* iterations seen[pos] .. it-1 repeat */
      rate = (double)(steps - steps_at[seen[pos]]) / (it - seen[pos]);
      break;
    }
    seen[pos] = it;
    steps_at[it] = steps;
    for (int gidx = 0; gidx < c->ngap; gidx++) {
      double rem = c->gap_us[gidx];
      if (rem / bg->step_us > SIM_BG_MAX_STEPS)
        surge_input_error("background %s: a step of %g us in an idle gap of %g us: more than %g steps a gap "
                          "(hint: the times are microseconds)", bg->model, bg->step_us, rem, SIM_BG_MAX_STEPS);
      long whole = (long)(rem / bg->step_us); /* whole steps from any piece on */
      if (whole > 1) {
        steps += whole - 1;
        rem -= (double)(whole - 1) * bg->step_us;
      }
      while (bg->piece_us[pos] <= rem) { /* pieces are positive: the gap runs out */
        rem -= bg->piece_us[pos];
        if (++pos == L) pos = 0, steps++;
      }
    }
    it++;
  }
  free(seen);
  free(steps_at);
  return rate;
}

double sim_bg_fill(const sim_bg_t *bg, const sim_timeline_t *tl, double *ideal) {
  double sps = 0, all = 0;
  for (int x = 0; x < tl->nclass; x++) {
    const sim_class_t *c = &tl->c[x];
    double per_rank;
    if (c->always_idle) {
      per_rank = bg->batch / bg->step_us * 1e6;
    } else {
      per_rank = class_steps(bg, c) * bg->batch / tl->iter_us * 1e6;
    }
    sps += c->count * per_rank;
    all += c->count * (tl->iter_us - c->busy_us);
  }
  if (ideal) *ideal = all / tl->iter_us * bg->batch / bg->step_us * 1e6;
  return sps;
}
