/* Opening the process's backend, collectively over its job (apart from backend.h, which the CUDA
 * kernels also include, because it needs MPI). */
#ifndef SURGE_BACKEND_OPEN_H
#define SURGE_BACKEND_OPEN_H

#include <mpi.h>

#include "backend/backend.h"

/* Find and open the backend called name, collectively over the ranks of `job` (each opens its
 * own): an unknown name or options it refuses are input errors (exit 2) naming `where` (the deck
 * key's place); a machine that cannot run it (no GPU) is a runtime error (exit 1). One line for the
 * whole job: the lowest rank whose open failed says why, the others wait for the job's end. */
const backend_t *backend_open(const char *name, const backend_options_t *o, const char *where, MPI_Comm job);

#endif
