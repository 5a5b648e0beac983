/* What the graph-file and DeepPool harnesses check beyond "no crash": a graph they accept, written
 * as a graph file (surge-plan --write-graph), must read back (graph_file_read) with the same nodes;
 * a refusal there is a finding (the writer wrote what the reader refuses). */
#ifndef SURGE_FUZZ_GRAPH_H
#define SURGE_FUZZ_GRAPH_H

#include "burst/bgraph.h"
#include "burst/profile.h"

void fuzz_graph_round_trip(const bgraph_t *g, const burst_profile_t *p);

#endif
