/* What the graph-file and DeepPool harnesses share: an input read by one of the two readers, and
 * a check beyond "no crash": a graph they accept, written as a graph file (surge-plan
 * --write-graph), must read back (graph_file_read) with the same nodes and the same rules of what
 * shares a rank set; a refusal there is a finding (the writer wrote what the reader refuses). */
#ifndef SURGE_FUZZ_GRAPH_H
#define SURGE_FUZZ_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "burst/bgraph.h"
#include "burst/profile.h"

typedef void (*fuzz_graph_reader_t)(const char *path, bgraph_t *g, burst_profile_t *p);

/* The input written to a file called name, read by read, and what it accepts round-tripped. */
void fuzz_graph_input(const uint8_t *data, size_t size, const char *name, fuzz_graph_reader_t read);

#endif
