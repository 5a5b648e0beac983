/* Which of Optimus-CC's techniques a 3d run uses, and their settings: the deck's [compress]
 * section (doc/compression.md), declared here as this part's rows (core/keys.h). The 3d layout
 * checks them against its grid (pipe/options.c). */
#ifndef SURGE_COMPRESS_OPTIONS_H
#define SURGE_COMPRESS_OPTIONS_H

#include "core/keys.h"

typedef struct compress_opts {
  int cb, cb_rank;       /* compressed back-propagation of activation gradients, its rank */
  int lep;               /* lazy error propagation */
  int epilogue_only;     /* only the gradients a stage sends after its last forward */
  int fe;                /* fused embedding synchronisation */
  int sc_stages, dp_rank; /* stages below sc_stages compress data-parallel gradients at rank dp_rank */
  double warmup_fraction; /* of the run's steps, exact data-parallel sums first */
  double min_rate;       /* a matrix goes exact unless it shrinks this much (0: off) */
  long steps;            /* the run's steps ([run] steps: set by the layout, not a key of this part) */
} compress_opts_t;

/* The [compress] rows. */
extern const cfg_part_t compress_options;

/* A parsed configuration's [compress] values. */
static inline const compress_opts_t *compress_opts(const struct config *cfg) {
  return (const compress_opts_t *)cfg_part(cfg, &compress_options);
}

/* Whether any technique is on. */
static inline int compress_any(const compress_opts_t *o) { return o->cb || o->fe || o->sc_stages > 0; }

#endif
