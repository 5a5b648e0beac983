/* The graph-file reader (graph_file_read, burst/graph_file.c): any text is refused with an input
 * error naming file:line or read; what is read must survive a round trip (fuzz_graph.h). */
#include "burst/graph_file.h"
#include "fuzz.h"
#include "fuzz_graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  fuzz_init();
  return 0;
}

static void read_graph(const char *path, bgraph_t *g, burst_profile_t *p) { graph_file_read(path, 0, g, p); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_graph_input(data, size, "in.graph", read_graph);
  return 0;
}
