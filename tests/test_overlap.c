/* Gradient sync overlapped with the backward pass (sync/gradsync.h), seen from the comm layer's
 * trace: on 2 ranks, with [parallel] overlap = true the first bucket's allreduce starts before the
 * backward pass ends; with false every bucket starts after it; both give the same parameters, bit
 * for bit, since each bucket is the same sum either way. With 4 micro-batches ([train]
 * micro_batches) each bucket still starts once a step, before the last micro-batch's backward pass
 * ends. Run by tests/test_overlap.sh under mpiexec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/error.h"
#include "io/deck.h"
#include "tap_mpi.h"
#include "train/train.h"

static const char *const deck_text = "[run]\n"
                                     "seed = 3\n"
                                     "[model]\n"
                                     "zoo = mlp\n"
                                     "mlp_hidden = 256,256,256\n"
                                     "[data]\n"
                                     "source = synthetic\n"
                                     "[train]\n"
                                     "global_batch = 64\n"
                                     "lr = 0.05\n"
                                     "[parallel]\n"
                                     "bucket_mb = 0.1\n"
                                     "node_shared = false\n"; /* the allreduce path (one node) */

enum { STEPS = 3 };

static comm_t world;

/* Max over the ranks of x (so every rank reports the same). */
static double max_over_ranks(double x) {
  comm_allreduce_max_double(&world, &x, 1, TRAFFIC_OTHER);
  return x;
}

/* STEPS steps with overlap on or off; fills the final parameters (caller frees) and returns, over
 * the steps and ranks, the largest (first dp start - backward end) and the number of dp buckets a
 * step started on this rank. */
static float *run(int overlap, int micro, double *start_minus_end, int *buckets, int *local_buckets, size_t *nparams) {
  char mb[48];
  snprintf(mb, sizeof mb, "train.micro_batches=%d", micro);
  char *ov[2] = {overlap ? "parallel.overlap=true" : "parallel.overlap=false", mb};
  config_t cfg;
  deck_t *deck;
  deck_parse(deck_text, "test_overlap.deck", 2, ov, &cfg, &deck);
  trainer_t t;
  trainer_init(&t, &cfg, deck, &world);
  const gradsync_t *gs = t.layout->sync;
  *local_buckets = 0;
  for (int k = 0; k < gs->nbuckets; k++) *local_buckets += gs->b[k].local;
  *start_minus_end = -1e30;
  *buckets = -1;
  for (int s = 0; s < STEPS; s++) {
    comm_trace_begin(1024);
    train_stats_t st = trainer_step(&t, 0);
    const comm_event_t *ev;
    int n = comm_trace_events(&ev), dp = 0;
    double first = 0;
    for (int i = 0; i < n; i++)
      if (ev[i].t == TRAFFIC_DP && dp++ == 0) first = ev[i].start;
    double d = dp ? first - st.backward_done : 1e30;
    if (d > *start_minus_end) *start_minus_end = d;
    if (*buckets < 0 || dp != *buckets) *buckets = *buckets < 0 ? dp : -2; /* -2: not the same every step */
    comm_trace_end();
  }
  *start_minus_end = max_over_ranks(*start_minus_end);
  size_t n = *nparams = t.layout->local->total;
  float *p = xcalloc(n, sizeof *p);
  t.be->download(p, t.layout->m->params, n);
  trainer_free(&t);
  deck_free(deck);
  return p;
}

int main(int argc, char **argv) {
  tap_mpi_world(&argc, &argv, &world, 2, "test_overlap");
  double on_gap, off_gap, mb_gap;
  int on_buckets, off_buckets, mb_buckets, local_on, local_off, local_mb;
  size_t n_on, n_off, n_mb;
  float *on = run(1, 1, &on_gap, &on_buckets, &local_on, &n_on);
  float *off = run(0, 1, &off_gap, &off_buckets, &local_off, &n_off);
  free(run(1, 4, &mb_gap, &mb_buckets, &local_mb, &n_mb));
  double differ = n_on != n_off || memcmp(on, off, n_on * sizeof *on) != 0;
  differ = max_over_ranks(differ);
  if (world.rank == 0) {
    tap_ok(local_on > 1 && on_buckets == local_on,
           "overlap on: every step starts each of this rank's %d gradient buckets once (%d traced)", local_on,
           on_buckets);
    tap_ok(on_gap < 0, "overlap on: the first bucket's allreduce starts before the backward pass ends, on every rank "
                       "and step (%.3f ms before)", -1e3 * on_gap);
    tap_ok(off_buckets == local_off && off_gap >= 0,
           "overlap off: all %d buckets start after the backward pass ended (the first %.3f ms after)", off_buckets,
           1e3 * off_gap);
    tap_ok(local_mb > 1 && mb_buckets == local_mb && mb_gap < 0,
           "4 micro-batches, overlap on: each of the %d buckets starts once a step (%d traced), the first before the "
           "last micro-batch's backward pass ends (%.3f ms before)", local_mb, mb_buckets, -1e3 * mb_gap);
  }
  if (world.rank == 0)
    tap_ok(differ == 0, "overlap on and off: the same parameters after %d steps, bit for bit (%zu floats)", STEPS,
           n_on);
  free(on);
  free(off);
  int rc = world.rank == 0 ? tap_done() : 0;
  MPI_Finalize();
  return rc;
}
