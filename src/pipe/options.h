/* The 3d layout's grid and pipeline in a deck: tp x pp x dp, the schedule, blocks
 * per stage ([parallel]) and the timeline's interval ([log]), declared here as this part's rows
 * (core/keys.h). Its check also holds [compress] (compress/options.h) to the grid it applies to. */
#ifndef SURGE_PIPE_OPTIONS_H
#define SURGE_PIPE_OPTIONS_H

#include "core/keys.h"

enum { PIPE_MAX_STAGE_LIST = 16 }; /* most entries of [parallel] stages */

typedef struct pipe_opts {
  int tp, pp, dp;        /* tensor, pipeline and data parallel degrees (product: the rank count) */
  char schedule[8];      /* 1f1b | gpipe */
  int stages[PIPE_MAX_STAGE_LIST], nstages; /* blocks per pipeline stage; {0}: balanced by FLOPs */
  int scatter_gather;    /* pipeline transfers in 1/tp chunks, all-gathered by the receivers (pipe/p2p.h) */
  long timeline_every;   /* log the pipeline timeline every N steps (0: never) */
} pipe_opts_t;

/* The rows of pipe_opts_t, and the checks of [compress] against the grid. */
extern const cfg_part_t pipe_options;

/* A parsed configuration's values. */
static inline const pipe_opts_t *pipe_opts(const struct config *cfg) {
  return (const pipe_opts_t *)cfg_part(cfg, &pipe_options);
}

#endif
