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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file(data, size, "in.graph");
  bgraph_t g;
  burst_profile_t p;
  volatile int read = 0;
  if (FUZZ_TRY()) {
    graph_file_read(path, 0, &g, &p);
    read = 1;
    fuzz_graph_round_trip(&g, &p);
  }
  fuzz_fds_close();
  if (read) bgraph_free(&g), burst_profile_free(&p);
  return 0;
}
