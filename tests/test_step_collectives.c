/* The collectives of a small data-parallel step, counted by the comm layer's meters: on 2 ranks
 * the loss and the stop request ride on the gradient reduction (sync/gradsync.h side slots) and
 * every rank computes the gradient norm from the reduced gradients itself, so a step's only
 * collectives are its gradient buckets (no TRAFFIC_OTHER call; before this change, one metrics
 * allreduce a step). The values stay right: the loss and gradient norm match rank 0 alone on the
 * same global batch, a stop request on one rank stops both. Without clipping the norm comes from
 * the update's own pass over the gradients (train.c, optim_step_part_sumsq): a run that clips at a
 * bound never reached takes it in a pass of its own and must see the same norms and end with the
 * same parameters, bit for bit. On 1 rank the loss and the norm stay in backend memory until the step
 * reads both at once (train.c): one wait for the backend a step (backend_context_t.waits), with or
 * without clipping (the factor computed there too); on 2 ranks the loss goes from there into the
 * side slots, and a step waits twice (the side slots' sums, the norm). Run by
 * tests/test_step_collectives.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/error.h"
#include "io/deck.h"
#include "tap_mpi.h"
#include "train/train.h"

static const char *const deck_head = "[run]\n"
                                     "seed = 5\n"
                                     "[model]\n"
                                     "zoo = mlp\n"
                                     "mlp_hidden = 64,64\n"
                                     "[data]\n"
                                     "source = synthetic\n"
                                     "[train]\n"
                                     "global_batch = 32\n"
                                     "lr = 0.05\n"
                                     "%s"
                                     "[parallel]\n"
                                     "bucket_mb = 0.01\n"
                                     "node_shared = false\n"; /* the allreduce path (one node) */

enum { STEPS = 4, STOP_AT = 2 /* the step (0-based) at which rank 1 asks to stop */ };

static comm_t world;

typedef struct seen {
  double loss[STEPS], norm[STEPS];
  int stop[STEPS];
  long other_calls, dp_calls; /* over all steps */
  long waits[STEPS];          /* the backend's waits for results (backend_context_t.waits), each step */
  int local_buckets;
  float *params; /* after the steps (host copy, n_params) */
  size_t n_params;
} seen_t;

/* STEPS steps over c; rank `stopper` of c requests a stop at STOP_AT (-1: nobody); clip: a [train]
 * clip_norm line or "". */
static void run(comm_t *c, int stopper, const char *clip, seen_t *out) {
  char text[1024];
  snprintf(text, sizeof text, deck_head, clip);
  config_t cfg;
  deck_t *deck;
  deck_parse(text, "test_step_collectives.deck", 0, NULL, &cfg, &deck);
  trainer_t t;
  trainer_init(&t, &cfg, deck, c);
  memset(out, 0, sizeof *out);
  for (int k = 0; k < t.layout->sync->nbuckets; k++) out->local_buckets += t.layout->sync->b[k].local;
  for (int s = 0; s < STEPS; s++) {
    comm_meter_t before = c->meter;
    long waits = t.be->context()->waits;
    train_stats_t st = trainer_step(&t, s == STOP_AT && c->rank == stopper);
    out->waits[s] = t.be->context()->waits - waits;
    out->other_calls += (long)(c->meter.calls[TRAFFIC_OTHER] - before.calls[TRAFFIC_OTHER]);
    out->dp_calls += (long)(c->meter.calls[TRAFFIC_DP] - before.calls[TRAFFIC_DP]);
    out->loss[s] = st.loss;
    out->norm[s] = st.grad_norm;
    out->stop[s] = st.stop;
  }
  out->n_params = t.g.params.total;
  out->params = xcalloc(out->n_params, sizeof *out->params);
  t.be->download(out->params, t.layout->m->params, out->n_params);
  trainer_free(&t);
  deck_free(deck);
}

static double rel(double a, double b) { return fabs(a - b) / (fabs(b) > 1e-30 ? fabs(b) : 1e-30); }

