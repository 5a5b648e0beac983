/* Inside the comm layer: Surge's own ring reduce-scatter over host buffers, behind
 * comm_ireduce_scatter_sum (comm.h), in place of MPI_Ireduce_scatter: Open MPI 4.1's libnbc does
 * that one as a binomial reduce to rank 0 followed by a scatter, so its reducing ranks receive whole
 * buckets into temporaries and all traffic funnels through rank 0.
 *
 * The ring: R ranks in group order, each sending to its right neighbour (rank + 1) and receiving
 * from its left (rank - 1). In step s (0 .. R-2) rank r sends its partial sums of part r-1-s and
 * receives part r-2-s (indices mod R), adding it to its own floats of that part. After R-1 steps
 * part r holds, on rank r, the sum of every rank's floats of it, accumulated along the ring in a
 * fixed order: x[r+1] + x[r+2] + ... + x[r] (ranks mod R, left to right), the same bits every run.
 * Rank r sends every part but its own and receives every part but its left neighbour's: (R-1)/R of
 * the buffer where the parts are equal (the bandwidth-optimal half of an allreduce). A part may be
 * of any size: an empty one is neither sent nor received, and a large one travels in pieces of at
 * most 1 MiB, each received into the same scratch (a ring holds at most 1 MiB of it, from the first
 * piece this rank receives until the ring is done), so a bucket that lies within one rank's shard,
 * as most of the sharded optimizer's do, is a chain of sums through the ring holding no more.
 *
 * A step advances only inside this layer's calls: comm_op_test advances every ring in flight in the
 * calling thread, on any of its groups, as far as it can without blocking; comm_op_wait blocks until
 * its own ring is done while advancing all the others (so ranks that wait for their operations in
 * different orders, or on several groups, cannot block each other). The rings use a duplicate of
 * the group's communicator, made with the group (one made at a group's first ring would be a
 * blocking collective inside the backward pass, which ranks of several groups, or pipeline stages
 * waiting for each other, reach in different orders: a deadlock), and one tag per operation, so
 * they cannot match any other message of the group. */
#ifndef SURGE_RING_H
#define SURGE_RING_H

#include <stddef.h>

#include "comm/comm.h"

typedef struct comm_ring comm_ring_t;

/* Start the ring reduce-scatter (sum) of buf (host memory) over c: parts (off, cnt) as
 * comm_ireduce_scatter_sum takes them, already checked (consecutive, each at most INT_MAX floats).
 * The parts are copied. api_call names the caller in errors. */
comm_ring_t *comm_ring_start(comm_t *c, float *buf, const size_t *off, const size_t *cnt, const char *api_call);
/* Advance every ring in flight (on any group of the calling thread) without blocking; 1 when g is
 * done. */
int comm_ring_test(comm_ring_t *g, const char *api_call);
/* Block until g is done, advancing the other rings in flight meanwhile (see comm_t.poll_us). */
void comm_ring_wait(comm_ring_t *g, const char *api_call);
/* Release a ring that is done. */
void comm_ring_free(comm_ring_t *g);
/* Collective over c, where it is made (comm_init_from): its ring communicator. */
void comm_ring_open(comm_t *c, const char *api_call);
/* Free c's ring communicator, if it was made (comm_free). */
void comm_ring_close(comm_t *c);

#endif
