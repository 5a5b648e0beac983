#include "fuzz_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "burst/graph_file.h"
#include "fuzz.h"

static void round_trip(const bgraph_t *g, const burst_profile_t *p) {
  static char path[512];
  if (!path[0]) snprintf(path, sizeof path, "%s/written.graph", fuzz_dir());
  jmp_buf outer;
  memcpy(outer, fuzz_env, sizeof outer);
  if (setjmp(fuzz_env) != 0) {
    fprintf(stderr, "fuzz: the graph file written for an accepted input is refused by graph_file_read\n");
    abort();
  }
  graph_file_write(path, g, p);
  bgraph_t g2;
  burst_profile_t p2;
  graph_file_read(path, 0, &g2, &p2);
  if (g2.n != g->n) {
    fprintf(stderr, "fuzz: %d nodes accepted, %d read back from the graph file written\n", g->n, g2.n);
    abort();
  }
  for (int v = 0; v < g->n; v++) { /* the rules of what shares a rank set (burst/graph_ties.h) */
    const bgraph_node_t *a = &g->v[v], *b = &g2.v[v];
    if (a->tied != b->tied || a->with != b->with || a->weight_of != b->weight_of ||
        a->recompute_from != b->recompute_from) {
      fprintf(stderr, "fuzz: node %d's rules (fused %d, with %d, weight of %d, recompute from %d) read back as "
              "(%d, %d, %d, %d)\n", v, a->tied, a->with, a->weight_of, a->recompute_from, b->tied, b->with,
              b->weight_of, b->recompute_from);
      abort();
    }
  }
  memcpy(fuzz_env, outer, sizeof outer);
  fuzz_fds_close();
  bgraph_free(&g2);
  burst_profile_free(&p2);
}

void fuzz_graph_input(const uint8_t *data, size_t size, const char *name, fuzz_graph_reader_t read) {
  const char *path = fuzz_file(data, size, name);
  bgraph_t g;
  burst_profile_t p;
  volatile int accepted = 0;
  if (FUZZ_TRY()) {
    read(path, &g, &p);
    accepted = 1;
    round_trip(&g, &p);
  }
  fuzz_fds_close();
  if (accepted) bgraph_free(&g), burst_profile_free(&p);
}
