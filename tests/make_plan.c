/* make_plan DECK RANKS OUT [section.key=value ...]: build the deck's zoo model and write the burst
 * planner's plan (burst_plan_search, no amplification limit) for RANKS ranks and the deck's global
 * batch to OUT, from a synthetic profile: a node's forward+backward time at per-rank batch b is
 * 20 us + 3 x its forward MFLOP per sample x b x 1000 / 2000 (a 2 GFLOP/s rank), the network 5 us
 * + 100000 bytes/us for messages, 5 us + 100 bytes/us for allreduce steps (a slow allreduce, so
 * layers with big gradients take fewer ranks than the others). The plan table goes to stdout. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "burst/plan.h"
#include "core/error.h"
#include "data/dataset.h"
#include "io/deck.h"
#include "io/options.h"

static void synthetic_profile(const graph_t *g, const burst_opts_t *o, burst_profile_t *p) {
  burst_profile_init(p, g->n, "synthetic");
  p->net = (burst_net_t){.p2p_alpha_us = 5, .p2p_bytes_per_us = 1e5, .ar_alpha_us = 5, .ar_bytes_per_us = 100};
  int *batches = xcalloc((size_t)(o->ranks < o->batch ? o->ranks : o->batch) + 1, sizeof *batches);
  int nb = burst_profile_batches(o, batches);
  for (int i = 1; i < g->n; i++)
    for (int k = 0; k < nb; k++)
      burst_profile_set(p, i, batches[k], 20.0 + 3.0 * g->l[i].flops_per_sample * batches[k] / 2000.0);
  free(batches);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 4) {
    fprintf(stderr, "usage: make_plan DECK RANKS OUT [section.key=value ...]\n");
    return 2;
  }
  config_t cfg;
  deck_load(argv[1], argc - 4, argv + 4, &cfg, NULL);
  dataset_t *ds = dataset_open(data_opts_of(&cfg));
  graph_t g;
  char err[320];
  if (zoo_build(zoo_opts_of(&cfg), dataset_sample_shape(ds), dataset_classes(ds), &g, err, sizeof err) != 0)
    surge_input_error("make_plan: %s", err);
  burst_opts_t o = {.ranks = atoi(argv[2]), .batch = (int)cfg.global_batch, .amp = BURST_NO_LIMIT,
                    .policy = BURST_RANKS_DIVISORS};
  burst_profile_t p;
  synthetic_profile(&g, &o, &p);
  burst_plan_t plan, dp;
  burst_plan_search(&g, &p, &o, &plan);
  burst_plan_data_parallel(&g, &p, &o, &dp);
  burst_plan_print(stdout, &g, &plan, &dp);
  burst_plan_write(argv[3], &g, cfg.zoo, &plan);
  burst_plan_free(&plan);
  burst_plan_free(&dp);
  burst_profile_free(&p);
  graph_free(&g);
  dataset_close(ds);
  MPI_Finalize();
  return 0;
}
