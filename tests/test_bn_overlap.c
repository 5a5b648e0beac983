/* Batch norm's sums over a node's ranks overlapped with other nodes ([parallel] bn_overlap, the burst
 * executor's pass order, burst/pass_order.h): with the overlap on and off, the same parameters and
 * running statistics bit for bit after STEPS steps, since each sum is the same non-blocking
 * allreduce either way; with it on, some sums are in flight while another node's work runs (the
 * trainer's per-step count), with it off none is. On 4 ranks (tests/test_bn_overlap.sh):
 *   resnet18 (small, with its downsampling shortcuts: conv + batch norm beside the main path) and
 *   inception-v3 (small: parallel branches) in data parallelism on ranks 0..1, and resnet18 under a
 *   burst plan that runs every batch norm on 2 of the 4 ranks (alternately 0..1 and 2..3), the
 *   rest on all 4. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "burst/plan.h"
#include "comm/comm.h"
#include "core/error.h"
#include "data/dataset.h"
#include "io/deck.h"
#include "io/options.h"
#include "tap_mpi.h"
#include "train/train.h"

enum { STEPS = 3, BATCH = 16 };

static const char *const resnet_deck = "[run]\nseed = 5\n"
                                       "[model]\nzoo = resnet18\nstem = small\nwidth_mult = 0.0625\n"
                                       "[data]\nsource = synthetic\nsynthetic_samples = 200\ntest_samples = 20\n"
                                       "[train]\nglobal_batch = 16\noptimizer = sgd\nlr = 0.1\nmomentum = 0.9\n";
static const char *const inception_deck = "[run]\nseed = 5\n"
                                          "[model]\nzoo = inception-v3\nstem = small\nwidth_mult = 0.0625\n"
                                          "[data]\nsource = synthetic\nsynthetic_samples = 200\ntest_samples = 20\n"
                                          "[train]\nglobal_batch = 16\noptimizer = sgd\nlr = 0.05\nmomentum = 0.9\n";

static comm_t world;

typedef struct outcome {
  float *state; /* this rank's parameters then buffers, after the replicas were made true */
  size_t n;
  int sums, overlapped; /* over the steps, this rank */
} outcome_t;

/* STEPS steps of deck_text (with overrides) on group c (a member of it). */
static outcome_t run(comm_t *c, const char *deck_text, const char *mode, const char *plan, int overlap) {
  char plan_key[300];
  snprintf(plan_key, sizeof plan_key, "parallel.plan=%s", plan ? plan : "");
  char *ov[3] = {overlap ? "parallel.bn_overlap=true" : "parallel.bn_overlap=false", (char *)mode, plan_key};
  config_t cfg;
  deck_t *deck;
  deck_parse(deck_text, "test_bn_overlap.deck", plan ? 3 : 2, ov, &cfg, &deck);
  trainer_t t;
  trainer_init(&t, &cfg, deck, c);
  outcome_t o = {0};
  for (int s = 0; s < STEPS; s++) {
    train_stats_t st = trainer_step(&t, 0);
    o.sums += st.sums;
    o.overlapped += st.sums_overlapped;
  }
  layout_t *l = t.layout;
  float *slabs[1] = {l->m->params};
  l->ops->sync_replicas(l, slabs, 1);
  size_t np = l->local->total, nb = t.g.bufs.total;
  o.n = np + nb;
  o.state = xcalloc(o.n ? o.n : 1, sizeof *o.state);
  t.be->download(o.state, l->m->params, np);
  if (nb) t.be->download(o.state + np, l->m->bufs, nb);
  trainer_free(&t);
  deck_free(deck);
  return o;
}

/* Every batch norm of resnet_deck's graph on 2 of the 4 ranks (node order: alternately ranks 0..1
 * and 2..3), the rest on all 4, written to path. */
static void write_plan(const char *path) {
  config_t cfg;
  deck_t *deck;
  deck_parse(resnet_deck, "test_bn_overlap.deck", 0, NULL, &cfg, &deck);
  dataset_t *ds = dataset_open(data_opts_of(&cfg));
  graph_t g;
  char err[320];
  if (zoo_build(zoo_opts_of(&cfg), dataset_sample_shape(ds), dataset_classes(ds), &g, err, sizeof err) != 0)
    surge_input_error("test_bn_overlap: %s", err);
  burst_opts_t o = {.ranks = 4, .batch = BATCH, .amp = BURST_NO_LIMIT};
  burst_plan_t plan;
  burst_plan_alloc(&plan, g.n, &o);
  for (int i = 0, bn = 0; i < g.n; i++) {
    int two = g.l[i].kind == LAYER_BATCHNORM;
    plan.n[i] = two ? 2 : 4;
    plan.first[i] = two ? 2 * (bn++ % 2) : 0;
    plan.per_rank[i] = burst_per_rank(BATCH, plan.n[i]);
  }
  burst_plan_write(path, &g, cfg.zoo, &plan);
  burst_plan_free(&plan);
  graph_free(&g);
  dataset_close(ds);
  deck_free(deck);
}

/* Over the ranks of c: whether on and off differ anywhere, and the sums' totals. */
static void report(comm_t *c, const char *what, outcome_t *on, outcome_t *off) {
  double v[5] = {on->n != off->n || memcmp(on->state, off->state, on->n * sizeof *on->state) != 0, on->sums,
                 off->sums, on->overlapped, off->overlapped};
  comm_allreduce_sum_double(c, v, 5, TRAFFIC_OTHER);
  if (c->rank == 0) {
    tap_ok(v[0] == 0, "%s: bn_overlap on and off give the same parameters and running statistics after %d steps, "
                      "bit for bit (%zu floats a rank)", what, STEPS, on->n);
    tap_ok(v[1] > 0 && v[1] == v[2], "%s: the same batch-norm sums either way (%.0f over the ranks and steps)", what,
           v[1]);
    tap_ok(v[3] > 0 && v[4] == 0, "%s: on, %.0f of them in flight while another node ran; off, %.0f", what, v[3],
           v[4]);
  }
  free(on->state);
  free(off->state);
}

int main(int argc, char **argv) {
  tap_mpi_world(&argc, &argv, &world, 4, "test_bn_overlap");
  comm_t two;
  comm_split(&world, world.rank < 2 ? 0 : -1, world.rank, &two);
  if (world.rank < 2) {
    outcome_t on = run(&two, resnet_deck, "parallel.mode=dp", NULL, 1);
    outcome_t off = run(&two, resnet_deck, "parallel.mode=dp", NULL, 0);
    report(&two, "resnet18 (small, downsampling shortcuts), dp on 2 ranks", &on, &off);
    on = run(&two, inception_deck, "parallel.mode=dp", NULL, 1);
    off = run(&two, inception_deck, "parallel.mode=dp", NULL, 0);
    report(&two, "inception-v3 (small, parallel branches), dp on 2 ranks", &on, &off);
  }
  comm_free(&two);
  char path[64];
  snprintf(path, sizeof path, "/tmp/test_bn_overlap.%d.plan", (int)getpid());
  if (world.rank == 0) write_plan(path);
  comm_bcast(&world, path, sizeof path, 0, TRAFFIC_OTHER);
  MPI_Barrier(world.mpi);
  outcome_t on = run(&world, resnet_deck, "parallel.mode=burst", path, 1);
  outcome_t off = run(&world, resnet_deck, "parallel.mode=burst", path, 0);
  report(&world, "resnet18, burst plan with every batch norm on 2 of 4 ranks", &on, &off);
  if (world.rank == 0) remove(path);
  int rc = world.rank == 0 ? tap_done() : 0;
  MPI_Finalize();
  return rc;
}