int main(int argc, char **argv) {
  tap_mpi_world(&argc, &argv, &world, 2, "test_step_collectives");
  seen_t two, one, one_clip, clipped;
  run(&world, 1, "", &two);
  run(&world, 1, "clip_norm = 1000000\n", &clipped);
  comm_t alone; /* rank 0 by itself: the same global batch on one rank */
  comm_split(&world, world.rank == 0 ? 0 : -1, 0, &alone);
  if (world.rank == 0) {
    run(&alone, -1, "", &one);
    run(&alone, -1, "clip_norm = 0.5\n", &one_clip);
  }
  long most = 0, least = 1L << 30; /* this rank's waits a step on 2 ranks */
  for (int s = 0; s < STEPS; s++) {
    if (two.waits[s] > most) most = two.waits[s];
    if (two.waits[s] < least) least = two.waits[s];
  }
  /* the largest of the ranks, and the smallest */
  double w[4] = {(double)two.other_calls, (double)two.dp_calls, two.stop[STOP_AT], (double)most};
  double m[4] = {-w[0], -w[1], -w[2], -(double)least};
  comm_allreduce_max_double(&world, w, 4, TRAFFIC_OTHER);
  comm_allreduce_max_double(&world, m, 4, TRAFFIC_OTHER);
  if (world.rank == 0) {
    tap_ok(w[0] == 0 && -m[0] == 0, "2 ranks: no collective besides the gradient buckets (%.0f other calls in %d steps)",
           w[0], STEPS);
    tap_ok(two.local_buckets > 1 && w[1] == STEPS * two.local_buckets && -m[1] == w[1],
           "2 ranks: each step reduces its %d gradient buckets once (%.0f dp calls in %d steps)", two.local_buckets,
           w[1], STEPS);
    int stops_ok = -m[2] == 1;
    for (int s = 0; s < STEPS; s++) stops_ok &= two.stop[s] == (s == STOP_AT);
    tap_ok(stops_ok, "a stop request on rank 1 at step %d stops both ranks after that step, and only then", STOP_AT + 1);
    double dl = 0, dn = 0;
    for (int s = 0; s < STEPS; s++) {
      if (rel(two.loss[s], one.loss[s]) > dl) dl = rel(two.loss[s], one.loss[s]);
      if (rel(two.norm[s], one.norm[s]) > dn) dn = rel(two.norm[s], one.norm[s]);
    }
    tap_ok(dl < 1e-6, "2 ranks vs 1: the loss rides as a float pair, within 1e-6 relative (%.2e)", dl);
    tap_ok(dn < 1e-5, "2 ranks vs 1: the gradient norm of the reduced gradients within 1e-5 relative (%.2e)", dn);
    tap_ok(one.other_calls == 0 && one.dp_calls == 0, "1 rank: no collective at all in a step (%ld, %ld calls)",
           one.other_calls, one.dp_calls);
    double dc = 0;
    for (int s = 0; s < STEPS; s++)
      if (rel(two.norm[s], clipped.norm[s]) > dc) dc = rel(two.norm[s], clipped.norm[s]);
    tap_ok(dc < 1e-12 && two.n_params == clipped.n_params &&
               memcmp(two.params, clipped.params, two.n_params * sizeof *two.params) == 0,
           "2 ranks: the norm from the update's pass matches its own pass within 1e-12 (%.1e), and the %zu "
           "parameters end bitwise equal", dc, two.n_params);
    int once = 1;
    for (int s = 0; s < STEPS; s++) once &= one.waits[s] == 1 && one_clip.waits[s] == 1;
    tap_ok(once, "1 rank: a step waits for the backend once, for its loss and norm together, without clipping and "
                 "clipping (waits a step %ld %ld; %ld %ld)",
           one.waits[0], one.waits[1], one_clip.waits[0], one_clip.waits[1]);
    tap_ok(w[3] == 2 && -m[3] == 2,
           "2 ranks: a step waits twice, for the job's loss and stop from the side slots and for its norm "
           "(%.0f to %.0f a step over the ranks)", -m[3], w[3]);
    tap_ok(rel(one_clip.norm[0], one.norm[0]) < 1e-12 && one_clip.norm[0] > 0.5,
           "1 rank: the step that clips (norm %.6g to 0.5) sees the norm of the step that does not (%.6g)",
           one_clip.norm[0], one.norm[0]);
    free(one.params);
    free(one_clip.params);
  }
  free(two.params);
  free(clipped.params);
  int rc = world.rank == 0 ? tap_done() : 0;
  comm_free(&alone);
  comm_free(&world);
  MPI_Finalize();
  return rc;
}
