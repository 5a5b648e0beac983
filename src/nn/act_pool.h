/* The plan of shared activation buffers of a model that only runs forward (model_init_forward). */
#ifndef SURGE_ACT_POOL_H
#define SURGE_ACT_POOL_H

#include <stddef.h>

#include "nn/model.h"

/* For a forward-only model planned up to its buffers (fusion and epilogues): slot_of[i] = the shared
 * buffer node i's activation takes, or -1 for a buffer of its own (the input's, the output's, and
 * none where the node writes another's: fused into its ReLU); slot_floats[p] = the floats buffer p
 * needs (both: g->n entries). Nodes run forward in order, 1 to n-1 (model_forward, and the
 * generation engines, which replace some nodes' forwards but keep the order); an activation lives
 * from the first node that writes it (its own, the conv2d fused into it, the linear or add that runs
 * it in an epilogue) to its last reader. Returns the shared buffers. */
int act_pool_plan(const model_t *m, int *slot_of, size_t *slot_floats);

#endif
