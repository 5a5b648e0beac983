/* The checkpoint loader (io/checkpoint_read.c, checkpoint_newest): any file, named as the newest
 * checkpoint of a directory, is refused with an input error or loaded into the state of a small model
 * (an MLP trained with AdamW: parameters and both moments), on one MPI rank through MPI-IO as a run
 * reads it. With SURGE_FUZZ_SEED_DIR set, the harness instead writes a checkpoint of that state
 * there (the seed corpus) and exits. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/rng.h"
#include "fuzz.h"
#include "io/checkpoint.h"
#include "io/deck.h"
#include "io/options.h"
#include "nn/zoo.h"

static const char *const deck = "[run]\nsteps = 100\n[model]\nzoo = mlp\nmlp_hidden = 8\n[data]\nsource = synthetic\n"
                                "[train]\noptimizer = adamw\nglobal_batch = 4\n[checkpoint]\ncompression = none\n";

static comm_t world;
static config_t cfg;
static graph_t g;
static state_region_t reg[3];

static void add_region(int k, const char *group) {
  float *slab = slab_alloc(&g.params);
  rng_t r;
  rng_seed_stream(&r, 7, (uint64_t)k, 0);
  rng_fill_normal(&r, slab, g.params.total, 0.0f, 0.1f);
  snprintf(reg[k].group, sizeof reg[k].group, "%s", group);
  reg[k].n = g.params.n;
  reg[k].t = xcalloc((size_t)g.params.n, sizeof *reg[k].t);
  for (int i = 0; i < g.params.n; i++) {
    state_tensor_replicated(&reg[k].t[i], &g.params.t[i], 0, 1);
    reg[k].t[i].data = slab + g.params.t[i].off;
  }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  MPI_Init(argc, argv);
  comm_world(&world);
  fuzz_init();
  char err[256];
  deck_parse(deck, "fuzz.deck", 0, NULL, &cfg, NULL);
  if (zoo_build(zoo_opts_of(&cfg), shape3(1, 4, 4), 10, &g, err, sizeof err) != 0) abort();
  const char *groups[3] = {"/params", "/optim/m", "/optim/v"};
  for (int k = 0; k < 3; k++) add_region(k, groups[k]);
  const char *seed_dir = getenv("SURGE_FUZZ_SEED_DIR");
  if (seed_dir) {
    ckpt_state_t s = {.regions = reg, .nregions = 3, .layout = "dp", .opt_t = 5, .step = 7,
                      .run_id = "0123456789abcdef"};
    checkpoint_write(seed_dir, &s, &cfg, deck, &world, NULL, 0);
    MPI_Finalize();
    exit(0);
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "ckpt-00000007.h5");
  if (FUZZ_TRY()) {
    ckpt_found_t newest;
    checkpoint_newest(fuzz_dir(), &newest);
    ckpt_state_t s = {.regions = reg, .nregions = 3, .layout = "dp"};
    checkpoint_read(path, &s, &cfg, &world);
    if (s.step < 0 || s.step > cfg.steps || s.opt_t < 0 || s.opt_t > s.step) abort(); // loaded: in range
  }
  fuzz_h5_close_all();
  return 0;
}
