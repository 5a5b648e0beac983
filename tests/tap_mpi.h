/* TAP tests on MPI ranks: the start of one that runs on a fixed number of ranks, and a check every
 * rank takes part in. */
#ifndef SURGE_TESTS_TAP_MPI_H
#define SURGE_TESTS_TAP_MPI_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm.h"
#include "tap.h"

/* MPI and the world group; on another number of ranks than `ranks`, rank 0 says "1..0 # SKIP" and
 * every rank ends the program (exit 0). */
static inline void tap_mpi_world(int *argc, char ***argv, comm_t *world, int ranks, const char *test) {
  comm_init(argc, argv);
  comm_world(world);
  if (world->size == ranks) return;
  if (world->rank == 0) {
    char why[160];
    snprintf(why, sizeof why, "%s runs on %d ranks", test, ranks);
    tap_skip_all(why);
  }
  MPI_Finalize();
  exit(0);
}

/* Collective over MPI_COMM_WORLD: one TAP line from world rank 0, ok when ok holds on every rank; a
 * failure names the ranks it failed on (the first 64). */
static inline void tap_all(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void tap_all(int ok, const char *fmt, ...) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
  if (rank == 0 && !all) abort();
  MPI_Gather(&ok, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank != 0) return;
  char desc[512], bad[400] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(desc, sizeof desc, fmt, ap);
  va_end(ap);
  int every = 1, named = 0;
  size_t used = 0;
  for (int r = 0; r < size; r++) {
    if (all[r]) continue;
    every = 0;
    if (named++ < 64 && used < sizeof bad)
      used += (size_t)snprintf(bad + used, sizeof bad - used, "%s%d", used ? "," : " (failed on rank ", r);
  }
  if (!every && used < sizeof bad) snprintf(bad + used, sizeof bad - used, "%s)", named > 64 ? ",..." : "");
  free(all);
  tap_ok(every, "%s%s", desc, bad);
}

#endif
