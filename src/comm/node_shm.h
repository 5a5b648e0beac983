/* Node-shared memory: a window of memory that every rank of a one-node group can read and write
 * directly (an MPI shared-memory window), for work that ranks on one node do better on each other's
 * memory than through messages (sync/node_sum.h).
 *
 * Each rank contributes a segment of `bytes` (0 allowed); seg[r] points at rank r's segment in this
 * process's address space. Segments are 64-byte aligned and zeroed. Ordering: a rank's writes are
 * visible to the others after node_shm_barrier, which every rank of the group must call. */
#ifndef SURGE_NODE_SHM_H
#define SURGE_NODE_SHM_H

#include <stddef.h>

#include "comm/comm.h"

#define NODE_SHM_ALIGN 64 /* bytes: every segment starts on a cache line */

typedef struct node_shm {
  MPI_Win win;
  int size;     /* ranks of the group */
  char **seg;   /* [size] each rank's segment */
  size_t *bytes; /* [size] their sizes */
} node_shm_t;

/* Collective over c, whose ranks must all be on one node (c->nodes == 1, else a runtime error):
 * this rank's segment of `bytes` bytes. */
void node_shm_alloc(comm_t *c, size_t bytes, node_shm_t *s);
/* Collective over the same group. */
void node_shm_free(node_shm_t *s);
/* Collective over c: every rank's writes to the window before the call are seen by every rank's
 * reads after it. Metered (comm_barrier_as) as a call of category t moving `bytes`: what this rank
 * read or will read from the others' segments for the exchange the barrier completes. */
void node_shm_barrier(node_shm_t *s, comm_t *c, traffic_t t, uint64_t bytes);
/* This rank's side of node_shm_barrier for a second window that one barrier orders with another:
 * called before and after that barrier. */
void node_shm_sync(node_shm_t *s);

#endif
