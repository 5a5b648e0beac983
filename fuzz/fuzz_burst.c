#include "fuzz_burst.h"

#include <stdio.h>
#include <stdlib.h>

#include "burst/profiler.h"
#include "data/dataset.h"
#include "io/deck.h"

const char fuzz_burst_deck[] = "[run]\nsteps = 4\n[model]\nzoo = mlp\nmlp_hidden = 8\n[data]\nsource = synthetic\n"
                               "synthetic_samples = 64\ntest_samples = 8\n[train]\nglobal_batch = 8\n";

void fuzz_burst_model(config_t *cfg, graph_t *g, bgraph_t *bg) {
  const char *seed_dir = getenv("SURGE_FUZZ_SEED_DIR");
  if (seed_dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/burst.deck", seed_dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(fuzz_burst_deck, f) < 0 || fclose(f) != 0) abort();
    exit(0);
  }
  deck_t *deck = NULL;
  deck_parse(fuzz_burst_deck, "fuzz-burst.deck", 0, NULL, cfg, &deck);
  dataset_close(burst_deck_graph(cfg, deck, g));
  bgraph_from_graph(g, cfg->zoo, bg);
  deck_free(deck);
}
