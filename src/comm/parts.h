/* Inside the comm layer: the parts of a v-collective (comm_ireduce_scatter_sum, comm_iallgatherv_float
 * in comm.h), rank r's part the floats [off[r], off[r] + cnt[r]) of the buffer, and how a group with
 * NCCL runs them on device buffers: one operation per non-empty part, rooted at the rank that owns
 * it, all of them in one NCCL group (ncclGroupStart/End) issued together:
 *   reduce-scatter: ncclReduce (sum) of each part to its owner, in place there;
 *   all-gather:     ncclBroadcast of each part from its owner, in place everywhere.
 * Parts of any size work alike (a sharded optimizer's parts are rarely equal: most buckets lie
 * within one rank's shard, so most of its collectives are one reduce or broadcast), and an empty
 * part issues nothing. The plan is pure arithmetic, the same on every rank, so every rank issues
 * the same operations in the same order, as NCCL requires. */
#ifndef SURGE_COMM_PARTS_H
#define SURGE_COMM_PARTS_H

#include <stddef.h>

/* One rooted operation: the floats [off, off + n) of the buffer, owned by rank root. */
typedef struct comm_part {
  int root;
  size_t off, n;
} comm_part_t;

/* The non-empty parts of size ranks in rank order, each rooted at its owner; returns how many were
 * written to out (room for size). */
int comm_parts_rooted(int size, const size_t *off, const size_t *cnt, comm_part_t *out);

/* The floats from the buffer's start to the end of its last non-empty part (0 where all are empty):
 * what a staged all-gather copies between device and host. */
size_t comm_parts_extent(int size, const size_t *off, const size_t *cnt);

/* Whether the parts follow each other from 0 (off[0] = 0, off[r + 1] = off[r] + cnt[r]), hold n
 * floats together and each at most `most`: 0, or -1 with a sentence saying which does not in why
 * (room for len bytes). A reduce-scatter's parts must (comm_ireduce_scatter_sum). */
int comm_parts_consecutive(int size, const size_t *off, const size_t *cnt, size_t n, size_t most, char *why,
                           size_t len);

#endif
