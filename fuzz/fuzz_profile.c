/* The profile reader (burst/profile_h5.c) and the planner on what it accepts: any file, read as a
 * profile of fuzz_burst.h's model as surge-plan reads one (its header first, the job's ranks from
 * it), is refused with an input error or read; a profile read is then planned (burst_search, the
 * exact search) and the plan's predictions must be numbers (finite, not negative). */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "burst/plan.h"
#include "burst/profiler.h"
#include "fuzz.h"
#include "fuzz_burst.h"

static config_t cfg;
static graph_t g;
static bgraph_t bg;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  fuzz_burst_model(&cfg, &g, &bg);
  fuzz_init();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "profile.h5");
  burst_profile_t prof;
  burst_plan_t plan;
  volatile int read = 0, planned = 0;
  if (FUZZ_TRY()) {
    burst_profile_meta_t meta;
    burst_profile_read_meta(path, &meta);
    burst_opts_t o = {.ranks = meta.ranks, .batch = (int)cfg.global_batch, .amp = BURST_NO_LIMIT,
                      .policy = BURST_RANKS_DIVISORS};
    burst_profile_read(path, &g, cfg.zoo, &o, &prof);
    read = 1;
    burst_net_check(&prof.net, path);
    burst_search(&bg, &prof, &o, &plan);
    planned = 1;
    if (!(isfinite(plan.iter_us) && plan.iter_us >= 0 && isfinite(plan.rank_us) && plan.rank_us >= 0)) abort();
  }
  fuzz_h5_close_all();
  if (planned) burst_plan_free(&plan);
  if (read) burst_profile_free(&prof);
  return 0;
}
