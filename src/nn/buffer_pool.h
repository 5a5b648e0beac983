/* Buffers shared by tensors whose lives do not overlap: the assignment both of the model's pools
 * use (activation gradients in a training model, nn/grad_pool.h; activations in a forward-only one,
 * nn/act_pool.h). */
#ifndef SURGE_BUFFER_POOL_H
#define SURGE_BUFFER_POOL_H

#include <stddef.h>

/* n tensors, tensor b live over the phases [lo[b], hi[b]] of a pass (lo[b] < 0: not shared) and
 * need[b] floats long: slot_of[b] = the buffer it takes, or -1 for one of its own; slot_floats[p] =
 * the floats buffer p needs (room for n). Greedy in the order the lives begin: each takes the
 * smallest buffer free before its first phase that holds it, else the largest free one (which
 * grows), else a new one. Two tensors live in one phase never share. Returns the buffers. */
int buffer_pool_assign(int n, const int *lo, const int *hi, const size_t *need, int *slot_of, size_t *slot_floats);

#endif
