/* The DeepPool importer (deeppool_import, burst/deeppool.c) on a profile read as a chain: any text
 * is refused with an input error naming file:line or imported; what is imported must survive the
 * round trip through a graph file (fuzz_graph.h: surge-plan --write-graph must write what
 * surge-plan --graph reads). */
#include "burst/graph_file.h"
#include "fuzz.h"
#include "fuzz_graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

static void import(const char *path, bgraph_t *g, burst_profile_t *p) {
  deeppool_report_t rep;
  deeppool_import(path, NULL, NULL, g, p, &rep);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_graph_input(data, size, "in.prof", import);
  return 0;
}
