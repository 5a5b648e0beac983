/* Training state as global tensors of which each rank holds a piece: what a checkpoint writes and
 * reads, described by the layout (parameters, optimizer moments) and by a gradient reducer (its
 * error-feedback buffers), independent of how the layout stores them.
 *
 * A state region is a named group of global tensors ("/params", "/optim/m", ...). Of each global
 * tensor of shape dims, this rank holds the hyperslab [start, start + count) (count[0] == 0: none),
 * row-major in `data` (host memory). Ranks holding the same hyperslab are its replicas: `replicas`
 * of them, this rank being number `replica` (0-based); they split the writing of the piece among
 * themselves (io/checkpoint.h), so the pieces written by all ranks tile the tensor exactly once.
 * Replicated state (data parallelism) is the case start = 0, count = dims, replicas = job size. */
#ifndef SURGE_STATE_H
#define SURGE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/slab.h"

typedef struct state_tensor {
  char name[SLAB_NAME_MAX];
  int ndim;
  size_t dims[SLAB_MAX_DIMS];  /* global shape */
  size_t start[SLAB_MAX_DIMS]; /* this rank's hyperslab ... */
  size_t count[SLAB_MAX_DIMS]; /* ... and its extent (all 0 when this rank holds none of it) */
  int replica, replicas;       /* this rank's index among the ranks holding the same hyperslab */
  float *data;                 /* the hyperslab, row-major over count (host memory) */
  /* what a checkpoint may hold (checkpoint_read refuses anything else): any float (parameters and
   * moments are stored bit for bit, whatever they hold), or with `finite` finite values only (a
   * compressor's state), and with `counter` too whole numbers of steps in 0..counter_max */
  int finite, counter;
  double counter_max;
} state_tensor_t;

#define STATE_GROUP_MAX 64

/* A region lists its tensors in one order on every rank. A tensor whose piece on a rank is not one
 * box (a tensor-parallel shard of GPT's fused q, k, v rows: three row ranges) appears as several
 * consecutive entries of the same name, each one box with its own replicas; every rank lists the
 * same number of entries for it (count 0 where it holds none of that box). */
typedef struct state_region {
  char group[STATE_GROUP_MAX]; /* absolute HDF5 group, e.g. "/params" */
  int n;
  state_tensor_t *t;           /* [n] */
} state_region_t;

/* The entry after the last consecutive entry of tensor r->t[i]'s name (i + 1 for a one-box tensor). */
int state_tensor_end(const state_region_t *r, int i);

/* Floats in this rank's hyperslab of t. */
static inline size_t state_tensor_floats(const state_tensor_t *t) {
  size_t n = 1;
  for (int i = 0; i < t->ndim; i++) n *= t->count[i];
  return t->ndim > 0 ? n : 0;
}

/* Copy between a row-major tensor of shape dims[ndim] and its box [start, start + count), stored
 * contiguously (row-major over count): out of the tensor into box (to_box = 1) or back (0). */
void state_box_copy(float *tensor, float *box, int ndim, const size_t *dims, const size_t *start,
                    const size_t *count, int to_box);

/* A whole tensor of a slab layout held by every one of `ranks` ranks (this one being `rank`). */
void state_tensor_replicated(state_tensor_t *out, const slab_tensor_t *t, int rank, int ranks);

#endif

/* A checksum of a tensor's values that every tiling of it into pieces computes alike: the sum, modulo
 * 2^64, of a 64-bit mix of each element's global index and float bits. This is rows [row_lo, row_hi)
 * (along the first dimension of t's hyperslab) of t's part of it; summed over pieces that tile the
 * tensor, it is the whole tensor's. */
uint64_t state_hash_rows(const state_tensor_t *t, size_t row_lo, size_t row_hi);
