/* The start of a TAP test that runs on a fixed number of MPI ranks: MPI and the world group, or,
 * on another number of ranks, rank 0 says "1..0 # SKIP" and every rank ends the program (exit 0). */
#ifndef SURGE_TESTS_TAP_MPI_H
#define SURGE_TESTS_TAP_MPI_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm.h"
#include "tap.h"

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

#endif
