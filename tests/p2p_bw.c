/* Point-to-point bandwidth through the comm layer from rank 0 to one rank on its own node (shared
 * memory) and one rank on another node (the network), as the nodes look to MPI (comm_t.node).
 * For tests/test_cluster.sh and bench/bench_cluster.sh on the emulated cluster (doc/cluster.md).
 *
 *   mpiexec -n N tests/p2p_bw [MIB [REPEATS]]       (default 8 MiB, 5 repeats)
 *
 * Each repeat: rank 0 sends MIB MiB as one message (comm_isend), the receiver answers with one
 * float when all has arrived; bandwidth = bytes / (time from the send to the answer), the median
 * over the repeats. Output, one line per pair (rank 0 prints):
 *   pair 0 DST same|other BYTES MEDIAN_SECONDS MBIT_PER_S HOST0 HOSTDST
 * and a "# nodes: K" line. Exit 2 on bad arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"
#include "core/error.h"
#include "core/timer.h"

enum { MAX_REPEATS = 1000, MAX_MIB = 1024, HOST_LEN = 64 };

static long arg_long(const char *text, const char *what, long min, long max) {
  char *end;
  long v = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < min || v > max)
    surge_input_error("p2p_bw: %s '%s' is not a number from %ld to %ld (usage: p2p_bw [MIB [REPEATS]])", what,
                      text, min, max);
  return v;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median seconds of `repeats` transfers of n floats from rank 0 to dst (collective over w). */
static double transfer(comm_t *w, int dst, float *buf, size_t n, int repeats) {
  double *t = xcalloc((size_t)repeats, sizeof *t);
  float ack = 0;
  comm_request_t r;
  for (int k = -1; k < repeats; k++) { /* k = -1: warm-up (connection set-up) */
    comm_barrier(w);
    double t0 = surge_now();
    if (w->rank == 0) {
      comm_isend(w, buf, n, dst, 1, TRAFFIC_OTHER, &r);
      comm_waitall(w, &r, 1, TRAFFIC_OTHER);
      comm_irecv(w, &ack, 1, dst, 2, TRAFFIC_OTHER, &r);
      comm_waitall(w, &r, 1, TRAFFIC_OTHER);
    } else if (w->rank == dst) {
      comm_irecv(w, buf, n, 0, 1, TRAFFIC_OTHER, &r);
      comm_waitall(w, &r, 1, TRAFFIC_OTHER);
      comm_isend(w, &ack, 1, 0, 2, TRAFFIC_OTHER, &r);
      comm_waitall(w, &r, 1, TRAFFIC_OTHER);
    }
    if (k >= 0) t[k] = surge_now() - t0;
  }
  qsort(t, (size_t)repeats, sizeof *t, cmp_double);
  double med = repeats % 2 ? t[repeats / 2] : 0.5 * (t[repeats / 2 - 1] + t[repeats / 2]);
  free(t);
  return med;
}

int main(int argc, char **argv) {
  comm_init(&argc, &argv);
  comm_t world;
  comm_world(&world);
  if (argc > 3) surge_input_error("p2p_bw: too many arguments (usage: p2p_bw [MIB [REPEATS]])");
  long mib = argc > 1 ? arg_long(argv[1], "MIB", 1, MAX_MIB) : 8;
  int repeats = argc > 2 ? (int)arg_long(argv[2], "REPEATS", 1, MAX_REPEATS) : 5;

  /* every rank's node, and its host name */
  const int *node = world.node;
  int nodes = world.nodes;
  char *hosts = xcalloc((size_t)world.size, HOST_LEN);
  char host[MPI_MAX_PROCESSOR_NAME] = "";
  int len = 0;
  MPI_Get_processor_name(host, &len);
  host[HOST_LEN - 1] = '\0';
  MPI_Allgather(host, HOST_LEN, MPI_CHAR, hosts, HOST_LEN, MPI_CHAR, world.mpi);

  /* the partners: the first other rank on rank 0's node, the first rank on another node */
  int same = -1, other = -1;
  for (int r = world.size - 1; r > 0; r--) {
    if (node[r] == node[0]) same = r;
    else other = r;
  }
  size_t n = (size_t)mib * 1048576 / sizeof(float);
  float *buf = xcalloc(n, sizeof *buf);
  if (world.rank == 0) printf("# nodes: %d, ranks: %d, %ld MiB per transfer, median of %d\n", nodes, world.size, mib, repeats);
  int dst[2] = {same, other};
  for (int k = 0; k < 2; k++) {
    if (dst[k] < 0) continue;
    double s = transfer(&world, dst[k], buf, n, repeats);
    if (world.rank == 0)
      printf("pair 0 %d %s %zu %.6f %.1f %s %s\n", dst[k], k == 0 ? "same" : "other", n * sizeof(float), s,
             (double)(n * sizeof(float)) * 8 / s / 1e6, hosts, hosts + (size_t)dst[k] * HOST_LEN);
  }
  fflush(stdout);
  free(buf);
  free(hosts);
  comm_free(&world);
  MPI_Finalize();
  return 0;
}
