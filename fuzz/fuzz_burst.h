/* What the planner's harnesses (fuzz_plan, fuzz_profile) share: the small model their inputs are
 * checked against, the model of a deck surge-profile and surge-plan read as a run would. */
#ifndef SURGE_FUZZ_BURST_H
#define SURGE_FUZZ_BURST_H

#include "burst/bgraph.h"
#include "io/config.h"
#include "nn/graph.h"

/* The deck: an MLP (hidden 8) on synthetic data, global batch 8. */
extern const char fuzz_burst_deck[];
/* Parse the deck and build its model graph (g: as surge-train and surge-profile build it; bg: as
 * surge-plan plans it). With SURGE_FUZZ_SEED_DIR set, write the deck to that directory as
 * burst.deck (tools/fuzz.sh profiles and plans it for the seed corpus) and exit 0. */
void fuzz_burst_model(config_t *cfg, graph_t *g, bgraph_t *bg);

#endif
