/* The plan file reader (burst_plan_read_bg, burst/plan_file.c) and the planner's arithmetic on what
 * it accepts: any text, read as the plan file of a 4-rank job of fuzz_burst.h's model, is refused
 * with an input error or read; a plan read is then evaluated (burst_evaluate) under a profile of
 * that model, and its predictions must be numbers (finite, not negative). */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "burst/plan.h"
#include "burst/profile.h"
#include "fuzz.h"
#include "fuzz_burst.h"

static config_t cfg;
static graph_t g;
static bgraph_t bg;
static burst_opts_t opts;
static burst_profile_t prof;

/* A profile of every node at every per-rank batch: 5 us + 1 ns per FLOP and sample. */
static void make_profile(void) {
  burst_profile_init(&prof, bg.n, "fuzz");
  prof.net = (burst_net_t){10, 1000, 10, 1000};
  int batch[8];
  int nb = burst_profile_batches(&opts, batch);
  for (int v = 1; v < g.n; v++)
    for (int k = 0; k < nb; k++) burst_profile_set(&prof, v, batch[k], 5 + 1e-3 * g.l[v].flops_per_sample * batch[k]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  fuzz_burst_model(&cfg, &g, &bg);
  opts = (burst_opts_t){.ranks = 4, .batch = (int)cfg.global_batch, .amp = BURST_NO_LIMIT,
                        .policy = BURST_RANKS_DIVISORS};
  make_profile();
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "plan.txt");
  burst_plan_t plan;
  volatile int read = 0;
  if (FUZZ_TRY()) {
    burst_plan_read_bg(path, &bg, &opts, &plan);
    read = 1;
    burst_evaluate(&bg, &prof, &opts, &plan);
    if (!(isfinite(plan.iter_us) && plan.iter_us >= 0 && isfinite(plan.rank_us) && plan.rank_us >= 0)) abort();
  }
  fuzz_fds_close();
  if (read) burst_plan_free(&plan);
  return 0;
}
