/* The model's plan of shared activation-gradient buffers (model_init_on with a backward order). */
#ifndef SURGE_GRAD_POOL_H
#define SURGE_GRAD_POOL_H

#include <stddef.h>

#include "nn/model.h"

/* For a model planned up to its buffers (fusion, writers, epilogues, recomputed segments) and the
 * nodes of the layout's backward pass in the order their phases run, bwd[0..nbwd): slot_of[i] = the
 * shared buffer node i's gradient takes, or -1 for a buffer of its own; slot_floats[p] = the floats
 * buffer p needs (slot_of and slot_floats: g->n entries). Returns the shared buffers. A gradient
 * lives from the first phase of the first node that writes or reads it to the last phase of the
 * last; a buffer serves gradients whose lives do not overlap (greedy by start, the smallest free
 * buffer that fits first). */
int grad_pool_plan(const model_t *m, const int *bwd, int nbwd, int *slot_of, size_t *slot_floats);

#endif
