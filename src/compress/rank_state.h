/* Compressor state in checkpoints: buffers each rank keeps for itself (error feedback, warm-start
 * factors, counters) as one state region (core/state.h) of 1-D global tensors, each the
 * concatenation of every rank's buffer of that name in rank order; a rank without one takes part
 * with an empty box. So every rank lists the same tensors whatever it holds, and a checkpoint of it
 * resumes bit for bit on the same grid with the same compression settings (another grid or setting
 * gives other lengths, which checkpoint_read refuses naming the tensor). */
#ifndef SURGE_COMPRESS_RANK_STATE_H
#define SURGE_COMPRESS_RANK_STATE_H

#include <stddef.h>

#include "backend/backend.h"
#include "comm/comm.h"
#include "core/state.h"

typedef struct rank_state {
  state_region_t region; /* its tensors: those with floats on some rank */
  const backend_t *be;
  int n;                 /* buffers named */
  float **dev;           /* (n) this rank's backend buffers (NULL when len is 0) */
  float **host;          /* (n) host views: dev itself on a host-memory backend, else copies */
  size_t *len;           /* (n) floats of each on this rank */
  int *tensor;           /* (n) its index in region.t, or -1 when no rank has any */
} rank_state_t;

/* Collective over job (every rank, the same names in the same order): buffers names[i] of len[i]
 * floats at dev[i] (backend memory) under the HDF5 group `group` ("/compress/cb"). counter_max
 * (NULL: none) marks counters: counter_max[i] >= 0 makes buffer i one, each value a whole number of
 * steps in 0..counter_max[i]; every value of every buffer is finite (a checkpoint holding anything
 * else is refused, state.h). */
void rank_state_init(rank_state_t *s, const char *group, int n, const char *const *names, float *const *dev,
                     const size_t *len, const double *counter_max, const backend_t *be, comm_t *job);
void rank_state_free(rank_state_t *s);
/* For a checkpoint: the host views made current (downloaded from a device) and the region. */
state_region_t *rank_state_region(rank_state_t *s);
/* After a checkpoint was read into the host views: back into the buffers. */
void rank_state_loaded(rank_state_t *s);

#endif
